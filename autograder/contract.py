"""An assignment's contract: what its hidden suite, public tests and samples rely on, written once.

    contract = load(solutions / "residual-connections")      # contract.toml beside the notebook
    contract["TransformerBlock"].attributes                   # ("attn", "ln1", "ln2", "ffn")
    contract.problems(reported)                               # {name: why it breaks the contract}

Each entry names something the student's notebook defines: its kind ("function", "class"),
its part, its parameters in order (self left out), the attributes an instance has, the
errors it raises, and other names its text must mention. A sandbox child reports what the
submission defined (probe.declared); `problems` compares that with the contract, so a
failure can say "TransformerBlock takes (d_model, n_heads), the assignment says
(d_model, n_heads, norm)" instead of a bare TypeError.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .course import CourseError

FILE = "contract.toml"
KINDS = ("function", "class")


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str
    part: int
    params: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    raises: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()

    @property
    def requirements(self) -> tuple[str, ...]:
        """Every word the stub's docstring or the text above it must state."""
        return (*self.params, *self.attributes, *self.raises, *self.mentions)


class Contract(dict):
    """{name: Entry}, in the file's order."""

    def wire(self) -> dict:
        """What a sandbox child needs to report on the contract: {name: kind}."""
        return {name: e.kind for name, e in self.items()}

    def used_by(self, part: int) -> set[str]:
        """The names the tests of a part call: those of the part, or, for a part that defines none (a
        timing part), every name."""
        return {name for name, e in self.items() if e.part == part} or set(self)

    def problems(self, reported: dict) -> dict[str, str]:
        """{name: problem} for each entry the child's report (probe.declared) breaks."""
        out = {}
        for name, e in self.items():
            got = reported.get(name)
            if not isinstance(got, dict) or not got.get("defined"):
                continue                     # a missing name has its own message (the cell's problem)
            if got.get("kind") != e.kind:
                out[name] = f"{name} is a {got.get('kind')}, the assignment asks for a {e.kind}"
            elif got.get("params") is not None and tuple(got["params"][:len(e.params)]) != e.params:
                out[name] = (f"{name} takes ({', '.join(got['params'])}), the assignment says "
                             f"({', '.join(e.params)})")
        return out


def load(folder: str | Path) -> Contract:
    """The contract in folder/contract.toml (an empty one where there is none)."""
    path = Path(folder) / FILE
    if not path.exists():
        return Contract()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise CourseError(f"{path}: not valid TOML: {e}") from None
    contract = Contract()
    for name, table in data.items():
        unknown = set(table) - {"kind", "part", "params", "attributes", "raises", "mentions"}
        if not isinstance(table, dict) or table.get("kind") not in KINDS or unknown:
            raise CourseError(f"{path}: [{name}] needs kind = one of {', '.join(KINDS)} and only the keys "
                              f"part, params, attributes, raises, mentions (got {sorted(table)})")
        contract[name] = Entry(name, table["kind"], int(table.get("part", 0)),
                               *(tuple(map(str, table.get(k, ()))) for k in ("params", "attributes", "raises",
                                                                              "mentions")))
    return contract
