"""``FuncGraph``: the graph-building context of a trace. ``bind`` sends ops here while a trace
is active; it turns inputs into operands (capturing eager tensors by value, variables by
reference, and values of enclosing graphs as region parameters), runs the op table's
inference (the same checks and messages as eager) and appends equations."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import numpy as np

from stagecraft.eager.bind import unify_target, user_location
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import CONVERTERS, convert_to_tensor, to_eager
from stagecraft.staging.graph_tensor import GraphTensor, graph_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InaccessibleTensorError, InvalidArgumentError
from stagecraft.ir.graph import Graph, GraphBuilder, Literal, Value
from stagecraft.ir.ops.opdef import OpDef
from stagecraft.ir.shapes import as_dims, format_dims, is_compatible
from stagecraft.ir.types import TensorType
from stagecraft.eager.tensor import Tensor
from stagecraft.ops.array_ops import stack

CONST_MAX_ELEMENTS = 1024  # larger eager tensors are captured as inputs instead of embedded


class FuncGraph:
    """A graph (or a region of one) being traced."""

    def __init__(self, name: str, parent: "FuncGraph | None" = None,
                 variable_policy: str = "allow"):
        self.builder = GraphBuilder(name)
        self.name = name
        self.parent = parent
        self.variable_policy = variable_policy  # "allow" | "first_call_only" | "never"
        self.inputs: list[Value] = []            # explicit parameters, in order
        self.captures: list[tuple[Any, Value]] = []  # (outer Value or eager Tensor, param)
        self._captured: dict[int, Value] = {}
        self._capture_source: dict[int, Any] = {}  # capture param uid -> outer Value / Tensor
        self.variables: list[tuple[Any, Value]] = []  # (Variable, ref param), top level only
        self._var_refs: dict[int, Value] = {}
        self.ref_objects: dict[int, Any] = {}    # ref param uid -> Variable (top level)
        self.created_variables: list = []
        self.pending_inits: list[tuple[Any, GraphTensor]] = []
        # The graph being traced when this function's trace began (a tf.function called
        # inside another's trace): its tensors are captured as inputs, as eager ones are.
        self.enclosing: FuncGraph | None = None

    # ------------------------------------------------------------------ structure
    def root(self) -> "FuncGraph":
        g = self
        while g.parent is not None:
            g = g.parent
        return g

    def _is_ancestor(self, other: "FuncGraph") -> bool:
        g = self.parent
        while g is not None:
            if g is other:
                return True
            g = g.parent
        return False

    def add_input(self, type: TensorType, hint: str | None = None, ref: bool = False) -> Value:
        v = Value(type, hint, ref)
        self.inputs.append(v)
        return v

    def build(self, results: Sequence[Value]) -> Graph:
        """The frozen graph: explicit inputs, then captured values, then variable references."""
        b = self.builder
        b.params = self.inputs + [p for _, p in self.captures] + [p for _, p in self.variables]
        return b.build(results)

    # ---------------------------------------------------------------- operands
    def operand(self, x: Any, dtype: _dt.DType | None = None) -> Value | Literal:
        """The operand for ``x`` in this graph (capturing it if it comes from outside)."""
        if isinstance(x, GraphTensor):
            if x._graph is self:
                return x._node
            if self._is_ancestor(x._graph):
                return self._capture_value(x._graph, x._node)
            if self.root()._sees(x._graph):
                return self._capture_outer(x)
            raise InaccessibleTensorError(
                f"{x!r} belongs to another graph (a different @function trace or a branch/loop "
                f"body that has finished), so it cannot be used here. Return it from that "
                f"function (or pass it in as an argument) instead of keeping a reference.\n"
                f"  at {user_location()}")
        if type(x) is Tensor:
            # An eager tensor from outside the trace (a closure or global): captured by value
            # as an input, so tapes outside can differentiate with respect to it.
            return self._capture_eager(x)
        conv = CONVERTERS.get(type(x))
        if conv is not None and hasattr(x, "_uid"):  # a Variable: read it here
            return x.read_value()._node
        if isinstance(x, (bool, int, float, np.generic)) and not isinstance(x, np.ndarray):
            t = to_eager(x, dtype)
            if STATE.get().tapes:
                return self._embed(t)
            return Literal(t._value[()].item(), TensorType(t.dtype, ()))
        if isinstance(x, (list, tuple)) and _contains_graph_tensor(x):
            return self.operand(stack(list(x)), dtype)
        return self._embed(to_eager(x, dtype))

    def constant(self, t: Tensor) -> GraphTensor:
        """A constant of this graph holding eager tensor ``t``'s value."""
        return graph_tensor(self._embed(t), self)

    def _embed(self, t: Tensor) -> Value:
        arr = np.asarray(t._value)
        if arr.size <= CONST_MAX_ELEMENTS:
            (v,) = self.builder.add("const", (), [TensorType(t.dtype, arr.shape)],
                                    {"value": arr.copy()})
            return v
        return self._capture_eager(t)

    def _capture_eager(self, t: Tensor) -> Value:
        if self.parent is not None:
            outer = self.parent._capture_eager(t)
            return self._capture_value(self.parent, outer)
        key = id(t)
        if key not in self._captured:
            p = Value(TensorType(t.dtype, tuple(t.shape.as_list())), "capture")
            self._captured[key] = p
            self._capture_source[p.uid] = t
            self.captures.append((t, p))
        return self._captured[key]

    def _sees(self, graph: "FuncGraph") -> bool:
        """Whether ``graph``'s tensors are visible where this function's trace began."""
        g = self.enclosing
        while g is not None:
            if g is graph or g._is_ancestor(graph):
                return True
            g = g.root().enclosing
        return False

    def _capture_outer(self, t: GraphTensor) -> Value:
        """Captures a tensor of an enclosing trace as an input (the call passes it)."""
        if self.parent is not None:
            return self._capture_value(self.parent, self.parent._capture_outer(t))
        key = ("outer", t._node.uid)
        if key not in self._captured:
            p = Value(t._node.type, "capture")
            self._captured[key] = p
            self._capture_source[p.uid] = t
            self.captures.append((t, p))
        return self._captured[key]

    def _capture_value(self, owner: "FuncGraph", value: Value) -> Value:
        if self.parent is not owner:
            value = self.parent._capture_value(owner, value)
        key = value.uid
        if key not in self._captured:
            p = Value(value.type, value.hint, value.ref)
            self._captured[key] = p
            self._capture_source[p.uid] = value
            self.captures.append((value, p))
        return self._captured[key]

    def ref_for(self, var: Any) -> Value:
        """The reference parameter through which this graph reaches ``var``."""
        if self.parent is not None:
            return self._capture_value(self.parent, self.parent.ref_for(var))
        key = id(var)
        if key not in self._var_refs:
            p = Value(TensorType(var.dtype, var._shape), var._name.replace("/", "."), ref=True)
            self._var_refs[key] = p
            self.ref_objects[p.uid] = var
            self.variables.append((var, p))
        return self._var_refs[key]

    def tensor_for(self, v: Value) -> Any:
        """What stands for operand ``v`` outside the graph: its Variable for a reference,
        else a symbolic tensor."""
        if not v.ref:
            return graph_tensor(v, self)
        g: FuncGraph | None = self
        while g is not None:
            if v.uid in g.ref_objects:
                return g.ref_objects[v.uid]
            outer = next((o for o, p in g.captures if p.uid == v.uid), None)
            if outer is None:
                break
            v, g = outer, g.parent
        raise LookupError(f"no variable found for reference {v!r}")

    def source_tensor(self, v: Value) -> Any:
        """What stands for operand ``v`` on a gradient tape: for a captured parameter the
        tensor it captures (an enclosing graph's symbolic tensor, or an eager tensor), so that
        a tape watching that tensor sees its uses inside branches and loop bodies; otherwise
        ``tensor_for(v)``."""
        if v.ref:
            return self.tensor_for(v)
        src = self._capture_source.get(v.uid)
        if src is None:
            return graph_tensor(v, self)
        if isinstance(src, Tensor):
            return src
        return self.parent.source_tensor(src)

    # ------------------------------------------------------------------- ops
    def bind(self, op: OpDef, inputs: Sequence[Any], attrs: dict) -> Any:
        unify = range(len(inputs)) if op.unify == "all" else op.unify_indices
        target = unify_target(op, inputs)
        operands = []
        for i, x in enumerate(inputs):
            operands.append(self.operand(x, target if i in unify and not isinstance(x, Tensor)
                                         and type(x) not in CONVERTERS else None))
        types = [o.type for o in operands]
        try:
            out_types = op.infer(types, **attrs)
        except InvalidArgumentError as e:
            raise type(e)(f"{e}\n  at {user_location()}") from None
        outs = self.builder.add(op.name, operands, out_types, attrs, loc=user_location())
        results = [graph_tensor(o, self) for o in outs]
        tapes = STATE.get().tapes
        if tapes:
            tensors = [x if type(x) is Tensor else
                       self.source_tensor(o) if isinstance(o, Value) else graph_tensor(o, self)
                       for x, o in zip(inputs, operands)]
            for tape in tapes:
                tape.record(op, attrs, tensors, results)
        return results[0] if op.num_outputs == 1 else tuple(results)

    def emit(self, op: str, inputs: Sequence[Value | Literal], out_types: Sequence[TensorType],
             attrs: dict | None = None, regions: Sequence[Graph] = (),
             hints: Sequence[str | None] | None = None) -> list[GraphTensor]:
        """Appends a non-primitive equation (read, assign, cond, while, call, print, ...)."""
        outs = self.builder.add(op, inputs, out_types, attrs, regions, loc=user_location(),
                                hints=hints)
        return [graph_tensor(o, self) for o in outs]

    # ------------------------------------------------------------- variables
    def read_variable(self, var: Any) -> GraphTensor:
        ref = self.ref_for(var)
        (t,) = self.emit("read", [ref], [TensorType(var.dtype, var._shape)])
        return t

    def assign_variable(self, var: Any, value: Any, mode: str) -> None:
        v = self.operand(value if isinstance(value, Tensor) else
                         convert_to_tensor(value, var.dtype), var.dtype)
        if v.type.dtype != var.dtype:
            raise ValueError(f"Tensor conversion requested dtype {var.dtype.name} for variable "
                             f"'{var.name}' but the value has dtype {v.type.dtype.name}.")
        if not is_compatible(var._shape, v.type.shape):
            raise ValueError(f"Cannot assign to variable '{var.name}': Shape mismatch. The "
                             f"variable shape {format_dims(var._shape)}, and the assigned value "
                             f"shape {format_dims(v.type.shape)} are incompatible.")
        self.emit("assign", [self.ref_for(var), v], [], {"mode": mode})

    def on_variable_created(self, var: Any) -> None:
        root = self.root()
        if root.variable_policy == "never":
            raise ValueError(
                "Creating variables on a non-first call to a function decorated with "
                "tf.function is not allowed: variables may only be created on the first call "
                f"(at {user_location()}). Create the variable outside the function, or guard it "
                "with `if self.v is None:` so it is created once.")
        if root.variable_policy == "first_call_only_second_trace":
            raise ValueError(
                "tf.function only supports singleton tf.Variables created on the first call. "
                "Make sure the tf.Variable is only created once or created outside tf.function "
                f"(at {user_location()}); e.g. `if self.v is None: self.v = tf.Variable(...)`.")
        root.created_variables.append(var)


def _contains_graph_tensor(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_contains_graph_tensor(v) for v in x)
    return isinstance(x, GraphTensor)


@contextlib.contextmanager
def building(graph: FuncGraph, tapes: tuple = ()) -> Iterator[FuncGraph]:
    """Makes ``graph`` the target of ops (outer tapes are paused: a trace is recorded by them as
    one call, not op by op)."""
    token = STATE.set(STATE.get().replace(graph=graph, tapes=tapes))
    try:
        yield graph
    finally:
        STATE.reset(token)


def current_graph() -> FuncGraph | None:
    return STATE.get().graph


def spec_type(shape: Any, dtype: Any) -> TensorType:
    return TensorType(_dt.as_dtype(dtype), as_dims(shape))
