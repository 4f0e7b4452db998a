"""python -m autograder new: a tiny third assignment, scaffolded in a copy of the repository and graded end
to end there (release, public tests, hidden suite, samples, nbgrader autograde, Gradescope's run), with no
file touched outside its own folders and its course.toml entry."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import ROOT, CourseError, load
from autograder.scaffold import create

NAME, MODULE = "tiny-residual", "tiny_residual"
# what the loop writes that no one commits (git-ignored), and what the new assignment owns
GENERATED = ("dist/", "instructor/", ".venv")


def repository_copy(dest: Path) -> Path:
    """The repository's files as git sees them (tracked, and untracked but not ignored), under dest."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


def snapshot(root: Path) -> dict[str, str]:
    """{path: sha256} of every file under root but the generated folders."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and not p.relative_to(root).as_posix().startswith(GENERATED)}


def owned(path: str) -> bool:
    """A file the new assignment may write: its entry in course.toml, or one in a folder of its name."""
    return path == "course.toml" or NAME in path.split("/") or MODULE in path.split("/") \
        or path == f"submissions/{MODULE}.py"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return repository_copy(tmp_path_factory.mktemp("scaffold") / "repo")


def run(repo: Path, *args: str, cwd: Path | None = None, env: dict | None = None) -> str:
    """python ARGS in the copy, with the copy's packages; its output (it must succeed)."""
    done = subprocess.run([sys.executable, *args], cwd=cwd or repo, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(repo), **(env or {})})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_a_new_assignment_is_graded_end_to_end_and_touches_nothing_else(repo):
    before = snapshot(repo)
    out = run(repo, "-m", "autograder", "new", NAME)
    assert f"wrote solutions/{NAME}/{NAME}.ipynb" in out and "make release" in out, out

    run(repo, "-m", "autograder", "release")
    student = repo / "dist" / "student" / NAME
    source = repo / "solutions" / NAME / f"{NAME}.ipynb"
    # public tests, as a student runs them: the stub is "not done", the reference passes every one
    stub = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=student,
                          capture_output=True, text=True, timeout=300)
    assert stub.returncode == 1 and "not done" in stub.stdout, stub.stdout
    shutil.copy(source, student / f"{NAME}.ipynb")
    assert "3 passed" in run(repo, "-m", "pytest", "-p", "no:cacheprovider", cwd=student)

    # the hidden suite: full marks for the reference, none for the release
    graded = {which: json.loads(run(repo, "-m", "autograder", "grade", NAME, str(path), "--json"))
              for which, path in (("reference", source), ("release", repo / "assignments" / NAME / f"{NAME}.ipynb"))}
    assert (graded["reference"]["score"], graded["release"]["score"]) == (3, 0), graded

    # its sample class: written beside the others (theirs unchanged), each sample graded as expected
    run(repo, "submissions/make_samples.py")
    assert (repo / "submissions" / NAME / "forgets-alpha.ipynb").is_file()
    assert "0 test scores differ" in run(repo, "submissions/check_samples.py", NAME, "--seeds", "1")

    # nbgrader autograde of a class of two, out of kernel
    for student_id, path in (("alice", source), ("bob", repo / "assignments" / NAME / f"{NAME}.ipynb")):
        folder = repo / "instructor" / "submitted" / student_id / NAME
        folder.mkdir(parents=True)
        shutil.copy(path, folder / f"{NAME}.ipynb")
    out = run(repo, "-m", "autograder", "autograde", NAME)
    assert [line.split() for line in out.splitlines() if line.startswith("  ")] == [
        ["alice", "3", "/", "3"], ["bob", "0", "/", "3"]], out

    # Gradescope: the zip holds this assignment's suite, and its run grades the reference as the grader does
    run(repo, "-m", "autograder", "gradescope")
    from test_gradescope import lay_out, metadata, simulate
    root = lay_out(repo / "gs" / "root", repo / "dist" / "gradescope" / NAME / "autograder.zip", metadata(1),
                   {f"{NAME}.ipynb": source.read_bytes()})
    assert simulate([root])[0]["score"] == 3
    shutil.rmtree(repo / "gs")

    changed = sorted(p for p in set(before) | set(snapshot(repo)) if before.get(p) != snapshot(repo).get(p))
    assert [p for p in changed if not owned(p)] == [], changed
    assert {f"solutions/{NAME}/{NAME}.ipynb", f"autograder/suites/{MODULE}/part1.py", f"assignments/{NAME}/{NAME}.ipynb",
            "course.toml"} <= set(changed)


def test_new_refuses_a_bad_name_an_existing_assignment_and_changes_nothing(tmp_path):
    course_file = tmp_path / "course.toml"
    course_file.write_text((ROOT / "course.toml").read_text())
    (tmp_path / "solutions").symlink_to(ROOT / "solutions")
    course = load(course_file)
    for name, said in (("Tiny", "not an assignment name"), ("tiny--x", "not an assignment name"),
                       ("residual-connections", "exists already"), ("typing", "Python already has")):
        with pytest.raises(CourseError, match=said):
            create(course, name, tmp_path, course_file)
    assert course_file.read_text() == (ROOT / "course.toml").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["course.toml", "solutions"]


def test_new_writes_a_course_entry_that_loads_after_the_last_assignment(tmp_path):
    course_file = tmp_path / "course.toml"
    course_file.write_text((ROOT / "course.toml").read_text())
    (tmp_path / "solutions").mkdir()
    for a in load().assignments.values():
        (tmp_path / "solutions" / a.name).symlink_to(ROOT / "solutions" / a.name)
    written = create(load(course_file, tmp_path / "solutions"), NAME, tmp_path, course_file)
    assert f"solutions/{NAME}/{NAME}.ipynb" in written and f"autograder/suites/{MODULE}/suite.py" in written
    course = load(course_file, tmp_path / "solutions")
    assert list(course.assignments)[-1] == NAME and course.assignment(NAME).auto == {1: 3}
    text = course_file.read_text()
    assert text.index(f"[assignments.{NAME}]") < text.index("[report]")
    assert not any(p.suffix == ".tmpl" for p in tmp_path.rglob("*"))
    with pytest.raises(CourseError, match=rf"\[assignments.{NAME}\] exists already"):   # twice: refused
        create(course, NAME, tmp_path, course_file)
    (tmp_path / "solutions" / "tiny-other").mkdir()      # a folder left from an earlier try: refused too
    with pytest.raises(CourseError, match="solutions/tiny-other exists already"):
        create(course, "tiny-other", tmp_path, course_file)
    assert course_file.read_text() == text and not (tmp_path / "autograder" / "suites" / "tiny_other").exists()
