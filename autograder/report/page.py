"""The report's files: report.html (one page, nothing fetched; its one inline script sorts its tables),
CSVs and PNG charts.

The page holds names, numbers, test names and the suite's misconception lines; the students'
code appears only in the side-by-side views of similar pairs, each its own file under pairs/,
and their written answers only in their own views under students/.
"""
from __future__ import annotations

import base64
import csv
import html
import io
from pathlib import Path

import matplotlib
matplotlib.use("Agg")          # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from ..kit import Misconception  # noqa: E402
from ..results.terminal import shown  # noqa: E402
from ..nbgrading.answers import Answer, render  # noqa: E402
from ..results.render import review_summary  # noqa: E402
from .classlist import Student  # noqa: E402
from .similarity import Cluster, Pair  # noqa: E402
from .summary import APART, Summary  # noqa: E402

CSS = """body{font:14px/1.45 system-ui,sans-serif;max-width:72em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border-bottom:1px solid #ddd;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f4f4f4}td.n{text-align:right}.who{font-size:12px;color:#555}
.note{background:#fff8e0;border-left:4px solid #e0b000;padding:.6em 1em}
pre{font-size:12px;background:#f8f8f8;padding:.5em;overflow:auto;white-space:pre-wrap}mark{background:#ffd0d0}
.sbs{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.answer{border-left:4px solid #4a7ab5;padding:.1em 1em;margin-bottom:2em}blockquote{margin:.5em 0}
table.sortable th{cursor:pointer}table.sortable th:after{content:" \\2195";color:#aaa}"""

# Click a column's header to sort its table by that column (numbers by value, "12 / 100" by its first
# number), again to reverse. Inline, so the page works offline and fetches nothing.
SORT = """<script>
document.querySelectorAll('table.sortable').forEach(function (table) {
  var head = table.rows[0];
  Array.prototype.forEach.call(head.cells, function (th, col) {
    th.addEventListener('click', function () {
      var up = th.dataset.order !== 'up';
      Array.prototype.forEach.call(head.cells, function (c) { delete c.dataset.order; });
      th.dataset.order = up ? 'up' : 'down';
      var key = function (row) {
        var text = row.cells[col] ? row.cells[col].textContent.trim() : '';
        var n = parseFloat(text);
        return isNaN(n) ? text.toLowerCase() : n;
      };
      var rows = Array.prototype.slice.call(table.rows, 1).sort(function (a, b) {
        var x = key(a), y = key(b);
        var order = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === 'number' ? -1 : 1);
        return up ? order : -order;
      });
      rows.forEach(function (row) { row.parentNode.appendChild(row); });
    });
  });
});
</script>"""


def charts(s: Summary, out: Path) -> dict[str, bytes]:
    """{file name: PNG}: the total and per-part score histograms and the pass rate per test, also written to out."""
    pngs = {}
    fig, ax = plt.subplots(figsize=(6, 2.6))
    ax.hist(s.totals, bins=20, range=(0, max(s.max_score, 1)), color="#4a7ab5")
    ax.set_xlabel(f"automatic points (of {s.max_score})")
    ax.set_ylabel("students")
    fig.subplots_adjust(bottom=0.2)
    pngs["total.png"] = _png(fig)
    fig, axes = plt.subplots(1, max(len(s.parts), 1), figsize=(3 * max(len(s.parts), 1), 2.4), squeeze=False)
    for ax, part in zip(axes[0], sorted(s.parts)):
        ax.hist(s.parts[part], bins=10, range=(0, max(s.part_max[part], 1)), color="#6a9a4a")
        ax.set_title(f"part {part} (of {s.part_max[part]})", fontsize=9)
    fig.subplots_adjust(top=0.85, bottom=0.12)
    pngs["parts.png"] = _png(fig)
    rows = list(s.tests.items())[::-1]
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(rows) + 0.8))
    fig.subplots_adjust(left=0.5, right=0.97)   # room for the test names, without a second layout pass
    ax.barh(range(len(rows)), [r.pass_rate for _, r in rows], color="#b5804a")
    ax.set_yticks(range(len(rows)), [r.title[:60] for _, r in rows], fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_xlabel("pass rate")
    pngs["tests.png"] = _png(fig)
    for name, data in pngs.items():
        (out / name).write_bytes(data)
    return pngs


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return buf.getvalue()


def _escaped(text: str) -> str:
    """Text for the page: HTML's special characters escaped, and what a student named (a file, an answer) made
    unable to act: control characters and bidi overrides written as their escapes (results.terminal.shown)."""
    return html.escape(shown(str(text)))


class _SheetWriter:
    """csv.writer whose text cells cannot act in a spreadsheet: control characters written as their escapes, and
    a cell that starts as a formula does (=, +, -, @) behind a quote, as spreadsheets read "'=1+1": as text."""

    def __init__(self, f):
        self._w = csv.writer(f)

    def writerow(self, row: list) -> None:
        cells = [shown(v, keep="") if isinstance(v, str) else v for v in row]
        self._w.writerow(["'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@") else v for v in cells])


def write_csvs(s: Summary, pairs: list[Pair], out: Path) -> None:
    """tests.csv (per hidden test), students.csv (per student), pairs.csv (pairs listed for a look)."""
    with (out / "tests.csv").open("w", newline="", encoding="utf-8") as f:
        w = _SheetWriter(f)
        w.writerow(["part", "id", "test", "points", "graded", "passed", "pass_rate", "points_lost", "failed_by"])
        for test_id, r in s.tests.items():
            w.writerow([r.part, test_id, r.title, r.points, r.graded, r.passed, f"{r.pass_rate:.3f}", r.points_lost,
                        " ".join(r.failed_by)])
    parts = sorted(s.parts)
    with (out / "students.csv").open("w", newline="", encoding="utf-8") as f:
        w = _SheetWriter(f)
        w.writerow(["student", "score", "max_score", *[f"part{p}" for p in parts], "late", "misconceptions",
                    "listed_apart"])
        for st in s.students:
            if st.result is None:
                w.writerow([st.name, "", "", *[""] * len(parts), _late(st.late), "",
                            "not graded" if st.submitted else "did not submit"])
                continue
            per = st.result.parts()
            mis = sorted({m for m, row in s.misconceptions.items() if m and st.name in row.students})
            w.writerow([st.name, st.result.score, st.result.max_score, *[per.get(p, (0, 0))[0] for p in parts],
                        _late(st.late), " ".join(mis), " ".join(sorted(s.apart.get(st.name, {})))])
    with (out / "pairs.csv").open("w", newline="", encoding="utf-8") as f:
        w = _SheetWriter(f)
        w.writerow(["a", "b", "share_of_a", "share_of_b", "shared_fingerprints", "identical"])
        for p in pairs:
            w.writerow([p.a, p.b, f"{p.share_a:.3f}", f"{p.share_b:.3f}", p.shared, p.identical])


def _late(late: bool | None) -> str:
    return "" if late is None else "yes" if late else "no"


def pair_view(assignment: str, pair: Pair, regions: list[tuple[str, str]]) -> str:
    """One pair's matched units side by side (similarity.regions: code already escaped and marked)."""
    e = _escaped
    rows = "".join(f"<div><pre>{a}</pre></div><div><pre>{b}</pre></div>" for a, b in regions)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{e(pair.a)} ~ {e(pair.b)}</title>"
            f"<style>{CSS}</style></head><body><h1>{e(assignment)}: {e(pair.a)} ~ {e(pair.b)}</h1>"
            f"<p class=note>Each part of {e(pair.a)}'s code that matches {e(pair.b)}'s is shown next to the part it "
            f"matches best, as each wrote it, with the matching lines marked. Names, literals, comments, the order "
            f"of functions and no-op or dead statements do not count, so marked lines can differ in spelling. A "
            f"match is a reason to look, not a finding: short exercises with prescribed APIs have few natural "
            f"answers.</p>"
            f"<p>{pair.share_a:.0%} of {e(pair.a)}'s fingerprints are in {e(pair.b)}'s code, {pair.share_b:.0%} the "
            f"other way; {pair.shared} shared. {e(pair.identical)}</p>"
            f"<div class=sbs><h2>{e(pair.a)}</h2><h2>{e(pair.b)}</h2>{rows}</div></body></html>")


def report_html(assignment: str, s: Summary, table: dict[str, Misconception], pngs: dict[str, bytes],
                pairs: list[Pair], views: dict[tuple[str, str], str], settings: str,
                students: dict[str, tuple[str, int, int]] | None = None, results_file: Path | None = None,
                groups: list[Cluster] = (), results_option: str = "--results") -> str:
    """students: name -> (its view under students/, written answers given, written questions);
    results_file: the `grade --out` store (or, with results_option "--gradescope-export", the export), for
    the review queue's command; groups: the pairs' clusters."""
    e = _escaped
    img = lambda name, alt: f"<img alt='{alt}' src='data:image/png;base64,{base64.b64encode(pngs[name]).decode()}'>"
    graded = [st for st in s.students if st.result is not None]
    absent = [st.name for st in s.students if not st.submitted]
    mean = sum(s.totals) / len(s.totals) if s.totals else 0
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(assignment)}: class report</title>"
         f"<style>{CSS}</style></head><body><h1>{e(assignment)}: class report</h1>",
         f"<p>{len(s.students) - len(absent)} submissions, {len(graded)} graded"
         f"{f'; {len(absent)} on the roster did not submit' if absent else ''}; mean {mean:.1f} of {s.max_score} "
         "automatic points. The same numbers are in tests.csv and students.csv. Click a column's header to sort "
         "its table.</p>",
         "<h2>Scores</h2>", img("total.png", "histogram of total scores"), img("parts.png", "histograms per part")]
    if students:
        h.append(student_list(s, students))

    h.append("<h2>What to reteach</h2><p>Each misconception the hidden tests' failures named, ordered by the points it "
             "cost the class.</p><table class=sortable><tr><th>misconception</th><th>students</th><th>points lost</th>"
             "<th>taught in</th><th>who</th></tr>")
    for mid, row in s.by_points_lost():
        m = table.get(mid) if mid else None
        label = (f"<b>{e(mid)}</b><br>{e(m.explanation)}" if m else f"<b>{e(mid)}</b>" if mid else
                 "<b>(none named)</b><br>wrong answers the suite names no misconception for")
        h.append(f"<tr><td>{label}</td><td class=n>{len(row.students)}</td><td class=n>{row.points_lost:g}</td>"
                 f"<td>{e(m.taught) if m else ''}</td><td class=who>{e(', '.join(sorted(row.students)))}</td></tr>")
    h.append("</table>")

    h.append("<h2>Hidden tests</h2>" + img("tests.png", "pass rate per test") +
             "<table class=sortable><tr><th>part</th><th>test</th><th>passed</th><th>pass rate</th><th>failed by</th></tr>")
    for r in s.tests.values():
        h.append(f"<tr><td class=n>{r.part}</td><td>{e(r.title)}</td><td class=n>{r.passed}/{r.graded}</td>"
                 f"<td class=n>{r.pass_rate:.0%}</td><td class=who>{e(', '.join(r.failed_by))}</td></tr>")
    h.append("</table>")

    h.append("<h2>Crashes, hangs, stubs and unreadable notebooks</h2><p>Listed apart: these tests lost their points "
             "without showing a misconception; the notebook needs a look.</p>"
             "<table class=sortable><tr><th>student</th><th>what happened</th><th>tests</th></tr>")
    for name, kinds in sorted(s.apart.items()):
        for k, names in sorted(kinds.items()):
            h.append(f"<tr><td>{e(name)}</td><td>{e(APART.get(k, k))}</td><td class=n>{len(names)}</td></tr>")
    for st in s.students:
        if st.result is None and st.submitted:
            h.append(f"<tr><td>{e(st.name)}</td><td>not in the results store (grade it first)</td><td></td></tr>")
    h.append("</table>")
    if absent:
        h.append(f"<h2>Did not submit</h2><p>On the Canvas roster, with nothing collected: {e('; '.join(absent))}</p>")

    late = [st.name for st in s.students if st.late]
    known = any(st.late is not None for st in s.students)
    h.append("<h2>Late submissions</h2><p>" + (e(", ".join(late)) or "none") if known else
             "<h2>Late submissions</h2><p>Upload times are not known for these results (they are for a class "
             "collected by nbgrader).")
    h.append("</p>")

    h.append("<h2>Similar submissions: pairs to look at</h2><p class=note>This lists pairs of notebooks whose solution "
             "cells overlap, with the release's own code left out. It concludes nothing: short exercises with "
             f"prescribed APIs have few natural answers, and overlap is not proof of copying. {e(settings)}</p>")
    if not pairs:
        h.append("<p>No pair reached the threshold.</p>")
    else:
        h.append(cluster_table(groups, views))
        h.append("<h3>Every pair listed</h3><table class=sortable><tr><th>pair</th><th>overlap (each side)</th><th>shared fingerprints</th><th>note</th></tr>")
        for p in pairs:
            h.append(f"<tr><td>{pair_link(p, views)}</td>"
                     f"<td class=n>{p.share_a:.0%} / {p.share_b:.0%}</td><td class=n>{p.shared}</td>"
                     f"<td>{e(p.identical)}</td></tr>")
        h.append("</table>")
        if len(views) < len(pairs):
            h.append(f"<p>Side-by-side views for the {len(views)} most similar pairs; every pair is in pairs.csv.</p>")
    h.append(f"<h2>Review queue</h2><p>{e(review_summary([st.result for st in graded], assignment, results_file, results_option))}</p>")
    h.append(SORT + "</body></html>")
    return "\n".join(h)


def pair_link(p: Pair, views: dict[tuple[str, str], str]) -> str:
    """"a ~ b", linked to the pair's side-by-side view where one was written."""
    label = f"{_escaped(p.a)} ~ {_escaped(p.b)}"
    view = views.get((p.a, p.b))
    return f"<a href='{html.escape(view)}'>{label}</a>" if view else label


def cluster_table(groups: list[Cluster], views: dict[tuple[str, str], str]) -> str:
    """The students the listed pairs join, each group once with its strongest pair (linked to its view)."""
    e = _escaped
    rows = ["<h3>Clusters</h3><p>Students joined by the pairs below (a copy of a copy is in its original's "
            "cluster), largest first.</p><table class=sortable><tr><th>students</th><th>members</th>"
            "<th>pairs listed</th><th>strongest pair</th><th>overlap (each side)</th></tr>"]
    for c in groups:
        p = c.strongest
        rows.append(f"<tr><td class=n>{len(c.members)}</td><td class=who>{e('; '.join(c.members))}</td>"
                    f"<td class=n>{c.pairs}</td><td>{pair_link(p, views)}</td>"
                    f"<td class=n>{p.share_a:.0%} / {p.share_b:.0%}</td></tr>")
    return "".join(rows) + "</table>"


def student_list(s: Summary, students: dict[str, tuple[str, int, int]]) -> str:
    """The table of students, each linked to their view (automatic score, written answers given)."""
    e = _escaped
    rows = ["<h2>Students</h2><p>Each student's page shows their automatic points per part and their written "
            "answers, rendered, for grading by hand.</p><table class=sortable><tr><th>student</th><th>automatic points</th>"
            "<th>written answers given</th></tr>"]
    for st in s.students:
        view, given, asked = students.get(st.name, (None, 0, 0))
        name = f"<a href='{e(view)}'>{e(st.name)}</a>" if view else e(st.name)
        score = (f"{st.result.score:g} / {st.result.max_score}" if st.result else
                 "not graded" if st.submitted else "did not submit")
        rows.append(f"<tr><td>{name}</td><td class=n>{score}</td><td class=n>{given} of {asked}</td></tr>")
    return "".join(rows) + "</table>"


def student_view(assignment: str, student: Student, answers: list[Answer]) -> str:
    """One student's page: automatic points per part, and each written answer under its question
    (rendered and cleaned by nbgrading/answers.py, math as text), for the instructors who grade them."""
    e = _escaped
    per = student.result.parts() if student.result else {}
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(assignment)}: {e(student.name)}</title>"
         f"<style>{CSS}</style></head><body><h1>{e(assignment)}: {e(student.name)}</h1>",
         "<p class=note>The written answers as the student wrote them: markdown rendered, formulas as text, "
         "anything that could run or load removed. They are graded by hand, in nbgrader's formgrader or on "
         "Gradescope; the notebook holds the original.</p>",
         "<table><tr><th>part</th><th>automatic points</th></tr>" if student.result else
         "<p>Not in the results store: no automatic points yet.</p>"]
    if student.result:
        h += [f"<tr><td class=n>{p}</td><td class=n>{score:g} / {top}</td></tr>" for p, (score, top) in per.items()]
        h.append(f"<tr><th>total</th><th class=n>{student.result.score:g} / {student.result.max_score}</th></tr>"
                 "</table>")
    for a in answers:
        q = a.question
        h.append(f"<h2>Part {q.part}: written answer ({q.points:g} points)</h2>"
                 f"<blockquote class=who>{render(q.prompt)}</blockquote><div class=answer>{a.html()}</div>")
    h.append("</body></html>")
    return "\n".join(h)
