"""The textual form of graphs (``str(graph)``), jaxpr/MLIR-like; ``ir.parser`` reads it back.

    graph @f(%x: f32[2], %v: ref f32[2]) -> (f32[2]) {
      %0: f32[2] = read %v
      %1: f32[2] = multiply %x, %0
      return %1
    }

Names are unique across a printout and assigned in print order: values keep their source hint
when they have one (collisions get ``.1``, ``.2``), others are numbered. Attributes print sorted,
as Python literals (dtypes by their short name). Large constants print as a digest; the
serialized form (``ir.serialize``) carries their data.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from stagecraft.ir.dtypes import DType
from stagecraft.ir.graph import Eqn, Graph, Literal, Value
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

INLINE_CONST_MAX = 16  # constants with more elements print as a digest

REGION_LABELS = {"cond": ("then", "else"), "while": ("cond", "body"), "call": ("fn",)}


def format_type(t: TensorType, ref: bool = False) -> str:
    return ("ref " if ref else "") + t.dtype.short + format_dims(t.shape)


def format_attr(value: Any) -> str:
    if isinstance(value, DType):
        return value.short
    if isinstance(value, np.ndarray):
        if value.size <= INLINE_CONST_MAX:
            return f"array({value.tolist()!r}, {_np_short(value)})"
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]
        return f"digest({digest!r}, {_np_short(value)}, {list(value.shape)!r})"
    if isinstance(value, tuple):
        inner = ", ".join(format_attr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if callable(value):
        return f"python({getattr(value, '__qualname__', type(value).__name__)!r})"
    return repr(value)


def _np_short(a: np.ndarray) -> str:
    from stagecraft.ir.dtypes import from_numpy
    return from_numpy(a.dtype).short


class _Namer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def define(self, v: Value) -> str:
        if v.hint:
            base, name, k = v.hint, v.hint, 0
            while name in self.used or name.isdigit():
                k += 1
                name = f"{base}.{k}"
        else:
            while str(self.counter) in self.used:
                self.counter += 1
            name = str(self.counter)
            self.counter += 1
        self.used.add(name)
        self.names[v.uid] = name
        return "%" + name

    def use(self, x: Any) -> str:
        if isinstance(x, Literal):
            return f"{format_literal(x.value)}:{x.type.dtype.short}"
        try:
            return "%" + self.names[x.uid]
        except KeyError:
            return f"%<undefined {x!r}>"


def format_literal(v: Any) -> str:
    if isinstance(v, float):
        return repr(v) if np.isfinite(v) else {"inf": "inf", "-inf": "-inf"}.get(repr(v), "nan")
    return repr(v)


def print_graph(graph: Graph, locs: bool = False) -> str:
    namer = _Namer()
    lines: list[str] = []
    params = ", ".join(f"{namer.define(p)}: {format_type(p.type, p.ref)}" for p in graph.params)
    outs = ", ".join(format_type(r.type) for r in graph.results)
    lines.append(f"graph @{graph.name}({params}) -> ({outs}) {{")
    _print_body(graph, namer, lines, "  ", locs)
    lines.append(f"  return {', '.join(namer.use(r) for r in graph.results)}")
    lines.append("}")
    return "\n".join(lines)


def _print_body(graph: Graph, namer: _Namer, lines: list, indent: str, locs: bool) -> None:
    for eqn in graph.eqns:
        _print_eqn(eqn, namer, lines, indent, locs)


def _print_eqn(eqn: Eqn, namer: _Namer, lines: list, indent: str, locs: bool) -> None:
    operands = ", ".join(namer.use(x) for x in eqn.inputs)
    attrs = ""
    if eqn.attrs:
        attrs = "[" + ", ".join(f"{k}={format_attr(v)}" for k, v in eqn.attrs) + "]"
    outs = ", ".join(f"{namer.define(o)}: {format_type(o.type, o.ref)}" for o in eqn.outputs)
    head = f"{outs} = " if eqn.outputs else ""
    text = f"{indent}{head}{eqn.op}{attrs}{' ' if operands else ''}{operands}"
    if locs and eqn.loc:
        text += f"  # {eqn.loc}"
    lines.append(text)
    labels = REGION_LABELS.get(eqn.op, tuple(f"region{i}" for i in range(len(eqn.regions))))
    for label, region in zip(labels, eqn.regions):
        params = ", ".join(f"{namer.define(p)}: {format_type(p.type, p.ref)}"
                           for p in region.params)
        lines.append(f"{indent}  {label}({params}) {{")
        _print_body(region, namer, lines, indent + "    ", locs)
        lines.append(f"{indent}    yield {', '.join(namer.use(r) for r in region.results)}")
        lines.append(f"{indent}  }}")
