"""Dead loop variables: drops the carried values of a ``while`` that nothing needs.

A carried value is dead when the loop's output for it is unused, the ``cond`` region does not
read it, and the ``body`` needs it only to compute its own next value. Plain dead-code
elimination cannot see this, because the body's results (the loop's arity) must stay. The
typical case is a gradient loop: reverse-mode through a ``while_loop`` accumulates a gradient
for every invariant input, and the ones nobody asked for (the data a model reads) are summed
every iteration into buffers as large as the data.

The body's equations that only fed dead values go too; stateful ones always stay.
"""
from __future__ import annotations

import dataclasses

from stagecraft.ir.graph import Eqn, Graph, Value, make_attrs
from stagecraft.ir.passes.prune import live
from stagecraft.ir.passes.rewrite import map_regions


def eliminate_dead_loop_vars(graph: Graph) -> tuple[bool, Graph]:
    """``(changed, graph')`` with the dead carried values of every ``while`` removed.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     i, total, unused = tf.while_loop(lambda i, t, u: i < 3,
    ...                                      lambda i, t, u: (i + 1, t + x, u * 2.0),
    ...                                      (0, 0.0, 1.0))
    ...     return total
    >>> g = f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph
    >>> changed, g2 = eliminate_dead_loop_vars(g)
    >>> changed, [e.params["carry"] for e in g2.eqns if e.op == "while"]
    (True, [2])
    """
    return _run(graph, {})


def _run(graph: Graph, memo: dict) -> tuple[bool, Graph]:
    changed = False
    eqns = []
    for eqn in graph.eqns:
        c, eqn = map_regions(eqn, lambda r: _run(r, memo), memo)
        changed |= c
        eqns.append(eqn)
    used = {x.uid for e in eqns for x in e.inputs if isinstance(x, Value)}
    used |= {r.uid for r in graph.results if isinstance(r, Value)}
    out = []
    for eqn in eqns:
        if eqn.op == "while":
            c, eqn = _prune(eqn, used)
            changed |= c
        out.append(eqn)
    if not changed:
        return False, graph
    return True, Graph(graph.name, graph.params, tuple(out), graph.results)


def _prune(eqn: Eqn, used: set) -> tuple[bool, Eqn]:
    n = eqn.params["carry"]
    cond, body = eqn.regions
    dead = {k for k in range(n) if eqn.outputs[k].uid not in used}
    cond_needed, _ = live(cond.eqns, cond.results)
    while dead:
        needed, kept = live(body.eqns, [body.results[j] for j in range(n) if j not in dead])
        alive = {k for k in dead if body.params[k].uid in needed
                 or cond.params[k].uid in cond_needed}
        if not alive:
            break
        dead -= alive
    if not dead:
        return False, eqn
    keep = [k for k in range(n) if k not in dead]

    def params(r: Graph) -> tuple:
        return tuple(r.params[k] for k in keep) + tuple(r.params[n:])

    new_cond = Graph(cond.name, params(cond), cond.eqns, cond.results)
    new_body = Graph(body.name, params(body), tuple(kept), tuple(body.results[k] for k in keep))
    attrs = make_attrs({**eqn.params, "carry": len(keep)})
    return True, dataclasses.replace(
        eqn, inputs=tuple(eqn.inputs[k] for k in keep) + tuple(eqn.inputs[n:]),
        outputs=tuple(eqn.outputs[k] for k in keep), attrs=attrs,
        regions=(new_cond, new_body))
