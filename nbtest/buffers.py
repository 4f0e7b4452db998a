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

A tensor exported through DLPack (numpy.from_dlpack, torch.from_dlpack, torch.to_dlpack) is exported as an
alias of it whose storage can no longer be resized, as .numpy() leaves a tensor's: the importer maps the storage's
memory, and resize_() or set_() on the tensor would free that memory under it.

And torch checks every sparse tensor it builds against its size (torch.sparse.check_sparse_tensor_invariants,
enabled for the process): adding a sparse tensor to a dense one writes at its indices, and one built unchecked
(the legacy x.new(indices, values, size) on a sparse gradient, whatever the spelling) would write past the
dense tensor into any object of the process.

An nn.Module answers no special name (`__array_interface__`, `__dlpack__`) from the layers, parameters and
buffers registered on it. nn.Module.__getattr__ looks any name up in them, and a name registered from data
(add_module, nn.ModuleDict, nn.Sequential over an OrderedDict) is out of the policy's sight: numpy, asked
for a module's array interface, took a registered layer that is also a dict, and built an array at the
address it named. A special name is its class's to define, as for any other object.

And no copy (copy.copy, copy.deepcopy, and so torch's own deep copies: swa_utils.AveragedModel) comes out with an
array interface (ADDRESSES) among its own attributes. A copy takes its attributes from the state the original
hands it (its __getstate__), which is data: a computed key there made the copy's `__array_interface__`.
Nor does any state handed to torch's load_state_dict (an optimizer's, a learning-rate scheduler's, SWALR's, a
pruning scheduler's) name one: a scheduler updates its own __dict__, and its lr_lambdas' objects', with the dict
it is given.

And no attribute of any object is set under such a name by setattr, whoever calls it: libraries set attributes
under names they are handed (torch's pruning and parametrization, torch.distributions' lazy_property under a
function's __name__), and a name of a str subclass is read as its own characters, not by its slices or __eq__.
A functools.cached_property caches nothing under one either (its attrname is a plain attribute), nor does
functools.update_wrapper (functools.wraps) copy one from the object it wraps: it updates the wrapper's __dict__
with that object's, which a library may have filled from data (numpy.ma's masked functions copy an object's
_optinfo into their result's __dict__).

Nor does a class statement run here bind one in the class (a match capture, an import's alias, locals() in the
body: any spelling), and a __getattr__ or __getattribute__ a class statement defines answers none; a library's own
class statements, run as it is imported (LIBRARIES), are its own.
"""
import builtins
import collections
import functools
import os
import sysconfig

# the attributes through which numpy and torch build an array at the raw address they name
ADDRESSES = frozenset({"__array_interface__", "__cuda_array_interface__"})
# where the installed libraries' files are: Python's own and the environment's site-packages
LIBRARIES = tuple(sorted({os.path.join(sysconfig.get_paths()[key], "") for key in
                          ("stdlib", "platstdlib", "purelib", "platlib")}))


def held(obj):
    """obj's memory, behind a memoryview made here (nothing else refers to it); obj itself when it exports
    no buffer (a list, a tensor), for torch to take or refuse as it would."""
    try:
        return memoryview(obj)
    except TypeError:
        return obj


def unresizable(t):
    """An alias of tensor t that holds its storage, that storage made unresizable (on the CPU: numpy's view of
    it marks it so; a GPU's memory holds no object of the process)."""
    import torch
    alias = t.detach()
    if alias.device.type == "cpu":
        torch.empty(0, dtype=torch.uint8).set_(alias.untyped_storage()).numpy()
    return alias


def names_badly(key) -> bool:
    """Whether a key of an object's own dict names an array interface, or is not an exact str: a subclass's own
    __eq__ could answer numpy's lookup otherwise than this test."""
    return type(key) is not str or key in ADDRESSES


def plain_state(state, depth: int = 8) -> bool:
    """Whether a state names no array interface: its dicts (dict, Counter, OrderedDict, and in lists and tuples,
    `depth` deep) keyed by exact str or int, none in ADDRESSES, and no other object among them that dict.update
    would read keys from (a class with keys() or __getattr__), whose answers this walk could not see."""
    kind = type(state)
    if kind in (dict, collections.Counter, collections.OrderedDict):
        if not all(type(key) is int or not names_badly(key) for key in state):
            return False
        state = state.values()
    elif kind not in (list, tuple):
        # read from the classes' own dicts: no code of the object's runs here
        return not any("keys" in vars(c) or "__getattr__" in vars(c) for c in type.__dict__["__mro__"].__get__(kind))
    return depth > 0 and all(plain_state(item, depth - 1) for item in state)


def answering_no_address(hook):
    """A class's __getattr__ or __getattribute__ that raises AttributeError for an array interface's name, and
    otherwise answers as `hook` does (bound as Python binds it: through its __get__ where it has one)."""
    bind = getattr(type(hook), "__get__", None)

    def answer(self, name):
        if str.__str__(name) in ADDRESSES:      # its own characters, as setattr reads them
            raise AttributeError(name)
        return (bind(hook, self, type(self)) if bind is not None else functools.partial(hook, self))(name)
    return answer


def refuse_addresses(obj, what: str) -> None:
    """Raise TypeError, the names taken out first, if a key of obj's own dict names_badly: it got them from data,
    and the caller may already hold obj."""
    try:
        own = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return
    bad = [key for key in own if names_badly(key)] if type(own) is dict else []
    for key in bad:
        del own[key]
    if bad:
        raise TypeError(f"{what} a {type(obj).__name__!r} would name an array interface in its state "
                        f"({', '.join(sorted(ADDRESSES))}), or an attribute by an object other than a str")


# the modules whose classes load a state into an object's __dict__ (tests/test_box.py finds every such class in
# torch's public source and checks it is among state_loaders())
STATE_MODULES = ("torch.optim", "torch.optim.lr_scheduler", "torch.optim.swa_utils", "torch.ao.pruning")


def state_loaders() -> list[type]:
    """torch's classes in STATE_MODULES that define a load_state_dict of their own (an optimizer's, a
    learning-rate scheduler's, SWALR's, a pruning scheduler's)."""
    import importlib
    found = {cls for module in map(importlib.import_module, STATE_MODULES) for cls in vars(module).values()
             if isinstance(cls, type) and "load_state_dict" in vars(cls) and cls.__module__.startswith("torch.")}
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def install() -> None:
    """torch.frombuffer and torch.asarray take their buffer through held(), a DLPack export an unresizable
    alias, sparse tensors are checked, a module answers no special name from its registries, and no copy, loaded
    optimizer state, setattr, cached_property, update_wrapper or class statement names an array interface
    (before any cell)."""
    import copy

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

    export, to_dlpack = torch.Tensor.__dlpack__, torch.to_dlpack
    module_getattr = torch.nn.Module.__getattr__

    def __dlpack__(self, *args, **kwargs):
        return export(unresizable(self), *args, **kwargs)

    def to_dlpack_held(tensor):
        return to_dlpack(unresizable(tensor))

    def __getattr__(self, name):
        text = str.__str__(name)        # a subclass's own slices could say otherwise
        if text[:2] == text[-2:] == "__":
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {text!r}")
        return module_getattr(self, name)

    builtin_setattr = builtins.setattr
    build_class = builtins.__build_class__

    def __build_class__(body, name, *bases, **kwargs):
        made = build_class(body, name, *bases, **kwargs)
        # a class an installed library defines as it is imported (PIL's Image, which matplotlib imports, has an
        # array interface of its own): the import itself is the import rule's, and a cell that imports it must not
        # fail to load for it (red team 39: the helper defined beside such an import was lost, and its tests failed)
        if isinstance(made, type) and not getattr(body, "__code__", body).co_filename.startswith(LIBRARIES):
            own = type.__dict__["__dict__"].__get__(made)     # its own namespace, whatever its metaclass says
            bad = [key for key in own if names_badly(key)]
            for key in bad:
                if type(key) is str:
                    type.__delattr__(made, key)
            if bad:
                raise TypeError(f"class {name!r} would name an array interface ({', '.join(sorted(ADDRESSES))}), "
                                "or an attribute by an object other than a str: numpy reads it as a raw address")
            for hook in ("__getattr__", "__getattribute__"):
                if hook in own:
                    type.__setattr__(made, hook, answering_no_address(own[hook]))
        return made

    def checked_setattr(obj, name, value):
        if isinstance(name, str):
            name = str.__str__(name)    # its own characters: the key the object's dict then holds
            # a whole __dict__ set this way is the object's attributes, named by its keys
            if name in ADDRESSES or name == "__dict__" and not (
                    type(value) is dict and not any(map(names_badly, value))):
                raise TypeError(f"no attribute may be named {name!r} here, or {', '.join(sorted(ADDRESSES))} through "
                                "it: numpy and torch read an array interface as a raw address")
        return builtin_setattr(obj, name, value)

    cached_get = functools.cached_property.__get__

    def cached_property_get(self, instance, owner=None):
        value = cached_get(self, instance, owner)
        if instance is not None:
            refuse_addresses(instance, "a cached_property of")
        return value

    update_wrapper = functools.update_wrapper

    def checked_update_wrapper(wrapper, *args, **kwargs):
        made = update_wrapper(wrapper, *args, **kwargs)
        refuse_addresses(wrapper, "functools.update_wrapper onto")
        return made

    reconstruct = copy._reconstruct

    def _reconstruct(*args, **kwargs):
        made = reconstruct(*args, **kwargs)
        refuse_addresses(made, "a copy of")
        return made

    def checked(load):
        def load_state_dict(self, state_dict, *args, **kwargs):
            if not plain_state(state_dict):
                raise TypeError(f"a {type(self).__name__!r}'s state to load would name an array interface "
                                f"({', '.join(sorted(ADDRESSES))}), a key by an object other than a str or an int, "
                                "or hold an object other than a dict with keys()")
            return load(self, state_dict, *args, **kwargs)
        return load_state_dict

    loaders = [(cls, "load_state_dict", checked(vars(cls)["load_state_dict"]), vars(cls)["load_state_dict"])
               for cls in state_loaders()]
    for owner, name, new, old in ((torch, "frombuffer", frombuffer_held, frombuffer),
                                  (torch, "asarray", asarray_held, asarray),
                                  (torch, "to_dlpack", to_dlpack_held, to_dlpack),
                                  (torch.Tensor, "__dlpack__", __dlpack__, export),
                                  (torch.nn.Module, "__getattr__", __getattr__, module_getattr),
                                  (copy, "_reconstruct", _reconstruct, reconstruct), *loaders,
                                  (functools.cached_property, "__get__", cached_property_get, cached_get),
                                  (functools, "update_wrapper", checked_update_wrapper, update_wrapper),
                                  (builtins, "setattr", checked_setattr, builtin_setattr),
                                  (builtins, "__build_class__", __build_class__, build_class)):
        new.__name__, new.__qualname__, new.__doc__ = name, name, old.__doc__
        setattr(owner, name, new)
