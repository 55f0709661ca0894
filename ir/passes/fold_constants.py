"""Constant folding: evaluates primitives whose operands are all constants at compile time.

An equation is folded when its op is a stateless primitive of the op table (never a random op,
``read``, ``print`` or control flow), every operand is a ``Literal`` or the output of a
``const`` equation, and the op table's NumPy ``kernel`` (the reference backend's) returns, for
each output, an array of exactly the output's dtype, of a shape the output's type admits, with
at most ``MAX_FOLDED_ELEMENTS`` elements. The equation becomes a ``const`` equation defining the
same output value (so its type, and everything downstream, is unchanged) at the same location.

A ``value_free`` op of the op table (``zeros_like``, ``ones_like``, ``shape``) folds as soon as
its operands' types are fully known, whatever computes them: the zero accumulators of a
gradient and the buffers of its loop stacks become constants.

An output whose type leaves dimensions unknown (``range``'s ``i32[?]``) folds too: its value
is then known, so backends need not size it from device values at run time (on a GPU a host
read; the stacks of a while loop's gradient are made this way from its trip count).

A kernel that raises (an integer division by zero, an out-of-range index) is left for run
time, where the error is reported as usual. The now unused input constants are left for
``eliminate_dead_code``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.ir.graph import Eqn, Graph, Literal, Value, const_value
from stagecraft.ir.ops import OPS
from stagecraft.ir.passes.rewrite import const_eqn, literal_array, map_regions
from stagecraft.ir.shapes import is_instance

MAX_FOLDED_ELEMENTS = 4096  # larger results stay computed at run time (graphs stay small)


def fold_constants(graph: Graph) -> tuple[bool, Graph]:
    """``(changed, graph')`` with constant-operand primitives replaced by ``const`` equations.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f():
    ...     return tf.constant(2, tf.int32) * tf.constant(3, tf.int32)
    >>> print(fold_constants(f.get_concrete_function().graph)[1])
    graph @f() -> (i32[]) {
      %0: i32[] = const[value=array(2, i32)]
      %1: i32[] = const[value=array(3, i32)]
      %2: i32[] = const[value=array(6, i32)]
      return %2
    }
    """
    return _fold(graph, {})


def _fold(graph: Graph, memo: dict) -> tuple[bool, Graph]:
    consts: dict[int, Any] = {}
    changed = False
    eqns = []
    for eqn in graph.eqns:
        c, eqn = map_regions(eqn, lambda r: _fold(r, memo), memo)
        changed |= c
        folded = _try_fold(eqn, consts)
        if folded is not None:
            changed = True
            eqns.extend(folded)
            for e in folded:
                consts[e.outputs[0].uid] = const_value(e)
            continue
        if eqn.op == "const":
            consts[eqn.outputs[0].uid] = const_value(eqn)
        eqns.append(eqn)
    if not changed:
        return False, graph
    return True, Graph(graph.name, graph.params, tuple(eqns), graph.results)


def _try_fold(eqn: Eqn, consts: dict) -> list[Eqn] | None:
    op = OPS.get(eqn.op)
    if op is None or op.stateful or eqn.regions:
        return None
    args = []
    for x in eqn.inputs:
        if isinstance(x, Literal):
            args.append(literal_array(x))
        elif isinstance(x, Value) and x.uid in consts:
            args.append(consts[x.uid])
        elif op.value_free and _static(x):   # (any values of the operand's type will do)
            args.append(np.zeros(x.type.shape, x.type.dtype.np))
        else:
            return None
    try:
        with np.errstate(all="ignore"):
            out = op.kernel(*args, **dict(eqn.attrs))
    except Exception:  # noqa: BLE001 - any kernel error is reported at run time instead
        return None
    outs = (out,) if op.num_outputs == 1 else tuple(out)
    if len(outs) != len(eqn.outputs):
        return None
    folded = []
    for v, o in zip(eqn.outputs, outs):
        arr = np.array(o)  # a copy: never a view of an input constant
        t = v.type
        if (v.ref or arr.dtype != t.dtype.np or not is_instance(arr.shape, t.shape)
                or arr.size > MAX_FOLDED_ELEMENTS):
            return None
        folded.append(const_eqn(v, arr, eqn.loc))
    return folded


def _static(x: Value) -> bool:
    """Whether ``x`` is a tensor of fully known shape, small enough to stand in for."""
    shape = x.type.shape
    return (not x.ref and shape is not None and None not in shape
            and int(np.prod(shape)) <= MAX_FOLDED_ELEMENTS)
