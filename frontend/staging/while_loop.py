"""``while_loop``: a Python loop when eager, a ``while`` equation with traced ``cond`` and
``body`` regions when staged; gradients in ``while_grad``."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from stagecraft.eager import nest
from stagecraft.state import random_state
from stagecraft.eager.bind import user_location
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.staging.func_graph import FuncGraph
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.graph import Value
from stagecraft.ir.shapes import as_dims, format_dims, is_compatible, most_specific_common
from stagecraft.ir.types import TensorType
from stagecraft.eager.tensor import Tensor
from stagecraft.staging.while_grad import backward, known_trips, ranks_known, record, while_grad
from stagecraft.staging.regions import Region, record_on_tapes, shared_operands, trace_region


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
            from stagecraft.ops.math_ops import logical_and, less
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


def _loop_over_components(cond: Callable, body: Callable, loop_vars: Any, vars_: list,
                          single: bool, shape_invariants: Any, maximum_iterations: Any,
                          names: Sequence[str] | None) -> Any:
    """A staged loop whose variables include composites (TensorArray): it loops over their
    component tensors and rebuilds the composites around cond, body and the results."""
    from stagecraft.ops.tensor_array import allocate_for_loop
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
