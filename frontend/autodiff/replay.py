"""``inline_graph``: re-runs a graph's equations through the frontend (eagerly, or into the
graph being traced), so tapes record them. A staged call's gradient is traced by replaying
its graph under a tape: with its side effects, into the joint graph that is split into the
forward-with-residuals and the backward (``staging/function_grad.py``); or without them
(assign, print, assert: the forward call already performed them) where a gradient
rematerializes the forward values it needs."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from stagecraft.eager.bind import bind
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import OPS
from stagecraft.ir.graph import Eqn, Graph, Literal
from stagecraft.ops import logging_ops
from stagecraft.ops.script_ops import py_function
from stagecraft.state.random_state import is_replay_copy

# How to re-run the equations that own regions (``cond``, ``while``): ``replayer(eqn, inputs,
# effects) -> outputs``, registered by the modules that define them (staging/cond.py,
# staging/while_loop.py). Their gradients replay graphs, so this module cannot import them.
REPLAYERS: dict[str, Callable[[Eqn, list, bool], list]] = {}


def replays(op: str) -> Callable[[Callable], Callable]:
    """Registers the decorated function as the way to re-run ``op`` equations.

    >>> "cond" in REPLAYERS and "while" in REPLAYERS   # (registered by stagecraft.staging)
    True
    """
    def register(fn: Callable[[Eqn, list, bool], list]) -> Callable:
        REPLAYERS[op] = fn
        return fn
    return register


def inline_graph(graph: Graph, args: Sequence[Any], effects: bool = True,
                 keep: dict | None = None, memo: dict | None = None) -> list:
    """The results of ``graph`` applied to ``args`` (tensors for tensor parameters, Variables
    for reference parameters), computed with frontend ops. With ``effects=False`` variable
    writes, prints and asserts are skipped: reads then see the values the forward call left,
    which is what they read after its writes.

    ``keep`` (a dict) receives the value of every output of the graph's own primitive
    equations, by uid. A primitive equation whose outputs are all in ``memo`` (uid -> value)
    is not computed again: the tapes record it with those values as its outputs, so a
    gradient uses them (a loop's gradient passes the values its forward run kept)."""
    env: dict[int, Any] = {p.uid: a for p, a in zip(graph.params, args)}

    def get(x: Any) -> Any:
        if isinstance(x, Literal):
            return convert_to_tensor(x.type.dtype.np.type(x.value))
        return env[x.uid]

    for eqn in graph.eqns:
        ins = [get(x) for x in eqn.inputs]
        attrs = dict(eqn.attrs)
        op = eqn.op
        if op == "const":
            outs = [convert_to_tensor(attrs["value"])]
        elif op == "read":
            outs = [ins[0].read_value()]
        elif op in ("assign", "print", "assert") and not effects and not (
                op == "assign" and is_replay_copy(ins[0])):
            outs = []  # (a random site's replay copy advances as the forward run's site did)
        elif op == "assign":
            getattr(ins[0], {"assign": "assign", "add": "assign_add",
                             "sub": "assign_sub"}[attrs["mode"]])(ins[1], read_value=False)
            outs = []
        elif op in REPLAYERS:
            outs = REPLAYERS[op](eqn, ins, effects)
        elif op == "call":
            outs = inline_graph(eqn.regions[0], ins, effects)
        elif op == "print":
            logging_ops.emit_print(attrs["template"], ins, attrs["sep"], attrs["end"],
                                   attrs["stream"], attrs["summarize"])
            outs = []
        elif op == "py_function":
            res = py_function(attrs["fn"].func, ins, list(attrs["Tout"]))
            outs = list(res)
        elif op == "assert":
            logging_ops.emit_assert(ins[0], attrs["message"])
            outs = []
        elif memo is not None and eqn.outputs and all(v.uid in memo for v in eqn.outputs):
            outs = [memo[v.uid] for v in eqn.outputs]
            for tape in STATE.get().tapes:
                tape.record(OPS[op], attrs, ins, outs)
        else:
            res = bind(OPS[op], *ins, **attrs)
            outs = list(res) if OPS[op].num_outputs > 1 else [res]
            if keep is not None:
                keep.update((v.uid, o) for v, o in zip(eqn.outputs, outs))
        for v, o in zip(eqn.outputs, outs):
            env[v.uid] = o
    return [get(r) for r in graph.results]
