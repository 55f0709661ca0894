"""Runtime operators for converted ``if``/``while``/``for``: plain Python when the condition
or iterable is a Python value or an eager tensor, graph control flow when it is symbolic.

Generated code passes each statement's body as a nested function that reads and writes the
enclosing function's locals, plus ``get_state``/``set_state`` closures over the variables the
statement carries and their ``names`` (for messages).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.staging.cond import emit_cond
from stagecraft.staging.regions import Region
from stagecraft.staging.while_loop import and_extra_test, while_loop
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager import nest
from stagecraft.converters.operators import trace_report as _report
from stagecraft.converters.operators.variables import (RETURN_VALUE, Undefined,
                                                       UndefinedReturnValue, is_undefined)
from stagecraft.staging.func_graph import FuncGraph, building
from stagecraft.staging.graph_tensor import GraphTensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.graph import Value
from stagecraft.ir.shapes import most_specific_common
from stagecraft.ir.types import TensorType
from stagecraft.eager.tensor import Tensor


def _tensorlike(v: Any) -> bool:
    return isinstance(v, (Tensor, bool, int, float, np.ndarray, np.generic)) or \
        hasattr(v, "read_value")


def _check_pred(pred: GraphTensor, what: str, loc: str) -> None:
    if pred.dtype != _dt.bool_ or pred.shape.rank not in (0, None):
        raise TypeError(f"The condition of this {what} is a {pred.dtype.name} tensor of shape "
                        f"{pred.shape} ({loc}); a tensor condition must be a scalar bool. Compare "
                        f"it (x > 0) or reduce it (tf.reduce_any(x)).")


# ---------------------------------------------------------------------------- if

def if_stmt(cond: Any, body: Callable, orelse: Callable, get_state: Callable,
            set_state: Callable, names: Sequence[str], loc: str,
            restore: Sequence[str] = ()) -> None:
    """``if cond: body() else: orelse()``; a symbolic ``cond`` stages both branches.

    The state is ``names`` (merged after the branches) followed by ``restore``: variables a
    branch modifies that another branch reads but nothing reads after the ``if``; each
    branch's trace starts from their values before the ``if``, and they are not merged."""
    if is_undefined(cond):
        raise cond.error()
    _report.record("if", loc, "staged" if isinstance(cond, GraphTensor) else "python", names)
    if not isinstance(cond, GraphTensor):
        if cond:
            body()
        else:
            orelse()
        return
    _check_pred(cond, "if", loc)
    fg = STATE.get().graph
    init = _snapshot(get_state())
    branches = []
    for fn, label in ((body, "if"), (orelse, "else")):
        rg = FuncGraph(label, parent=fg)
        with building(rg):
            set_state(_snapshot(init))  # fresh containers: one branch's d[k] = v stays its own
            fn()
            branches.append((rg, _snapshot(get_state())))
    set_state(init)
    (then_g, then_vals), (else_g, else_vals) = branches
    merged = _Merge(then_g, else_g, loc)
    final = [merged.value(name, a, b) for name, a, b in zip(names, then_vals, else_vals)]
    if merged.types or then_g.builder.eqns or else_g.builder.eqns:
        outs = emit_cond(fg, cond, Region(then_g, None, merged.then_results),
                         Region(else_g, None, merged.else_results), merged.types)
    else:
        outs = []
    set_state([nest.map_structure(lambda s: outs[s.index] if isinstance(s, _Out) else s, v)
               if not isinstance(v, Undefined) else v for v in final] + init[len(names):])


class _Out:
    """A placeholder for the cond output at ``index``."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


class _Merge:
    """Reconciles what the two branches of a staged ``if`` leave in each carried variable."""

    def __init__(self, then_g: FuncGraph, else_g: FuncGraph, loc: str):
        self.then_g, self.else_g, self.loc = then_g, else_g, loc
        self.then_results: list = []
        self.else_results: list = []
        self.types: list = []

    def value(self, name: str, a: Any, b: Any) -> Any:
        loc = self.loc
        if is_undefined(a) or is_undefined(b):
            if is_undefined(a) and is_undefined(b):
                return a
            missing = "else" if is_undefined(b) else "if"
            reason = (f"'{name}' must also be initialized in the {missing} branch ({loc}): a "
                      f"tensor-dependent if can only define a variable that both branches "
                      f"define. Assign '{name}' before the if, or in both branches.")
            if _is_composite(name):
                # An item or attribute outlives the function: as in TensorFlow, fail now.
                raise ValueError(reason)
            return Undefined(name, reason)
        # A return in only one branch: the other branch's value is never used, give it the
        # same structure (zeros) so both branches agree.
        if isinstance(a, UndefinedReturnValue) and not isinstance(b, UndefinedReturnValue):
            a = self._zeros_like(self.then_g, b)
        elif isinstance(b, UndefinedReturnValue) and not isinstance(a, UndefinedReturnValue):
            b = self._zeros_like(self.else_g, a)
        if (a is None) != (b is None):
            branch = "if" if a is None else "else"
            if name == RETURN_VALUE:
                raise ValueError(
                    f"A tensor-dependent if returns a value in one branch and None in the "
                    f"{branch} branch ({loc}): the {branch} branch must also have a return "
                    f"statement that returns a value (every path must, as in TensorFlow; after "
                    f"a loop that returns, too). Return a tensor of the same dtype, e.g. "
                    f"tf.zeros_like(...).")
            raise ValueError(f"'{name}' is None in the {branch} branch of a tensor-dependent if "
                             f"but a value in the other ({loc}); both branches must give it a "
                             f"tensor. Give it a value (e.g. tf.zeros_like(...)) in both.")
        leaves_a, leaves_b = nest.flatten(a), nest.flatten(b)
        try:
            nest.pack_sequence_as(a, leaves_b)
            same_structure = _skeleton(a) == _skeleton(b)
        except ValueError:
            same_structure = False
        if not same_structure:
            raise ValueError(f"'{name}' has a different structure in the two branches of a "
                             f"tensor-dependent if ({loc}): {_skeleton(a)} vs {_skeleton(b)}. "
                             f"Both branches must assign the same kind of value.")
        merged = [self._leaf(name, x, y) for x, y in zip(leaves_a, leaves_b)]
        return nest.pack_sequence_as(a, merged)

    def _leaf(self, name: str, a: Any, b: Any) -> Any:
        if _same(a, b) and not isinstance(a, Tensor):
            return a
        if not (_tensorlike(a) and _tensorlike(b)):
            raise ValueError(f"'{name}' is a Python value set differently by the branches of a "
                             f"tensor-dependent if ({a!r} vs {b!r}, {self.loc}); only tensors "
                             f"can depend on a tensor condition. Make it a tensor, e.g. "
                             f"tf.constant(...).")
        va, vb = _result(self.then_g, a), _result(self.else_g, b)
        if va.type.dtype != vb.type.dtype:
            raise TypeError(f"'{name}' is {va.type} in the if branch but {vb.type} in the else "
                            f"branch ({self.loc}); both branches must give it the same dtype. "
                            f"Cast one, e.g. tf.cast({name}, tf.{va.type.dtype.name}).")
        self.then_results.append(va)
        self.else_results.append(vb)
        self.types.append(TensorType(va.type.dtype, most_specific_common(va.type.shape,
                                                                         vb.type.shape)))
        return _Out(len(self.types) - 1)

    def _zeros_like(self, fg: FuncGraph, like: Any) -> Any:
        with building(fg):
            return nest.map_structure(
                lambda x: _zeros(x, "the return value", self.loc) if isinstance(x, Tensor)
                else x, like)


def _is_composite(name: str) -> bool:
    """Whether a state name is an item or attribute (``x['b']``, ``obj.n``), not a variable."""
    return not name.isidentifier() and name != RETURN_VALUE


def _skeleton(x: Any) -> Any:
    """A comparable description of a value's structure (leaves are '*')."""
    comps = getattr(x, "_nest_components", None)
    if comps is not None and comps() is not None:
        return f"{type(x).__name__}"
    if isinstance(x, dict):
        return {k: _skeleton(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_skeleton(v) for v in x) if not hasattr(type(x), "_fields") else \
            tuple(_skeleton(v) for v in x)
    return "*"


def _snapshot(state: Sequence[Any]) -> list:
    """The state with new lists/tuples/dicts (same leaves), so in-place item assignments made
    while tracing one branch or iteration do not leak into another."""
    return [nest.map_structure(lambda x: x, v) if isinstance(v, (list, tuple, dict)) else v
            for v in state]


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # objects whose == is elementwise or raises: not the same
        return False


def _result(fg: FuncGraph, value: Any) -> Value:
    with building(fg):
        operand = fg.operand(value if isinstance(value, Tensor) else convert_to_tensor(value))
        if not isinstance(operand, Value):
            operand = fg.operand(convert_to_tensor(value))
    return operand


# ------------------------------------------------------------------------- while

def while_stmt(test: Callable, body: Callable, get_state: Callable, set_state: Callable,
               names: Sequence[str], loc: str, opts: dict | None = None) -> None:
    """``while test(): body()``; once ``test()`` is a symbolic tensor the loop is staged."""
    while True:
        c = test()
        if is_undefined(c):
            raise c.error()
        if isinstance(c, GraphTensor):
            _report.record("while", loc, "staged", names)
            _staged_while(c, test, body, get_state, set_state, names, loc, opts)
            return
        if not c:
            _report.record("while", loc, "python", names)
            return
        body()


def _staged_while(first: GraphTensor, test: Callable, body: Callable, get_state: Callable,
                  set_state: Callable, names: Sequence[str], loc: str,
                  opts: dict | None = None) -> None:
    _check_pred(first, "while loop", loc)
    fg = STATE.get().graph
    init = list(get_state())
    seeds, must_run = _first_assigned(fg, body, set_state, get_state, init, names, loc)
    start = [seeds.get(i, v) for i, v in enumerate(init)]
    # Carried variables whose values are (structures of) tensors become loop variables, one
    # per leaf; the others are Python values the loop must leave alone.
    layout = []   # (index, template, number of leaves)
    flat = []
    for i, v in enumerate(start):
        leaves = nest.flatten(v) if v is not None and not is_undefined(v) else []
        if leaves and all(_tensorlike(x) and not isinstance(x, UndefinedReturnValue)
                          for x in leaves):
            layout.append((i, v, len(leaves)))
            flat += [x if isinstance(x, Tensor) else convert_to_tensor(x) for x in leaves]
    tensor_names = [names[i] if n == 1 else f"{names[i]}[{k}]"
                    for i, _, n in layout for k in range(n)]
    counted = bool(must_run)

    def rebuild(values: Sequence[Any]) -> list:
        state, k = list(start), 0
        for i, template, n in layout:
            state[i] = nest.pack_sequence_as(template, list(values[k:k + n]))
            k += n
        return state

    def cond_fn(*values: Any) -> Any:
        set_state(rebuild(values[1:] if counted else values))
        c = test()
        return c if isinstance(c, Tensor) else convert_to_tensor(bool(c))

    def body_fn(*values: Any) -> tuple:
        set_state(rebuild(values[1:] if counted else values))
        snapshot = _snapshot(start)  # containers copied: in-place changes show up below
        body()
        after = list(get_state())
        carried = {i for i, _, _ in layout}
        for i, (name, before, now) in enumerate(zip(names, snapshot, after)):
            if i in carried or is_undefined(now) or _same(now, before):
                continue
            if isinstance(before, (list, dict, set)):
                raise ValueError(
                    f"'{name}' is a Python {type(before).__name__} that a tensor-dependent loop "
                    f"changes in place ({loc}); the staged loop runs its body only once, while "
                    f"tracing, so it would hold one symbolic value. Collect values in a "
                    f"tf.TensorArray instead: ta = ta.write(i, value), then ta.stack().")
            raise ValueError(
                f"'{name}' is a Python value that a tensor-dependent while loop changes "
                f"({before!r} -> {now!r}, {loc}); only tensors can change in a staged "
                f"loop. Make it a tensor before the loop, e.g. "
                f"{name} = tf.constant({before!r}).")
        out = []
        for i, template, n in layout:
            v = after[i]
            if is_undefined(v):
                raise v.error()
            if v is None or _skeleton(v) != _skeleton(template):
                raise ValueError(f"'{names[i]}' changes structure inside a tensor-dependent "
                                 f"while loop ({_skeleton(template)} before, {_skeleton(v)} "
                                 f"after one iteration, {loc}); loop variables must keep "
                                 f"their structure.")
            leaves = nest.flatten(v)
            bad = next((x for x in leaves if not _tensorlike(x)), None)
            if bad is not None:
                raise ValueError(f"'{names[i]}' is a loop variable of the tensor-dependent "
                                 f"loop at {loc}, but one iteration sets it to the Python "
                                 f"{type(bad).__name__} {bad!r}; loop variables must stay "
                                 f"tensors (or numbers, which become tensors).")
            out += leaves
        return ((values[0] + 1,) if counted else ()) + tuple(out)

    loop_vars = ((convert_to_tensor(0),) if counted else ()) + tuple(flat)
    # Components of composites say their own invariants (a dynamic TensorArray's buffer may
    # grow along its first dimension; a fixed-size one keeps its length).
    composite = {id(c): s for _, template, _ in layout for x in _composites(template)
                 for c, s in zip(x._nest_components(), x._component_shapes())}
    # set_loop_options(shape_invariants=[(value, shape), ...]) names values as they are when
    # the loop starts.
    given = {id(v): s for v, s in (opts or {}).get("shape_invariants") or ()}
    invariants = ([[]] if counted else []) + [
        given.get(id(t), composite.get(id(t), t.shape))
        for t in flat]
    result = while_loop(cond_fn, body_fn, loop_vars, shape_invariants=invariants,
                        maximum_iterations=(opts or {}).get("maximum_iterations"),
                        _names=(["iteration"] if counted else []) + tensor_names)
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    if counted:
        from stagecraft.ops.logging_ops import emit_assert
        from stagecraft.ops.math_ops import greater
        which = ", ".join(f"'{names[i]}'" for i in must_run)
        emit_assert(greater(result[0], 0),
                    f"The loop at {loc} must iterate at least once to initialize {which}, which "
                    f"it defines and code after it uses. Initialize it before the loop.")
        result = result[1:]
    set_state(rebuild(result))


def _composites(structure: Any) -> list:
    """The composite values (TensorArrays being traced) inside a structure."""
    if getattr(structure, "_nest_components", None) is not None:
        return [structure] if structure._nest_components() is not None else []
    if isinstance(structure, dict):
        return [c for v in structure.values() for c in _composites(v)]
    if isinstance(structure, (list, tuple)):
        return [c for v in structure for c in _composites(v)]
    return []


def _first_assigned(fg: FuncGraph, body: Callable, set_state: Callable, get_state: Callable,
                    init: list, names: Sequence[str], loc: str) -> tuple[dict, list]:
    """Variables a staged loop defines for the first time (undefined before it, or the return
    value of a ``return`` inside it): trace the body once in a scratch graph to learn their
    types and seed them with zeros. Returns the seeds and the variables that make the loop
    need at least one iteration (not the return value, which is only read after a return)."""
    pending = [i for i, v in enumerate(init) if is_undefined(v)
               or isinstance(v, UndefinedReturnValue) or _unwritten_array(v)]
    if not pending:
        return {}, []
    scratch = FuncGraph("scratch", parent=fg)
    with building(scratch):
        # The loop variables as symbolic inputs (as in the staged loop), so the body's
        # conditions on them are staged, not decided by the values before the loop.
        set_state([_placeholders(scratch, v) for v in init])
        body()
        after = list(get_state())
    set_state(init)
    seeds, must_run = {}, []
    for i in pending:
        v = after[i]
        if _unwritten_array(init[i]):
            # A TensorArray created in the function with an unknown element shape: the body
            # writes it, so start the loop from its buffer for the written element shape.
            if isinstance(v, type(init[i])) and v._nest_components() is not None:
                seeds[i] = init[i]._allocated(v.element_shape)
            continue
        leaves = nest.flatten(v) if v is not None and not is_undefined(v) else []
        if not leaves or not all(isinstance(x, Tensor) or _tensorlike(x) for x in leaves):
            continue  # still undefined, or a Python value: not carried
        seeds[i] = nest.map_structure(lambda x: _zeros(x, names[i], loc), v)
        if is_undefined(init[i]):
            must_run.append(i)
    return seeds, must_run


def _unwritten_array(v: Any) -> bool:
    """A TensorArray being traced that has no buffer yet (nothing written, shape unknown)."""
    from stagecraft.ops.tensor_array import TensorArray
    return isinstance(v, TensorArray) and v._items is None and v._nest_components() is None


def _placeholders(scratch: FuncGraph, v: Any) -> Any:
    """``v`` with each tensor-like leaf replaced by a symbolic input of ``scratch``."""
    from stagecraft.staging.graph_tensor import graph_tensor
    if v is None or is_undefined(v) or isinstance(v, UndefinedReturnValue):
        return v
    leaves = nest.flatten(v)
    if not leaves or not all(_tensorlike(x) and not isinstance(x, UndefinedReturnValue)
                             for x in leaves):
        return v

    def leaf(x: Any) -> Any:
        t = x if isinstance(x, Tensor) else convert_to_tensor(x)
        return graph_tensor(scratch.add_input(TensorType(t.dtype, tuple(t.shape.as_list())
                                                         if t.shape.rank is not None
                                                         else None)), scratch)
    return nest.map_structure(leaf, v)


def _zeros(x: Any, name: str, loc: str) -> Tensor:
    from stagecraft.ops.array_ops import zeros
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if not t.shape.is_fully_defined():
        raise ValueError(f"'{name}' is first assigned inside the loop at {loc} with shape "
                         f"{t.shape}, which is not fully known; initialize it before the loop.")
    return zeros(t.shape.as_list(), t.dtype)


# --------------------------------------------------------------------------- for

def for_stmt(iterable: Any, extra_test: Callable | None, body: Callable, get_state: Callable,
             set_state: Callable, names: Sequence[str], loc: str,
             opts: dict | None = None) -> None:
    """``for x in iterable: body(x)`` (checking ``extra_test()``, from ``break``, before each
    iteration). Tensor ranges, symbolic tensors and iterables with a ``_stage_for_loop``
    method (datasets) become staged loops; anything else iterates in Python."""
    stage = getattr(type(iterable), "_stage_for_loop", None)
    if stage is not None and STATE.get().graph is not None:
        # an iterable that stages its own loop (a tf.data dataset or iterator): it gives the
        # pieces of a while loop over its elements
        _report.record("for", loc, "staged", names)
        test, body2, get_state2, set_state2, names2 = stage(iterable, extra_test, body,
                                                             get_state, set_state, names)
        _staged_while(test(), test, body2, get_state2, set_state2, names2, loc, opts)
        return
    if isinstance(iterable, GraphTensor):
        spec = _range_operands(iterable)
        if spec is not None:
            _staged_range(*spec, None, extra_test, body, get_state, set_state, names, loc, opts)
            return
        from stagecraft.ops.array_ops import shape
        _staged_range(convert_to_tensor(0), shape(iterable)[0], convert_to_tensor(1), iterable,
                      extra_test, body, get_state, set_state, names, loc, opts)
        return
    if hasattr(iterable, "_to_components") and hasattr(iterable, "stack"):  # a TensorArray
        iterable = iterable.stack()
        if isinstance(iterable, GraphTensor):
            for_stmt(iterable, extra_test, body, get_state, set_state, names, loc)
            return
    _report.record("for", loc, "python", names)
    for value in iterable:
        if extra_test is not None:
            ok = extra_test()
            if isinstance(ok, GraphTensor):
                raise ValueError(
                    f"A break (or return) that depends on a tensor inside a Python for loop "
                    f"({loc}): the loop iterates over a Python {type(iterable).__name__}, so it "
                    f"runs in Python and cannot stop on a tensor condition. Iterate over a "
                    f"tensor instead, e.g. `for i in tf.range(n):`.")
            if not ok:
                return
        body(value)


def _range_operands(t: GraphTensor) -> tuple | None:
    """The (start, limit, delta) of a tensor made by tf.range in the current graph."""
    fg = t._graph
    for eqn in reversed(fg.builder.eqns):
        if any(o.uid == t._node.uid for o in eqn.outputs):
            if eqn.op != "range":
                return None
            from stagecraft.staging.graph_tensor import graph_tensor
            return tuple(graph_tensor(x, fg) if isinstance(x, Value) else
                         convert_to_tensor(x.type.dtype.np.type(x.value)) for x in eqn.inputs)
    return None


def _staged_range(start: Any, limit: Any, delta: Any, source: Any, extra_test: Callable | None,
                  body: Callable, get_state: Callable, set_state: Callable,
                  names: Sequence[str], loc: str, opts: dict | None = None) -> None:
    from stagecraft.ops.math_ops import add, cast, greater, less, where
    start = start if isinstance(start, Tensor) else convert_to_tensor(start)
    dtype = start.dtype
    limit = cast(limit, dtype)
    delta = cast(delta, dtype)
    index = [start]

    def get_state2() -> tuple:
        return (index[0],) + tuple(get_state())

    def set_state2(values: Sequence[Any]) -> None:
        index[0] = values[0]
        set_state(list(values[1:]))

    def test() -> Any:
        i = index[0]
        return and_extra_test(where(greater(delta, 0), less(i, limit), greater(i, limit)),
                              extra_test)

    def body2() -> None:
        i = index[0]
        body(i if source is None else source[i])
        index[0] = add(i, delta)

    first = test()
    _report.record("for", loc, "staged" if isinstance(first, GraphTensor) else "python",
                   names)
    if not isinstance(first, GraphTensor):  # all bounds eager: a Python loop over their values
        while bool(test()):
            body2()
        return
    _staged_while(first, test, body2, get_state2, set_state2, ("iterate",) + tuple(names), loc,
                  opts)
