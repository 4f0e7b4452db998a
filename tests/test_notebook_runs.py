"""The source notebook runs top to bottom, as an instructor or student runs it in JupyterLab."""
import nbformat
import pytest
from nbclient import NotebookClient

from helpers import SOURCE_NB


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.read(SOURCE_NB, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(SOURCE_NB.parent)}}).execute()
    return {cell.get("id"): cell for cell in nb.cells}


def text_of(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_every_check_cell_passes(executed):
    for part in (1, 2, 3, 4):
        out = text_of(executed[f"part{part}-tests"])
        assert "FAILED" not in out and "not done" not in out, out
        assert f"Part {part}:" in out and "public tests passed" in out, out


def test_no_cell_writes_to_stderr(executed):
    for cid, cell in executed.items():
        if cell.cell_type == "code":
            assert [o for o in cell.outputs if o.get("name") == "stderr"] == [], cid


def test_demos_show_the_lessons_numbers(executed):
    part1 = text_of(executed["part1-demo"])
    assert "-> hidden: 3072 -> out: (2, 10, 768)" in part1
    assert "zeroed last layer gives the identity: True" in part1
    assert "(2, 3, 1)" in part1 and "(2, 3, 8)" in part1
    part2 = text_of(executed["part2-demo"])
    assert "dL/dx0 = 7.0" in part2 and "identity path, branch: (5.0, 2.0)" in part2


def test_survival_plot_is_drawn(executed):
    outputs = executed["part3-plot-cell"].outputs
    assert any("image/png" in o.get("data", {}) for o in outputs)


def test_stream_norms_demo_shows_both_layouts(executed):
    lines = text_of(executed["part4-demo"]).splitlines()
    pre = [float(v) for v in lines[0].split(":")[1].split()]
    post = [float(v) for v in lines[1].split(":")[1].split()]
    assert len(pre) == len(post) == 13
    assert pre[-1] > pre[0]                                   # Pre-LN: the stream grows
    assert all(abs(v - 8.0) < 0.05 for v in post[1:])          # Post-LN: reset to sqrt(64)
