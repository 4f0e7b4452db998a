"""What several test modules share (no test module imports another): the course's paths,
the assignments, their solution lines, and each assignment's bundled sample class.

    CLASS = SampleClass("residual-connections")
    results = sample_results(CLASS.assignment)[1] # conftest.py: every sample, graded once per run with CLASS.seed
    results = CLASS.grade_all(grader)             # the same by a grader of the module's own (fused: on the CPU)
    CLASS.assert_expected(name, results[name])    # exactly its expected score per test
    CLASS.assert_no_source(results)               # no hidden-test or solution line in any output
    CLASS.twins, CLASS.honest                     # forgery -> honest twin; the honest style variants
    proc = cli("grade", ASSIGNMENT, path)         # `python -m autograder grade ...` in this process
"""
from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbtest

from autograder import course, suites
from autograder.cli import main
from autograder.course import ROOT
from autograder.core.extract import Template
from autograder.results.result import MAX_OUTPUT, Result


ASSIGNMENT = "residual-connections"
SOURCE_NB = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
RELEASE_NB = ROOT / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
COURSE = course.load()
ASSIGNMENTS = list(COURSE.assignments.values())
NAMES = [a.name for a in ASSIGNMENTS]
SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def sample_kit():
    """submissions/samplekit.py, which writes the sample classes (submissions/ is no package: it goes on
    sys.path, where the modules that declare the classes are found too)."""
    if str(ROOT / "submissions") not in sys.path:
        sys.path.insert(0, str(ROOT / "submissions"))
    return importlib.import_module("samplekit")


def sample_generator(assignment: str):
    """The module that declares an assignment's sample class (submissions/residual_connections.py, ...)."""
    return sample_kit().generator(assignment)


def cli(*args) -> subprocess.CompletedProcess:
    """`python -m autograder ARGS` run in this process (cli.main): its exit status and what it printed, without
    a fresh interpreter importing torch or nbgrader again. A process it starts (nbgrader, a fork server) prints
    where it would anyway, and so does the progress bar (results.render.Progress keeps the stderr of its import).
    Tests of the process itself (a real interpreter's exit status, signals, stdout kept apart from stderr, its
    environment) start one instead."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:        # argparse refusing the arguments
            code = e.code
    return subprocess.CompletedProcess(["python", "-m", "autograder", *map(str, args)], code, out.getvalue(),
                                       err.getvalue())


def public_test_count(a) -> int:
    """How many public tests an assignment's test_public.py defines."""
    return len(re.findall(r"^def test_part", (a.notebook_path(ROOT / "solutions").parent / "test_public.py")
                          .read_text(), re.M))


def solution_lines(a) -> set[str]:
    """Non-trivial lines that occur in the source notebook only between solution markers."""
    source = a.notebook_path(ROOT / "solutions")
    src = "\n".join(nbtest.source_of(c) for c in nbtest.read_notebook(source)["cells"])
    inside = {l.strip() for r in SOLUTION_REGION.findall(src) for l in r.splitlines() if len(l.strip()) > 12}
    outside = SOLUTION_REGION.sub("", src) + (source.parent / "test_public.py").read_text()
    return {l for l in inside if l not in outside}


def hidden_sources(assignment: str) -> list[str]:
    """The text of the assignment's hidden tests: its suite module and each part module."""
    modules = [suites.hidden_name(assignment), *suites.part_names(assignment)]
    return [Path(importlib.util.find_spec(m).origin).read_text() for m in modules]


SAMPLE_TIMEOUT_S = 3.0   # per hidden test when a sample class is graded; the course's 20 s would make the hanging sample slow


class SampleClass:
    def __init__(self, assignment: str):
        self.assignment = assignment
        self.folder = ROOT / "submissions" / assignment
        self.expected = json.loads((self.folder / "expected.json").read_text())["samples"]
        self.solution = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
        self.release = ROOT / "assignments" / assignment / f"{assignment}.ipynb"
        self.seed = int(os.environ["SAMPLE_SEED"])   # drawn per run (conftest.py), named in every failure message
        generator = sample_generator(assignment)
        self.twins = {f"{k}.ipynb": f"{v}.ipynb" for k, v in generator.TWINS.items()}
        self.measured = {f"{k}.ipynb" for k in generator.MEASURED}   # not the policy's to stop
        self.out_of_reach = {f"{k}.ipynb" for k in getattr(generator, "OUT_OF_REACH", ())}   # the probe's gone
        self.honest = [f"{name}.ipynb" for name in generator.HONEST]

    def grade_all(self, grader) -> dict[str, dict]:
        return {name: grader.grade(self.folder / name, self.seed).to_store() for name in self.expected}

    def assert_expected(self, name: str, result: dict) -> None:
        diff = sample_kit().differences(Result.from_json(result), self.expected[name]["tests"])
        assert not diff, f"{name} with seed {self.seed}: " + "\n".join(diff)
        assert result["score"] == self.expected[name]["score"]

    def assert_forgeries_gain_nothing(self, results: dict[str, dict]) -> None:
        """Each forgery scores no more than its honest twin, and is flagged for review unless a test's own
        measurement is what stops it (`measured`) or it finds the probe out of reach (`out_of_reach`)."""
        for forged, twin in self.twins.items():
            got, honest = results[forged], results[twin]
            assert got["score"] <= honest["score"], f"{forged} {got['score']} > {twin} {honest['score']} " \
                                                    f"(seed {self.seed})"
            # a table of answers is defeated by the seeds, a measured forgery by the tests: neither need be flagged
            if not forged.startswith("oracle") and forged not in self.measured | self.out_of_reach:
                assert got["review"], f"{forged} was not flagged for review"

    def assert_no_source(self, results: dict[str, dict]) -> None:
        """No output shows a line of the hidden suite, its child-side specs, or the solution cells."""
        hidden = [*hidden_sources(self.assignment),
                  Path(importlib.util.find_spec(suites.specs_name(self.assignment)).origin).read_text()]
        solution = [src for _, src, student in Template(self.solution).cells if student]
        secret = {line.strip() for text in [*hidden, *solution] for line in text.splitlines()
                  if len(line.strip()) > 25 and not line.strip().startswith(("def ", "class ", '"""', "#"))}
        for name, result in results.items():
            for t in result["tests"]:
                leaked = [line for line in secret if line in t["output"]]
                assert not leaked, f"{name} / {t['name']} shows source: {leaked}"
                assert len(t["output"]) <= MAX_OUTPUT, f"{name} / {t['name']}: {len(t['output'])} characters"


def write_export(path: Path, submissions: dict[str, tuple[list[tuple[str, str]], dict | None, dict[str, bytes]]]) -> Path:
    """A Gradescope "Export Submissions" zip: {folder: ([(name, sid)], results.json or None, {file: bytes})},
    laid out as Gradescope's (assignment_1_export/, submission_metadata.yml with Ruby's symbol keys)."""
    top = "assignment_1_export/"
    lines = []
    for folder, (people, _, _) in submissions.items():
        lines += [f"{folder}:", "  :submitters:"]
        for name, sid in people:
            lines += [f"  - :name: {name}", f"    :sid: '{sid}'", f"    :email: {sid}@example.edu"]
        lines += ["  :created_at: 2027-02-10 10:00:00.000000000 +00:00", "  :score: 10.0", "  :status: processed"]
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{top}submission_metadata.yml", "\n".join(lines) + "\n")
        for folder, (_, doc, files) in submissions.items():
            for name, data in files.items():
                zf.writestr(f"{top}{folder}/{name}", data)
            if doc is not None:
                zf.writestr(f"{top}{folder}/results/results.json", json.dumps(doc))
    return path
