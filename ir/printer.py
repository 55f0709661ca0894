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
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stagecraft.ir.dtypes import DType
from stagecraft.ir import graph as graph_module
from stagecraft.ir.graph import Eqn, Graph, Literal, Value
from stagecraft.ir.ops.structural import STRUCTURAL
from stagecraft.ir.placeholders import DigestArray
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

INLINE_CONST_MAX = 16  # constants with more elements print as a digest

REGION_LABELS = {n: r.regions for n, r in STRUCTURAL.items() if r.regions}


def format_type(t: TensorType, ref: bool = False) -> str:
    """A value's type as printed: ``f32[2,?]``, ``ref f32[2]``, ``i64[*]``.

    >>> from stagecraft.ir import dtypes
    >>> format_type(TensorType(dtypes.float32, (2, None)), ref=True)
    'ref f32[2,?]'
    """
    return ("ref " if ref else "") + t.dtype.short + format_dims(t.shape)


def format_attr(value: Any) -> str:
    """An attribute value as printed: Python literal syntax, dtypes by short name, small arrays
    inline, large ones as a digest, callables by qualified name.

    >>> import numpy as np
    >>> from stagecraft.ir import dtypes
    >>> format_attr((('slice', 1, None, None), dtypes.int64, np.arange(2.0)))
    "(('slice', 1, None, None), i64, array([0.0, 1.0], f64))"
    """
    if isinstance(value, DType):
        return value.short
    if isinstance(value, np.ndarray):
        if isinstance(value, DigestArray) and value.digest is not None:
            return f"digest({value.digest!r}, {_np_short(value)}, {list(value.shape)!r})"
        if value.size <= INLINE_CONST_MAX:
            data = _nested(value.tolist()) if value.dtype.kind == "c" else repr(value.tolist())
            return f"array({data}, {_np_short(value)})"
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]
        return f"digest({digest!r}, {_np_short(value)}, {list(value.shape)!r})"
    if isinstance(value, tuple):
        inner = ", ".join(format_attr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_attr(k)}: {format_attr(v)}"
                               for k, v in value.items()) + "}"
    if callable(value):
        return f"python({getattr(value, '__qualname__', type(value).__name__)!r})"
    return repr(value)


def _nested(data: Any) -> str:
    """Nested lists of complex numbers as the parser reads them (``complex(re, im)``)."""
    if isinstance(data, list):
        return "[" + ", ".join(_nested(x) for x in data) + "]"
    return format_literal(data)


def _np_short(a: np.ndarray) -> str:
    from stagecraft.ir.dtypes import from_numpy
    return from_numpy(a.dtype).short


_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.]")


class _Namer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def define(self, v: Value) -> str:
        if v.hint:
            base = _NAME_UNSAFE.sub("_", v.hint)  # names stay one token: [A-Za-z0-9_.]
            name, k = base, 0
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
    if isinstance(v, (complex, np.complexfloating)):  # parsed back by the parser's complex(...)
        return f"complex({format_literal(float(v.real))}, {format_literal(float(v.imag))})"
    if isinstance(v, float):
        return repr(v) if np.isfinite(v) else {"inf": "inf", "-inf": "-inf"}.get(repr(v), "nan")
    return repr(v)


@dataclass
class Printout:
    """A graph's printed lines plus where each equation landed (for the verifier's messages):
    ``eqn_lines`` maps ``id(eqn)`` to its first line, ``yield_lines`` maps ``id(region)`` to its
    ``yield`` line, ``names`` maps ``Value.uid`` to its printed name (without ``%``)."""

    lines: list[str] = field(default_factory=list)
    eqn_lines: dict[int, int] = field(default_factory=dict)
    yield_lines: dict[int, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)


def print_graph(graph: Graph, locs: bool = False) -> str:
    """The text of ``graph`` (what ``str(graph)`` returns); ``locs`` adds ``# file:line``.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("double")
    >>> x = b.param(TensorType(dtypes.float32, (None,)), "x")
    >>> (y,) = b.add("multiply", [x, Literal(2.0, TensorType(dtypes.float32, ()))],
    ...              [x.type])
    >>> print(print_graph(b.build([y])))
    graph @double(%x: f32[?]) -> (f32[?]) {
      %0: f32[?] = multiply %x, 2.0:f32
      return %0
    }
    """
    return "\n".join(print_lines(graph, locs).lines)


def print_lines(graph: Graph, locs: bool = False) -> Printout:
    """Prints ``graph`` and records which line each equation and ``yield`` went to.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("f")
    >>> x = b.param(TensorType(dtypes.float32, ()), "x")
    >>> (y,) = b.add("negative", [x], [x.type])
    >>> out = print_lines(b.build([y]))
    >>> out.lines[out.eqn_lines[id(b.eqns[0])]]
    '  %0: f32[] = negative %x'
    """
    namer = _Namer()
    out = Printout(names=namer.names)
    lines = out.lines
    params = ", ".join(f"{namer.define(p)}: {format_type(p.type, p.ref)}" for p in graph.params)
    outs = ", ".join(format_type(r.type) for r in graph.results)
    lines.append(f"graph @{graph.name}({params}) -> ({outs}) {{")
    _print_body(graph, namer, out, "  ", locs)
    out.yield_lines[id(graph)] = len(lines)
    lines.append(f"  return {', '.join(namer.use(r) for r in graph.results)}")
    lines.append("}")
    return out


def _print_body(graph: Graph, namer: _Namer, out: Printout, indent: str, locs: bool) -> None:
    for eqn in graph.eqns:
        _print_eqn(eqn, namer, out, indent, locs)


def _print_eqn(eqn: Eqn, namer: _Namer, out: Printout, indent: str, locs: bool) -> None:
    lines = out.lines
    operands = ", ".join(namer.use(x) for x in eqn.inputs)
    attrs = ""
    if eqn.attrs:
        attrs = "[" + ", ".join(f"{k}={format_attr(v)}" for k, v in eqn.attrs) + "]"
    outs = ", ".join(f"{namer.define(o)}: {format_type(o.type, o.ref)}" for o in eqn.outputs)
    head = f"{outs} = " if eqn.outputs else ""
    text = f"{indent}{head}{eqn.op}{attrs}{' ' if operands else ''}{operands}"
    if locs and eqn.loc:
        text += f"  # {eqn.loc}"
    out.eqn_lines.setdefault(id(eqn), len(lines))
    lines.append(text)
    labels = REGION_LABELS.get(eqn.op, tuple(f"region{i}" for i in range(len(eqn.regions))))
    for label, region in zip(labels, eqn.regions):
        params = ", ".join(f"{namer.define(p)}: {format_type(p.type, p.ref)}"
                           for p in region.params)
        lines.append(f"{indent}  {label}({params}) {{")
        _print_body(region, namer, out, indent + "    ", locs)
        out.yield_lines.setdefault(id(region), len(lines))
        lines.append(f"{indent}    yield {', '.join(namer.use(r) for r in region.results)}")
        lines.append(f"{indent}  }}")


graph_module.PRINTER[0] = print_graph  # Graph.__str__ prints through this module
