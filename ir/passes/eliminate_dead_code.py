"""Dead-code elimination: drops the equations whose outputs nothing uses.

Stateful equations (``read``/``assign``/``print``/``py_function``/``assert``, random ops, and
control flow or calls containing any, see ``ir.graph.is_stateful``) always stay, in their
order, together with what they use. Regions are cleaned the same way; their parameters and
results (and so every equation's arity) are left unchanged.

Dropping an unused equation also drops the error it could raise (an out-of-range ``gather``,
an integer division by zero), as TensorFlow's graph pruning does.
"""
from __future__ import annotations

from stagecraft.ir.graph import Graph
from stagecraft.ir.passes.prune import live
from stagecraft.ir.passes.rewrite import map_regions


def eliminate_dead_code(graph: Graph) -> tuple[bool, Graph]:
    """``(changed, graph')`` without the stateless equations whose outputs are unused.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     unused = tf.exp(x)
    ...     tf.print(x)
    ...     return x + 1.0
    >>> g = f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph
    >>> changed, g2 = eliminate_dead_code(g)
    >>> print(g2)  # doctest: +ELLIPSIS
    graph @f(%x: f32[]) -> (f32[]) {
      print[...] %x
      %0: f32[] = add %x, 1.0:f32
      return %0
    }
    >>> changed, eliminate_dead_code(g2)[0]
    (True, False)
    """
    return _eliminate(graph, {})


def _eliminate(graph: Graph, memo: dict) -> tuple[bool, Graph]:
    changed = False
    eqns = []
    for eqn in graph.eqns:
        c, eqn = map_regions(eqn, lambda r: _eliminate(r, memo), memo)
        changed |= c
        eqns.append(eqn)
    _, kept = live(eqns, graph.results)
    if not changed and len(kept) == len(eqns):
        return False, graph
    return True, Graph(graph.name, graph.params, tuple(kept), graph.results)
