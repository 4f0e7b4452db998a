"""What every sample class shares: notebooks built from the release, their expected scores, the files.

    kit.render()             path under submissions/ -> content, for every assignment of course.toml
    kit.stale(files)         the files that differ from what is on disk
    kit.main(doc)            make_samples.py's command line: write them, or --check

An assignment's class is declared by the module named for it, residual-connections by
submissions/residual_connections.py, with these names:

    PARTS           part -> the grade_ids of its solution cells
    HONEST          name -> (description, {grade_id: source}): correct code in other styles, which
                    samples(s) includes (s.honest) and the tests expect to trip no rule, with full marks
    TWINS           forgery -> its honest twin: the same code without the forgery, which it must not outscore
    MEASURED        forgeries that what the grader measures defeats, not the policy (none need be held)
    OUT_OF_REACH    (optional) forgeries of the probe that find it out of reach (tried): still flagged, they
                    score no more than their twin with no test held either
    SHOWN           sample -> {test id: the misconception id its failure shows}
    DERIVED_FROM    sample -> the sample it was made from, where that is not full-marks (or the release
                    for untouched-release)
    WRITTEN         sample -> {grade_id: its answer to that written question}
    samples(s)      name -> (description, notebook dict or raw text, ids of the tests it fails),
                    s a Samples of the assignment

A test's id is its function's name (kit.Test.id; a part's rules test rules_partN): expected.json keys
every test by it, never by the sentence a student reads, so rewording a sentence changes no file here.

A new class needs no more than

    PARTS = {1: ["my_function"]}
    HONEST, TWINS, MEASURED, SHOWN, DERIVED_FROM, WRITTEN = {}, {}, set(), {}, {}, {}

    def samples(s):
        return {"full-marks": ("the reference solution", s.solved(), set()),
                "untouched-release": ("the release as handed out", s.notebook({}), s.checks())}

Every sample starts from the student release (assignments/) and fills its solution cells the way a
student would: with the reference code from solutions/ (the code between the solution markers), or
with a variant that carries one misconception, a crash, a hang or a cheat. expected.json holds each
sample's score per hidden test (by id), derived from the tests each sample is declared to fail. A test that
needs CUDA is expected as graded without it, by course.toml's without_cuda (results.result.not_run).
It also holds the misconception id each failed test is declared to show (SHOWN), and the sample's
family (derived_from): the reference's one-edit variants are near-copies of full-marks by
construction, other families were written independently.
"""
from __future__ import annotations

import argparse
import copy
import functools
import importlib
import json
import re
import textwrap
from pathlib import Path

import nbtest

from autograder import contract, course, suites
from autograder.core.extract import Template
from autograder.grading.grader import Grader
from autograder.results.result import Result, TestResult, not_run

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "submissions"
STUB = re.compile(r"^([ \t]*)# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)", re.M)
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?", re.M | re.S)
PROBE = "autograder.core.probe"   # the sandbox child's probe, as sys.modules named it (forgeries try to reach it)


def tried(forgery: str) -> str:
    """A forgery of the probe, tried as an attacker would: the child takes the probe out of sys.modules before
    the first cell (core/sandbox.py: _out_of_reach), so reaching it fails, and the cell goes on to define its
    functions. Such a forgery scores what its twin does with no test held (OUT_OF_REACH)."""
    return f"try:\n{textwrap.indent(forgery.strip(), '    ')}\nexcept Exception:\n    pass   # the probe is out of reach\n\n"


def edit(text: str, old: str, new: str) -> str:
    """text with `old` replaced; fails loudly when the solution no longer contains it."""
    if old not in text:
        raise SystemExit(f"make_samples.py: {old!r} is no longer in the solution; update this script")
    return text.replace(old, new)


def packed(entries: list[tuple[tuple[str, ...], str, str]]) -> dict[str, tuple[str, dict[str, str]]]:
    """Idiom entries [(idiom names, grade_id, source)], a few notebooks' worth: each entry goes into the
    first notebook that does not yet replace its cell (grading a notebook is slow; one idiom per notebook
    would be 60 of them)."""
    notebooks: list[tuple[list[str], dict[str, str]]] = []
    for names, cell, source in entries:
        target = next((nb for nb in notebooks if cell not in nb[1]), None)
        if target is None:
            target = ([], {})
            notebooks.append(target)
        target[0].extend(names)
        target[1][cell] = source
    return {f"idioms-{i + 1}": ("honest idioms: " + ", ".join(names), cells)
            for i, (names, cells) in enumerate(notebooks)}


class Samples:
    """Notebooks built from an assignment's release, with solution cells filled as a student would.

    parts: part -> the grade_ids of its solution cells (what solved(parts=...) fills).
    """

    def __init__(self, assignment: str, parts: dict[int, list[str]]):
        self.assignment, self.parts = assignment, parts
        self.tests = suites.load(assignment).tests
        release = ROOT / "assignments" / assignment / f"{assignment}.ipynb"
        self.release = json.loads(release.read_text(encoding="utf-8"))
        source = nbtest.read_notebook(ROOT / "solutions" / assignment / f"{assignment}.ipynb")
        self.bodies = {nbtest.cell_label(c, i): [textwrap.dedent(b) for b in SOLUTION.findall(nbtest.source_of(c))]
                       for i, c in enumerate(source["cells"]) if c["metadata"].get("nbgrader", {}).get("solution")
                       and c["cell_type"] == "code"}

    def notebook(self, cells: dict[str, str], delete=lambda cell: False) -> dict:
        """The release with these solution cells' sources, minus the cells `delete` picks."""
        nb = copy.deepcopy(self.release)
        for cell in nb["cells"]:
            label = cell["metadata"].get("nbgrader", {}).get("grade_id")
            if label in cells:
                cell["source"] = cells[label]
        nb["cells"] = [c for c in nb["cells"] if not delete(c)]
        return nb

    def split_cell(self, nb: dict, label: str, at: str) -> dict:
        """The notebook with solution cell `label` split before the line that starts with `at`, as JupyterLab's
        Split Cell does: both halves keep the cell's metadata, nbgrader's grade_id included."""
        index = next(i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == label)
        cell = nb["cells"][index]
        text = "".join(cell["source"])
        cut = text.index("\n" + at) + 1
        second = copy.deepcopy(cell)
        cell["source"], second["source"], second["id"] = text[:cut].rstrip("\n") + "\n", text[cut:], f"{label}-split"
        nb["cells"].insert(index + 1, second)
        return nb

    def without_metadata(self, nb: dict, *labels: str) -> dict:
        """The notebook with the metadata of solution cells `labels` (of every cell, where none is named) gone,
        as a cell typed again into a new one, or a round trip through a tool that keeps no cell metadata."""
        for cell in nb["cells"]:
            if not labels or cell["metadata"].get("nbgrader", {}).get("grade_id") in labels:
                cell["metadata"] = {}
        return nb

    def with_own_cell(self, nb: dict, before: str, source: str) -> dict:
        """The notebook with a code cell of the student's own (no nbgrader metadata) above cell `before`."""
        at = next(i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == before)
        nb["cells"].insert(at, {"cell_type": "code", "execution_count": None, "id": f"own-{before}", "metadata": {},
                                "outputs": [], "source": source})
        return nb

    def filled(self, label: str, bodies: list[str] | None = None, before: str = "", after: str = "") -> str:
        """The release cell `label` with its stubs replaced, in order, by bodies (default: the solution's).

        Bodies are written unindented; each takes the indentation of the stub it replaces.
        """
        release = next(c for c in self.release["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == label)
        text = "".join(release["source"])
        for body in (self.bodies[label] if bodies is None else bodies):
            text = STUB.sub(lambda m: textwrap.indent(body.rstrip("\n"), m.group(1)), text, count=1)
        return before + text + after

    def solved(self, parts=None, **cells: str) -> dict:
        """Reference code in the given parts' cells (all by default), stubs elsewhere; `cells` override
        single cells."""
        out = {label: self.filled(label) for part in (parts or self.parts) for label in self.parts[part]}
        return self.notebook({**out, **cells})

    def body(self, label: str, index: int, *edits: tuple[str, str]) -> list[str]:
        """The solution's bodies for a cell, one of them edited: (old, new) replacements."""
        bodies = list(self.bodies[label])
        for old, new in edits:
            bodies[index] = edit(bodies[index], old, new)
        return bodies

    def checks(self, part: int | None = None) -> set[str]:
        """Ids of the hidden tests (of one part)."""
        return {t.id for t in self.tests if part is None or t.part == part}

    def trusting(self, cell: str | None = None) -> set[str]:
        """Ids of the tests that rest on the child's reports: held for review when the code reaches into the
        grading process (a withhold-severity rule), as every forgery of a report must. A test's trial marks
        what it reads (kit/trial.py: REPORTS), so they are the tests whose pass of the reference read one.
        With `cell`, only those of the parts whose child loads that cell (each part's child loads the cells
        its names need: Template.needed), which is all a construct in that cell can reach."""
        source = course.load().assignment(self.assignment).notebook_path(course.SOLUTIONS)
        template, names = Template(source), contract.load(source.parent)
        reference = template.fill(source)
        resting = resting_on_reports(self.assignment)
        return {t.id for t in self.tests if t.id in resting and
                (cell is None or cell in {label for label, _ in template.needed(reference, names.used_by(t.part), set(names))})}

    def honest(self, styles: dict) -> dict[str, tuple[str, object, set[str]]]:
        """The honest variants (HONEST): the reference with some cells written another way; full marks."""
        return {name: (f"the reference with other, correct code: {description}",
                       self.solved(**{label: textwrap.dedent(src).lstrip() for label, src in cells.items()}), set())
                for name, (description, cells) in styles.items()}


@functools.cache
def resting_on_reports(assignment: str) -> frozenset[str]:
    """Ids of the tests whose pass of the reference solution read a report of the child (TestResult.rests),
    at seed 1; a test that needs CUDA and is not run here rests on nothing it read."""
    source = course.load().assignment(assignment).notebook_path(course.SOLUTIONS)
    with Grader(assignment, course.load()) as grader:
        result = grader.grade(source, 1)
    failed = [t.id for t in result.tests if t.ran and not t.passed]
    if failed:
        raise SystemExit(f"make_samples.py: the reference solution of {assignment} fails {failed}")
    return frozenset(t.id for t in result.tests if t.rests)


def generator(assignment: str):
    """The module that declares an assignment's sample class (submissions/ must be on sys.path)."""
    return importlib.import_module(assignment.replace("-", "_"))


def classes() -> dict:
    """assignment -> the module that declares its sample class, for every assignment of course.toml."""
    return {name: generator(name) for name in course.load().assignments}


def answered(nb: dict, answers: dict[str, str]) -> dict:
    """The notebook with these written-answer cells (grade_id -> text) answered."""
    for cell in nb["cells"]:
        text = answers.get(cell["metadata"].get("nbgrader", {}).get("grade_id"))
        if text is not None:
            cell["source"] = edit("".join(cell["source"]), "YOUR ANSWER HERE", text)
    return nb


def expected_scores(assignment: str, fails: set[str]) -> dict[str, float]:
    """test id -> its expected score: 0 if it fails, else its points; a test that needs CUDA is
    expected as graded on a machine without it (course.toml's without_cuda)."""
    tests = suites.load(assignment).tests
    graded = [TestResult(t.name, t.part, 0 if t.id in fails else t.points, t.points, "", id=t.id)
              for t in tests if not t.needs_cuda]
    scores = {r.id: r.score for r in graded}
    for t in tests:
        if t.needs_cuda:
            rule = course.load().assignment(assignment).timing.without_cuda
            scores[t.id] = not_run(t.name, t.part, t.points, rule, graded).score
    return {t.id: scores[t.id] for t in tests}


def differences(result: Result, expected: dict[str, float]) -> list[str]:
    """A line per test of `result` that did not score what expected.json's `tests` (id -> score) says,
    matched by id: its title is only what the line shows."""
    return [f"{t.key} ({t.name}): {t.score}, expected {expected.get(t.key)}: {t.output[:300]}"
            for t in result.tests if t.score != expected.get(t.key)]


def render() -> dict[str, str]:
    """path under submissions/ -> content, for every file of every sample class."""
    files = {}
    for assignment, module in classes().items():
        s = Samples(assignment, module.PARTS)
        checks = s.checks()
        expected = {}
        for name, (description, nb, fails) in module.samples(s).items():
            if name in module.WRITTEN:
                nb = answered(nb, module.WRITTEN[name])
            unknown = fails - checks
            if unknown:
                raise SystemExit(f"make_samples.py: {assignment}/{name}: no such hidden tests: {sorted(unknown)}")
            files[f"{assignment}/{name}.ipynb"] = nb if isinstance(nb, str) else json.dumps(
                nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
            tests = expected_scores(assignment, fails)
            score = round(sum(tests.values()), 2)
            shown = module.SHOWN.get(name, {})
            if set(shown) - fails:
                raise SystemExit(f"make_samples.py: {assignment}/{name}: a misconception for a test it passes")
            expected[f"{name}.ipynb"] = {"description": description, "score": int(score) if score == int(score)
                                         else score, "tests": tests,
                                         "derived_from": module.DERIVED_FROM.get(
                                             name, "release" if name == "untouched-release" else "full-marks"),
                                         "misconceptions": dict(sorted(shown.items()))}
        files[f"{assignment}/expected.json"] = json.dumps({"assignment": assignment, "samples": expected},
                                                          indent=1) + "\n"
    return files


def stale(files: dict[str, str]) -> list[str]:
    """Files (under submissions/) that differ from what is on disk, and sample files no longer generated."""
    out = [name for name, text in files.items()
           if not (SUBMISSIONS / name).is_file() or (SUBMISSIONS / name).read_text(encoding="utf-8") != text]
    return out + [str(p.relative_to(SUBMISSIONS)) for a in classes() for p in (SUBMISSIONS / a).glob("*.ipynb")
                  if str(p.relative_to(SUBMISSIONS)) not in files]


def main(doc: str) -> int:
    """make_samples.py's command line (doc: its docstring)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that the committed files are up to date")
    args = parser.parse_args()
    files = render()
    if args.check:
        problems = stale(files)
        print("\n".join(f"stale: submissions/{p}" for p in problems) or "sample classes are up to date")
        return 1 if problems else 0
    for assignment in classes():
        folder = SUBMISSIONS / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for p in folder.glob("*.ipynb"):
            if f"{assignment}/{p.name}" not in files:
                p.unlink()
    for name, text in files.items():
        (SUBMISSIONS / name).write_text(text, encoding="utf-8")
    for assignment in classes():
        count = sum(name.startswith(f"{assignment}/") and name.endswith(".ipynb") for name in files)
        print(f"wrote {count} notebooks and expected.json to submissions/{assignment}/")
    return 0
