"""``cond``: plain Python when eager, a ``cond`` equation with two traced branches when staged;
its gradient is a ``cond`` of the branches' gradients."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from stagecraft.autodiff.replay import inline_graph, replays
from stagecraft.eager import nest
from stagecraft.state import random_state
from stagecraft.eager.bind import user_location
from stagecraft.eager.context import STATE
from stagecraft.staging.func_graph import FuncGraph
from stagecraft.staging.graph_tensor import GraphTensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.graph import Eqn, Graph
from stagecraft.ir.shapes import most_specific_common
from stagecraft.ir.types import TensorType
from stagecraft.staging.regions import (Region, record_on_tapes, region_vjp, shared_operands,
                                        trace_region)
from stagecraft.ops.array_ops import zeros_like


def cond(pred: Any, true_fn: Callable | None = None, false_fn: Callable | None = None,
         name: str | None = None) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``.

    Behaves like ``true_fn() if pred else false_fn()``. When ``pred`` is a symbolic tensor
    (inside ``@function``) both branches are traced and one ``cond`` equation chooses at run
    time; then both must return the same structure with the same dtypes (shapes may differ:
    the result gets the most specific common shape).

    >>> import stagecraft as tf
    >>> x = tf.constant(3.0)
    >>> float(tf.cond(x > 0, lambda: x * 2.0, lambda: -x))
    6.0
    """
    if true_fn is None or false_fn is None:
        raise TypeError("cond: both true_fn and false_fn must be given (callables returning "
                        "the branch results).")
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables, e.g. lambda: x * 2.")
    fg = STATE.get().graph
    if not isinstance(pred, GraphTensor):
        return true_fn() if bool(pred) else false_fn()
    if pred.dtype != _dt.bool_ or pred.shape.rank not in (0, None):
        raise TypeError(f"cond: pred must be a scalar bool tensor, got {pred!r}. Reduce it "
                        f"first, e.g. tf.reduce_all(pred).\n  at {user_location()}")
    then_r = trace_region(true_fn, [], fg, "then")
    else_r = trace_region(false_fn, [], fg, "else")
    outs = emit_cond(fg, pred, then_r, else_r, _branch_types(then_r, else_r))
    return nest.map_structure(lambda i: None if i is None else outs[i], then_r.structure)


def emit_cond(fg: FuncGraph, pred: GraphTensor, then_r: Region, else_r: Region,
              types: Sequence[TensorType]) -> list:
    """Adds the ``cond`` equation for two traced branches (whose results have ``types``) and
    records it on the active tapes; returns its outputs."""
    union = shared_operands(then_r, else_r)
    pred_v = fg.operand(pred)
    regions = [then_r.graph(union), else_r.graph(union)]
    tapes = STATE.get().tapes
    inputs = [fg.source_tensor(v) for v in union] if tapes else []
    saved = random_state.snapshot(inputs)  # the branch's random numbers, for its gradient
    outs = fg.emit("cond", [pred_v] + union, types, regions=regions)
    if tapes and outs:
        record_on_tapes(tapes, inputs, outs, lambda gouts: _cond_grad(
            pred, regions, random_state.replay_inputs(inputs, saved), outs, gouts))
    return outs


def _branch_types(a: Region, b: Region) -> list[TensorType]:
    sa, sb = a.structure, b.structure
    try:
        nest.pack_sequence_as(sa, nest.flatten(sb))
        same = _shape_of(sa) == _shape_of(sb)
    except ValueError:
        same = False
    if not same:
        raise ValueError(f"cond: true_fn and false_fn must return the same structure; true_fn "
                         f"returned {_describe(sa)} but false_fn returned {_describe(sb)}.\n"
                         f"  at {user_location()}")
    types = []
    for i, (x, y) in enumerate(zip(a.results, b.results)):
        if x.type.dtype != y.type.dtype:
            raise TypeError(f"cond: output {i} is {x.type} in true_fn but {y.type} in false_fn; "
                            f"both branches must return the same dtype. Cast one of them with "
                            f"tf.cast.\n  at {user_location()}")
        types.append(TensorType(x.type.dtype, most_specific_common(x.type.shape, y.type.shape)))
    return types


def _shape_of(structure: Any) -> Any:
    return nest.map_structure(lambda x: x is None, structure)


def _describe(structure: Any) -> str:
    return repr(nest.map_structure(lambda i: "None" if i is None else "tensor", structure)) \
        .replace("'", "")


def _cond_grad(pred: Any, regions: list[Graph], inputs: list, outs: list, gouts: list) -> list:
    """The gradient of a cond is a cond of the branches' gradients."""
    seeds = [zeros_like(o) if g is None else g for g, o in zip(gouts, outs)]

    def branch(graph: Graph) -> Callable:
        def run() -> list:
            return region_vjp(graph, inputs, seeds)
        return run

    grads = cond(pred, branch(regions[0]), branch(regions[1]))
    return list(grads)


@replays("cond")
def _replay(eqn: Eqn, ins: list, effects: bool) -> list:
    """Re-runs a ``cond`` equation through ``cond`` (see ``autodiff.replay``)."""
    then_g, else_g = eqn.regions
    rest = ins[1:]
    outs = cond(ins[0], lambda: inline_graph(then_g, rest, effects),
                lambda: inline_graph(else_g, rest, effects))
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]
