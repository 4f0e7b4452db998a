"""core/arena.py: a call's read-back arguments in a sealed memfd, kept by the child the moment the call returns;
and a traced call's result, encoded before any code of the call's can run again (core/probe.py)."""
import contextlib
import gc
import mmap
import os
import weakref

import pytest
import torch

from autograder.core import arena, probe


def _child_side(a: arena.Arena) -> tuple[mmap.mmap, list]:
    """What the child does with the request: map the descriptor it was sent, hand a copy of each argument."""
    buffer = arena.child_map(os.dup(a.fd))
    return buffer, [arena.hand(buffer, arg["arena"]) if isinstance(arg, dict) and "arena" in arg else arg
                    for arg in a.request["args"]]


def _call(fn, handed: list):
    """fn called as the probe calls it: on the copies handed, what it left kept the moment it returns."""
    return arena.keeping(fn, [h for h in handed if isinstance(h, arena.Handed)])(
        *(h.given if isinstance(h, arena.Handed) else h for h in handed))


def _in_place(x, *rest):
    x.zero_()
    return x


@pytest.mark.parametrize("tensor", [
    torch.randn(3, 5, dtype=torch.float64), torch.randn(7).half(), torch.arange(12).reshape(3, 4),
    torch.tensor([True, False, True]), torch.randn(4, 6).t(),          # a transposed (dense) view
    torch.randn(2, 3, 5).transpose(0, 2)])
def test_the_child_sees_the_grader_s_values_and_the_grader_reads_what_the_call_left(tensor):
    a = arena.Arena.of({"op": "call", "args": [tensor, 2.0], "readback": [0]})
    try:
        buffer, handed = _child_side(a)
        seen, number = handed[0].given, handed[1]
        assert number == 2.0 and "arena" in a.request["args"][0]
        assert torch.equal(seen, tensor) and seen.stride() == tensor.stride()
        _call(lambda x, n: x, handed)                             # a call that changes nothing ...
        assert torch.equal(a.read()[0], tensor) and not a.changed()   # ... reads back unchanged
        _call(_in_place, handed)                                  # an in-place change in the child ...
        assert torch.equal(a.read()[0], torch.zeros_like(tensor))   # ... is what the grader reads back
        assert a.changed()
    finally:
        a.close()


def test_arguments_are_placed_apart_and_aligned():
    x, y = torch.randn(3), torch.randn(5, 5)
    a = arena.Arena.of({"op": "call", "args": [x, "spec", y], "readback": [0, 2]})
    try:
        offsets = [a.request["args"][i]["arena"][0] for i in (0, 2)]
        assert offsets[0] == 0 and offsets[1] % arena.ALIGN == 0 and offsets[1] >= x.numel() * 4
        buffer, handed = _child_side(a)
        _call(lambda x, s, y: x.fill_(7), handed)
        after = a.read()
        assert torch.equal(after[0], torch.full_like(x, 7)) and torch.equal(after[2], y)   # the other left alone
        with pytest.raises(RuntimeError, match="out of bounds"):   # a view reaches its own slice, nothing past it
            handed[0].inputs.as_strided((3,), (1,), 16)
    finally:
        a.close()


def test_nothing_kept_reads_as_zeros():
    """A call that raised (or a child that never kept anything) leaves the kept half as it was made: zeros,
    never the inputs, so a probe that skips the copy cannot make a mutation pass."""
    x = torch.randn(4) + 5
    a = arena.Arena.of({"op": "call", "args": [x], "readback": [0]})
    try:
        buffer, handed = _child_side(a)
        with pytest.raises(ZeroDivisionError):
            _call(lambda x: 1 / 0, handed)
        assert torch.equal(a.read()[0], torch.zeros(4)) and gc.isenabled()
    finally:
        a.close()


def test_the_memfd_is_sealed_against_shrinking_and_growing():
    """The child holds a descriptor of the memfd (its mapping's own): it can neither shrink it, which would
    make a mapping of it fault (SIGBUS), nor grow it, nor take the seals off."""
    a = arena.Arena.of({"op": "call", "args": [torch.randn(100)], "readback": [0]})
    try:
        buffer, _ = _child_side(a)
        fd = os.dup(a.fd)
        for size in (0, 2 * a.size - 1, 4 * a.size):
            with pytest.raises(PermissionError):
                os.ftruncate(fd, size)
        with pytest.raises(OSError):
            buffer.resize(8)
        import fcntl
        with pytest.raises(PermissionError):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
        os.close(fd)
        assert len(a.read()) == 1
    finally:
        a.close()


class _Restore:
    """A finaliser that puts the inputs back: it holds an alias of x's memory, not x."""

    def __init__(self, alias, saved):
        self.alias, self.saved, self.me = alias, saved, self     # a cycle: only the collector frees it

    def __del__(self):
        self.alias.copy_(self.saved)


def _add_then_restore(how):
    def residual_add(x, fx):
        saved = x.clone()
        x += fx                                    # in place
        if how == "cycle":
            _Restore(x.detach(), saved)
            for _ in range(2000):                  # the collector's threshold passed at the return
                [[]]
        elif how == "attribute":                   # freed with the view, when the request's arguments die
            x.keeper = _Restore(x.detach(), saved)
            x.keeper.me = None
        else:                                      # a weakref callback when the view dies
            weakref.finalize(x, torch.Tensor.copy_, x.detach(), saved)
        return x.clone()
    return residual_add


@pytest.mark.parametrize("how", ["cycle", "attribute", "weakref"])
def test_a_finaliser_that_restores_the_inputs_after_the_return_is_too_late(how):
    """An in-place add whose finaliser or weakref callback puts the inputs back after the call returned (the
    collector running, the views dying with the request) still reads back as an in-place add."""
    x, fx = torch.randn(6), torch.randn(6)
    a = arena.Arena.of({"op": "call", "args": [x, fx], "readback": [0, 1]})
    try:
        buffer, handed = _child_side(a)
        out = _call(_add_then_restore(how), handed)
        if how == "cycle":              # the probe keeps what it handed; the others restore when it goes
            gc.collect()
            assert torch.equal(handed[0].given, x)            # the finaliser did put them back ...
        del handed
        gc.collect()
        assert torch.equal(a.read()[0], x + fx) and torch.equal(out, x + fx)   # ... too late
    finally:
        a.close()


class _Late:
    """A finaliser that writes the values into a tensor the call returned, once only the collector frees it."""

    def __init__(self, out):
        self.out, self.me = out, self

    def __del__(self):
        self.out.fill_(7.0)


def test_a_finaliser_cannot_change_a_traced_result_after_the_tracer_stops(monkeypatch):
    """A traced call's trace is of all the code that made its result: a finaliser that writes the result once
    the tracer has stopped (a cycle, the collector due at the first allocation after the return) runs only
    after the result is encoded, so the grader reads what the call returned, and the trace saw it made."""
    stops, made = [], []

    @contextlib.contextmanager
    def tracer(module):
        yield type("Recorder", (), {"report": lambda self, result: {"stopped": len(stops)}})()
        stops.append(True)

    def empty_then_late(x):
        out = torch.zeros_like(x)
        _Late(out)
        made.append(out)
        return out

    monkeypatch.setitem(probe.TRACERS, "test", tracer)
    thresholds = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1)
    try:
        reply = probe._observe(empty_then_late, {"op": "call", "args": [torch.ones(4)], "trace": "test"}, {}, {}, None)
    finally:
        gc.set_threshold(*thresholds)
    assert reply["trace"] == {"stopped": 1} and gc.isenabled()
    assert torch.equal(reply["result"]["value"], torch.zeros(4))
    gc.collect()                       # the finaliser was real: it ran at the next collection, too late
    assert torch.equal(made[0], torch.full((4,), 7.0))


def test_nothing_to_read_back_or_another_device_means_no_arena():
    assert arena.Arena.of({"op": "call", "args": [torch.ones(2)]}) is None
    assert arena.Arena.of({"op": "call", "args": [torch.ones(2)], "readback": [0], "device": "cuda"}) is None


@pytest.mark.parametrize("bad", [torch.ones(0), torch.ones(3).expand(4, 3), torch.ones(6)[::2], "text"])
def test_what_cannot_be_read_back_is_refused_in_the_grader(bad):
    with pytest.raises(ValueError, match="cannot be read back"):
        arena.Arena.of({"op": "call", "args": [bad], "readback": [0]})


def test_inputs_written_after_the_call_through_a_kept_view_are_seen_later():
    """A function that keeps its argument and writes it at a later call (late-in-place-add) leaves it unchanged when
    it returns: the grader, holding the memfd until the part's tests are done, reads the inputs' half again."""
    x = torch.randn(6)
    a = arena.Arena.of({"op": "call", "args": [x], "readback": [0]})
    try:
        buffer, handed = _child_side(a)
        kept = []
        _call(lambda v: kept.append(v) or v + 1, handed)
        arena.refresh(handed)                                               # after the request
        assert torch.equal(a.read()[0], x) and not a.written_later()     # unchanged when it returned
        kept[0].add_(1.0)                                                   # written at a later call ...
        arena.refresh(handed)                                               # ... after which the child refreshes
        assert a.written_later() and torch.equal(a.read()[0], x) and not a.changed()
    finally:
        a.close()


def test_the_function_is_handed_ordinary_tensors_like_any_other():
    """What a read-back call hands the function is a copy in torch's own memory, not a view of the memfd: no
    property of its storage (one that cannot be resized, as a view of a buffer's cannot) tells the read-back
    call apart, so code that adds in place except into such a tensor (tell-read-back-storage) is seen adding
    in place."""
    x = torch.randn(3, 4)
    a = arena.Arena.of({"op": "call", "args": [x], "readback": [0]})
    try:
        buffer, handed = _child_side(a)
        seen = handed[0].given
        assert type(seen) is torch.Tensor and seen.untyped_storage().resizable()
        assert seen.untyped_storage().resizable() == x.clone().untyped_storage().resizable()
        _call(lambda v: v.add_(1) if v.untyped_storage().resizable() else v + 1, handed)
        assert torch.equal(a.read()[0], x + 1) and a.changed()
    finally:
        a.close()


def _moved_after_adding(v):
    """v += 1, then v moved onto a copy of what it held before: the values read through v are the inputs, and the
    memory the caller handed holds v + 1 (red team 36's data-swap-in-place-add)."""
    before = v.clone()
    v.add_(1)
    v.data = before


def test_a_function_resizing_or_swapping_its_input_reads_back_as_changed():
    x = torch.randn(4) + 5
    for change in (lambda v: v.resize_(2), lambda v: v.set_(torch.randn(4).untyped_storage()),
                   lambda v: setattr(v, "data", torch.randn(4).double()), _moved_after_adding,
                   lambda v: v.set_(v.clone())):
        a = arena.Arena.of({"op": "call", "args": [x], "readback": [0]})
        try:
            _, handed = _child_side(a)
            _call(change, handed)
            assert a.changed() and not torch.equal(a.read()[0], x)
        finally:
            a.close()


def test_every_top_level_tensor_is_watched_where_it_can_be():
    x, y = torch.randn(3), torch.randn(2)
    a = arena.Arena.of({"op": "call", "fn": "f", "args": [x, "s", torch.ones(0), y], "readback": [], "watched": [0, 2, 3]})
    try:
        assert [i for i, v in enumerate(a.request["args"]) if isinstance(v, dict) and "arena" in v] == [0, 3]
        assert a.fn == "f" and not a.claimed
    finally:
        a.close()
