"""Independently written correct solutions for the residual-connections sample class, and a copy
renamed from one.

Each is what a student who never saw the reference might write: other names, other calls,
other order. The similarity check must not pair them with the reference or with each other;
it must pair honest-a with its byte copy and with renamed(honest-a).

    INDEPENDENT["honest-a"]["residual_add"] -> the bodies of that cell's stubs, in order (unindented)
    renamed(bodies) -> the same code with its local names changed
"""
from __future__ import annotations

import re

INDEPENDENT = {
    "honest-a": {
        "residual_add": [
            """\
if tuple(x.shape) != tuple(fx.shape):
    raise ValueError("shapes differ: x is %s but fx is %s" % (list(x.shape), list(fx.shape)))
out = torch.add(x, fx)
return out
""",
        ],
        "residual": [
            """\
y = self.sublayer(x)
return residual_add(x, y)
""",
        ],
        "projection_shortcut": [
            """\
if d_in != d_out:
    self.proj = nn.Linear(d_in, d_out, bias=False)
else:
    self.proj = None
""",
            """\
if self.proj is None:
    return x
return self.proj(x)
""",
        ],
        "residual_ffn": [
            """\
self.shortcut = ProjectionShortcut(d_in, d_out)
layers = [nn.Linear(d_in, expansion * d_out), nn.GELU(), nn.Linear(expansion * d_out, d_out)]
self.ffn = nn.Sequential(*layers)
""",
            """\
skip = self.shortcut(x)
return residual_add(skip, self.ffn(x))
""",
        ],
        "chain_rule_grad": [
            """\
inputs = []
cur = x0
for F, _ in branches:
    inputs.append(cur)
    cur = alpha * cur + F(cur)
g = upstream
for (F, dF), inp in reversed(list(zip(branches, inputs))):
    g = g * (alpha + dF(inp))
return g
""",
        ],
        "split_gradient": [
            """\
identity_share = upstream
branch_share = dF(x0) * upstream
return (identity_share, branch_share)
""",
        ],
        "gradient_norms": [
            """\
L = len(branches)
states = []
cur = x0.detach().clone().requires_grad_()
for i in range(L):
    states.append(cur)
    nxt = branches[i](cur)
    if shortcut:
        nxt = nxt + alpha * cur
    cur = nxt
out = torch.zeros(L + 1, dtype=torch.float64)
out[L] = 1.0
if L == 0:
    return out
if not cur.requires_grad:
    return out
gs = torch.autograd.grad(cur.sum(), states, allow_unused=True)
top = torch.ones_like(cur).double().norm()
for i, g in enumerate(gs):
    out[i] = 0.0 if g is None else g.double().norm() / top
return out
""",
        ],
        "transformer_block": [
            """\
assert_ok = norm in ["pre", "post"]
if not assert_ok:
    raise ValueError("unknown norm: " + str(norm) + " (choose pre or post)")
self.pre = norm == "pre"
self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
""",
            """\
n = x.size(1)
m = None
if causal:
    m = torch.triu(torch.full((n, n), float("-inf"), device=x.device), diagonal=1)
if self.pre:
    z = self.ln1(x)
    x = x + self.attn(z, z, z, attn_mask=m, need_weights=False)[0]
    x = x + self.ffn(self.ln2(x))
    return x
x = self.ln1(x + self.attn(x, x, x, attn_mask=m, need_weights=False)[0])
x = self.ln2(x + self.ffn(x))
return x
""",
        ],
        "residual_stream_norms": [
            """\
def mean_norm(t):
    return torch.linalg.vector_norm(t, dim=2).mean().item()
result = [mean_norm(x)]
with torch.no_grad():
    cur = x
    for b in blocks:
        cur = b(cur)
        result.append(mean_norm(cur))
return result
""",
        ],
    },
    "honest-b": {
        "residual_add": [
            """\
same = x.shape == fx.shape
if not same:
    msg = f"cannot add {x.shape} and {fx.shape} without broadcasting"
    raise ValueError(msg)
return x.clone().add_(fx)
""",
        ],
        "residual": [
            """\
return x + self.sublayer(x) if self.sublayer(x).shape == x.shape else residual_add(x, self.sublayer(x))
""",
        ],
        "projection_shortcut": [
            """\
self.d_in, self.d_out = d_in, d_out
if d_in != d_out:
    self.proj = nn.Linear(in_features=d_in, out_features=d_out, bias=False)
""",
            """\
return x if self.d_in == self.d_out else self.proj(x)
""",
        ],
        "residual_ffn": [
            """\
self.shortcut = ProjectionShortcut(d_in, d_out)
self.ffn = nn.Sequential()
self.ffn.append(nn.Linear(d_in, d_out * expansion))
self.ffn.append(nn.GELU())
self.ffn.append(nn.Linear(d_out * expansion, d_out))
""",
            """\
return residual_add(self.shortcut(x), self.ffn(x))
""",
        ],
        "chain_rule_grad": [
            """\
total = 1.0
point = x0
for pair in branches:
    total = total * (alpha + pair[1](point))
    point = alpha * point + pair[0](point)
return total * upstream
""",
        ],
        "split_gradient": [
            """\
return (upstream, upstream * dF(x0))
""",
        ],
        "gradient_norms": [
            """\
x = x0.detach().requires_grad_(True)
seq = [x]
for F in branches:
    x = alpha * x + F(x) if shortcut else F(x)
    seq.append(x)
for t in seq:
    if t.requires_grad:
        t.retain_grad()
if seq[-1].requires_grad:
    seq[-1].sum().backward()
vals = []
for t in seq[:-1]:
    vals.append(0.0 if t.grad is None else t.grad.double().norm().item())
last = torch.ones_like(seq[-1]).double().norm().item()
vals = [v / last for v in vals] + [1.0]
return torch.tensor(vals, dtype=torch.float64)
""",
        ],
        "transformer_block": [
            """\
if norm == "pre" or norm == "post":
    self.norm = norm
else:
    raise ValueError(f"norm={norm!r}: use 'pre' or 'post'")
self.ln1 = nn.LayerNorm(d_model)
self.attn = nn.MultiheadAttention(embed_dim=d_model, num_heads=n_heads, batch_first=True)
self.ln2 = nn.LayerNorm(d_model)
self.ffn = ResidualFFN(d_model, d_model, expansion=4).ffn
""",
            """\
B, T, D = x.shape
allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
mask = ~allowed if causal else None
sa = lambda q: self.attn(q, q, q, attn_mask=mask, need_weights=False)[0]
if self.norm == "post":
    x = self.ln1(x + sa(x))
    return self.ln2(x + self.ffn(x))
x = x + sa(self.ln1(x))
return x + self.ffn(self.ln2(x))
""",
        ],
        "residual_stream_norms": [
            """\
out = []
with torch.no_grad():
    out.append(float(x.norm(p=2, dim=-1).mean()))
    for blk in blocks:
        x = blk(x)
        out.append(float(x.norm(p=2, dim=-1).mean()))
return out
""",
        ],
    },
}

# honest-a's local names and what the near-copy calls them (whole words, never inside strings)
RENAMES = {"out": "total", "y": "branch_out", "layers": "parts", "skip": "identity", "inputs": "seen",
           "cur": "state", "g": "grad", "inp": "point", "identity_share": "through_identity",
           "branch_share": "through_branch", "states": "history", "nxt": "following", "gs": "grads",
           "top": "scale", "assert_ok": "valid", "m": "attn_mask", "z": "normed", "result": "norms",
           "mean_norm": "token_norm", "b": "block"}


def renamed(bodies: list[str]) -> list[str]:
    """The bodies with RENAMES applied to their code (string literals left alone)."""
    pattern = re.compile(r"(\"[^\"\n]*\"|'[^'\n]*')|\b(" + "|".join(map(re.escape, RENAMES)) + r")\b")
    return [pattern.sub(lambda m: m.group(1) or RENAMES[m.group(2)], body) for body in bodies]
