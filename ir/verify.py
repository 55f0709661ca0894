"""``verify``: checks a graph's invariants, separately from building it (JAX's ``check_jaxpr``).

It checks bind-before-use and single definition, closed regions, primitive output types
against the op table's ``infer``, the signatures of ``cond``/``while``/``call`` regions, and
that variable references only flow into ``read``/``assign``/``cond``/``while``/``call``.
"""
from __future__ import annotations

import difflib
import os
from typing import Any, Sequence

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import VerificationError
from stagecraft.ir.graph import Eqn, Graph, Literal, Value
from stagecraft.ir.ops import OPS
from stagecraft.ir.ops.structural import STRUCTURAL, names_where
from stagecraft.ir.parser import parse
from stagecraft.ir.printer import REGION_LABELS, Printout, print_lines
from stagecraft.ir.shapes import is_compatible, is_instance
from stagecraft.ir.types import TensorType

CONTEXT_LINES = 5  # printed IR lines shown before and after the failing one
_REF_OPERAND_OPS = names_where(takes_refs=True)
# The non-primitive equations tracing produces, each checked by ``_Verifier.check_<op>``.
_STRUCTURAL = frozenset(STRUCTURAL)


def verify(graph: Graph) -> None:
    """Raises ``VerificationError`` when ``graph`` breaks an IR invariant; returns None if not.

    The message's first line says what is wrong; the printed IR around the failing equation
    (up to 5 lines before and after, the failing one marked ``>``) follows.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("f")
    >>> x = b.param(TensorType(dtypes.float32, (2,)), "x")
    >>> (y,) = b.add("negative", [x], [TensorType(dtypes.float32, (3,))])
    >>> try:
    ...     verify(b.build([y]))
    ... except VerificationError as e:
    ...     print(e)
    'negative' at line 2: output types (f32[3]) differ from the op's inference (f32[2])
    in graph @f:
      1 | graph @f(%x: f32[2]) -> (f32[3]) {
    > 2 |   %0: f32[3] = negative %x
      3 |   return %0
      4 | }
    """
    _Verifier(graph).graph(graph, [], None)


# ``stagecraft.config.enable_checks``: whether tracing calls ``check_traced`` on every graph
# it makes. A one-element list, so that the tracer's test when off is one read.
CHECKS = [os.environ.get("STAGECRAFT_ENABLE_CHECKS", "0").strip() not in ("", "0")]


def check_traced(graph: Graph) -> None:
    """What ``stagecraft.config.enable_checks(True)`` runs on each traced graph: ``verify``,
    then the exact printer/parser round trip (``str(parse(str(graph))) == str(graph)``).
    Raises ``VerificationError``; the round trip's message shows the unified diff.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("f")
    >>> x = b.param(TensorType(dtypes.float32, (2,)), "x")
    >>> (y,) = b.add("negative", [x], [TensorType(dtypes.float32, (2,))])
    >>> check_traced(b.build([y]))   # a sound graph: nothing to report
    """
    verify(graph)
    text = str(graph)
    again = str(parse(text))
    if again != text:
        diff = "\n".join(difflib.unified_diff(text.splitlines(), again.splitlines(),
                                               "printed", "parsed and printed", lineterm=""))
        raise VerificationError(f"graph @{graph.name} does not print and parse back to the "
                                f"same text (printer/parser round trip):\n{diff}")


class _Fail(Exception):
    def __init__(self, where: Any, message: str):
        self.where, self.message = where, message


class _Verifier:
    def __init__(self, root: Graph):
        self.root = root
        self.defined: set[int] = set()          # every definition seen so far (all graphs)
        self.seen_regions: set[int] = set()     # a callee may be the region of several calls
        self._printout: Printout | None = None

    # ------------------------------------------------------------------ reporting
    @property
    def printout(self) -> Printout:
        if self._printout is None:
            self._printout = print_lines(self.root)
        return self._printout

    def name(self, v: Any) -> str:
        if isinstance(v, Literal):
            return f"literal {v.value!r}:{v.type.dtype.short}"
        n = self.printout.names.get(getattr(v, "uid", None))
        return f"%{n}" if n is not None else f"an undefined value ({v!r})"

    def line_of(self, where: Any) -> int:
        """0-based printed line of an equation (``Eqn``) or a graph's return/yield (``Graph``)."""
        p = self.printout
        if isinstance(where, Eqn):
            return p.eqn_lines.get(id(where), 0)
        if isinstance(where, Graph):
            return p.yield_lines.get(id(where), 0)
        return 0

    def what(self, where: Any, region: Graph | None) -> str:
        n = self.line_of(where) + 1
        if isinstance(where, Eqn):
            return f"{where.op!r} at line {n}"
        if isinstance(where, Graph):
            return f"'{'return' if where is self.root else 'yield'}' at line {n}"
        return f"graph @{self.root.name}"

    def fail(self, where: Any, message: str) -> None:
        raise _Fail(where, message)

    def error(self, where: Any, message: str) -> VerificationError:
        lines = self.printout.lines
        i = self.line_of(where)
        lo, hi = max(0, i - CONTEXT_LINES), min(len(lines), i + CONTEXT_LINES + 1)
        width = len(str(hi))
        context = [f"{'>' if k == i else ' '} {k + 1:>{width}} | {lines[k]}" for k in range(lo, hi)]
        return VerificationError(f"{self.what(where, None)}: {message}\n"
                                 f"in graph @{self.root.name}:\n" + "\n".join(context))

    # -------------------------------------------------------------------- walking
    def graph(self, g: Graph, enclosing: list[set[int]], label: str | None) -> None:
        try:
            self._graph(g, enclosing, label)
        except _Fail as f:
            raise self.error(f.where, f.message) from None

    def _graph(self, g: Graph, enclosing: list[set[int]], label: str | None) -> None:
        own = {p.uid for p in g.params} | {o.uid for e in g.eqns for o in e.outputs}
        scope: set[int] = set()
        for p in g.params:
            self.define(p, scope, g)
        for e in g.eqns:
            for k, x in enumerate(e.inputs):
                self.use(x, scope, own, enclosing, e, label, f"operand {k}")
            self.check_eqn(e)
            labels = REGION_LABELS.get(e.op, ())
            for i, r in enumerate(e.regions):
                if id(r) in self.seen_regions:
                    continue
                self.seen_regions.add(id(r))
                self._graph(r, enclosing + [own], labels[i] if i < len(labels) else f"region{i}")
            for o in e.outputs:
                self.define(o, scope, e)
        for k, r in enumerate(g.results):
            self.use(r, scope, own, enclosing, g, label, f"result {k}")
            if isinstance(r, Value) and r.ref:
                self.fail(g, f"result {k} ({self.name(r)}) is a variable reference; graphs and "
                             f"regions return tensors (read the variable first)")

    def define(self, v: Any, scope: set[int], where: Any) -> None:
        if not isinstance(v, Value):
            self.fail(where, f"defines {v!r}, which is not a Value")
        if v.uid in self.defined:
            self.fail(where, f"{self.name(v)} is defined twice (each value has one definition)")
        self.defined.add(v.uid)
        scope.add(v.uid)

    def use(self, x: Any, scope: set[int], own: set[int], enclosing: list[set[int]],
            where: Any, label: str | None, role: str) -> None:
        if isinstance(x, Literal):
            if not isinstance(x.type, TensorType) or x.type.shape != ():
                self.fail(where, f"{role} is a literal of type {x.type}; literals are scalars")
            return
        if not isinstance(x, Value):
            self.fail(where, f"{role} is {x!r}, which is neither a Value nor a Literal")
        if x.uid in scope:
            return
        if x.uid in own:
            self.fail(where, f"uses {self.name(x)} before its definition")
        if any(x.uid in s for s in enclosing):
            self.fail(where, f"region {label!r} uses {self.name(x)}, which is defined outside "
                             f"the region (regions are closed: pass it in as a region parameter)")
        self.fail(where, f"uses {self.name(x)}, which is not defined in this graph")

    # ---------------------------------------------------------------- equations
    def check_eqn(self, e: Eqn) -> None:
        for k, x in enumerate(e.inputs):
            if isinstance(x, Value) and x.ref and e.op not in _REF_OPERAND_OPS:
                self.fail(e, f"operand {k} ({self.name(x)}) is a variable reference; only "
                             f"read, assign, cond, while and call take references")
        if not (e.op in STRUCTURAL and STRUCTURAL[e.op].makes_refs):
            for o in e.outputs:
                if o.ref:
                    self.fail(e, f"output {self.name(o)} is a variable reference; only capture "
                                 f"produces references")
        if e.regions and not (e.op in STRUCTURAL and STRUCTURAL[e.op].regions):
            self.fail(e, f"has {len(e.regions)} region(s); only cond, while and call have regions")
        if e.op in OPS:
            self.check_primitive(e)
        elif e.op in _STRUCTURAL:
            getattr(self, "check_" + e.op)(e)
        else:
            self.fail(e, f"unknown op {e.op!r} (neither in the op table nor a structural op)")

    def check_primitive(self, e: Eqn) -> None:
        in_types = [x.type for x in e.inputs]
        try:
            expected = tuple(OPS[e.op].infer(in_types, **dict(e.attrs)))
        except Exception as ex:  # noqa: BLE001 (any failure of infer is the finding)
            first = str(ex).splitlines()[0] if str(ex) else type(ex).__name__
            self.fail(e, f"the op's inference rejects operand types ({_types(in_types)}): "
                         f"{first}")
        got = tuple(o.type for o in e.outputs)
        if got != expected:
            self.fail(e, f"output types ({_types(got)}) differ from the op's inference "
                         f"({_types(expected)})")

    def arity(self, e: Eqn, inputs: int | None, outputs: int | None) -> None:
        if inputs is not None and len(e.inputs) != inputs:
            self.fail(e, f"takes {inputs} operand(s), got {len(e.inputs)}")
        if outputs is not None and len(e.outputs) != outputs:
            self.fail(e, f"has {outputs} output(s), got {len(e.outputs)}")

    def check_const(self, e: Eqn) -> None:
        self.arity(e, 0, 1)
        value = e.params.get("value")
        if not isinstance(value, np.ndarray):
            self.fail(e, f"attribute 'value' must be a NumPy array, got {type(value).__name__}")
        t = e.outputs[0].type
        try:
            dtype = dt.from_numpy(value.dtype)
        except TypeError:
            dtype = None
        if dtype is not t.dtype or not is_instance(value.shape, t.shape):
            self.fail(e, f"the value is a {value.dtype}{list(value.shape)} array but the output "
                         f"type is {t}")

    def check_capture(self, e: Eqn) -> None:
        self.arity(e, 0, 1)

    def check_read(self, e: Eqn) -> None:
        self.arity(e, 1, 1)
        self._ref_and_value(e, e.inputs[0], e.outputs[0])

    def check_assign(self, e: Eqn) -> None:
        self.arity(e, 2, 0)
        self._ref_and_value(e, e.inputs[0], e.inputs[1])

    def _ref_and_value(self, e: Eqn, ref: Any, value: Any) -> None:
        if not (isinstance(ref, Value) and ref.ref):
            self.fail(e, f"operand 0 ({self.name(ref)}) must be a variable reference")
        if isinstance(value, Value) and value.ref:
            self.fail(e, f"the value {self.name(value)} must be a tensor, not a reference")
        if value.type.dtype is not ref.type.dtype or \
                not is_compatible(value.type.shape, ref.type.shape):
            self.fail(e, f"the variable is {ref.type} but the value is {value.type}")

    def check_print(self, e: Eqn) -> None:
        self.arity(e, None, 0)

    def check_assert(self, e: Eqn) -> None:
        self.arity(e, 1, 0)
        if e.inputs[0].type.dtype is not dt.bool_:
            self.fail(e, f"the condition must be bool, got {e.inputs[0].type}")

    def check_py_function(self, e: Eqn) -> None:
        tout = e.params.get("Tout", ())
        tout = tuple(tout) if isinstance(tout, (tuple, list)) else (tout,)
        got = tuple(o.type.dtype for o in e.outputs)
        if got != tuple(tout):
            self.fail(e, f"output dtypes ({', '.join(d.short for d in got)}) differ from Tout "
                         f"({', '.join(getattr(d, 'short', repr(d)) for d in tout)})")

    # ------------------------------------------------------------ control flow
    def regions(self, e: Eqn, n: int) -> Sequence[Graph]:
        if len(e.regions) != n:
            self.fail(e, f"has {len(e.regions)} region(s), expected {n}")
        return e.regions

    def params_match(self, e: Eqn, label: str, region: Graph, operands: Sequence[Any],
                     types: Sequence[TensorType], how: str) -> None:
        """Region parameters: one per operand, of type ``types[i]``; operands match by
        ``how`` ('equal', 'instance', 'compatible') and reference flags agree."""
        if len(region.params) != len(operands):
            self.fail(e, f"region {label!r} has {len(region.params)} parameter(s) but the "
                         f"equation passes {len(operands)} operand(s)")
        for k, (p, x, t) in enumerate(zip(region.params, operands, types)):
            if p.type != t:
                self.fail(e, f"region {label!r} parameter {k} ({self.name(p)}) is {p.type}, "
                             f"expected {t}")
            ok = {"equal": x.type == p.type, "instance": _instance_type(x.type, p.type),
                  "compatible": x.type.dtype is p.type.dtype and
                  is_compatible(x.type.shape, p.type.shape)}[how]
            if not ok:
                self.fail(e, f"operand {self.name(x)} is {x.type} but region {label!r} "
                             f"parameter {k} ({self.name(p)}) is {p.type}")
            if p.ref != (isinstance(x, Value) and x.ref):
                self.fail(e, f"region {label!r} parameter {k} ({self.name(p)}) and operand "
                             f"{self.name(x)} disagree on being a variable reference")

    def results_match(self, e: Eqn, label: str, region: Graph, types: Sequence[TensorType],
                      exact: bool) -> None:
        got = [r.type for r in region.results]
        if len(got) != len(types) or not all(
                (g == t) if exact else _instance_type(g, t) for g, t in zip(got, types)):
            self.fail(e, f"region {label!r} yields ({_types(got)}) but the equation expects "
                         f"({_types(types)})")

    def check_cond(self, e: Eqn) -> None:
        if not e.inputs:
            self.fail(e, "takes a predicate operand, got none")
        pred = e.inputs[0]
        if pred.type.dtype is not dt.bool_ or pred.type.rank not in (0, None) or \
                (isinstance(pred, Value) and pred.ref):
            self.fail(e, f"the predicate {self.name(pred)} must be a bool scalar, got "
                         f"{pred.type}")
        shared = e.inputs[1:]
        outs = [o.type for o in e.outputs]
        for label, r in zip(("then", "else"), self.regions(e, 2)):
            self.params_match(e, label, r, shared, [x.type for x in shared], "equal")
            self.results_match(e, label, r, outs, exact=False)

    def check_while(self, e: Eqn) -> None:
        n = e.params.get("carry")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= len(e.inputs):
            self.fail(e, f"attribute carry={n!r} must be an int between 0 and the number of "
                         f"operands ({len(e.inputs)})")
        if len(e.outputs) != n:
            self.fail(e, f"carries {n} value(s) but has {len(e.outputs)} output(s)")
        for k, x in enumerate(e.inputs[:n]):
            if isinstance(x, Value) and x.ref:
                self.fail(e, f"carried operand {k} ({self.name(x)}) is a variable reference; "
                             f"only loop invariants may be references")
        carried = [o.type for o in e.outputs]
        types = carried + [x.type for x in e.inputs[n:]]
        cond_g, body_g = self.regions(e, 2)
        for label, r in (("cond", cond_g), ("body", body_g)):
            self.params_match(e, label, r, e.inputs, types, "instance")
        got = [r.type for r in cond_g.results]
        if len(got) != 1 or got[0].dtype is not dt.bool_ or got[0].rank not in (0, None):
            self.fail(e, f"region 'cond' must yield one bool scalar, yields ({_types(got)})")
        self.results_match(e, "body", body_g, carried, exact=False)

    def check_call(self, e: Eqn) -> None:
        (callee,) = self.regions(e, 1)
        self.params_match(e, "fn", callee, e.inputs, [p.type for p in callee.params],
                          "compatible")
        self.results_match(e, "fn", callee, [o.type for o in e.outputs], exact=True)


def _types(types: Sequence[TensorType]) -> str:
    return ", ".join(str(t) for t in types)


def _instance_type(t: TensorType, of: TensorType) -> bool:
    return t.dtype is of.dtype and is_instance(t.shape, of.shape)
