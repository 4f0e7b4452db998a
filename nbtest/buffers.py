"""torch.frombuffer and torch.asarray hold the buffer they share, where the grader and the public tests run cells.

Both make a tensor over the memory of an object that exports a buffer (a bytearray, an array.array, a
memoryview, an mmap), keep a reference to that object, and release its export at once. A bytearray with no
export may grow, and its memory moves: the tensor then reads and writes memory freed under it, where Python
puts its next objects (an exception's type among them), with no audit event and no library's private name.
So before the first cell, in the grader's sandbox child and in the public tests' process, each hands torch a
memoryview of its own instead, which holds the export for as long as the tensor lives: growing the object
then raises BufferError, as it does under numpy.frombuffer.

    install()
    t = torch.frombuffer(b, dtype=torch.uint8); b.extend(bytes(4096))    # BufferError

The values, dtypes and shapes are torch's own: a memoryview of the object is read as the object is.
numpy's arrays and scalars go to torch.asarray as they are: torch reads them through numpy, which holds them.

And torch checks every sparse tensor it builds against its size (torch.sparse.check_sparse_tensor_invariants,
enabled for the process): adding a sparse tensor to a dense one writes at its indices, and one built unchecked
(the legacy x.new(indices, values, size) on a sparse gradient, whatever the spelling) would write past the
dense tensor into any object of the process.
"""


def held(obj):
    """obj's memory, behind a memoryview made here (nothing else refers to it); obj itself when it exports
    no buffer (a list, a tensor), for torch to take or refuse as it would."""
    try:
        return memoryview(obj)
    except TypeError:
        return obj


def install() -> None:
    """torch.frombuffer and torch.asarray take their buffer through held(), and sparse tensors are checked
    (before any cell)."""
    import numpy
    import torch
    torch.sparse.check_sparse_tensor_invariants.enable()
    frombuffer, asarray = torch.frombuffer, torch.asarray
    if frombuffer.__module__ == __name__:
        return          # installed already (the public tests load each notebook in one process)
    numpy_types = (numpy.ndarray, numpy.generic)

    def frombuffer_held(buffer, *args, **kwargs):
        return frombuffer(held(buffer), *args, **kwargs)

    def asarray_held(obj, *args, **kwargs):
        return asarray(obj if issubclass(type(obj), numpy_types) else held(obj), *args, **kwargs)

    for name, new, old in (("frombuffer", frombuffer_held, frombuffer), ("asarray", asarray_held, asarray)):
        new.__name__, new.__qualname__, new.__doc__ = name, name, old.__doc__
        setattr(torch, name, new)
