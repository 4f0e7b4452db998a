"""The source notebook runs top to bottom, as an instructor or student runs it in JupyterLab."""
import math
import re

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
    for part in (1, 2, 3, 4, 5):
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


# Each number the text quotes, the cell that prints it, and how the text quotes it. The text is the
# notebook's markdown (written answers included); a number that changes in a cell must change there too.
# Printed numbers are compared with NEAR: another CPU sums a 300-layer product in another order and may
# print 785.8 where this one prints 786.
QUOTED = [
    ("part2-shrink", "4.317124741065784e-05", r"0.99^{1000} \approx 4.3 \cdot 10^{-5}"),
    ("part3-s0", "x + F(x): s_0 = 4.56, min 1, max 4.56, per block 1.052", "| $x + F(x)$ | 4.56 | 1.052 |"),
    ("part3-s0", "0.9 x + F(x): s_0 = 1.39, min 0.966, max 1.47, per block 1.011",
     "| $0.9\\,x + F(x)$ | 1.39 (between 0.966 and 1.47 at every layer) | 1.011 |"),
    ("part3-s0", "0.5 x + F(x): s_0 = 0.000151, min 0.000151, max 1, per block 0.7459",
     "| $0.5\\,x + F(x)$ | $1.5 \\cdot 10^{-4}$ | 0.746 |"),
    ("part3-s0", "F(x), no shortcut: s_0 = 8.03e-08, min 8.03e-08, max 1, per block 0.5801",
     "| $F(x)$, no shortcut | $8.0 \\cdot 10^{-8}$ | 0.580 |"),
    ("part3-deep", "s_0 = 124.6 (seed 0), 124.6 to 786 over seeds 0-9", "about 125 times the upstream one (seed 0; from 125 to 786 over ten seeds)"),
    ("part3-deep", "s_0 = 1.074 (seed 0), 1.01 to 1.27 over seeds 0-9", "1.07 scaled (seed 0; 1.01 to\n1.27 over ten seeds)"),
    ("part4-demo", " pre-LN:   7.9   8.2", "7.9 to 10.9 over twelve\nblocks"),
    ("part4-demo", "10.5  10.9\n", "7.9 to 10.9"),
    ("part4-demo", "post-LN:   7.9   8.0   8.0", "8.0 throughout"),
]

NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
RTOL = 0.01   # of a quoted number, or one unit of its last printed digit where that is more


def near(printed: str, output: str) -> bool:
    """Whether output holds printed's text with each number within RTOL (or one last-digit unit) of printed's."""
    pieces = re.split(f"({NUMBER})", printed)            # text, number, text, ..., text
    wanted = pieces[1::2]
    pattern = "".join(f"({NUMBER})" if i % 2 else re.escape(p) for i, p in enumerate(pieces))

    def close(got: str, want: str) -> bool:
        mantissa = re.sub(r"e.*", "", want.lower())
        unit = 10.0 ** -len(mantissa.partition(".")[2]) * (10.0 ** int(want.lower().partition("e")[2] or 0))
        return abs(float(got) - float(want)) <= max(RTOL * abs(float(want)), unit * 1.0000001)

    return any(all(close(g, w) for g, w in zip(m.groups(), wanted)) for m in re.finditer(pattern, output))


def test_near_allows_only_last_digit_noise():
    assert near("124.6 to 786 over", "124.6 to 785.8 over") and near("s_0 = 0.000151", "s_0 = 0.000152")
    assert not near("124.6 to 786 over", "124.6 to 775 over") and not near("s_0 = 1.074", "s_0 = 1.094")
    assert not near("per block 1.052", "per blocks 1.052")


@pytest.mark.parametrize("cid, printed, quoted", QUOTED, ids=[f"{c}:{p[:20]}" for c, p, _ in QUOTED])
def test_the_texts_numbers_are_what_the_cells_print(executed, cid, printed, quoted):
    markdown = "\n".join(c.source for c in executed.values() if c.cell_type == "markdown")
    assert near(printed, text_of(executed[cid])), f"{cid} no longer prints {printed!r}: {text_of(executed[cid])}"
    assert quoted in markdown, f"the text no longer quotes {quoted!r} (printed by {cid})"


def test_the_texts_arithmetic():
    markdown = "\n".join(c.source for c in nbformat.read(SOURCE_NB, as_version=4).cells if c.cell_type == "markdown")
    claims = [(0.9 ** 50, 0.005, 1e-3, r"0.9^{50} \approx 0.005"), (1.1 ** 50, 117, 1, r"1.1^{50} \approx 117"),
              (0.5 ** 20, 9.5e-7, 1e-8, r"0.5^{20} \approx 9.5 \cdot 10^{-7}"),
              (2 - math.exp(0.5), 0.35, 0.01, r"2 - e^{0.5} \approx 0.35"),
              (0.99 ** 1000, 4.3e-5, 1e-6, r"\approx 4.3 \cdot 10^{-5}")]
    for value, quoted, last_digit, text in claims:   # each is the value rounded to the digits quoted
        assert text in markdown, text
        assert abs(value - quoted) <= last_digit / 2, (text, value)


def test_sweep_shows_what_the_text_says(executed):
    """Part 5's text and written answer: all three fit at depth 2; from depth 16 the plain and the
    0.5-shortcut networks stay near chance (ln 10 = 2.30) while the residual one trains. The notebook
    runs the quick sweep (depths 2 and 16) unless its FULL_SWEEP is set."""
    rows, depths = {}, None
    for line in text_of(executed["part5-sweep"]).splitlines():
        name, _, values = line.partition(":")
        if name.strip() == "depth" and depths is None:
            depths = [int(d) for d in values.split()]
        if name.strip() in ("plain", "residual", "0.5 shortcut"):   # the loss table comes first
            rows.setdefault(name.strip(), dict(zip(depths, map(float, values.split()))))
    assert depths == [2, 16], depths
    assert set(rows) == {"plain", "residual", "0.5 shortcut"}, rows
    assert all(rows[kind][2] < 0.1 for kind in rows), rows
    assert rows["residual"][16] < 0.1, rows
    assert all(rows[kind][16] > 1.5 for kind in ("plain", "0.5 shortcut")), rows
    assert any("image/png" in o.get("data", {}) for o in executed["part5-sweep"].outputs)


def test_branch_scaling_keeps_the_stream_near_one(executed):
    """Default branches grow the stream and the gradient with depth; 1/sqrt(L) keeps both near 1, zero_init at 1."""
    rows = {}
    for line in text_of(executed["part5-scaling"]).splitlines()[1:]:
        depth, name, stream, grad = line.split()
        rows[int(depth), name] = (float(stream), float(grad))
    assert rows[64, "default"][0] > 2 * rows[4, "default"][0] and rows[64, "default"][1] > 2, rows
    assert all(max(rows[L, "1/sqrt(L)"]) < 1.3 and rows[L, "zero_init"] == (1.0, 1.0) for L in (4, 16, 64)), rows

