"""What every conversion pass receives: the function being converted and a fresh-name source."""
from __future__ import annotations

import keyword
from dataclasses import dataclass, field

import gast

RUNTIME = "sc__"  # the name generated code uses for stagecraft.converters.operators


class Namer:
    """Fresh names that collide with nothing the function mentions (never string concat)."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken) | {RUNTIME}
        self.generated: set[str] = set()

    def new(self, base: str) -> str:
        base = base if base.isidentifier() and not keyword.iskeyword(base) else "tmp"
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        self.generated.add(name)
        return name

    @classmethod
    def for_tree(cls, tree: gast.AST) -> "Namer":
        names = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}
        names |= {n.name for n in gast.walk(tree)
                  if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef))}
        return cls(names)


@dataclass
class Context:
    """Per-conversion state: the user's file and first line (for messages), the namer."""

    filename: str
    function_name: str
    namer: Namer
    notes: dict = field(default_factory=dict)

    def loc(self, node: gast.AST) -> str:
        """'file:line' of ``node`` in the user's source."""
        return f"{self.filename}:{getattr(node, 'lineno', '?')}"
