"""How the public tests and the grader call a layer a docstring names (`ffn`): as a notebook's own forward
would. An nn.ModuleList defines no forward of its own (torch's `_forward_unimplemented` raises if it is
called), and a student who runs its children in order in the block's forward has built the FFN; so where a
test calls the layer itself, a ModuleList with no forward runs its children in order, as nn.Sequential does.
Any other module is called as it is (one that defines no forward still raises torch's NotImplementedError).

    as_layer(block.ffn)(x)      # (*, d_in) -> what the last child returns, for a ModuleList; else ffn(x)

The grader's probe calls it in its sandbox child (bound at import, as everything the probe uses), the public
tests in pytest: one rule on both sides.
"""
from __future__ import annotations

from torch import nn

_ModuleList, _NO_FORWARD = nn.ModuleList, nn.Module.forward      # nn.Module.forward is _forward_unimplemented
_type, _issubclass, _tuple, _values, _attribute = type, issubclass, tuple, dict.values, object.__getattribute__


def as_layer(module):
    """module, or, for an nn.ModuleList whose class defines no forward, a function running its children in
    the order _modules holds them (the order `structure` reports and weights are loaded by)."""
    cls = _type(module)            # type(), not __class__, which a class can redefine
    if not (_issubclass(cls, _ModuleList) and cls.forward is _NO_FORWARD):
        return module
    children = _tuple(_values(_attribute(module, "_modules")))

    def in_order(x):
        for child in children:
            x = child(x)
        return x
    return in_order
