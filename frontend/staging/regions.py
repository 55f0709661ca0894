"""Regions: branches and loop bodies traced into closed sub-graphs of a ``cond`` or ``while``
equation, and the VJP of a region (what the gradients of both replay)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from stagecraft.autodiff.replay import inline_graph
from stagecraft.autodiff.tape import GradientTape, trainable
from stagecraft.eager import nest
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.staging.func_graph import FuncGraph, building
from stagecraft.staging.graph_tensor import graph_tensor
from stagecraft.ir.graph import Graph, Value
from stagecraft.ir.types import TensorType
from stagecraft.eager.tensor import Tensor
from stagecraft.ops.array_ops import zeros_like


class Region:
    """A traced branch or loop body: its graph builder, output structure and result values."""

    def __init__(self, fg: FuncGraph, structure: Any, results: list):
        self.fg, self.structure, self.results = fg, structure, results

    def outer_operands(self) -> list[Value]:
        return [outer for outer, _ in self.fg.captures]

    def graph(self, union: Sequence[Value]) -> Graph:
        """The closed region: explicit parameters, then one parameter per value in ``union``
        (the operands shared by all regions of the equation)."""
        mine = {outer.uid: p for outer, p in self.fg.captures}
        params = list(self.fg.inputs) + [mine.get(u.uid) or Value(u.type, u.hint, u.ref)
                                         for u in union]
        b = self.fg.builder
        return Graph(self.fg.name, tuple(params), tuple(b.eqns), tuple(self.results))


def trace_region(fn: Callable, param_types: Sequence[TensorType], parent: FuncGraph, name: str,
                 hints: Sequence[str | None] | None = None) -> Region:
    """Traces ``fn`` (a branch or loop body) on placeholders of ``param_types`` into a region
    of ``parent``, the graph being built; values of enclosing graphs it uses become captures.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.types import TensorType
    >>> from stagecraft.staging.func_graph import FuncGraph, building
    >>> fg = FuncGraph("f")
    >>> with building(fg):
    ...     r = trace_region(lambda x: x * 2.0, [TensorType(dtypes.float32, (2,))], fg, "body")
    >>> r.structure, len(r.results)
    (0, 1)
    """
    fg = FuncGraph(name, parent=parent)
    params = [fg.add_input(t, None if hints is None else hints[i])
              for i, t in enumerate(param_types)]
    with building(fg):
        out = fn(*[graph_tensor(p, fg) for p in params])
        results: list = []

        def leaf(x: Any) -> Any:
            if x is None:
                return None
            t = x if isinstance(x, Tensor) else convert_to_tensor(x)
            v = fg.operand(t)
            if not isinstance(v, Value):
                v = fg.operand(convert_to_tensor(t))
            results.append(v)
            return len(results) - 1

        structure = nest.map_structure(leaf, out)
    return Region(fg, structure, results)


def shared_operands(*regions: Region) -> list[Value]:
    """The outer values the regions capture, each once, in first-use order: the operands an
    equation passes to all of its regions (``Region.graph`` makes one parameter per value)."""
    seen, out = set(), []
    for r in regions:
        for v in r.outer_operands():
            if v.uid not in seen:
                seen.add(v.uid)
                out.append(v)
    return out


def record_on_tapes(tapes: tuple, inputs: list, outputs: list, backward: Callable) -> None:
    """Records one equation with regions (``cond``, ``while``) on each tape as a composite:
    ``backward(output_gradients)`` gives the inputs' gradients."""
    for tape in tapes:
        tape.record_composite(inputs, outputs, backward)


def region_vjp(graph: Graph, inputs: list, seeds: list, n_explicit: int = 0,
                explicit: Sequence[Any] = (), memo: dict | None = None) -> list:
    """Gradients of ``graph``'s float results (seeded) with respect to its parameters, with
    zeros where none flows (so every branch returns the same structure). Equations whose
    outputs ``memo`` holds are not recomputed (see ``inline_graph``)."""
    args = list(explicit) + list(inputs)
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([a for a in args if trainable(a.dtype)])
        results = inline_graph(graph, args, effects=False, memo=memo)
    targets = [r for r in results if trainable(r.dtype)]
    fseeds = [s for r, s in zip(results, seeds) if trainable(r.dtype)]
    grads = tape.gradient(targets, args, output_gradients=fseeds)
    return [zeros_like(a) if g is None and trainable(a.dtype) else g
            for a, g in zip(args, grads)]


