"""Uploads that are not what they say: a link (to the course's solution, to /dev/zero), a FIFO, a
device file, a file larger than the bound. Each path that reads a student's file refuses them
with a reason and goes on with the others (nbtest.open_file, read_bounded)."""
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import nbtest
import pytest

from autograder import suites
from autograder.course import ROOT, SOLUTIONS
from autograder.lms.canvas import collect
from autograder.lms.gradescope.run import pick_notebook

SOLUTION = SOLUTIONS / "residual-connections" / "residual-connections.ipynb"
HONEST = ROOT / "submissions" / "residual-connections" / "pre-post-swapped.ipynb"
REASONS = {"link-to-solution": "symbolic link", "link-to-zero": "symbolic link", "fifo": "is a FIFO",
           "device": "is a device", "huge": "more than the"}


def hostile_uploads(folder: Path, prefix: str = "", huge_mb: int = 300) -> dict[str, Path]:
    """One upload of each kind in `folder`, named PREFIXKIND.ipynb."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {kind: folder / f"{prefix}{kind}.ipynb" for kind in REASONS}
    paths["link-to-solution"].symlink_to(SOLUTION)
    paths["link-to-zero"].symlink_to("/dev/zero")
    os.mkfifo(paths["fifo"])
    os.mknod(paths["device"], stat.S_IFCHR | 0o666, os.makedev(1, 5))     # what /dev/zero is
    with open(paths["huge"], "wb") as f:          # sparse: no disk, and the bound, not st_size, refuses it
        f.truncate(huge_mb << 20)
    return paths


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device file needs root")
def test_every_kind_is_refused_with_its_reason(tmp_path):
    for kind, path in hostile_uploads(tmp_path).items():
        with pytest.raises(nbtest.NotebookError, match=REASONS[kind]):
            nbtest.read_notebook(path, 1 << 20)
    (tmp_path / "ok.ipynb").write_bytes(SOLUTION.read_bytes())
    assert nbtest.read_notebook(tmp_path / "ok.ipynb")["cells"]


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device file needs root")
def test_a_batch_refuses_each_and_grades_the_others(tmp_path):
    """`grade A FOLDER --json`: a reason for each hostile upload, the honest one graded in full."""
    folder = tmp_path / "class"
    hostile_uploads(folder, huge_mb=40)           # over the grader's bound: 64 cells of max_cell_kb
    (folder / "honest.ipynb").write_bytes(HONEST.read_bytes())
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "residual-connections", str(folder), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {Path(r["submission"]).stem: r for r in map(json.loads, proc.stdout.splitlines())}
    assert set(results) == {*REASONS, "honest"}
    for kind, why in REASONS.items():
        outputs = {t["output"] for t in results[kind]["tests"]}
        assert results[kind]["score"] == 0 and len(outputs) == 1, (kind, outputs)
        assert why in outputs.pop(), kind
    expected = json.loads((HONEST.parent / "expected.json").read_text())["samples"][HONEST.name]["tests"]
    ids = [t.id for t in suites.load("residual-connections").tests]     # --json lists them in the suite's order
    assert dict(zip(ids, (t["score"] for t in results["honest"]["tests"]))) == expected


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device file needs root")
def test_canvas_collect_refuses_each_file_and_each_zip_entry_and_keeps_the_rest(tmp_path):
    archive, extracted = tmp_path / "archive", tmp_path / "extracted"
    hostile_uploads(archive, prefix="x_51009_9_")
    with zipfile.ZipFile(archive / "submissions.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a_51001_1_nb.ipynb", SOLUTION.read_bytes())
        with zf.open("b_51002_2_nb.ipynb", "w", force_zip64=True) as member:    # 300 MiB of zeros, deflated
            zeros = bytes(1 << 20)
            for _ in range(300):
                member.write(zeros)
    (archive / "linked.zip").symlink_to(archive / "submissions.zip")
    problems = collect.extract_archives(archive, extracted)
    assert (extracted / "submissions" / "a_51001_1_nb.ipynb").read_bytes() == SOLUTION.read_bytes()
    assert sorted(p.name for p in extracted.rglob("*") if p.is_file()) == ["a_51001_1_nb.ipynb"]
    for kind, why in REASONS.items():
        assert any(p.startswith(f"x_51009_9_{kind}.ipynb: ") and why in p for p in problems), (kind, problems)
    assert any("entry b_51002_2_nb.ipynb is more than the 256 MiB" in p for p in problems), problems
    assert any(p.startswith("linked.zip: ") and "symbolic link" in p for p in problems), problems
    # files laid in the extracted folder (as nbgrader's zip_collect finds them): planned with a reason each
    uploads = hostile_uploads(tmp_path / "found", prefix="x_51009_9_", huge_mb=300)
    plan = collect.plan_collection(uploads.values(), {"51009": "X"})
    assert plan.chosen == {}
    for kind, why in REASONS.items():
        assert any(p.startswith(f"x_51009_9_{kind}.ipynb: ") and why in p for p in plan.problems), (kind, plan.problems)


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device file needs root")
def test_gradescope_picks_a_link_and_the_grader_refuses_it(tmp_path):
    """The upload's one .ipynb is a link to the solution (it graded 100): picked, then refused when
    read, as the batch test shows the grader does."""
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "mine.ipynb").symlink_to(SOLUTION)
    with pytest.raises(nbtest.NotebookError, match="symbolic link"):
        nbtest.read_notebook(pick_notebook(submission))
