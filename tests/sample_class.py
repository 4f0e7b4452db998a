"""An assignment's bundled sample class, and the checks every hidden suite passes on it.

    CLASS = SampleClass("residual-connections")
    results = CLASS.grade_all(grader)             # every sample, graded once with CLASS.seed
    CLASS.assert_expected(name, results[name])    # exactly its expected score per test
    CLASS.assert_no_source(results)               # no hidden-test or solution line in any output
"""
from __future__ import annotations

import importlib
import json
import random
from pathlib import Path

from autograder import suites
from autograder.course import ROOT
from autograder.extract import Template
from autograder.score import MAX_OUTPUT


class SampleClass:
    def __init__(self, assignment: str):
        self.assignment = assignment
        self.folder = ROOT / "submissions" / assignment
        self.expected = json.loads((self.folder / "expected.json").read_text())["samples"]
        self.solution = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
        self.release = ROOT / "assignments" / assignment / f"{assignment}.ipynb"
        self.seed = random.randrange(2 ** 31)   # drawn per run, named in every failure message

    def grade_all(self, grader) -> dict[str, dict]:
        return {name: grader.grade(self.folder / name, self.seed) for name in self.expected}

    def assert_expected(self, name: str, result: dict) -> None:
        want = self.expected[name]["tests"]
        diff = {t["name"]: f"got {t['score']}, expected {want[t['name']]}: {t['output']}"
                for t in result["tests"] if t["score"] != want[t["name"]]}
        assert not diff, f"{name} with seed {self.seed}: {json.dumps(diff, indent=1)}"
        assert result["score"] == self.expected[name]["score"]

    def assert_no_source(self, results: dict[str, dict]) -> None:
        """No output shows a line of the hidden suite, its child-side specs, or the solution cells."""
        modules = [suites.hidden_name(self.assignment), suites.specs_name(self.assignment)]
        hidden = [Path(importlib.import_module(m).__file__).read_text() for m in modules]
        solution = [src for _, src, student in Template(self.solution).cells if student]
        secret = {line.strip() for text in [*hidden, *solution] for line in text.splitlines()
                  if len(line.strip()) > 25 and not line.strip().startswith(("def ", "class ", '"""', "#"))}
        for name, result in results.items():
            for t in result["tests"]:
                leaked = [line for line in secret if line in t["output"]]
                assert not leaked, f"{name} / {t['name']} shows source: {leaked}"
                assert len(t["output"]) <= MAX_OUTPUT
