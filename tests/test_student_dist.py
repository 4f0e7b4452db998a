"""dist/student/ works on its own: copied out of the repository, installed in a fresh venv."""
import json
import os
import re
import subprocess
import sys
import venv

import nbtest
import pytest

from autograder.nbgrading import release
from helpers import COURSE, SOURCE_NB, public_test_count

N_PUBLIC = public_test_count(COURSE.assignment("residual-connections"))

pytestmark = pytest.mark.slow


def paste_solutions(notebook, source):
    """Replace each solution cell of `notebook` by the source notebook's cell of the same grade_id."""
    nb = json.loads(notebook.read_text())
    answers = {nbtest.cell_label(c, i): c["source"] for i, c in enumerate(nbtest.read_notebook(source)["cells"])
               if nbtest.is_module_cell(c)}
    for i, cell in enumerate(nb["cells"]):
        if cell["metadata"].get("nbgrader", {}).get("solution") and cell["cell_type"] == "code":
            cell["source"] = answers[nbtest.cell_label(cell, i)]
    notebook.write_text(json.dumps(nb))


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    """A student's machine: the release outside the repository, in a venv of its own."""
    home = tmp_path_factory.mktemp("student")
    dist = release.build_student(home / "course")
    env_dir = home / ".venv"
    venv.create(env_dir, with_pip=True)
    # requirements.txt as shipped; pip finds the CPU build of the pinned torch among this machine's wheels,
    # where a student adds PyTorch's CPU index (README.md). --no-compile: pip's bytecode (0.26 GB of a 2.5 GB
    # environment, 46 of 119 s here) is what Python writes anyway on first import.
    subprocess.run([env_dir / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile", "-r", "requirements.txt"],
                   cwd=dist, check=True, capture_output=True)
    return dist, env_dir / "bin" / "python"


def grader_versions() -> dict[str, str]:
    """The versions of the grader's own torch (without its +cpu build tag), Triton and NumPy."""
    import numpy
    import torch
    import triton
    return {"torch": torch.__version__.split("+")[0], "triton": triton.__version__, "numpy": numpy.__version__}


def test_requirements_pin_what_the_grader_runs():
    text = (release.RELEASE / "requirements.txt").read_text()
    pins = dict(re.findall(r"^([a-z]+)==([\w.]+)", text, re.M))
    assert {name: pins.get(name) for name in ("torch", "triton", "numpy")} == grader_versions(), text


def test_fresh_venv_gets_the_graders_torch_triton_and_numpy(student):
    _, python = student
    probe = subprocess.run([python, "-c", "import json, numpy, torch, triton; print(json.dumps({'torch': "
                            "torch.__version__.split('+')[0], 'triton': triton.__version__, 'numpy': "
                            "numpy.__version__}))"], capture_output=True, text=True, cwd="/",
                           env={"PATH": os.environ["PATH"]})
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == grader_versions()


def test_pytest_from_the_release_root_runs_both_assignments(student):
    dist, python = student
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([python, "-m", "pytest", "--collect-only", "-q"], cwd=dist, capture_output=True,
                          text=True, env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "import file mismatch" not in out, out
    assert "residual-connections/test_public.py" in out and "fused-add-norm/test_public.py" in out, out


def student_pytest(student):
    dist, python = student
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([python, "-m", "pytest"], cwd=dist / "residual-connections",
                          capture_output=True, text=True, env=env, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_environment_is_the_size_the_readme_states(student):
    """The student README says "about 2.5 GB", "Triton about 1 GB": within a quarter of what pip made (its
    bytecode left out, 10%; the tests' imports write some of it back)."""
    dist, python = student
    text = (dist / "README.md").read_text()
    stated = float(re.search(r"about ([\d.]+) GB of disk", text).group(1)) * 1e9
    triton_stated = float(re.search(r"Triton about ([\d.]+) GB", text).group(1)) * 1e9
    env, site = python.parent.parent, next(python.parent.parent.glob("lib/python3*/site-packages"))
    size = lambda folder: sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    assert 0.75 * stated < size(env) < 1.25 * stated, (size(env), stated)
    assert 0.75 * triton_stated < size(site / "triton") < 1.25 * triton_stated, (size(site / "triton"), triton_stated)


def test_fresh_venv_has_no_course_code(student):
    _, python = student
    probe = subprocess.run([python, "-c", "import autograder"], capture_output=True, text=True,
                           cwd="/", env={"PATH": os.environ["PATH"]})
    assert probe.returncode != 0 and sys.executable != str(python)


def test_public_tests_fail_on_the_stubs(student):
    code, out = student_pytest(student)
    assert code == 1 and f"{N_PUBLIC} failed" in out, out
    assert out.count("not implemented yet") >= N_PUBLIC


def test_public_tests_pass_once_the_solutions_are_pasted_in(student):
    dist, _ = student
    paste_solutions(dist / "residual-connections" / "residual-connections.ipynb", SOURCE_NB)
    code, out = student_pytest(student)
    assert code == 0 and f"{N_PUBLIC} passed" in out, out
