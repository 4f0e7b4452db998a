"""core/arena.py: a call's read-back arguments in shared memory the grader maps and reads itself."""
import os

import pytest
import torch

from autograder.core import arena


def _child_side(a: arena.Arena) -> list:
    """What the child does with the request: map the descriptor it was sent, view each argument."""
    buffer = arena.child_map(os.dup(a.fd))
    return [arena.view(buffer, arg["arena"]) if isinstance(arg, dict) and "arena" in arg else arg
            for arg in a.request["args"]]


@pytest.mark.parametrize("tensor", [
    torch.randn(3, 5, dtype=torch.float64), torch.randn(7).half(), torch.arange(12).reshape(3, 4),
    torch.tensor([True, False, True]), torch.randn(4, 6).t(),          # a transposed (dense) view
    torch.randn(2, 3, 5).transpose(0, 2)])
def test_the_child_sees_the_grader_s_values_and_the_grader_sees_the_child_s_writes(tensor):
    a = arena.Arena.of({"op": "call", "args": [tensor, 2.0], "readback": [0]})
    try:
        seen, number = _child_side(a)
        assert number == 2.0 and "arena" in a.request["args"][0]
        assert torch.equal(seen, tensor) and seen.stride() == tensor.stride()
        assert torch.equal(a.read()[0], tensor)
        seen.zero_()                                        # an in-place change in the child ...
        assert torch.equal(a.read()[0], torch.zeros_like(tensor))   # ... is what the grader reads back
    finally:
        a.close()


def test_arguments_are_placed_apart_and_aligned():
    x, y = torch.randn(3), torch.randn(5, 5)
    a = arena.Arena.of({"op": "call", "args": [x, "spec", y], "readback": [0, 2]})
    try:
        offsets = [a.request["args"][i]["arena"][0] for i in (0, 2)]
        assert offsets[0] == 0 and offsets[1] % arena.ALIGN == 0 and offsets[1] >= x.numel() * 4
        seen = _child_side(a)
        seen[0].fill_(7)
        assert torch.equal(a.read()[2], y)                  # writing one argument leaves the other alone
    finally:
        a.close()


def test_nothing_to_read_back_or_another_device_means_no_arena():
    assert arena.Arena.of({"op": "call", "args": [torch.ones(2)]}) is None
    assert arena.Arena.of({"op": "call", "args": [torch.ones(2)], "readback": [0], "device": "cuda"}) is None


@pytest.mark.parametrize("bad", [torch.ones(0), torch.ones(3).expand(4, 3), torch.ones(6)[::2], "text"])
def test_what_cannot_be_read_back_is_refused_in_the_grader(bad):
    with pytest.raises(ValueError, match="cannot be read back"):
        arena.Arena.of({"op": "call", "args": [bad], "readback": [0]})
