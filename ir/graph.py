"""The graph IR: frozen, typed ``Value``/``Literal``/``Eqn``/``Graph``.

A ``Graph`` is a function: parameters, equations in program order, results. Control flow is an
equation whose ``regions`` are closed sub-graphs (everything a region uses arrives as one of its
parameters). Variables enter as ``capture`` equations producing a reference (``ref`` type); the
stateful ``read``/``assign`` equations use it and keep their program order.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence, Union

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.structural import STRUCTURAL, names_where
from stagecraft.ir.types import TensorType

_ids = itertools.count()


#: The text printer (``ir/printer.py``, which imports this module, installs it when imported;
#: ``stagecraft.ir`` imports it): ``Graph.__str__`` prints through it.
PRINTER: list = [lambda graph, locs=False: f"<Graph {graph.name}>"]


@dataclass(frozen=True, slots=True, eq=False)
class Value:
    """A value defined once (a parameter or an equation's output). ``hint`` is the source name
    the printer prefers; ``ref`` marks a variable reference (not a tensor)."""

    type: TensorType
    hint: str | None = None
    ref: bool = False
    uid: int = field(default_factory=lambda: next(_ids))

    def __repr__(self) -> str:
        return f"Value({self.type}{', ref' if self.ref else ''}, hint={self.hint!r})"


@dataclass(frozen=True, slots=True, eq=False)
class Literal:
    """A scalar constant written inline as an operand (``0.0:f32``)."""

    value: Any
    type: TensorType

    @staticmethod
    def of(value: Any, dtype: dt.DType) -> "Literal":
        return Literal(dtype.np.type(value).item(), TensorType(dtype, ()))

    def __repr__(self) -> str:
        return f"Literal({self.value!r}:{self.type.dtype.short})"


Operand = Union[Value, Literal]

# Equations that are not primitives of the op table, by property (their one table:
# ir/ops/structural.py). Stateful ones are never pruned and keep their relative order.
CONTROL_OPS = frozenset(n for n, r in STRUCTURAL.items() if r.regions)
STATEFUL_OPS = names_where(stateful=True)
STRUCTURAL_OPS = frozenset(STRUCTURAL)


@dataclass(frozen=True, slots=True, eq=False)
class Eqn:
    """``outputs = op[attrs] inputs`` with optional closed ``regions`` and a source location."""

    op: str
    inputs: tuple
    outputs: tuple
    attrs: tuple = ()          # sorted (key, value) pairs: hashable and printed in order
    regions: tuple = ()        # tuple[Graph, ...]
    loc: str | None = None

    @property
    def params(self) -> dict:
        return dict(self.attrs)

    def __repr__(self) -> str:
        return f"Eqn({self.op}, {len(self.inputs)} in, {len(self.outputs)} out)"


def make_attrs(attrs: dict) -> tuple:
    return tuple(sorted(attrs.items()))


@dataclass(frozen=True, slots=True, eq=False)
class Graph:
    """A graph function (or a region of one)."""

    name: str
    params: tuple
    eqns: tuple
    results: tuple

    def __str__(self) -> str:
        return PRINTER[0](self)

    def to_text(self, locs: bool = False) -> str:
        return PRINTER[0](self, locs=locs)

    @property
    def in_types(self) -> tuple:
        return tuple(p.type for p in self.params)

    @property
    def out_types(self) -> tuple:
        return tuple(r.type for r in self.results)


def is_stateful(eqn: Eqn) -> bool:
    """Stateful equations (variable reads/writes, print, py_function, random, and control flow or
    calls containing any) are never removed by passes and keep their relative order."""
    if eqn.op in STATEFUL_OPS:
        return True
    if eqn.op == "call":
        return any(is_stateful(e) for g in eqn.regions for e in walk_eqns(g))
    if eqn.op in CONTROL_OPS:
        return any(is_stateful(e) for g in eqn.regions for e in g.eqns)
    from stagecraft.ir.ops import OPS
    op = OPS.get(eqn.op)
    return op is not None and op.stateful


def walk_eqns(graph: Graph) -> Iterator[Eqn]:
    """Every equation of ``graph`` and its regions, depth first, in program order."""
    for e in graph.eqns:
        yield e
        for r in e.regions:
            yield from walk_eqns(r)


def const_value(eqn: Eqn) -> np.ndarray:
    return dict(eqn.attrs)["value"]


class GraphBuilder:
    """Appends equations and assembles a frozen ``Graph`` (used by tracing, passes, the parser)."""

    def __init__(self, name: str):
        self.name = name
        self.params: list[Value] = []
        self.eqns: list[Eqn] = []

    def param(self, type: TensorType, hint: str | None = None, ref: bool = False) -> Value:
        v = Value(type, hint, ref)
        self.params.append(v)
        return v

    def add(self, op: str, inputs: Sequence[Operand], out_types: Sequence[TensorType],
            attrs: dict | None = None, regions: Sequence[Graph] = (), loc: str | None = None,
            hints: Sequence[str | None] | None = None, ref: bool = False) -> tuple:
        outs = tuple(Value(t, None if hints is None else hints[i], ref)
                     for i, t in enumerate(out_types))
        self.eqns.append(Eqn(op, tuple(inputs), outs, make_attrs(attrs or {}), tuple(regions),
                             loc))
        return outs

    def build(self, results: Sequence[Operand]) -> Graph:
        return Graph(self.name, tuple(self.params), tuple(self.eqns), tuple(results))
