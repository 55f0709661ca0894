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

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     unused = tf.exp(x)
    ...     tf.print(x)
    ...     return x + 1.0
    >>> g = f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph
    >>> [e.op for e in live(g.eqns, g.results)[1]]
    ['print', 'add']
    >>> [e.op for e in live(g.eqns, g.results, keep_stateful=False)[1]]
    ['add']
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
