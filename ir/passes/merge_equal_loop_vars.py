"""Equal loop variables: merges the carried values of a ``while`` that hold the same value in
every iteration.

Two carried values are equal in every iteration when they enter the loop as the same operand
and the body computes their next values by the same expression, one reading the first where the
other reads the second (then, by induction, they never differ). The typical case is a gradient:
reverse mode adds an iteration counter beside a ``for t in tf.range(n)`` loop's own counter to
index the loop's stacks, and both count from 0 by 1. The loop then carries one counter, which
on a GPU is one kernel launch fewer per iteration. The body's now unused equations are left
for ``eliminate_common_subexpressions`` and ``eliminate_dead_code``.

Expressions compare as ``eliminate_common_subexpressions`` compares equations (``eqn_key``):
stateless primitives with equal operands, attributes and types; the value of anything else (a
random draw, a variable read, a nested loop) equals only itself.
"""
from __future__ import annotations

import dataclasses
from typing import Hashable

from stagecraft.ir.graph import Eqn, Graph, Literal, Value, const_value, make_attrs
from stagecraft.ir.passes.eliminate_common_subexpressions import eqn_key, operand_key
from stagecraft.ir.passes.rewrite import rename, rename_inputs, rename_results, renamed_eqns


def merge_equal_loop_vars(graph: Graph) -> tuple[bool, Graph]:
    """``(changed, graph')`` with the carried values of every ``while`` that equal an earlier
    one in every iteration merged into it.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     i, j, total = tf.while_loop(lambda i, j, t: i < 3,
    ...                                 lambda i, j, t: (i + 1, j + 1, t + x * tf.cast(j, x.dtype)),
    ...                                 (0, 0, 0.0))
    ...     return total, i, j
    >>> g = f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph
    >>> changed, g2 = merge_equal_loop_vars(g)
    >>> changed, [e.params["carry"] for e in g2.eqns if e.op == "while"]
    (True, [2])
    >>> g2.results[1] is g2.results[2]
    True
    """
    return _run(graph, {})


def _run(graph: Graph, memo: dict) -> tuple[bool, Graph]:
    changed = False
    subst: dict = {}
    consts: dict[int, Hashable] = {}   # a constant's uid -> its key (equal for equal values)
    eqns = []
    for c, eqn in renamed_eqns(graph, subst, lambda r: _run(r, memo), memo):
        changed |= c
        if eqn.op == "const":
            consts[eqn.outputs[0].uid] = _const_key(eqn)
        elif eqn.op == "while":
            merged = _merge(eqn, consts)
            if merged is not None:
                eqn, gone = merged
                subst.update(gone)
                changed = True
        eqns.append(eqn)
    results = rename_results(graph, subst)
    if not changed:
        return False, graph
    return True, Graph(graph.name, graph.params, tuple(eqns), results)


def _merge(eqn: Eqn, consts: dict) -> tuple[Eqn, dict] | None:
    """The loop with its equal carried values merged, and the substitution of the removed
    outputs by the kept ones; None when no two are equal. ``consts`` keys the constants
    defined before it."""
    n = eqn.params["carry"]
    cond, body = eqn.regions
    into: dict[int, int] = {}   # merged carried index -> the index it merges into
    for j in range(n):
        for i in range(j):
            if i not in into and _equal(eqn, body, i, j, into, consts):
                into[j] = i
                break
    if not into:
        return None
    keep = [k for k in range(n) if k not in into]
    gone = {eqn.outputs[j].uid: eqn.outputs[i] for j, i in into.items()}

    def region(r: Graph, results: tuple) -> Graph:
        aliases = {r.params[j].uid: r.params[i] for j, i in into.items()}
        return Graph(r.name, tuple(r.params[k] for k in keep) + r.params[n:],
                     tuple(rename_inputs(e, aliases) for e in r.eqns),
                     tuple(rename(x, aliases) for x in results))

    new_cond = region(cond, cond.results)
    new_body = region(body, tuple(body.results[k] for k in keep))
    return dataclasses.replace(
        eqn, inputs=tuple(eqn.inputs[k] for k in keep) + eqn.inputs[n:],
        outputs=tuple(eqn.outputs[k] for k in keep),
        attrs=make_attrs({**eqn.params, "carry": len(keep)}),
        regions=(new_cond, new_body)), gone


def _equal(eqn: Eqn, body: Graph, i: int, j: int, into: dict[int, int], consts: dict
           ) -> bool:
    """Whether carried values ``i`` and ``j`` enter equal and the body's next values of them
    are the same expression once parameter ``j`` reads as parameter ``i`` (and the parameters
    merged so far as theirs)."""
    def outside(x: Value | Literal) -> Hashable:   # (constants compare by value)
        return consts.get(x.uid, operand_key(x)) if isinstance(x, Value) else operand_key(x)

    if eqn.outputs[i].type != eqn.outputs[j].type or \
            outside(eqn.inputs[i]) != outside(eqn.inputs[j]):
        return False
    aliases = {body.params[m].uid: body.params[k].uid for m, k in {**into, j: i}.items()}
    n = eqn.params["carry"]
    # a loop invariant that is a constant outside (a range's step) reads as that constant
    keys: dict[int, Hashable] = {p.uid: outside(x) for p, x in
                                 zip(body.params[n:], eqn.inputs[n:])}

    def key(x: Value | Literal) -> Hashable:
        if isinstance(x, Literal):
            return operand_key(x)
        return keys.get(x.uid, ("v", aliases.get(x.uid, x.uid)))

    for e in body.eqns:
        own = eqn_key(e)
        if own is None:
            continue   # (its outputs equal only themselves)
        if e.op == "const":
            keys[e.outputs[0].uid] = _const_key(e)
            continue
        operands = tuple(key(x) for x in e.inputs)
        for k, o in enumerate(e.outputs):
            keys[o.uid] = (own[0], operands, own[2], own[3], k)
    return key(body.results[i]) == key(body.results[j])


def _const_key(eqn: Eqn) -> Hashable:
    """A ``const`` equation's key: a scalar's is the key of the literal it equals."""
    (out,) = eqn.outputs
    if out.type.shape == ():
        return operand_key(Literal(const_value(eqn).item(), out.type))
    return eqn_key(eqn)
