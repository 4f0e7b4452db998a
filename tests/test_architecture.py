"""autograder/ keeps its layers and nbtest/ stays apart from it (pyproject.toml [tool.importlinter],
docs/architecture.md)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import ROOT

LINT = str(Path(sys.executable).with_name("lint-imports"))


def lint(root: Path) -> subprocess.CompletedProcess:
    """lint-imports with the repository's contracts, on the autograder and nbtest packages found under root."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([LINT, "--no-cache", str(ROOT / "pyproject.toml")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold():
    proc = lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 kept, 0 broken" in proc.stdout


@pytest.mark.parametrize("module, line, broken", [
    ("autograder/core/codec.py", "import nbgrader", "use neither nbgrader nor any LMS"),
    ("autograder/results/result.py", "from ..nbgrading import run", "use neither nbgrader nor any LMS"),
    ("autograder/kit/trial.py", "from ..grading import grader", "autograder is layered"),
    ("autograder/core/extract.py", "from . import sandbox", "no import cycles"),
    ("nbtest/rules.py", "from autograder import course", "imports nothing of the grader"),
    ("nbtest/notebook.py", "from . import rules", "no import cycles"),
])
def test_a_forbidden_import_breaks_a_contract(tmp_path, module, line, broken):
    for package in ("autograder", "nbtest"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / module
    path.write_text(path.read_text() + f"\n{line}\n")
    if module == "autograder/core/extract.py":          # and the other way round: a cycle
        sandbox = tmp_path / "autograder" / "core" / "sandbox.py"
        sandbox.write_text(sandbox.read_text() + "\nfrom . import extract\n")
    proc = lint(tmp_path)
    assert proc.returncode != 0
    assert f"{broken}" in proc.stdout and "BROKEN" in proc.stdout, proc.stdout


def test_the_commands_that_never_grade_start_without_torch():
    """nbgrader's export and feedback load the course's plugins and give the gradebook course.toml's points:
    none of that imports torch (1.5 s of CPU a command), as long as no part may leave the maximum for want
    of a GPU (grading/cuda.py)."""
    code = ("import sys\n"
            "import autograder.nbgrading.plugins, autograder.nbgrading.feedback, autograder.lms.canvas.plugins\n"
            "from autograder.course import load\n"
            "from autograder.grading.cuda import parts_left_out\n"
            "assert parts_left_out(load().assignment('residual-connections'), []) == set()\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'triton'}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
