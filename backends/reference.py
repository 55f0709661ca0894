"""The reference backend: walks a graph calling the op table's NumPy kernels and interprets
regions. It is the executable specification every other backend is tested against."""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from stagecraft.backends.runtime import format_print, write
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError, kernel_failed
from stagecraft.ir.graph import Eqn, Graph, Literal
from stagecraft.ir.shapes import format_dims, is_compatible


class Executable:
    """A compiled graph function: ``exe(args) -> list of arrays``. Tensor parameters take
    arrays; reference parameters take variable objects (anything holding its buffer in
    ``_value``)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.source = None  # backends that generate code keep it here
        self.fallback_reason = None  # why another backend handed this graph here, if it did
        self._pruned = prune_unused(graph)
        self._plans: dict[int, list] = {}  # id of (a region of) _pruned -> its release plan

    def __call__(self, args: Sequence[Any]) -> list:
        return run_graph(self._pruned, args, self._plans)


def compile(graph: Graph) -> Executable:  # noqa: A001 (the backend protocol's name)
    """The reference executable for ``graph``: unused stateless equations are dropped (also
    inside regions), so they never run; stateful ones always run, in program order."""
    return Executable(graph)


def prune_unused(graph: Graph) -> Graph:
    """``graph`` without the stateless equations no result (or stateful equation) needs,
    recursively in the regions of control-flow and call equations."""
    from stagecraft.ir.passes.prune import prune
    eqns = tuple(dataclasses.replace(e, regions=tuple(prune_unused(r) for r in e.regions))
                 if e.regions else e for e in graph.eqns)
    return prune(Graph(graph.name, graph.params, eqns, graph.results), keep_stateful=True)


def release_plan(graph: Graph) -> list:
    """For each equation of ``graph``, the values last used by it (not results): dropping
    them then keeps only live arrays in memory, as eager execution does, so the allocator can
    reuse their memory (a ResNet-50 step keeps gigabytes of intermediates alive otherwise)."""
    last: dict[int, int] = {}
    for i, e in enumerate(graph.eqns):
        for x in e.inputs:
            if not isinstance(x, Literal):
                last[x.uid] = i
        for v in e.outputs:
            last.setdefault(v.uid, i)  # never used: dropped at once
    for r in graph.results:
        if not isinstance(r, Literal):
            last.pop(r.uid, None)
    plan: list = [[] for _ in graph.eqns]
    for uid, i in last.items():
        plan[i].append(uid)
    return plan


def run_graph(graph: Graph, args: Sequence[Any], plans: dict | None = None) -> list:
    env: dict[int, Any] = {p.uid: a for p, a in zip(graph.params, args)}
    plans = {} if plans is None else plans
    plan = plans.get(id(graph))
    if plan is None:
        plan = plans[id(graph)] = release_plan(graph)

    def get(x: Any) -> Any:
        if isinstance(x, Literal):
            return np.asarray(x.value, x.type.dtype.np)[()]
        return env[x.uid]

    for eqn, dead in zip(graph.eqns, plan):
        ins = [get(x) for x in eqn.inputs]
        outs = _run_eqn(eqn, ins, plans)
        for v, o in zip(eqn.outputs, outs):
            env[v.uid] = o
        for uid in dead:
            env.pop(uid, None)
    return [get(r) for r in graph.results]


def _run_eqn(eqn: Eqn, ins: list, plans: dict) -> Sequence[Any]:
    op, attrs = eqn.op, dict(eqn.attrs)
    if op == "const":
        return (attrs["value"],)
    if op == "read":
        return (ins[0]._value,)
    if op == "assign":
        _assign(eqn, ins[0], ins[1], attrs["mode"])
        return ()
    if op == "cond":
        region = eqn.regions[0] if bool(ins[0]) else eqn.regions[1]
        return run_graph(region, ins[1:], plans)
    if op == "while":
        n = attrs["carry"]
        carried, invariant = list(ins[:n]), list(ins[n:])
        cond, body = eqn.regions
        while bool(run_graph(cond, carried + invariant, plans)[0]):
            carried = run_graph(body, carried + invariant, plans)
        return carried
    if op == "call":
        return run_graph(eqn.regions[0], ins, plans)
    if op == "print":
        write(attrs["stream"], format_print(attrs["template"], ins, attrs["sep"],
                                            attrs["summarize"]) + attrs["end"])
        return ()
    if op == "py_function":
        return attrs["fn"](*ins)
    if op == "assert":
        if not bool(np.all(ins[0])):
            raise InvalidArgumentError(f"{attrs['message']}\n  at {eqn.loc}")
        return ()
    kernel = OPS[op].kernel
    try:
        out = kernel(*ins, **attrs)
    except (ValueError, IndexError, TypeError, ZeroDivisionError) as e:
        raise kernel_failed(op, e, eqn.loc) from None
    return (out,) if OPS[op].num_outputs == 1 else tuple(out)


def _assign(eqn: Eqn, var: Any, value: Any, mode: str) -> None:
    old = var._value
    if mode == "add":
        value = old + value
    elif mode == "sub":
        value = old - value
    value = np.asarray(value, dtype=old.dtype)
    if not is_compatible(var._shape, value.shape):
        raise InvalidArgumentError(
            f"assign: cannot assign a value of shape {list(value.shape)} to a variable of shape "
            f"{format_dims(var._shape)}\n  at {eqn.loc}")
    var._value = value
