"""``tf.vectorized_map``: ``fn`` traced once on one element's spec, and the traced graph run on
the whole batch at once by per-op batching rules (``ops/batching.py``; TensorFlow's pfor, JAX's
vmap): no loop over the elements is emitted (a loop inside ``fn`` runs once, over the whole
batch, until every element's condition fails). When an op of ``fn`` has no rule (a stateful
random draw, a side effect, a data-dependent shape), the call falls back to a loop over the elements (``map_fn``,
which gives the results a loop gives) and logs which op caused it, as TensorFlow does;
``fallback_to_while_loop=False`` raises instead."""
from __future__ import annotations

import logging
import types
from typing import Any, Callable

from stagecraft.autodiff.tape import VECTORIZE
from stagecraft.eager import nest
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir.types import TensorType
from stagecraft.ops import array_ops as _a
from stagecraft.ops.batching import Batch, Unbatchable, run_batched, unbatchable
from stagecraft.ops.functional_ops import map_fn

__all__ = ["vectorized_map"]

logger = logging.getLogger("stagecraft")


def vectorized_map(fn: Callable, elems: Any, fallback_to_while_loop: bool = True,
                   warn: bool = True) -> Any:
    """``fn`` applied to every slice of ``elems`` (a tensor or a structure of tensors) along
    the first dimension, the results stacked, computed as one batched graph (see the module
    docstring). If ``fn`` uses an op that cannot be batched, the slices go through a loop
    instead (a warning names the op; with ``warn=False`` it is logged at INFO), or, with
    ``fallback_to_while_loop=False``, a ``ValueError`` says which op it is.

    >>> import stagecraft as tf
    >>> tf.vectorized_map(lambda r: tf.reduce_sum(r * r), tf.constant([[1, 2], [3, 4]]))
    ... # doctest: +ELLIPSIS
    <stagecraft.Tensor: shape=(2,), dtype=int32, numpy=array([ 5, 25]...)>
    >>> x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> with tf.GradientTape() as tape:     # per-example gradients: a Jacobian's rows
    ...     tape.watch(x)
    ...     y = tf.vectorized_map(lambda r: tf.reduce_sum(r ** 3), x)
    >>> tape.gradient(y, x).numpy().tolist()
    [[3.0, 12.0], [27.0, 48.0]]
    """
    from stagecraft.staging.func_graph import current_graph
    from stagecraft.staging.regions import trace_region

    flat = [convert_to_tensor(t) for t in nest.flatten(elems)]
    if not flat or any(t.shape.rank == 0 for t in flat):
        raise ValueError("tf.vectorized_map: elems must be tensors of rank >= 1 (the first "
                         "dimension is the one mapped over), got "
                         f"{[t.shape for t in flat] or 'nothing'}.")
    sizes = {t.shape[0] for t in flat if t.shape.rank is not None and t.shape[0] is not None}
    if len(sizes) > 1:
        raise ValueError(f"tf.vectorized_map: every tensor of elems must have the same first "
                         f"dimension, got {sorted(sizes)}.")
    size = sizes.pop() if sizes else _a.shape(flat[0])[0]
    element_types = [TensorType(t.dtype, None if t.shape.rank is None else
                                tuple(t.shape.as_list()[1:])) for t in flat]

    # traced with AutoGraph, as TensorFlow's pfor traces fn in a tf.function: Python `if` and
    # `while` on tensors in fn become cond / while_loop
    traced = fn
    if isinstance(fn, types.FunctionType) and not getattr(fn, "__sc_do_not_convert__", False):
        from stagecraft.converters.api import convert
        traced = convert(fn)

    def element_fn(*xs: Tensor) -> Any:
        return traced(nest.pack_sequence_as(elems, list(xs)))

    parent = current_graph()
    region = trace_region(element_fn, element_types, parent, "vectorized_map")
    fg = region.fg
    graph = fg.build(region.results)
    problem = unbatchable(graph, [True] * len(flat) + [False] * (len(graph.params) - len(flat)))
    if problem is None:
        args = ([(t, True) for t in flat] +
                [(_outside(outer, parent), False) for outer, _ in fg.captures] +
                [(var, False) for var, _ in fg.variables])
        b = Batch(size)
        try:
            outs = [t if batched else b.full(t) for t, batched in run_batched(graph, args, b)]
        except Unbatchable as e:   # a rule that meets a case it cannot batch (pure ops so far)
            problem = e
        else:
            return nest.map_structure(lambda i: None if i is None else outs[i],
                                      region.structure)
    if not fallback_to_while_loop:
        raise ValueError(f"tf.vectorized_map: fn uses op '{problem.op}', which cannot be "
                         f"vectorized ({problem.why}), and fallback_to_while_loop=False. Pass "
                         f"fallback_to_while_loop=True to run a loop instead, or keep that op "
                         f"out of fn.")
    (logger.warning if warn else logger.info)(
        "tf.vectorized_map: using a loop (map_fn) over the elements: fn uses op '%s', which "
        "cannot be vectorized (%s).", problem.op, problem.why)
    return map_fn(fn, elems)


def _outside(outer: Any, parent: Any) -> Any:
    """What a capture of the traced element function stands for where the call runs."""
    if isinstance(outer, Tensor):
        return outer
    return parent.tensor_for(outer)


VECTORIZE.append(vectorized_map)   # for GradientTape.jacobian / batch_jacobian
