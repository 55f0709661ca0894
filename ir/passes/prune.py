"""Reachability: drop equations whose results are not needed."""
from __future__ import annotations

from stagecraft.ir.graph import Graph, Value, is_stateful


def prune(graph: Graph, keep_stateful: bool = False) -> Graph:
    """``graph`` without the equations no result depends on; with ``keep_stateful`` the
    stateful ones (and what they need) stay too."""
    needed = {r.uid for r in graph.results if isinstance(r, Value)}
    kept = []
    for eqn in reversed(graph.eqns):
        if any(o.uid in needed for o in eqn.outputs) or (keep_stateful and is_stateful(eqn)):
            kept.append(eqn)
            needed.update(x.uid for x in eqn.inputs if isinstance(x, Value))
    return Graph(graph.name, graph.params, tuple(reversed(kept)), graph.results)
