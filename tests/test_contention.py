"""A grade does not depend on a neighbour or on the machine's load: each sandbox child has one CPU
(its cgroup), and deadlines are counted in its own CPU time (docs/results.md)."""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbtest
import pytest

from autograder.core.sandbox import BACKSTOP, Child, Sandbox
from autograder.grading.grader import Grader
from autograder.kit import Test as SuiteTest
from autograder.results.result import TestResult as Entry   # as Entry: pytest would collect a Test* name
from helpers import ASSIGNMENT, COURSE, SampleClass

pytestmark = pytest.mark.slow

CLASS = SampleClass(ASSIGNMENT)
SOLUTION = CLASS.folder / "full-marks.ipynb"
# the sample class's notebooks that spend the most CPU (training), one that hangs in a test, and one
# that fails a few tests: each keeps its idle per-test scores (expected.json) on a busy machine
UNDER_LOAD = ["full-marks.ipynb", "infinite-loop.ipynb", "part5-projection-everywhere.ipynb", "pre-post-swapped.ipynb"]
SPINNER = "import os\nfor _ in range(8):\n    if os.fork() == 0:\n        os.setsid()\n        while True:\n            pass\n"


def scores(result) -> dict[str, float]:
    return {t.key: t.score for t in result.tests}


def burner(folder: Path) -> Path:
    """The solution, with 8 processes in sessions of their own spinning from its first solution cell on."""
    nb = json.loads(SOLUTION.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if nbtest.is_solution(c) and c["cell_type"] == "code")
    cell["source"] = SPINNER + "".join(cell["source"])
    path = folder / "burner.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="a cpu cgroup per child needs root")
def test_a_burner_beside_the_solution_leaves_its_scores_as_they_are(tmp_path, sample_results):
    """Graded in a batch beside a notebook whose 8 setsid() processes spin, three times in a row,
    the solution keeps the per-test scores it has alone (as the sample class's grading gave them).
    Once the solution is graded, the batch is closed: the burner's children would spin on (a core
    each) until their own tests end, and what becomes of them is not this test's subject."""
    notebook = burner(tmp_path)
    alone = {t["id"]: t["score"] for t in sample_results(ASSIGNMENT)[1][SOLUTION.name]["tests"]}
    assert alone == CLASS.expected[SOLUTION.name]["tests"], CLASS.seed
    for round in range(3):
        with Grader(ASSIGNMENT, COURSE) as grader, ThreadPoolExecutor(1) as pool:
            burning = pool.submit(grader.grade, notebook, CLASS.seed)
            beside = scores(grader.grade(SOLUTION, CLASS.seed))
            assert not burning.done(), f"round {round}: the burner ended before the solution did"
            grader.close()
            burning.exception(timeout=120)     # its thread has ended: no child of this batch is left
        assert beside == alone, f"round {round}, seed {CLASS.seed}: " + json.dumps(
            {name: (score, alone[name]) for name, score in beside.items() if score != alone[name]})


@pytest.mark.skipif(os.geteuid() != 0, reason="a cpu cgroup per child needs root")
def test_a_busy_machine_gives_the_idle_scores():
    """2 spinning processes per core, outside any grader, while part of the sample class is graded:
    each notebook gets its expected (idle) score per test."""
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * os.cpu_count())]
    try:
        with Grader(ASSIGNMENT, COURSE) as grader, ThreadPoolExecutor(2) as pool:
            results = dict(zip(UNDER_LOAD, pool.map(lambda name: grader.grade(CLASS.folder / name, CLASS.seed),
                                                    UNDER_LOAD)))
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
    for name, result in results.items():
        CLASS.assert_expected(name, result.to_store())


def test_a_test_that_reaches_only_the_backstop_is_retried_once_and_says_so(monkeypatch):
    """With 1 s of CPU time per test, the backstop is at 5 s: `late` waits through its first run
    only (until a time the test fixed before it), `never` through both. The children's waits are
    unknown here (as without schedstat, or for a child the machine starves): a sleep that is known
    to be a sleep is cut at 1 s, not retried (tests/test_box.py)."""
    monkeypatch.setattr(Child, "waited_s", lambda child: None)
    cells = [("a", "import time\ndef late(until):\n    if time.time() < until:\n        time.sleep(60)\n"
                   "    return 1\ndef never():\n    time.sleep(60)\n")]
    with Grader(ASSIGNMENT, COURSE, timeout_s=1) as grader, \
            Sandbox(grader.zygote, cells, None, grader.limits) as box:
        box.start()
        until = time.time() + 2
        late = grader._run(SuiteTest("late", 1, 1, lambda t: t.call("late", until)), box, 1, [], {})
        never = grader._run(SuiteTest("never", 1, 1, lambda t: t.call("never")), box, 1, [], {})
    assert (late.score, late.retried, late.kind) == (1, True, "passed"), late
    assert late.output.startswith("passed\n(retried once, on a fresh process") and late.to_store()["retried"]
    assert Entry.from_json(late.to_store()).retried and not Entry.from_json(late.to_json()).retried
    assert (never.score, never.retried, never.kind) == (0, True, "timed_out"), never
    assert f"waited {BACKSTOP:g} s without finishing" in never.output and "retried once" in never.output
