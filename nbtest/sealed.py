"""Copies of functions that no longer read their modules' dicts: the code that watches and serves a student's,
out of reach of a write to a module.

    serve = seal(serve_request, packages)      # packages: module name prefixes whose functions are copied

A function looks its helpers up in its module's dict at every call, and writing a module's attribute raises no
audit event: code that reaches the dict (a class's method's `__globals__`, the class found through
`object.__subclasses__()`) could swap a helper of the running code. seal returns a copy of the function, and
of every function of those packages it reaches through its globals (directly, or as a value of a dict there),
each reading a private copy of its module's dict (and of the builtins) that nothing else refers to. Classes and modules held in
the globals stay shared: writing a class's attribute is an audited event; a module's (`codec`, reached as an
attribute) is not, so a sealed caller binds the module's functions it needs, sealed, rather than the module.
"""
from __future__ import annotations

from types import CellType, FunctionType, ModuleType


def seal(value, packages: tuple[str, ...]):
    """value's sealed copy: a function of those packages (module names equal to one of `packages` or below
    it), or a dict of functions; anything else is returned as it is."""
    namespaces: dict[int, dict] = {}       # id(a module's dict) -> its private copy

    def owned(globals_: dict) -> bool:
        name = globals_.get("__name__")
        return isinstance(name, str) and any(name == p or name.startswith(p + ".") for p in packages)

    def copy(value):
        if type(value) is FunctionType and owned(value.__globals__):
            new = FunctionType(value.__code__, namespace(value.__globals__), value.__name__, value.__defaults__,
                               value.__closure__ and tuple(map(cell, value.__closure__)))
            new.__kwdefaults__, new.__qualname__ = value.__kwdefaults__, value.__qualname__
            return new
        if type(value) is dict and any(type(v) is FunctionType for v in value.values()):
            return {k: copy(v) for k, v in value.items()}     # a table of functions (the probe's ops, tracers)
        return value

    def cell(c: CellType) -> CellType:
        """A closure's cell, its function sealed too (the monitor's cell_of): a new cell, not shared with the
        function that made the closure (which has returned)."""
        try:
            return CellType(copy(c.cell_contents))
        except ValueError:              # empty
            return c

    def namespace(globals_: dict) -> dict:
        key = id(globals_)
        if key not in namespaces:
            private = namespaces[key] = dict(globals_)       # in place first: functions refer to each other
            # the builtins as they are now: writing builtins.len raises no audit event either
            builtins = globals_.get("__builtins__", {})
            private["__builtins__"] = dict(vars(builtins) if isinstance(builtins, ModuleType) else builtins)
            for name, value in globals_.items():
                if name != "__builtins__":
                    private[name] = copy(value)
        return namespaces[key]

    return copy(value)
