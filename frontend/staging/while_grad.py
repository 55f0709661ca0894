"""Reverse mode through staged ``while`` loops.

The gradient of a loop needs, for every iteration, the values its body's VJP reads. A
*recording* run of the loop keeps them: the carried values at the start of each iteration and
the body's own intermediate values, each written as one row of a stack preallocated with one
row per iteration. A *backward* loop then walks the iterations in reverse, applying the VJP of
the body to the kept values (nothing of the body is computed again, except nested regions).

A recording needs the trip count before it starts. When the body steps a carried ``i`` by
``d`` and the condition is ``i < limit`` or AutoGraph's ``tf.range`` test (see
:func:`known_trips`), the count is known on entry and the loop under a single tape *is* its
recording: the forward run keeps what the gradient needs, as TensorFlow's ``while_v2`` does.
Otherwise the forward loop counts its iterations (``while_loop._staged_loop``) and the
gradient records a second run. Under nested tapes (higher-order gradients) the recording is
always a separate loop, which the outer tapes see and differentiate again.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.graph import Graph, Literal, Value
from stagecraft.staging.regions import region_vjp

# Equations whose values a recording keeps: plain ops (not regions, variable access or host
# calls) with static shapes and non-bool values; the others are computed again if needed.
_NOT_KEPT = frozenset(("const", "read", "assign", "print", "assert", "py_function"))


def kept_values(body: Graph) -> list[Value]:
    """The outputs of ``body``'s equations that a recording keeps (see the module doc)."""
    kept = []
    for e in body.eqns:
        if e.regions or e.op in _NOT_KEPT or not e.outputs:
            continue
        types = [v.type for v in e.outputs]
        if all(t.shape is not None and None not in t.shape and t.dtype != _dt.bool_
               for t in types):
            kept += e.outputs
    return kept


@dataclasses.dataclass
class Recording:
    """A recorded run: the trip count, the final carried values, and per iteration (one row
    each) the carried values at its start and the body's kept values. A variable whose shape
    changes across iterations has its rows padded to its final shape and its shapes kept in
    ``shape_history`` (None for the others)."""

    count: Any
    results: list
    history: list
    kept: list
    kept_history: list
    shape_history: list

    def carried_at(self, i: Any) -> list:
        """The carried values at the start of iteration ``i``."""
        return [h[i] if sh is None else _unpad(h[i], sh[i])
                for h, sh in zip(self.history, self.shape_history)]


def ranks_known(shapes: Sequence[Any]) -> bool:
    """Whether every loop variable's rank is known (its history can then be stacked)."""
    return all(sh is not None and getattr(sh, "rank", 0) is not None for sh in shapes)


def check_ranks(shapes: Sequence[Any]) -> None:
    for k, sh in enumerate(shapes):
        if not ranks_known([sh]):
            raise ValueError(f"while_loop gradient: loop variable {k} has an unknown rank; give "
                             f"it a shape invariant of known rank to differentiate the loop.")


def record(regions: Sequence[Graph], carried: list, invariant: list, shapes: list,
           trips: Any, effects: bool, final: Sequence[Any] = ()) -> Recording:
    """Runs the loop keeping what its gradient reads: once more after the forward run
    (``effects=False``: variable writes, prints and asserts are not repeated), or as the
    forward run itself. ``final`` (the forward run's results, for a second run) marks the
    variables whose shape may change, by a non-None entry: their rows are padded to it."""
    from stagecraft.ops.array_ops import (concat, expand_dims, gather, range as range_, shape, zeros,
                                      zeros_like)
    from stagecraft.eager.bind import bind
    from stagecraft.staging.while_loop import while_loop
    from stagecraft.ir.ops import OPS
    from stagecraft.ops.math_ops import cast
    from stagecraft.autodiff.replay import inline_graph
    cond_g, body_g = regions
    n = len(carried)
    # Preallocated [trips, *shape] stacks written one row per iteration (in place on the
    # Numba backend): the loop's carried values keep one shape, so differentiating the
    # recording again (higher order) stacks them rectangularly.
    rows = range_(trips)
    stored = [_dt.int32 if c.dtype == _dt.bool_ else c.dtype for c in carried]
    final = list(final) or [None] * n
    stacks = [gather(expand_dims(zeros_like(cast(c, d)), 0), rows * 0, axis=0) if f is None
              else _padded_stack(trips, c, f, d) for c, d, f in zip(carried, stored, final)]
    padded = [k for k in range(n) if final[k] is not None]
    shape_stacks = [zeros(concat([expand_dims(trips, 0), [carried[k].shape.rank]], 0),
                          _dt.int32) for k in padded]
    kept = kept_values(body_g)
    stacks += [gather(expand_dims(zeros(v.type.shape, v.type.dtype), 0), rows * 0, axis=0)
               for v in kept]

    def cond(count, *state):
        return inline_graph(cond_g, list(state[:n]) + invariant, effects=effects)[0]

    m = len(stacks)

    def body(count, *state):
        vals, stk, shp = list(state[:n]), list(state[n:n + m]), list(state[n + m:])
        for k, (v, s, sh) in enumerate(zip(vals, stk, shapes)):
            if final[k] is not None:
                vals_k = _pad(v, s)
                stk[k] = bind(OPS["row_update"], s, count, cast(vals_k, stored[k]))
            elif not _fully_defined(sh):  # may change from one iteration to the next
                _check_same_shape(v, s)
        rows_out = [s if final[k] is not None else bind(OPS["row_update"], s, count, cast(v, d))
                    for k, (s, v, d) in enumerate(zip(stk, vals, stored))]
        shp = [bind(OPS["row_update"], s, count, shape(vals[k], out_type=_dt.int32))
               for s, k in zip(shp, padded)]
        values: dict = {}
        nxt = inline_graph(body_g, vals + invariant, effects=effects, keep=values)
        rows_out += [bind(OPS["row_update"], s, count, values[v.uid])
                     for s, v in zip(stk[n:], kept)]
        return (count + 1,) + tuple(nxt) + tuple(rows_out) + tuple(shp)

    res = while_loop(cond, body, (convert_to_tensor(0),) + tuple(carried) + tuple(stacks)
                     + tuple(shape_stacks),
                     shape_invariants=[[]] + list(shapes) + [s.shape for s in stacks]
                     + [s.shape for s in shape_stacks])
    history = [h if c.dtype != _dt.bool_ else cast(h, _dt.bool_)
               for h, c in zip(res[1 + n:1 + 2 * n], carried)]
    shape_history: list = [None] * n
    for k, h in zip(padded, res[1 + n + m:]):
        shape_history[k] = h
    return Recording(res[0], list(res[1:1 + n]), history, kept, list(res[1 + 2 * n:1 + n + m]),
                     shape_history)


def _padded_stack(trips: Any, first: Any, final: Any, dtype: Any) -> Any:
    """Zeros of shape [trips, *bound], ``bound`` the larger of the first and the final value's
    dims: rows for a variable that grows (a TensorArray) or shrinks (its gradient, walked
    backwards) from one to the other."""
    from stagecraft.ops.array_ops import concat, expand_dims, shape, zeros
    from stagecraft.ops.math_ops import maximum
    bound = maximum(shape(first, out_type=_dt.int32), shape(final, out_type=_dt.int32))
    return zeros(concat([expand_dims(trips, 0), bound], 0), dtype)


def _pad(value: Any, stack: Any) -> Any:
    """``value`` padded with zeros at the end of each axis to a row of ``stack``."""
    from stagecraft.ops.array_ops import concat, shape, zeros
    from stagecraft.ops.logging_ops import emit_assert
    from stagecraft.ops.math_ops import less_equal, reduce_all, subtract
    target = shape(stack, out_type=_dt.int32)[1:]
    emit_assert(reduce_all(less_equal(shape(value, out_type=_dt.int32), target)),
                "while_loop gradient: a loop variable is larger in some iteration than both "
                "before and after the loop; such a loop runs, but cannot be differentiated yet.")
    for axis in range(value.shape.rank):
        now = shape(value, out_type=_dt.int32)
        missing = concat([now[:axis], [subtract(target[axis], now[axis])], now[axis + 1:]], 0)
        value = concat([value, zeros(missing, value.dtype)], axis)
    return value


def _unpad(row: Any, dims: Any) -> Any:
    """The leading ``dims`` of a padded row."""
    return row[tuple(slice(None, dims[axis]) for axis in range(row.shape.rank))]


def _fully_defined(shape: Any) -> bool:
    dims = shape.as_list() if hasattr(shape, "as_list") else shape
    return dims is not None and None not in dims


def _check_same_shape(value: Any, stack: Any) -> None:
    """A recording keeps one row per iteration, so a loop variable must keep its shape."""
    from stagecraft.ops.array_ops import shape
    from stagecraft.ops.logging_ops import emit_assert
    from stagecraft.ops.math_ops import equal, reduce_all
    emit_assert(reduce_all(equal(shape(value), shape(stack)[1:])),
                "while_loop gradient: a loop variable changes shape from one iteration to "
                "the next; such a loop runs, but cannot be differentiated yet. For a "
                "TensorArray written in the loop, give it a fixed size (size=n, which may be "
                "a tensor) instead of dynamic_size=True.")


def backward(regions: Sequence[Graph], carried: list, invariant: list, shapes: list,
             rec: Recording, outs: list, gouts: list) -> list:
    """Gradients for ``carried + invariant`` from the output gradients ``gouts``: a loop over
    the recorded iterations in reverse applying the body's VJP to the kept values."""
    from stagecraft.ops.array_ops import zeros_like
    from stagecraft.staging.while_loop import while_loop
    from stagecraft.ops.math_ops import add, greater_equal, subtract
    body_g = regions[1]
    n = len(carried)
    seeds = [zeros_like(o) if g is None else g for g, o in zip(gouts, outs)]
    inv_zero = [zeros_like(v) for v in invariant]

    def cond(i, *state):
        return greater_equal(i, 0)

    def body(i, *state):
        g_carried, g_inv = list(state[:n]), list(state[n:])
        vals = rec.carried_at(i)
        memo = {v.uid: h[i] for v, h in zip(rec.kept, rec.kept_history)}
        grads = region_vjp(body_g, invariant, g_carried, explicit=vals, memo=memo)
        new_g = [grads[k] if grads[k] is not None else g_carried[k] for k in range(n)]
        new_inv = [add(a, b) if b is not None and a.dtype.is_floating else a
                   for a, b in zip(g_inv, grads[n:])]
        return (subtract(i, 1),) + tuple(new_g) + tuple(new_inv)

    # The gradient of a variable that grows shrinks along the backward loop.
    varying = [False] + [h is not None for h in rec.shape_history] + [False] * len(invariant)
    out = while_loop(cond, body, (subtract(rec.count, 1),) + tuple(seeds) + tuple(inv_zero),
                     shape_invariants=[[]] + list(shapes) + [v.shape for v in invariant],
                     _varying=varying)
    g_carried, g_inv = list(out[1:1 + n]), list(out[1 + n:])
    return [g if c.dtype.is_floating else None for g, c in zip(g_carried, carried)] + \
        [g if v.dtype.is_floating else None for g, v in zip(g_inv, invariant)]


def while_grad(regions: Sequence[Graph], inputs: list, n: int, outs: list, gouts: list,
               counted: bool, varying: Sequence[bool] = ()) -> list:
    """The gradient of a loop emitted without a recording: records a second run (its trip
    count is the forward loop's first carried value when ``counted``, else it is counted by
    one more run), then runs the backward loop."""
    from stagecraft.staging.while_loop import while_loop
    from stagecraft.autodiff.replay import inline_graph
    cond_g, body_g = regions
    carried, invariant = inputs[:n], inputs[n:]
    # The loop's own types (outs), not the initial values' shapes, are the invariants: the
    # forward loop may have relaxed them (shape_invariants, or a second-pass relaxation).
    shapes = [o.shape for o in outs]
    check_ranks(shapes[1:] if counted else shapes)  # numbered as the user's loop variables
    if counted:
        trips = outs[0]
    else:
        def count_cond(count, *vals):
            return inline_graph(cond_g, list(vals) + invariant, effects=False)[0]

        def count_body(count, *vals):
            return (count + 1,) + tuple(inline_graph(body_g, list(vals) + invariant,
                                                     effects=False))
        trips = while_loop(count_cond, count_body, (convert_to_tensor(0),) + tuple(carried),
                           shape_invariants=[[]] + shapes)[0]
    final = [o if v else None for o, v in zip(outs, varying)] if any(varying) else ()
    rec = record(regions, carried, invariant, shapes, trips, effects=False, final=final)
    return backward(regions, carried, invariant, shapes, rec, outs, gouts)


def known_trips(regions: Sequence[Graph], inputs: list, n: int) -> Any:
    """The loop's trip count computed before it runs, or None. Recognized: a carried integer
    ``i`` the body steps by ``d`` (``i = i + d``, or ``i = i - c`` for a constant ``c``),
    with the condition ``i < limit`` or
    ``i <= limit`` (``d`` a positive constant), ``i > limit`` or ``i >= limit`` (``d`` a
    negative constant), either operand order, or AutoGraph's ``for i in tf.range(...)`` test
    ``i < limit if d > 0 else i > limit``; ``d`` and ``limit`` constants or loop invariants.
    Then the count is ``max(ceil(span / d), 0)`` with ``span = limit - i0`` (one more step
    toward ``d`` for ``<=``/``>=``)."""
    from stagecraft.ops.array_ops import ones_like
    from stagecraft.ops.math_ops import (add, cast, equal, floordiv, maximum, negative, sign,
                                     subtract, where)
    cond_g, body_g = regions
    made = {o.uid: e for e in cond_g.eqns for o in e.outputs}
    slot = _Slots(cond_g, n)
    test = made.get(getattr(cond_g.results[0], "uid", None))
    if test is None:
        return None
    step_in_cond = None
    op = test.op
    if op == "select":   # AutoGraph's range test: select(d > 0, i < limit, i > limit)
        sign_t, up, down = (made.get(getattr(x, "uid", None)) for x in test.inputs)
        if None in (sign_t, up, down) or sign_t.op != "greater" or up.op != "less" or \
                down.op != "greater" or slot.of(up.inputs[0]) != slot.of(down.inputs[0]) or \
                slot.of(up.inputs[1]) != slot.of(down.inputs[1]) or \
                not _is_literal(sign_t.inputs[1], 0):
            return None
        test, op, step_in_cond = up, "less", slot.of(sign_t.inputs[0])
    elif op not in _MIRROR:
        return None
    index, bound = slot.of(test.inputs[0]), slot.of(test.inputs[1])
    if step_in_cond is None and bound is not None and bound[0] == "carried" and \
            (index is None or index[0] != "carried"):
        index, bound, op = bound, index, _MIRROR[op]   # limit > i is i < limit
    if index is None or index[0] != "carried" or bound is None or bound[0] == "carried":
        return None
    k = index[1]
    body_made = {o.uid: e for e in body_g.eqns for o in e.outputs}
    step = body_made.get(getattr(body_g.results[k], "uid", None))
    if step is None or step.op not in ("add", "subtract") or not inputs[k].dtype.is_integer:
        return None
    body_slot = _Slots(body_g, n)
    operands = [body_slot.of(x) for x in step.inputs]
    if ("carried", k) not in operands or (step.op == "subtract" and (
            operands[0] != ("carried", k) or step_in_cond is not None)):
        return None
    d = operands[1 - operands.index(("carried", k))]
    if d is None or d[0] == "carried":
        return None
    if step.op == "subtract":   # i = i - d steps by -d
        if d[0] != "literal":
            return None
        d = ("literal", -d[1], d[2])
    if step_in_cond is not None:
        if d != step_in_cond:
            return None
    elif not (d[0] == "literal" and (d[1] > 0 if op in ("less", "less_equal") else d[1] < 0)):
        return None
    limit, delta = _operand(bound, inputs), _operand(d, inputs)
    # ceil(a / d) = -floor(-a / d), for either sign of d. The count sizes the recording's
    # stacks (the loop itself keeps its own test), so it may only err upwards: a zero step,
    # which leaves the loop at once or never, counts with a step of 1.
    delta = where(equal(delta, 0), ones_like(delta), delta)
    span = subtract(limit, inputs[k])
    if op in ("less_equal", "greater_equal"):   # the limit itself is one more step
        span = add(span, sign(delta))
    count = negative(floordiv(negative(span), delta))
    return cast(maximum(count, 0), _dt.int32)


# The comparisons a counted loop may test, and each one with its operands swapped.
_MIRROR = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
           "greater_equal": "less_equal"}


class _Slots:
    """What an operand of a loop region stands for: ``("carried", k)``, ``("invariant", j)``
    (the index among the loop's inputs) or ``("literal", value)``; None for values the
    region computes."""

    def __init__(self, graph: Graph, n: int):
        self.index = {p.uid: i for i, p in enumerate(graph.params)}
        self.n = n

    def of(self, x: Any) -> tuple | None:
        if isinstance(x, Literal):
            return ("literal", x.value.item() if hasattr(x.value, "item") else x.value,
                    x.type.dtype)
        i = self.index.get(getattr(x, "uid", None))
        if i is None:
            return None
        return ("carried", i) if i < self.n else ("invariant", i)


def _is_literal(x: Any, value: Any) -> bool:
    return isinstance(x, Literal) and x.value == value


def _operand(slot: tuple, inputs: list) -> Any:
    if slot[0] == "literal":
        return convert_to_tensor(slot[2].np.type(slot[1]))
    return inputs[slot[1]]
