"""The class report (python -m autograder report) on the sample class, graded once per run.

Pass rates and misconception counts are checked against what expected.json implies (each
sample's expected score per test and the misconception each failure is declared to show);
the similarity check must list the copies of honest-a and no pair from two families.
"""
from __future__ import annotations

import csv
import dataclasses
import html
import json
import re
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import (ASSIGNMENT, COURSE, SampleClass, cli, hidden_sources, sample_generator, sample_kit,
                     solution_lines)

from autograder import suites
from autograder.core.extract import Template
from autograder.report.build import write_report
from autograder.report.classlist import Student, from_store
from autograder.report.code import solution_code
from autograder.results import result as results
from autograder.results.store import Store

CLASS = SampleClass(ASSIGNMENT)
FAMILY = {name.removesuffix(".ipynb"): s["derived_from"] for name, s in CLASS.expected.items()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory, sample_results) -> tuple[Path, list[Student]]:
    """The sample class's results store (graded once per run: conftest.py), and its report written."""
    folder = tmp_path_factory.mktemp("report")
    students = from_store(Store(sample_results(ASSIGNMENT)[0], ASSIGNMENT))
    write_report(COURSE, ASSIGNMENT, students, folder / "out")
    return folder / "out", students


def rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_every_sample_is_in_the_report(graded):
    out, students = graded
    assert sorted(s.name for s in students) == sorted(FAMILY)
    assert sorted(r["student"] for r in rows(out / "students.csv")) == sorted(FAMILY)


def test_files_of_one_name_are_each_a_student_of_the_report(tmp_path, sample_results):
    """Two folders each holding a classA.ipynb (a folder per student): named by their file name alone, the last
    result written replaced the other in the report (red team 36). Each is named by its path below the folder
    they share, and a file whose name no other has keeps its name."""
    source = Store(sample_results(ASSIGNMENT)[0], ASSIGNMENT)
    kept = source.submissions()[:3]
    store = Store(tmp_path / "results.jsonl", ASSIGNMENT, CLASS.seed)
    for where, result in zip(["a/classA.ipynb", "b/classA.ipynb", "b/classB.ipynb"], kept):
        store.put(f"key-{where}", dataclasses.replace(result, submission=str(tmp_path / "class" / where)))
    assert sorted(s.name for s in from_store(store)) == ["a/classA", "b/classA", "classB"]


def test_a_name_cannot_act_in_a_terminal_browser_or_spreadsheet(tmp_path, sample_results):
    """File names are the students' text: ESC, BEL, CR and a bidi override went raw into report.html, the student
    pages and the CSVs, and a name starting "=" into students.csv as a formula (red team 36)."""
    source = Store(sample_results(ASSIGNMENT)[0], ASSIGNMENT)
    store = Store(tmp_path / "results.jsonl", ASSIGNMENT, CLASS.seed)
    names = ["esc\x1b]0;TITLE\x07red", "cr\rover", "rtl\u202egnp.exe", "=1+1", "@SUM(1+1)"]
    for name, result in zip(names, source.submissions()):
        store.put(f"key-{name}", dataclasses.replace(result, submission=str(tmp_path / f"{name}.ipynb")))
    write_report(COURSE, ASSIGNMENT, from_store(store), tmp_path / "out")
    for path in (tmp_path / "out").rglob("*"):
        if path.suffix in (".html", ".csv"):
            text = path.read_text(encoding="utf-8")
            assert not any(c in text for c in "\x1b\x07\r\u202e"), path
    listed = [r["student"] for r in rows(tmp_path / "out" / "students.csv")]
    assert "'=1+1" in listed and "'@SUM(1+1)" in listed and "cr\\rover" in listed


def test_pass_rates_are_what_expected_json_implies(graded):
    out, _ = graded
    points = {t.id: t.points for t in suites.load(ASSIGNMENT).tests}
    failed_by = defaultdict(set)
    for name, sample in CLASS.expected.items():
        for test, score in sample["tests"].items():
            if score != points[test]:
                failed_by[test].add(name.removesuffix(".ipynb"))
    report = {r["id"]: r for r in rows(out / "tests.csv")}
    assert list(report) == list(points)                       # every test, in the suite's order
    for test, r in report.items():
        assert int(r["graded"]) == len(CLASS.expected), test
        if not points[test]:          # a 0-point rules test: expected.json cannot say (tests/test_policy.py does)
            continue
        assert int(r["passed"]) == len(CLASS.expected) - len(failed_by[test]), (test, CLASS.seed)
        assert set(r["failed_by"].split()) == failed_by[test], (test, CLASS.seed)


def test_misconception_counts_are_what_expected_json_implies(graded):
    out, _ = graded
    points = {t.id: t.points for t in suites.load(ASSIGNMENT).tests}
    want, lost = defaultdict(set), defaultdict(int)
    for name, sample in CLASS.expected.items():
        for test, misconception in sample["misconceptions"].items():
            want[misconception].add(name.removesuffix(".ipynb"))
            lost[misconception] += points[test] - sample["tests"][test]
    got = defaultdict(set)
    for r in rows(out / "students.csv"):
        for misconception in r["misconceptions"].split():
            got[misconception].add(r["student"])
    assert dict(got) == dict(want), (CLASS.seed, {m: ("only in the report", got[m] - want[m], "only expected", want[m] - got[m])
                                                  for m in set(got) | set(want) if got[m] != want[m]})
    page = (out / "report.html").read_text(encoding="utf-8")
    table = suites.misconceptions(ASSIGNMENT)
    order = sorted(want, key=lambda m: (-lost[m], -len(want[m]), m))
    places = [page.index(f"<b>{m}</b><br>{html.escape(table[m].explanation)}") for m in order]
    assert places == sorted(places), "misconceptions are ordered by the points they cost the class"
    for m in order:                                             # count, points lost and where it is taught
        assert re.search(rf"<b>{m}</b>.*?<td class=n>{len(want[m])}</td><td class=n>{lost[m]}</td><td>"
                         rf"{re.escape(html.escape(table[m].taught))}", page), m


def test_every_misconception_named_is_declared():
    table = suites.misconceptions(ASSIGNMENT)
    named = {t.misconception for t in suites.load(ASSIGNMENT).tests} - {None}
    named |= {m for source in hidden_sources(ASSIGNMENT) for m in re.findall(r'misconception="([\w-]+)"', source)}
    named |= {m for s in CLASS.expected.values() for m in s["misconceptions"].values()}
    assert named <= set(table), named - set(table)
    assert all(m.explanation and m.taught.startswith("Part ") for m in table.values())


def test_crashes_hangs_and_stubs_are_listed_apart(graded):
    out, _ = graded
    apart = {r["student"]: set(r["listed_apart"].split()) for r in rows(out / "students.csv")}
    assert apart["infinite-loop"] == {"timed_out"}
    assert apart["invalid-json"] == {"unreadable"}
    assert apart["untouched-release"] == {"not_attempted"}
    assert apart["crash-at-import"] == {"error"}
    assert apart["full-marks"] == set()
    assert apart["honest-b"] == {"not_attempted"}                 # Part 5 not started (submissions/residual_connections.py)
    assert "held" in apart["forged-mutation-report"]              # its checks passed: held for review


def test_the_report_ends_with_the_review_queue(graded):
    out, students = graded
    waiting = sum(s.result.waiting for s in students)
    assert waiting >= 2                                           # the forged-* samples, at least
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index("<h2>Review queue</h2>") > page.index("<h2>Similar submissions")
    assert f"review: {waiting} submissions of {ASSIGNMENT} wait" in page
    assert f"python -m autograder review {ASSIGNMENT}" in page


def test_copies_are_listed_and_no_honest_pair_is(graded):
    """Threshold (course.toml [report]): 0.45 of the larger side's fingerprints, 50 shared at least."""
    out, _ = graded
    assert (COURSE.report.similarity_threshold, COURSE.report.min_shared) == (0.45, 50)
    listed = {frozenset((r["a"], r["b"])): r for r in rows(out / "pairs.csv")}
    copied = listed[frozenset(("honest-a", "copied-honest-a"))]
    assert copied["identical"] == "byte-identical"
    assert float(listed[frozenset(("honest-a", "renamed-honest-a"))]["share_of_a"]) > 0.9
    assert frozenset(("copied-honest-a", "renamed-honest-a")) in listed
    across = [tuple(p) for p in listed if len({FAMILY[s] for s in p}) > 1]
    assert not across, f"pairs of independently written samples listed: {across}"
    assert all(FAMILY[s] != "release" for p in listed for s in p)   # untouched stubs pair with nobody


def test_page_is_offline_and_shows_no_hidden_or_solution_code(graded):
    out, students = graded
    page = (out / "report.html").read_text(encoding="utf-8")
    for remote in ("http://", "https://", "//cdn", "<script src", "<link", "@import", "url(", "src='http", 'src="http'):
        assert remote not in page.lower(), remote
    assert page.count("<script>") == 1 and "fetch(" not in page and "XMLHttpRequest" not in page   # the sorter alone
    assert re.findall(r"src='([^']*)'", page) and all(s.startswith("data:image/png;base64,")
                                                     for s in re.findall(r"src='([^']*)'", page))
    secret = {line.strip() for hidden in hidden_sources(ASSIGNMENT) for line in hidden.splitlines()
              if len(line.strip()) > 25 and not line.strip().startswith(("def ", "class ", '"""', "#", "@test"))}
    secret |= solution_lines(COURSE.assignment(ASSIGNMENT))
    template = Template(CLASS.solution)
    honest = solution_code(CLASS.folder / "honest-b.ipynb", template)
    secret |= {line.strip() for line in honest.splitlines() if len(line.strip()) > 25}   # a student's own code too
    leaked = [line for line in secret if line and line in page]
    assert not leaked, leaked
    assert "concludes nothing" in page and "pairs to look at" in page.lower()
    views = sorted((out / "pairs").glob("*.html"))
    assert views and all("<mark>" in v.read_text(encoding="utf-8") for v in views)
    assert all(f"href='pairs/{v.name}'" in page for v in views)


def test_charts_are_pngs(graded):
    out, _ = graded
    for name in ("total.png", "parts.png", "tests.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_misconception_stays_out_of_the_json_object():
    """docs/results.md fixes --json; the id and kind are kept in the results store only."""
    t = results.TestResult("a test", 1, 0, 2, "silent broadcasting: ...", "silent-broadcasting", "failed")
    result = results.Result(ASSIGNMENT, 7, [t])
    assert set(result.to_json()["tests"][0]) == {"name", "part", "score", "max_score", "output"}
    stored = result.to_store()["tests"][0]
    assert (stored["misconception"], stored["kind"]) == ("silent-broadcasting", "failed")
    back = results.Result.from_json(result.to_store()).tests[0]
    assert (back.misconception, back.kind) == ("silent-broadcasting", "failed")


def test_a_class_of_200_students_gets_a_row_each(graded, tmp_path):
    """200 students made of the sample class's copies; the report's speed is benchmarks/report_speed.py's."""
    _, students = graded
    big = [replace(students[i % len(students)], name=f"s{i:03d}-{students[i % len(students)].name}")
           for i in range(200)]
    write_report(COURSE, ASSIGNMENT, big, tmp_path / "out")
    assert len(rows(tmp_path / "out" / "students.csv")) == 200


def test_report_command_says_what_to_do_without_results(tmp_path):
    missing = tmp_path / "none.jsonl"
    run = cli("report", ASSIGNMENT, "--results", missing)
    assert run.returncode == 2
    assert "no such results store" in run.stderr and "grade residual-connections" in run.stderr


def test_each_student_has_a_view_with_their_written_answers(graded):
    out, students = graded
    page = (out / "report.html").read_text(encoding="utf-8")
    links = dict((name, view) for view, name in re.findall(r"<a href='(students/\d+\.html)'>([^<]+)</a>", page))
    assert sorted(links) == sorted(s.name for s in students if s.notebook is not None) == sorted(FAMILY)
    written = sample_generator(ASSIGNMENT).WRITTEN
    for name, view in links.items():
        text = (out / view).read_text(encoding="utf-8")
        assert f"<h1>{ASSIGNMENT}: {html.escape(name)}</h1>" in text and "<script" not in text.lower()
        given = written.get(name, {})
        assert text.count("Not answered: the cell still holds YOUR ANSWER HERE.") == \
            (0 if name == "invalid-json" else 4 - len(given)), name
        for answer in given.values():
            assert all(w in text for w in re.findall(r"[A-Za-z]{6,}", re.sub(r"\$[^$]*\$", " ", answer))), name
        result = next(s.result for s in students if s.name == name)
        assert f"<th>total</th><th class=n>{result.score:g} / {result.max_score}</th>" in text
    assert "∂L/∂x_0" in (out / links["full-marks"]).read_text(encoding="utf-8")         # math as text
    assert re.search(r"<td><a href='students/\d+\.html'>partly-right</a></td><td class=n>[\d.]+ / \d+</td>"
                     r"<td class=n>2 of 4</td>", page)


def test_similar_submissions_are_grouped_into_clusters(graded):
    """The copies of honest-a are one cluster of three, listed once with its strongest pair (the byte copy)."""
    out, _ = graded
    page = (out / "report.html").read_text(encoding="utf-8")
    clusters = page[page.index("<h3>Clusters</h3>"):page.index("<h3>Every pair listed</h3>")]
    assert "copied-honest-a; honest-a; renamed-honest-a" in clusters
    row = next(r for r in clusters.split("<tr>") if "copied-honest-a; honest-a" in r)
    assert "copied-honest-a ~ honest-a" in html.unescape(row)


def test_tables_sort_in_the_page(graded):
    out, _ = graded
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<table class=sortable>") >= 4 and "table.sortable" in page[page.index("<script>"):]


def test_roster_names_students_and_lists_who_did_not_submit(graded, tmp_path):
    """With a Canvas roster, each student is "Last, First (ID)", and a roster student with nothing collected
    is listed as not submitted, in the page and in students.csv."""
    from autograder.lms.canvas.roster import Roster, RosterStudent
    from autograder.report.classlist import with_roster
    _, students = graded
    roster = Roster([RosterStudent("Okafor, Ada", "full-marks", "", "", ""),
                     RosterStudent("Zhou, Wei", "51999", "", "", "")], {})
    named = with_roster(students, roster)
    write_report(COURSE, ASSIGNMENT, named, tmp_path / "out")
    listed = {r["student"]: r for r in rows(tmp_path / "out" / "students.csv")}
    assert listed["Okafor, Ada (full-marks)"]["score"] == "100"
    assert listed["Zhou, Wei (51999)"]["listed_apart"] == "did not submit"
    assert len(listed) == len(students) + 1
    page = html.unescape((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    assert "1 on the roster did not submit" in page and "Zhou, Wei (51999)" in page[page.index("Did not submit"):]


def test_review_decisions_show_as_decided(graded, tmp_path):
    """A confirmed held test is listed as confirmed, not as waiting; a released one is passed, not listed apart."""
    from autograder.report.summary import summarise
    _, students = graded
    held = [s for s in students if s.result.held_points]
    assert len(held) >= 2
    confirmed, released = held[0], held[1]
    decided = [replace(s, result=s.result.decided("confirm")) if s is confirmed else
               replace(s, result=s.result.decided("release")) if s is released else s for s in students]
    apart = summarise(decided).apart
    assert "confirmed" in apart[confirmed.name] and "held" not in apart[confirmed.name]
    assert "held" not in apart.get(released.name, {}) and "confirmed" not in apart.get(released.name, {})


def test_the_class_report_is_written_in_the_instructor_folder(monkeypatch, tmp_path):
    from autograder.report.classlist import class_report_dir
    monkeypatch.setenv("COURSE_INSTRUCTOR_DIR", str(tmp_path / "class"))
    assert class_report_dir(ASSIGNMENT) == tmp_path / "class" / "report" / ASSIGNMENT


def test_a_reworded_sentence_renames_nothing(graded, monkeypatch):
    """A test's id is its function's name and its sentence only its title. With one sentence reworded in half
    the class's results (graded before and after the rewording) and in the suite: expected.json's scores are the
    same, every result still matches them, the report counts one test as before, and Gradescope's results.json
    reads back under the same ids."""
    from autograder.lms.gradescope.export import to_result
    from autograder.lms.gradescope.results import to_gradescope
    from autograder.report.summary import summarise
    kit = sample_kit()
    first = suites.load(ASSIGNMENT).tests[0]
    title = "residual_add: the same check, in other words"

    def reworded(result: results.Result) -> results.Result:
        return replace(result, tests=[replace(t, name=title) if t.key == first.id else t for t in result.tests])

    students = [s for s in graded[1] if s.result is not None]
    mixed = [replace(s, result=reworded(s.result)) if i % 2 else s for i, s in enumerate(students)]
    assert sum(any(t.name == title for t in s.result.tests) for s in mixed) == len(students) // 2

    declared = kit.expected_scores(ASSIGNMENT, {first.id})
    suite = suites.load(ASSIGNMENT)
    monkeypatch.setattr(suites, "load", lambda name: SimpleNamespace(
        tests=[replace(t, name=title) if t.id == first.id else t for t in suite.tests]))
    assert kit.expected_scores(ASSIGNMENT, {first.id}) == declared
    for s in mixed:
        assert kit.differences(s.result, CLASS.expected[f"{s.name}.ipynb"]["tests"]) == [], (s.name, CLASS.seed)

    def counts(students: list[Student]) -> tuple:
        s = summarise(students)
        return ({k: (r.part, r.points, r.graded, r.passed, r.failed_by, r.points_lost) for k, r in s.tests.items()},
                s.misconceptions, s.apart)

    assert counts(mixed) == counts(students)
    read_back = [replace(s, result=to_result(json.loads(json.dumps(to_gradescope(s.result, visibility="visible"))),
                                             ASSIGNMENT)) for s in mixed]
    assert all([t.key for t in r.result.tests] == [t.key for t in s.result.tests] for r, s in zip(read_back, students))
    assert counts(read_back) == counts(students)
