"""``while_loop``: a Python loop when eager, a ``while`` equation with traced ``cond`` and
``body`` regions when staged, and reverse mode through staged loops (one module, as TF's
``while_v2``: the gradient of a loop is built of loops, and the forward loop may be its own
recording).

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
from typing import Any, Callable, Sequence

from stagecraft.autodiff.replay import inline_graph, replays
from stagecraft.autodiff.tape import trainable
from stagecraft.eager import nest
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ops.array_ops import (concat, expand_dims, gather, ones_like, range as range_,
                                      shape, zeros, zeros_like)
from stagecraft.ops.logging_ops import emit_assert
from stagecraft.ops.math_ops import (add, cast, equal, floordiv, greater_equal, less_equal,
                                     logical_and, maximum, negative, reduce_all, sign, subtract,
                                     where)
from stagecraft.state import random_state
from stagecraft.eager.bind import user_location
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.staging.func_graph import FuncGraph
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.graph import Eqn, Graph, Literal, Value
from stagecraft.ir.shapes import as_dims, format_dims, is_compatible, most_specific_common
from stagecraft.ir.types import TensorType
from stagecraft.eager.tensor import Tensor
from stagecraft.staging.regions import (Region, record_on_tapes, region_vjp, shared_operands,
                                        trace_region)
from stagecraft.ops.math_ops import less
from stagecraft.ops.tensor_array import allocate_for_loop


def while_loop(cond: Callable, body: Callable, loop_vars: Any, shape_invariants: Any = None,
               parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
               maximum_iterations: Any = None, name: str | None = None,
               _names: Sequence[str] | None = None,
               _varying: Sequence[bool] | None = None) -> Any:
    """Repeats ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``.

    Behaves like ``while cond(*v): v = body(*v)`` (eagerly that is what runs). Inside
    ``@function`` one ``while`` equation runs the loop: ``body`` must return the loop
    variables' structure with the same dtypes and shapes, unless ``shape_invariants`` gives a
    less specific shape (e.g. ``tf.TensorShape([None])``) for a variable whose shape changes.

    >>> import stagecraft as tf
    >>> tf.while_loop(lambda i: i < 4, lambda i: (i + 1,), (tf.constant(0),))
    (<stagecraft.Tensor: shape=(), dtype=int32, numpy=4>,)
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables.")
    single = not isinstance(loop_vars, (list, tuple))
    vars_ = [loop_vars] if single else loop_vars
    fg = STATE.get().graph
    if fg is None:
        return _eager_loop(cond, body, vars_, maximum_iterations, single)
    if any(hasattr(v, "_to_components") for v in vars_):
        return _loop_over_components(cond, body, loop_vars, vars_, single, shape_invariants,
                                     maximum_iterations, _names)
    if maximum_iterations is not None:
        limit = maximum_iterations
        inner_cond, inner_body = cond, body

        def cond(i, *v):  # noqa: F811 (the counted loop's condition)
            return logical_and(less(i, limit), inner_cond(*v))

        def body(i, *v):  # noqa: F811
            out = inner_body(*v)
            return (i + 1,) + (tuple(out) if isinstance(out, (list, tuple)) else (out,))

        shape_invariants = None if shape_invariants is None else \
            [as_dims([])] + list(shape_invariants)
        _names = None if _names is None else ["iteration"] + list(_names)
        out = _staged_loop(fg, cond, body, [convert_to_tensor(0)] + list(vars_), shape_invariants,
                           _names, None if _varying is None else [False] + list(_varying))[1:]
    else:
        out = _staged_loop(fg, cond, body, list(vars_), shape_invariants, _names, _varying)
    if single:
        return out[0]
    return type(loop_vars)(out) if isinstance(loop_vars, list) else nest.pack_sequence_as(
        tuple(loop_vars), nest.flatten(out))


def and_extra_test(going: Any, extra_test: Callable | None) -> Any:
    """A loop test ``going`` combined with AutoGraph's ``extra_test`` (the flag a ``break``
    or ``return`` sets), which may be a Python bool or a tensor.

    >>> import stagecraft as tf
    >>> bool(and_extra_test(tf.constant(True), lambda: False))
    False
    """
    if extra_test is None:
        return going
    extra = extra_test()
    extra = extra if isinstance(extra, Tensor) else convert_to_tensor(bool(extra))
    return logical_and(going, extra)


def _loop_over_components(cond: Callable, body: Callable, loop_vars: Any, vars_: list,
                          single: bool, shape_invariants: Any, maximum_iterations: Any,
                          names: Sequence[str] | None) -> Any:
    """A staged loop whose variables include composites (TensorArray): it loops over their
    component tensors and rebuilds the composites around cond, body and the results."""
    vars_ = allocate_for_loop(body, vars_)   # TensorArrays the body writes first get a buffer
    flat, layout, invariants = [], [], []
    given = list(shape_invariants) if shape_invariants is not None else [None] * len(vars_)
    for v, inv in zip(vars_, given):
        if hasattr(v, "_to_components"):
            comps = v._to_components()
            layout.append((v, len(comps)))
            flat += comps
            invariants += v._component_shapes()
        else:
            t = v if isinstance(v, Tensor) else convert_to_tensor(v)
            layout.append((None, 1))
            flat.append(t)
            invariants.append(t.shape if inv is None else inv)

    def rebuild(values: Sequence[Any]) -> list:
        out, k = [], 0
        for proto, n in layout:
            part = list(values[k:k + n])
            out.append(values[k] if proto is None else proto._from_components(part))
            k += n
        return out

    def flatten(values: Any) -> list:
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        out = []
        for v in values:
            out += v._to_components() if hasattr(v, "_to_components") else [v]
        return out

    result = while_loop(lambda *c: cond(*rebuild(c)), lambda *c: tuple(flatten(body(*rebuild(c)))),
                        tuple(flat), shape_invariants=invariants,
                        maximum_iterations=maximum_iterations)
    out = rebuild(result)
    if single:
        return out[0]
    return type(loop_vars)(out)


def _eager_loop(cond: Callable, body: Callable, vars_: list, maximum_iterations: Any,
                single: bool) -> Any:
    i = 0
    limit = None if maximum_iterations is None else int(maximum_iterations)
    v = list(vars_)
    while (limit is None or i < limit) and bool(cond(*v)):
        out = body(*v)
        v = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(v) != len(vars_):
            raise ValueError(f"while_loop: body returned {len(v)} values but there are "
                             f"{len(vars_)} loop variables; return one value per variable.")
        i += 1
    return v[0] if single else tuple(v) if isinstance(vars_, tuple) else type(vars_)(v)


def _name(names: Sequence[str] | None, i: int) -> str:
    return names[i] if names is not None and i < len(names) else f"loop_vars[{i}]"


def _staged_loop(fg: FuncGraph, cond: Callable, body: Callable, vars_: list,
                 shape_invariants: Any, names: Sequence[str] | None,
                 varying: Sequence[bool] | None = None) -> list:
    """The staged loop; ``varying`` marks variables known to change shape across iterations
    beyond what their static shapes show (a loop gradient's gradients of such variables)."""
    # Under a tape the loop also counts its iterations: its gradient needs the trip count,
    # which otherwise costs running the whole loop once more.
    counted = bool(STATE.get().tapes)
    if counted:
        user_cond, user_body = cond, _as_tuple(body)
        cond = lambda k, *v: user_cond(*v)  # noqa: E731
        body = lambda k, *v: (k + 1,) + user_body(*v)  # noqa: E731
        if shape_invariants is not None:
            shape_invariants = [as_dims([])] + list(
                shape_invariants if isinstance(shape_invariants, (list, tuple))
                else [shape_invariants])
        names = ["(iteration count)"] + [_name(names, i) for i in range(len(vars_))]
        vars_ = [convert_to_tensor(0)] + list(vars_)
        varying = None if varying is None else [False] + list(varying)
    flat = [convert_to_tensor(v) if not isinstance(v, Tensor) and not hasattr(v, "assign")
            else v for v in vars_]
    init = [fg.operand(v) for v in flat]
    init = [v if isinstance(v, Value) else fg.operand(convert_to_tensor(flat[i]))
            for i, v in enumerate(init)]
    types = [v.type for v in init]
    if shape_invariants is not None:
        invariants = [as_dims(s) if s is not None else None for s in
                      (shape_invariants if isinstance(shape_invariants, (list, tuple))
                       else [shape_invariants])]
        for i, (t, s) in enumerate(zip(types, invariants)):
            if not is_compatible(t.shape, s):
                raise ValueError(f"while_loop: '{_name(names, i)}' enters the loop with shape "
                                 f"{format_dims(t.shape)}, which is not compatible with its "
                                 f"shape invariant {format_dims(s)}.\n  at {user_location()}")
        types = [TensorType(t.dtype, s) for t, s in zip(types, invariants)]
    for _ in range(2):  # a second pass when the body returns less specific shapes
        cond_r = trace_region(lambda *v: cond(*v), types, fg, "cond", names)
        body_r = trace_region(_as_tuple(body), types, fg, "body", names)
        relaxed = _check_body(body_r, types, shape_invariants is not None, names)
        if relaxed == types:
            break
        types = relaxed
    if len(cond_r.results) != 1 or cond_r.results[0].type.dtype != _dt.bool_:
        raise TypeError(f"while_loop: cond must return one scalar bool tensor, got "
                        f"{[str(r.type) for r in cond_r.results]}.\n  at {user_location()}")
    union = shared_operands(cond_r, body_r)
    regions = [cond_r.graph(union), body_r.graph(union)]
    state = STATE.get()
    inputs = [fg.source_tensor(v) for v in init + union] if state.tapes else []
    saved = random_state.snapshot(inputs)  # the body's random numbers, for its gradient
    shapes = [t.shape for t in types]
    # Variables whose shape may change across iterations (a growing TensorArray) are kept
    # padded to their final shape: the recording then needs the loop's results first.
    varying = [v.type.shape != t.shape or bool(varying and varying[k])
               for k, (v, t) in enumerate(zip(init, types))]
    trips = known_trips(regions, inputs, len(init)) \
        if len(state.tapes) == 1 and ranks_known(shapes) and not any(varying) else None
    if trips is not None:
        # One tape and a known trip count: the forward run is the gradient's recording (see
        # while_grad). It is emitted unseen by the tape, which records the loop as one op.
        token = STATE.set(state.replace(tapes=()))
        try:
            rec = record(regions, inputs[:len(init)], inputs[len(init):], shapes, trips,
                         effects=True)
        finally:
            STATE.reset(token)
        outs = rec.results
        record_on_tapes(state.tapes, inputs, outs, lambda gouts: backward(
            regions, inputs[:len(init)], random_state.replay_inputs(inputs[len(init):], saved),
            shapes, rec, outs, gouts))
    else:
        outs = fg.emit("while", init + union, types, {"carry": len(init)}, regions=regions,
                       hints=names)
        if state.tapes:
            record_on_tapes(state.tapes, inputs, outs, lambda gouts: while_grad(
                regions, random_state.replay_inputs(inputs, saved), len(init), outs, gouts,
                counted, varying))
    return outs[1:] if counted else outs


def _as_tuple(body: Callable) -> Callable:
    def run(*v: Any) -> tuple:
        out = body(*v)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)
    return run


def _check_body(body_r: Region, types: list, has_invariants: bool,
                names: Sequence[str] | None) -> list:
    results = body_r.results
    if len(results) != len(types) or any(i is None for i in nest.flatten(body_r.structure)):
        raise ValueError(f"while_loop: body must return {len(types)} tensors (one per loop "
                         f"variable), got {len(results)}.\n  at {user_location()}")
    relaxed = []
    for i, (r, t) in enumerate(zip(results, types)):
        if r.type.dtype != t.dtype:
            raise TypeError(f"while_loop: '{_name(names, i)}' is {t} before the loop but "
                            f"{r.type} after one iteration ({user_location()}). Cast it in the "
                            f"loop body, e.g. tf.cast(x, tf.{t.dtype.name}).")
        if not is_compatible(r.type.shape, t.shape) or (
                t.shape is not None and r.type.shape is not None and not has_invariants
                and any(a is not None and b is not None and a != b
                        for a, b in zip(r.type.shape, t.shape))):
            raise ValueError(f"while_loop: '{_name(names, i)}' enters the loop with shape "
                             f"{format_dims(t.shape)}, but has shape {format_dims(r.type.shape)} "
                             f"after one iteration ({user_location()}). To allow the shape to "
                             f"vary across iterations, use the `shape_invariants` argument of "
                             f"tf.while_loop (or tf.autograph.experimental.set_loop_options) to "
                             f"specify a less-specific shape (e.g. tf.TensorShape([None])).")
        relaxed.append(TensorType(t.dtype, most_specific_common(t.shape, r.type.shape)))
    return relaxed


@replays("while")
def _replay(eqn: Eqn, ins: list, effects: bool) -> list:
    """Re-runs a ``while`` equation through ``while_loop`` (see ``autodiff.replay``)."""
    n = dict(eqn.attrs)["carry"]
    carried, inv = list(ins[:n]), list(ins[n:])
    cond_g, body_g = eqn.regions
    # The equation's output types are the loop's (possibly relaxed) shape invariants.
    return list(while_loop(
        lambda *v: inline_graph(cond_g, list(v) + inv, effects)[0],
        lambda *v: tuple(inline_graph(body_g, list(v) + inv, effects)), tuple(carried),
        shape_invariants=[o.type.shape for o in eqn.outputs]))


# ------------------------------------------------------------------ gradients of loops

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
    bound = maximum(shape(first, out_type=_dt.int32), shape(final, out_type=_dt.int32))
    return zeros(concat([expand_dims(trips, 0), bound], 0), dtype)


def _pad(value: Any, stack: Any) -> Any:
    """``value`` padded with zeros at the end of each axis to a row of ``stack``."""
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
    emit_assert(reduce_all(equal(shape(value), shape(stack)[1:])),
                "while_loop gradient: a loop variable changes shape from one iteration to "
                "the next; such a loop runs, but cannot be differentiated yet. For a "
                "TensorArray written in the loop, give it a fixed size (size=n, which may be "
                "a tensor) instead of dynamic_size=True.")


def backward(regions: Sequence[Graph], carried: list, invariant: list, shapes: list,
             rec: Recording, outs: list, gouts: list) -> list:
    """Gradients for ``carried + invariant`` from the output gradients ``gouts``: a loop over
    the recorded iterations in reverse applying the body's VJP to the kept values."""
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
        new_inv = [add(a, b) if b is not None and trainable(a.dtype) else a
                   for a, b in zip(g_inv, grads[n:])]
        return (subtract(i, 1),) + tuple(new_g) + tuple(new_inv)

    # The gradient of a variable that grows shrinks along the backward loop.
    varying = [False] + [h is not None for h in rec.shape_history] + [False] * len(invariant)
    out = while_loop(cond, body, (subtract(rec.count, 1),) + tuple(seeds) + tuple(inv_zero),
                     shape_invariants=[[]] + list(shapes) + [v.shape for v in invariant],
                     _varying=varying)
    g_carried, g_inv = list(out[1:1 + n]), list(out[1 + n:])
    return [g if trainable(c.dtype) else None for g, c in zip(g_carried, carried)] + \
        [g if trainable(v.dtype) else None for g, v in zip(g_inv, invariant)]


def while_grad(regions: Sequence[Graph], inputs: list, n: int, outs: list, gouts: list,
               counted: bool, varying: Sequence[bool] = ()) -> list:
    """The gradient of a loop emitted without a recording: records a second run (its trip
    count is the forward loop's first carried value when ``counted``, else it is counted by
    one more run), then runs the backward loop."""
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
