"""A sandbox cell that walks what a student cell can name and lists every object of the grader it reaches.

Sent as the first cell of a real child (tests/test_reach.py), so it sees the child as the first student cell
would. It starts from the cell's globals, the builtins, every module in sys.modules and what the process hands
any caller (signal handlers, trace and profile functions, torch's active modes), and follows attributes held in
`__dict__` and slots, items of dicts, lists, tuples and sets, `__globals__`, `__closure__`, `__defaults__`,
`__self__`, `__func__`, `__wrapped__`, `__objclass__`, a property's functions, a partial's parts, a weak
reference's target and a type's bases: no gc, no frames, nothing audited. `found()` returns one line per
grader object reached, with the path it was reached by:

    ["sys.modules['autograder.core.probe']", ...]      # [] when nothing of the grader is reachable

and `live()` the same for the live state of the code that runs beside the cells (nbtest.sealed: the private
copies of module dicts the serve loop, the probe and the monitor read), walked through every type's
`__subclasses__()` too, which reaches the grader's classes and so its modules' dicts.

The grader's objects: modules named in GRADER (and their dicts), and the functions, classes and instances
defined there. HANDED names the modules whose objects the tests hand to student code as arguments (an
assignment's specs): they are walked through, and what they lead to still counts.
"""
import builtins
import collections
import functools
import re
import signal
import sys
import types
import weakref

GRADER = ("autograder", "nbtest.monitor", "nbtest.policy", "nbtest.rules")
HANDED = re.compile(r"autograder\.suites\.\w+\.specs")
_Function, _Module, _Cell = types.FunctionType, types.ModuleType, types.CellType
_links = ("__self__", "__func__", "__wrapped__", "__objclass__", "fget", "fset", "fdel")
_atoms = (str, bytes, int, float, complex, bool, type(None), type(Ellipsis), types.CodeType)


def _graders(name) -> bool:
    return (type(name) is str and not HANDED.fullmatch(name)
            and any(name == g or name.startswith(g + ".") for g in GRADER))


def _sealed(o) -> bool:
    """A private copy of a grader module's dict (nbtest.sealed), or a function reading one: the live state of
    the code that runs beside the student's. Its builtins are a snapshot, not the builtins module's dict."""
    if type(o) is _Function:
        o = o.__globals__
    return (type(o) is dict and "__builtins__" in o and _graders(o.get("__name__"))
            and o["__builtins__"] is not builtins.__dict__ and o["__builtins__"] is not builtins)


def _of_grader(o) -> bool:
    try:
        if isinstance(o, _Module):
            return _graders(object.__getattribute__(o, "__dict__").get("__name__"))
        if type(o) is _Function:
            return _graders(o.__globals__.get("__name__"))
        if type(o) is dict:
            return "__builtins__" in o and _graders(o.get("__name__"))
        if isinstance(o, type):
            return _graders(type.__dict__["__dict__"].__get__(o).get("__module__"))
        return _of_grader(type(o)) if type(type(o)) is type and type(o).__module__ != "builtins" else False
    except BaseException:
        return False


def _edges(o, subclasses: bool):
    """(label, object) for what o leads to; subclasses: a type's __subclasses__() too (a call, unaudited)."""
    t = type(o)
    if t in (dict, types.MappingProxyType) or isinstance(o, dict):
        for k, v in list(dict.items(o) if isinstance(o, dict) else o.items()):
            yield f"[{k!r:.60}]", v
            if not isinstance(k, _atoms):
                yield "<key>", k
        return
    if isinstance(o, (list, tuple, set, frozenset)):
        for i, v in enumerate(list(o)):
            yield f"[{i}]", v
        return
    if t is _Cell:
        try:
            yield ".cell_contents", o.cell_contents
        except ValueError:
            pass
        return
    if t is _Function:
        yield ".__globals__", o.__globals__
        for i, c in enumerate(o.__closure__ or ()):
            yield f".__closure__[{i}]", c
        yield ".__defaults__", o.__defaults__
        yield ".__kwdefaults__", o.__kwdefaults__
    if isinstance(o, weakref.ref):
        yield "()", o()
    if t is functools.partial:
        yield ".func", o.func
        yield ".args", o.args
        yield ".keywords", o.keywords
    if isinstance(o, type):
        yield ".__dict__", type.__dict__["__dict__"].__get__(o)
        yield ".__mro__", o.__mro__
        if subclasses:
            yield ".__subclasses__()", type.__subclasses__(o)
        return
    for name in _links:
        try:
            yield f".{name}", object.__getattribute__(o, name)
        except BaseException:
            pass
    try:
        yield ".__dict__", object.__getattribute__(o, "__dict__")
    except BaseException:
        pass
    yield ".__class__", t
    for k in t.__mro__:
        slots = k.__dict__.get("__slots__", ())
        for name in (slots,) if type(slots) is str else slots:
            member = k.__dict__.get(name)
            if type(member) is types.MemberDescriptorType:
                try:
                    yield f".{name}", member.__get__(o)
                except BaseException:
                    pass


def _handed_out() -> list:
    """What the process hands any caller: signal handlers, trace and profile functions, torch's modes."""
    out = [("signal.getsignal", [signal.getsignal(s) for s in signal.valid_signals()]),
           ("sys.gettrace()", sys.gettrace()), ("sys.getprofile()", sys.getprofile())]
    torch = sys.modules.get("torch")
    if torch is not None:
        out.append(("torch dispatch modes", list(torch.utils._python_dispatch._get_current_dispatch_mode_stack())))
        out.append(("torch function modes", [torch._C._get_function_stack_at(i)
                                             for i in range(torch._C._len_torch_function_stack())]))
    return out


def walk(roots, subclasses: bool = False, found_if=_of_grader, noted_if=None) -> list | tuple[list, list]:
    """One line per object reachable from roots [(label, object)] that found_if says is the grader's (by default
    any of it; _sealed: its live state), with its path; subclasses: through __subclasses__() too. With noted_if,
    also (second) the first five lines of what that says is the grader's, walked through, not stopped at."""
    seen, found, noted, queue = {}, [], [], collections.deque(roots)   # breadth first: each path a shortest one
    while queue:
        path, o = queue.popleft()
        if isinstance(o, _atoms) or id(o) in seen:
            continue
        seen[id(o)] = o
        line = lambda: f"{path}: {type(o).__name__} {getattr(o, '__name__', '')!s:.80}"   # of the grader's only
        if found_if(o):
            found.append(line())
            continue
        if noted_if is not None and len(noted) < 5 and noted_if(o):
            noted.append(line())
        try:
            for label, child in _edges(o, subclasses):
                if not isinstance(child, _atoms) and id(child) not in seen:
                    queue.append((path + label, child))
        except BaseException:
            pass
    return found if noted_if is None else (found, noted)


def roots() -> list:
    """What a cell can name: its globals, the builtins, every loaded module, what the process hands out."""
    return [("globals()", globals()), ("builtins", builtins), ("sys.modules", sys.modules),
            *((f"sys.modules[{name!r}]", m) for name, m in list(sys.modules.items())), *_handed_out()]


if __name__ == "submission":        # run as the sandbox's first cell (imported by a test, it only defines)
    _FOUND = walk(roots())
    # object.__subclasses__() lists every class, the grader's among them, and a class's methods lead to its
    # module's dict: none of what runs beside the student's code reads those (nbtest.sealed); noted, what that
    # walk does reach of the grader (not [])
    _LIVE, _THROUGH = walk(roots(), subclasses=True, found_if=_sealed, noted_if=_of_grader)


def found() -> list:
    return _FOUND


def live() -> list:
    return _LIVE


def through_subclasses() -> list:
    return _THROUGH
