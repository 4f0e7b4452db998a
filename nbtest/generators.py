"""torch.Generator's state setters as torch functions, where the grader and the public tests run cells.

A generator copies a tensor's bytes into its state in set_state (and in __setstate__, which copy.copy and
unpickling call), outside torch's function protocol, and hands them back as numbers (initial_seed): Python reads
a tensor's values there with no call that a TorchFunctionMode is handed. So before the first cell, in the grader's
sandbox child and in the public tests' process, both are replaced, where the type keeps them, by functions that
hand an active mode the call as torch's own functions do, under the names in SETS_STATE:

    install()
    with mode: g.set_state(t)     # mode.__torch_function__(<function torch.Generator.set_state>, ...)

nbtest.tensor_values.values_read counts such a call as one that gave Python the values. torch's type is immutable
to setattr: its own dict is changed, and Python's method cache told (PyType_Modified).
"""
from __future__ import annotations

SETS_STATE = ("torch.Generator.set_state", "torch.Generator.__setstate__")
_INSTALLED: list[bool] = []


def install() -> None:
    """Replace torch.Generator's set_state and __setstate__ (once per process; before any cell)."""
    if _INSTALLED:
        return
    import ctypes
    import gc

    import torch
    from torch.overrides import handle_torch_function, has_torch_function

    generator = torch.Generator
    own = gc.get_referents(generator.__dict__)[0]    # the type's dict, behind its read-only mapping proxy
    for name in SETS_STATE:
        attribute = name.rsplit(".", 1)[1]
        own[attribute] = _handed_to_modes(own[attribute], name, handle_torch_function, has_torch_function)
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(generator))
    _INSTALLED.append(True)


def _handed_to_modes(method, name: str, handle, has):
    """method (a Generator's, C), handing an active mode the call first, as torch's functions do."""
    def sets_state(self, *args):
        if has((self, *args)):
            return handle(sets_state, (self, *args), self, *args)
        return method(self, *args)
    sets_state.__name__ = sets_state.__qualname__ = name
    sets_state.__doc__ = method.__doc__
    return sets_state
