"""The course secret in the instructor's loop: `python -m autograder secret` says where it lives and its
fingerprint, never the secret; a class graded with another secret is refused in one line that says what to do."""
from __future__ import annotations

import os
import subprocess
import sys

from autograder.course import ROOT
from autograder.demo import loop as demo

A, B = "aa" * 32, "bb" * 32


def command(*args: str, module: str = "autograder", **env: str) -> subprocess.CompletedProcess:
    """`python -m MODULE ARGS` with the course secret's variables replaced by `env`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RESIDUAL_COURSE_SECRET")}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env={**clean, **env},
                          capture_output=True, text=True, timeout=600)


def test_secret_shows_where_and_fingerprint_never_the_secret(tmp_path):
    home = {"XDG_CONFIG_HOME": str(tmp_path)}
    path = tmp_path / "residual-course" / "secret"
    before = command("secret", **home)
    assert before.returncode == 0 and "not made yet" in before.stdout and str(path) in before.stdout
    made = command("secret", "--create", **home)
    assert made.returncode == 0, made.stderr
    assert path.stat().st_mode & 0o777 == 0o600
    secret = path.read_text().strip()
    shown = command("secret", **home)
    assert f"{path} (the default file)" in shown.stdout and secret not in shown.stdout + shown.stderr
    again = command("secret", "--create", **home)
    assert again.returncode == 1 and again.stdout == "" and len(again.stderr.splitlines()) == 1
    assert path.read_text().strip() == secret
    from autograder.core.seeds import secret_id
    assert command("secret", RESIDUAL_COURSE_SECRET=A).stdout.count(secret_id(bytes.fromhex(A))) == 1
    inside = ROOT / "secret-in-the-repository"
    refused = command("secret", "--create", RESIDUAL_COURSE_SECRET_FILE=str(inside))
    assert refused.returncode == 1 and "inside the course repository" in refused.stderr and not inside.exists()
    path.chmod(0o644)
    loose = command("secret", **home)
    assert loose.returncode == 1 and loose.stderr.splitlines() == [f"error: the course secret {path} is readable "
                                                                   f"by others: chmod 600 {path}"]


def test_a_class_graded_with_another_secret_is_one_line_of_advice(tmp_path):
    instructor = tmp_path / "instructor"
    folder = instructor / "submitted" / "s0" / demo.ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{demo.ASSIGNMENT}.ipynb").write_bytes((demo.SAMPLES / "untouched-release.ipynb").read_bytes())
    where = {"COURSE_INSTRUCTOR_DIR": str(instructor)}
    first = command("autograde", demo.ASSIGNMENT, "--workers", "1", RESIDUAL_COURSE_SECRET=A, **where)
    assert first.returncode == 0, first.stderr
    from autograder.core.seeds import secret_id
    store = instructor / "grading" / f"{demo.ASSIGNMENT}.jsonl"
    nbgrader = {"module": "nbgrader", **where}
    for args, env in ((("autograde", demo.ASSIGNMENT, "--workers", "1"), where),
                      (("review", demo.ASSIGNMENT, "--confirm", "s0"), where),
                      (("autograde", demo.ASSIGNMENT, "--force", "--log-level=ERROR"), nbgrader)):
        other = command(*args, RESIDUAL_COURSE_SECRET=B, **env)
        assert other.returncode != 0 and other.stdout == ""
        line, = other.stderr.splitlines()
        for said in (secret_id(bytes.fromhex(A)), secret_id(bytes.fromhex(B)), f"move {store} away",
                     "RESIDUAL_COURSE_SECRET_FILE"):
            assert said in line, line
    # plain nbgrader stopped at the first student, leaving no folder that a run without --force would skip
    assert not (instructor / "autograded" / "s0" / demo.ASSIGNMENT).exists()
