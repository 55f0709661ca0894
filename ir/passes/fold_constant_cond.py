"""Folding a ``cond`` with a constant predicate: the chosen branch is inlined in its place.

The predicate is a ``Literal`` or the output of a ``const`` equation. The chosen region's
equations are copied (with new output values) into the enclosing graph at the ``cond``'s
position, its parameters renamed to the ``cond``'s operands, and the ``cond``'s outputs to the
values it yields; so stateful equations of the branch keep their place in program order. A
yielded ``Literal`` becomes a ``const`` equation defining the ``cond``'s output. A ``cond``
whose branch types differ from its operand or output types (a branch more precise than the
``cond``) is left alone, so no downstream type changes.
"""
from __future__ import annotations

import numpy as np

from stagecraft.ir.graph import Eqn, Graph, Literal, Value, const_value
from stagecraft.ir.passes.rewrite import (const_eqn, fresh_copy, literal_array, rebuild, rename,
                                          renamed_eqns, rename_results, same_type)


def fold_constant_cond(graph: Graph) -> tuple[bool, Graph]:
    """``(changed, graph')`` with every constant-predicate ``cond`` replaced by its branch.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder, Literal
    >>> from stagecraft.ir.types import TensorType
    >>> f32 = TensorType(dtypes.float32, ())
    >>> def branch(op):
    ...     b = GraphBuilder("branch")
    ...     x = b.param(f32, "x")
    ...     return b.build(b.add(op, [x], [f32]))
    >>> b = GraphBuilder("f")
    >>> x = b.param(f32, "x")
    >>> (y,) = b.add("cond", [Literal.of(False, dtypes.bool_), x], [f32],
    ...              regions=[branch("exp"), branch("log")])
    >>> print(fold_constant_cond(b.build([y]))[1])
    graph @f(%x: f32[]) -> (f32[]) {
      %0: f32[] = log %x
      return %0
    }
    """
    return _fold(graph, {})


def _fold(graph: Graph, memo: dict) -> tuple[bool, Graph]:
    subst: dict = {}
    consts: dict[int, np.ndarray] = {}
    changed = False
    eqns: list[Eqn] = []
    for c, eqn in renamed_eqns(graph, subst, lambda r: _fold(r, memo), memo):
        changed |= c
        if eqn.op == "const":
            consts[eqn.outputs[0].uid] = const_value(eqn)
        inlined = _inline(eqn, consts, subst) if eqn.op == "cond" else None
        if inlined is None:
            eqns.append(eqn)
        else:
            eqns.extend(inlined)
            changed = True
    return rebuild(graph, changed, eqns, rename_results(graph, subst))


def _predicate(x: Value | Literal, consts: dict) -> bool | None:
    if isinstance(x, Literal):
        value = literal_array(x)
    elif x.uid in consts:
        value = consts[x.uid]
    else:
        return None
    value = np.asarray(value)
    return bool(value) if value.size == 1 else None


def _inline(eqn: Eqn, consts: dict, subst: dict) -> list[Eqn] | None:
    """The equations replacing ``eqn`` (recording its outputs in ``subst``), or None."""
    taken = _predicate(eqn.inputs[0], consts)
    if taken is None or len(eqn.regions) != 2:
        return None
    region = eqn.regions[0] if taken else eqn.regions[1]
    operands = eqn.inputs[1:]
    if len(region.params) != len(operands) or len(region.results) != len(eqn.outputs):
        return None
    if not all(same_type(a, p) for a, p in zip(operands, region.params)):
        return None
    if not all(same_type(r, o) for r, o in zip(region.results, eqn.outputs)):
        return None
    local = {p.uid: a for p, a in zip(region.params, operands)}
    body = fresh_copy(region.eqns, local)
    for out, r in zip(eqn.outputs, region.results):
        r = rename(r, local)
        if isinstance(r, Literal):
            body.append(const_eqn(out, np.asarray(literal_array(r)), eqn.loc))
        else:
            subst[out.uid] = r
    return body
