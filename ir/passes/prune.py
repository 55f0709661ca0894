"""Reachability: the one backward liveness walk of the passes (:func:`live`), and ``prune``,
which drops the equations whose results are not needed."""
from __future__ import annotations

from typing import Iterable, Sequence

from stagecraft.ir.graph import Eqn, Graph, Value, is_stateful


def live(eqns: Sequence[Eqn], roots: Iterable, keep_stateful: bool = True
         ) -> tuple[set[int], list[Eqn]]:
    """Walks ``eqns`` backwards from ``roots`` (operands; literals need nothing): the uids of
    the values needed to compute them, and to run the stateful equations when
    ``keep_stateful``, and the equations that do it, in program order.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("f")
    >>> x = b.param(TensorType(dtypes.float32, ()), "x")
    >>> (unused,) = b.add("exp", [x], [x.type])
    >>> _ = b.add("print", [x], [], {"template": (("t",),), "sep": " ", "end": "\\n",
    ...                              "stream": "stderr", "summarize": 3})
    >>> (y,) = b.add("negative", [x], [x.type])
    >>> g = b.build([y])
    >>> [e.op for e in live(g.eqns, g.results)[1]]
    ['print', 'negative']
    >>> [e.op for e in live(g.eqns, g.results, keep_stateful=False)[1]]
    ['negative']
    """
    needed = {r.uid for r in roots if isinstance(r, Value)}
    kept = []
    for eqn in reversed(eqns):
        if any(o.uid in needed for o in eqn.outputs) or (keep_stateful and is_stateful(eqn)):
            kept.append(eqn)
            needed.update(x.uid for x in eqn.inputs if isinstance(x, Value))
    return needed, kept[::-1]


def prune(graph: Graph, keep_stateful: bool = False) -> Graph:
    """``graph`` without the equations no result depends on; with ``keep_stateful`` the
    stateful ones (and what they need) stay too."""
    _, kept = live(graph.eqns, graph.results, keep_stateful)
    return Graph(graph.name, graph.params, tuple(kept), graph.results)
