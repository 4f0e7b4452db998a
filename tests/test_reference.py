"""The reference solution does what docs/contract.md says (beyond the public tests' fixed inputs)."""
import math

import nbtest
import pytest
import torch
from torch import nn

from helpers import SOURCE_NB

SQUARE = (lambda x: 0.1 * x ** 2, lambda x: 0.2 * x)


def test_worked_example(reference):
    assert 2.0 + SQUARE[0](2.0) == pytest.approx(2.4)                      # x1
    assert reference.chain_rule_grad(2.0, [SQUARE], upstream=1.0) == pytest.approx(1.4)  # dx1/dx0
    assert reference.chain_rule_grad(2.0, [SQUARE], upstream=5.0) == pytest.approx(7.0)
    assert reference.split_gradient(2.0, SQUARE[1], 5.0) == pytest.approx((5.0, 2.0))


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_zero_branches_give_alpha_to_the_depth(reference, alpha):
    for depth in range(1, 101):
        norms = reference.gradient_norms(torch.randn(6), [torch.zeros_like] * depth, alpha=alpha)
        assert norms.shape == (depth + 1,)
        assert norms[0].item() == pytest.approx(alpha ** depth, rel=1e-9), depth


def test_plain_stack_of_constant_branches_has_no_gradient(reference):
    norms = reference.gradient_norms(torch.ones(3), [torch.zeros_like] * 4, shortcut=False)
    assert norms.tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]


def test_chain_rule_grad_agrees_with_autograd(reference):
    branches = [(math.sin, math.cos), (lambda x: 0.3 * x ** 3, lambda x: 0.9 * x ** 2)]
    x0 = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    x = x0
    for f in (torch.sin, lambda t: 0.3 * t ** 3):
        x = 0.8 * x + f(x)
    (3.0 * x).backward()
    assert reference.chain_rule_grad(0.7, branches, 3.0, alpha=0.8) == pytest.approx(x0.grad.item())


def encoder_layer(block, norm):
    d = block.ln1.normalized_shape[0]
    ref = nn.TransformerEncoderLayer(d, block.attn.num_heads, 4 * d, dropout=0.0, activation="gelu",
                                     batch_first=True, norm_first=(norm == "pre")).double()
    ref.self_attn.load_state_dict(block.attn.state_dict())
    ref.linear1.load_state_dict(block.ffn[0].state_dict())
    ref.linear2.load_state_dict(block.ffn[2].state_dict())
    ref.norm1.load_state_dict(block.ln1.state_dict())
    ref.norm2.load_state_dict(block.ln2.state_dict())
    return ref


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d_model, n_heads, T", [(12, 3, 7), (32, 4, 1), (48, 8, 9)])
def test_block_equals_encoder_layer(reference, norm, causal, d_model, n_heads, T):
    torch.manual_seed(d_model + T)
    block = reference.TransformerBlock(d_model, n_heads, norm=norm).double()
    with torch.no_grad():  # non-trivial LayerNorm affine parameters
        for ln in (block.ln1, block.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    ref = encoder_layer(block, norm)
    x = torch.randn(3, T, d_model, dtype=torch.float64)
    mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64) if causal else None
    got, want = block(x, causal=causal), ref(x, src_mask=mask, is_causal=causal)
    assert got.shape == x.shape
    assert (got - want).abs().max().item() < 1e-6


def zero_output_projections(block):
    with torch.no_grad():
        for lin in (block.attn.out_proj, block.ffn[2]):
            lin.weight.zero_()
            lin.bias.zero_()
    return block


def test_pre_ln_with_zero_outputs_is_identity_post_ln_is_not(reference):
    x = torch.randn(2, 6, 16) * 3 + 1
    pre = zero_output_projections(reference.TransformerBlock(16, 4, norm="pre"))
    post = zero_output_projections(reference.TransformerBlock(16, 4, norm="post"))
    assert torch.equal(pre(x, causal=True), x) and torch.equal(pre(x), x)
    assert not torch.allclose(post(x), x, atol=1e-2)


@pytest.mark.parametrize("a, b", [((2, 3, 1), (2, 3, 8)), ((4,), (1,)), ((5, 768), (768,)), ((2, 2), (3, 2))])
def test_residual_add_refuses_any_shape_mismatch(reference, a, b):
    with pytest.raises(ValueError) as err:
        reference.residual_add(torch.zeros(a), torch.zeros(b))
    assert str(a) in str(err.value) and str(b) in str(err.value)


def test_bad_norm_names_both_choices(reference):
    with pytest.raises(ValueError, match="'pre' or 'post'.*'mid'"):
        reference.TransformerBlock(8, 2, norm="mid")


def test_residual_stream_norms_grow_in_pre_ln_and_reset_in_post_ln(reference):
    torch.manual_seed(0)
    x = torch.randn(2, 8, 32)
    pre = reference.residual_stream_norms([reference.TransformerBlock(32, 4, "pre") for _ in range(8)], x)
    post = reference.residual_stream_norms([reference.TransformerBlock(32, 4, "post") for _ in range(8)], x)
    assert len(pre) == len(post) == 9
    assert pre[-1] > pre[0] * 1.2
    assert all(v == pytest.approx(math.sqrt(32), rel=1e-3) for v in post[1:])


def notebook_digits(reference) -> tuple[torch.Tensor, torch.Tensor]:
    """(X, y) as the notebook's Part 5 data cell loads them, run on the reference's definitions; torch's
    thread count, which the cell sets to 1, is left as it was."""
    cell = next(c for c in nbtest.read_notebook(SOURCE_NB)["cells"] if c.get("id") == "part5-data")
    scope, threads = dict(vars(reference)), torch.get_num_threads()
    try:
        exec(nbtest.source_of(cell), scope)
    finally:
        torch.set_num_threads(threads)
    return scope["X"], scope["y"]


def test_the_digits_are_what_scikit_learns_load_digits_gives(reference):
    """The notebook reads the file load_digits reads, without importing scikit-learn (2 s of Run All)."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    X, y = notebook_digits(reference)
    assert X.dtype == torch.float32 and y.dtype == torch.int64
    assert torch.equal(X, torch.tensor(digits.data, dtype=torch.float32) / 16.0)
    assert torch.equal(y, torch.tensor(digits.target))


def test_the_sweep_separates_on_other_seeds(reference):
    """Part 5's claims do not hang on seed 0 (the notebook's): on seeds 1 and 2, after the notebook's
    100 steps on the digits, every network fits at depth 2, and at depth 16 only the residual one does."""
    X, y = notebook_digits(reference)
    kinds = {"plain": reference.plain_mlp, "residual": reference.residual_mlp,
             "0.5 shortcut": lambda *args: reference.residual_mlp(*args, alpha=0.5)}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)          # as the notebook does: tiny models, threads only synchronise
    try:
        curves = reference.depth_sweep(X, y, (2, 16), kinds, 100, seeds=(1, 2))
    finally:
        torch.set_num_threads(threads)
    final = {key: [sum(run[-10:]) / 10 for run in runs] for key, runs in curves.items()}
    assert all(v < 0.1 for kind in kinds for v in final[kind, 2]), final
    assert all(v < 0.1 for v in final["residual", 16]), final
    assert all(v > 1.5 for kind in ("plain", "0.5 shortcut") for v in final[kind, 16]), final



def test_the_graders_training_is_the_contracts_train_on_the_whole_set(reference):
    """specs.fit, with which Part 5's deep tests train a student's model, takes the same steps as the
    reference's train with batch = len(X) (SGD, momentum 0.9): losses and parameters agree to rounding, the
    checks of the gradient (specs._slopes), at the first step and at a later one the seed draws, taking nothing
    from the steps."""
    from autograder.suites.residual_connections.specs import fit
    gen = torch.Generator().manual_seed(3)
    X, y = torch.randn(64, 6, generator=gen), torch.randint(0, 3, (64,), generator=gen)
    torch.manual_seed(0)
    ours = reference.residual_mlp(6, 8, 3, 3)
    theirs = reference.residual_mlp(6, 8, 3, 3)
    theirs.load_state_dict(ours.state_dict())
    got, slopes, changed = fit(ours, X, y, 12, 0.1, seed=1)
    want = reference.train(theirs, X, y, 12, lr=0.1, batch=len(X), seed=5)
    assert got == pytest.approx(want, rel=1e-5, abs=1e-6)
    assert [step for step, *_ in slopes] == [0] * 6 + [1 + 1 % 11] * 5 and changed == -1
    for a, b in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


class _Scaled(nn.Linear):
    """A head whose backward passes `factor` of its values' gradient, after `honest_calls` calls that pass it all;
    the values are a Linear's."""

    factor, honest_calls = 1.0, 0

    def forward(self, x):
        out = super().forward(x)
        self.honest_calls -= 1
        return out if self.honest_calls >= 0 else out.detach() + self.factor * (out - out.detach())


@pytest.mark.parametrize("factor, dropout, honest_calls, follows", [
    (1.0, 0.0, 0, [True, True]), (1.0, 0.2, 0, [True, True]), (0.5, 0.0, 0, [False, False]),
    (1e-6, 0.0, 0, [False, False]), (2.0, 0.0, 0, [False, False]), (1e-6, 0.0, 13, [True, False])])
def test_the_gradient_check_tells_a_backward_that_differs_from_its_forward(reference, factor, dropout, honest_calls,
                                                                         follows):
    """specs._slopes, at fit's first step and at the later one its seed draws (of 4 steps, the 4th; not along the
    gradient in the first third), against part5's tolerance: the reference's residual_mlp at the deep tests' depth
    (with a dropout too, which draws the same masks for the gradient and each difference) follows its forward; the
    same model whose head passes another share of its gradient does not, nor one whose head does so only after the
    first step and its check (13 calls)."""
    from autograder.suites.residual_connections import part5
    from autograder.suites.residual_connections.specs import fit
    gen = torch.Generator().manual_seed(4)
    X, y, _, _ = part5.teacher_problem(gen, 256, 16, 4)
    torch.manual_seed(1)
    model = reference.residual_mlp(16, 32, 4, 16)
    model[17] = _Scaled(32, 4)
    model[17].factor, model[17].honest_calls = factor, honest_calls
    if dropout:
        model[5].ffn.append(nn.Dropout(dropout))
    _, slopes, _ = fit(model, X, y, 4, 0.1, seed=2)
    assert [step for step, *_ in slopes] == [0] * 6 + [3] * 5
    agree = [abs(r - f) <= part5.SLOPE_ATOL + part5.SLOPE_RTOL * max(abs(r), abs(f)) for _, r, f in slopes]
    assert [all(agree[:6]), all(agree[6:])] == follows, slopes


def test_layers_finds_a_model_built_otherwise_at_another_depth(reference):
    """specs.layers compares a builder's model at one depth with its model at 3, as the shallow model's layers ran
    before the deep one was built: the reference's agrees, a block placed twice and a dropout too; a head of
    another class past depth 8, two blocks where 16 were asked, a forward that skips blocks it holds, and a class
    attribute that the deep build switches each show."""
    from autograder.suites.residual_connections.specs import layer_outputs, layers
    X = torch.randn(32, 6, generator=torch.Generator().manual_seed(0))
    shallow = reference.residual_mlp(6, 8, 3, 3)
    seen = layer_outputs(shallow, X, 5)
    compare = lambda deep, depth=16, against=(shallow, seen): layers(deep, against[0], X, depth, 3, against[1], 5)
    deep = reference.residual_mlp(6, 8, 3, 16)
    assert compare(deep) == [18, 5, True, []]
    assert compare(nn.Sequential(deep[0], *[deep[1]] * 15, deep[16], deep[17])) == [18, 5, True, []]
    dropped, shallow_dropped = reference.residual_mlp(6, 8, 3, 16), reference.residual_mlp(6, 8, 3, 3)
    for block in [*dropped[:16], *shallow_dropped[:3]]:
        block.ffn.append(nn.Dropout(0.3))
    assert compare(dropped, against=(shallow_dropped, layer_outputs(shallow_dropped, X, 5))) == [18, 5, True, []]
    assert compare(nn.Sequential(*deep[:17], _Scaled(8, 3))) == [18, 5, True, [17]]
    assert compare(reference.residual_mlp(6, 8, 3, 2))[:2] == [4, 5]

    class Skips(nn.Sequential):
        def forward(self, x):
            for layer in [*self[:2], *self[16:]]:
                x = layer(x)
            return x
    assert compare(Skips(*deep)) == [18, 5, False, []]

    class Switched(type(deep[0])):
        add = True

        def forward(self, x):
            return super().forward(x) if Switched.add else self.ffn(self.ln(x))
    switched = lambda depth: nn.Sequential(Switched(6, 8), *[Switched(8, 8) for _ in range(depth - 1)],
                                           nn.LayerNorm(8), nn.Linear(8, 3))
    before = switched(3)
    seen_before = layer_outputs(before, X, 5)
    Switched.add = False        # what a builder past depth 8 could do
    assert compare(switched(16), against=(before, seen_before))[3] == list(range(16))


def test_fit_trains_every_parameter_the_modules_hold_and_reports_a_forward_that_sets_them(reference):
    """specs.fit takes the parameters from the modules' own dicts, so a model whose named_parameters() names the
    head's bias alone is trained whole; and it reports the first step at which the model's forward changed its
    own parameters (a block that puts back the model's start whenever training has moved it)."""
    from autograder.suites.residual_connections.specs import fit
    gen = torch.Generator().manual_seed(3)
    X, y = torch.randn(64, 6, generator=gen), torch.randint(0, 3, (64,), generator=gen)

    class Hides(nn.Sequential):
        def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
            return iter([("head.bias", self[-1].bias)])
    torch.manual_seed(0)
    hiding = Hides(*reference.residual_mlp(6, 8, 3, 3))
    start = [p.detach().clone() for p in nn.Module.parameters(hiding)]
    assert fit(hiding, X, y, 3, 0.1, seed=1)[2] == -1
    assert all(not torch.equal(a, b) for a, b in zip(start, nn.Module.parameters(hiding)))

    class Resets(nn.Sequential):
        def forward(self, x):
            with torch.no_grad():
                for p, s in zip(nn.Module.parameters(self), self.start):
                    p.copy_(s)
            return super().forward(x)
    resetting = Resets(*reference.residual_mlp(6, 8, 3, 3))
    resetting.start = [p.detach().clone() for p in nn.Module.parameters(resetting)]
    assert fit(resetting, X, y, 3, 0.1, seed=1)[2] == 1


def test_initialise_starts_every_linear_and_layernorm_as_pytorch_does(reference):
    """specs.initialise puts a builder's own start (a head and a final LayerNorm at zero, a saddle) back to
    PyTorch's, the same for the same seed, and leaves parameters of the notebook's own modules, and a block's
    shortcut (a square projection set to the identity), as they are."""
    from autograder.suites.residual_connections.specs import initialise

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.gain = nn.Parameter(torch.full((8,), 3.0))

        def forward(self, x):
            return self.gain * x
    made = lambda: nn.Sequential(*reference.residual_mlp(6, 8, 3, 3), Scale())
    model, again = made(), made()
    with torch.no_grad():
        model[3].weight.zero_()
        model[4].weight.zero_()
    model[1].shortcut = again[1].shortcut = nn.Linear(8, 8, bias=False)
    nn.init.eye_(model[1].shortcut.weight)         # one module, in both models
    initialise(model, 7)
    initialise(again, 7)
    assert torch.equal(model[3].weight, torch.ones(8)) and model[4].weight.std() > 0.1
    drawn = lambda m: [p for name, p in m.named_parameters() if "shortcut" not in name]
    assert all(torch.equal(a, b) for a, b in zip(drawn(model), drawn(again)))
    assert torch.equal(model[5].gain, torch.full((8,), 3.0)) and torch.equal(model[1].shortcut.weight, torch.eye(8))


def test_layers_compares_a_layer_that_keeps_its_output_and_puts_its_weights_back(reference):
    """A block that keeps its last output, still on the graph (to look at later: no mistake), cannot be
    deep-copied; specs.layers compares it in place, and puts every weight of the deep model back as it was."""
    from autograder.suites.residual_connections.specs import layer_outputs, layers

    class Keeps(type(reference.residual_mlp(6, 8, 3, 1)[0])):
        def forward(self, x):
            self.last = super().forward(x)
            return self.last
    keeping = lambda depth: nn.Sequential(Keeps(6, 8), *[Keeps(8, 8) for _ in range(depth - 1)],
                                          nn.LayerNorm(8), nn.Linear(8, 3))
    X = torch.randn(32, 6, generator=torch.Generator().manual_seed(0))
    shallow = keeping(3)
    seen = layer_outputs(shallow, X, 5)
    deep = keeping(16)
    deep(X)
    before = {k: v.clone() for k, v in deep.state_dict().items()}
    assert layers(deep, shallow, X, 16, 3, seen, 5) == [18, 5, True, []]
    assert all(torch.equal(before[k], v) for k, v in deep.state_dict().items())


def test_the_margins_benchmark_sees_what_a_grading_sees(sample_results):
    """benchmarks/part5_margins.py, from which Part 5's bounds are set, runs the training tests' own functions
    through a Trial of each test, so its seed N is a grading's: at the sample class's seed, its reference run of
    deep_residual_trains gives the losses that grading full-marks (the reference solution) noted."""
    import importlib.util
    from autograder.course import ROOT
    from autograder.suites.residual_connections import part5
    from helpers import SampleClass
    spec = importlib.util.spec_from_file_location("part5_margins", ROOT / "benchmarks" / "part5_margins.py")
    margins = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(margins)
    _, graded = sample_results("residual-connections")
    noted = next(t["output"] for t in graded["full-marks.ipynb"]["tests"] if t["id"] == "deep_residual_trains")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)          # as in a grading child
    try:
        trial = margins.trial(part5.deep_residual_trains, SampleClass("residual-connections").seed,
                              margins.submission("reference"))
        runs = part5.deep_residual_runs(trial)
    finally:
        torch.set_num_threads(threads)
    losses = [losses for _, losses, _ in runs]
    assert f"training loss {', '.join(f'{l[2]:.3f}' for l in losses)}, on new examples " \
           f"{', '.join(f'{l[3]:.3f}' for l in losses)} (chance" in noted, noted
