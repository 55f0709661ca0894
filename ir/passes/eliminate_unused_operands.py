"""Unused operands of control flow: drops the loop invariants of a ``while``, and the operands
of a ``cond``, that none of its regions reads.

Regions are closed, so a loop passes its body every value the body reads, as an invariant
operand after the carried ones. Reverse-mode differentiation of a ``while`` passes the
backward loop every stack the forward loop filled; dead-code elimination then leaves the
backward body reading a few of them, but while the operands stay, the forward loop still
fills all the others, one row per iteration (an Elman RNN's gradient: 11 stacks filled, 3
read). Once an operand goes, nothing reads the forward loop's output for it, and
``eliminate_dead_loop_vars`` drops that carried stack and the work that filled it.

Carried values are not touched here (``eliminate_dead_loop_vars`` owns them), nor are the
equations' outputs, so no user of a result changes.
"""
from __future__ import annotations

import dataclasses

from stagecraft.ir.graph import Eqn, Graph, Value
from stagecraft.ir.passes.rewrite import map_equations


def eliminate_unused_operands(graph: Graph) -> tuple[bool, Graph]:
    """``(changed, graph')`` with every ``while`` invariant and ``cond`` operand that no region
    reads removed, in nested regions too.

    >>> import stagecraft as tf
    >>> from stagecraft.ir.passes.eliminate_dead_code import eliminate_dead_code
    >>> @tf.function
    ... def f(x):
    ...     with tf.GradientTape() as tape:
    ...         tape.watch(x)
    ...         y = tf.while_loop(lambda i, y: i < 3,
    ...                           lambda i, y: (i + 1, tf.sin(y) * 2.0), (0, x))[1]
    ...     return tape.gradient(y, x)
    >>> g = f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph
    >>> _, g = eliminate_dead_code(g)
    >>> [len(e.inputs) for e in g.eqns if e.op == "while"]   # forward loop, backward loop
    [11, 11]
    >>> changed, g2 = eliminate_unused_operands(g)   # what the backward loop reads
    >>> changed, [len(e.inputs) for e in g2.eqns if e.op == "while"]
    (True, [11, 5])
    """
    return map_equations(graph, _operands, {})


def _operands(eqn: Eqn) -> tuple[bool, Eqn]:
    if eqn.op == "while":
        return _drop(eqn, first=eqn.params["carry"], skip=0)
    if eqn.op == "cond":   # (operand 0 is the predicate; regions take the rest)
        return _drop(eqn, first=0, skip=1)
    return False, eqn


def _drop(eqn: Eqn, first: int, skip: int) -> tuple[bool, Eqn]:
    """``eqn`` without its region parameters from index ``first`` on that no region reads,
    and their operands (region parameter ``k`` is operand ``k + skip``)."""
    reads = set().union(*(_reads(r) for r in eqn.regions))
    count = len(eqn.regions[0].params)
    unused = {k for k in range(first, count)
              if not any(r.params[k].uid in reads for r in eqn.regions)}
    if not unused:
        return False, eqn
    keep = [k for k in range(count) if k not in unused]
    regions = tuple(Graph(r.name, tuple(r.params[k] for k in keep), r.eqns, r.results)
                    for r in eqn.regions)
    inputs = eqn.inputs[:skip] + tuple(eqn.inputs[k + skip] for k in keep)
    return True, dataclasses.replace(eqn, inputs=inputs, regions=regions)


def _reads(region: Graph) -> set[int]:
    """The uids of the values ``region``'s equations take or its results name (nested regions
    are closed: what they read, their equation takes)."""
    used = {x.uid for e in region.eqns for x in e.inputs if isinstance(x, Value)}
    return used | {r.uid for r in region.results if isinstance(r, Value)}
