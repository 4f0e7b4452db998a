"""Run All on an untouched release, as a student's first click does: every cell runs, each
unfinished part says so in one line, and no output holds a traceback."""
import re

import nbformat
import pytest
from nbclient import NotebookClient

from helpers import ASSIGNMENTS, ROOT, public_test_count

# Without CUDA these cells say there is no GPU and call nothing of the student's.
CUDA_ONLY = {("fused-add-norm", "part2-benchmark"), ("fused-add-norm", "part2-tests")}


@pytest.fixture(scope="module", params=ASSIGNMENTS, ids=lambda a: a.name)
def executed(request):
    """The release notebook after nbclient ran it top to bottom, errors not allowed."""
    a = request.param
    path = a.notebook_path(ROOT / "assignments")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return a, nb


def public_tests_of(a):
    return a.notebook_path(ROOT / "assignments").parent / "test_public.py"


def text_of(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_every_check_cell_lists_its_tests_as_not_done(executed):
    a, nb = executed
    checks = [c for c in nb.cells if c.get("id", "").endswith("-tests")]
    listed = 0
    for cell in checks:
        part = int(cell.id[len("part"):-len("-tests")])
        out = text_of(cell)
        if (a.name, cell.id) in CUDA_ONLY:
            assert "there is none here" in out, out
            continue
        lines = [l for l in out.splitlines() if l.startswith("  ")]
        assert lines and all(l.startswith("  not done") for l in lines), out
        assert f"Part {part}: 0 of {len(lines)} public tests passed ({len(lines)} not done)." in out, out
        listed += len(lines)
    cuda_tests = len(re.findall(r"^def test_part2_", public_tests_of(a).read_text(), re.M)) if a.name == "fused-add-norm" else 0
    assert listed == public_test_count(a) - cuda_tests


def test_unfinished_demos_say_so_in_one_line(executed):
    a, nb = executed
    demos = [c for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])]
    assert demos
    said, parts = [], set()
    for cell in demos:
        out = text_of(cell)
        if (a.name, cell.id) in CUDA_ONLY:
            continue
        # a stub is named once: a part's later demo cells that reach the same stub print nothing
        assert out == "" or out.count("\n") == 1 and out.endswith("then run this part's cells again.\n"), out
        assert not any("image/png" in o.get("data", {}) for o in cell.outputs), f"{cell.id} drew empty axes"
        if out:
            said.append(out)
            parts.add(cell.id.split("-")[0])
    assert len(said) == len(set(said)), said
    assert parts == {c.id.split("-")[0] for c in demos if (a.name, c.id) not in CUDA_ONLY}, (parts, said)


def test_no_output_holds_a_traceback(executed):
    a, nb = executed
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o.output_type != "error", f"{a.name} {cell.get('id')}: {o.get('ename')}"
            assert o.get("name") != "stderr" and "Traceback" not in o.get("text", ""), (cell.get("id"), o)
