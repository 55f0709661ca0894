"""Common-subexpression elimination: an equation identical to an earlier one reuses its outputs.

Two equations are identical when they are stateless primitives of the op table (or ``const``
equations) with the same op, the same operands (values by identity, literals by dtype and bit
pattern, so ``0.0`` and ``-0.0`` differ), the same attributes (arrays by dtype, shape and
bytes) and the same output types. Stateful equations (random ops, ``print``...) and control
flow are never merged: two ``random_normal`` draws are different values. Two ``read`` of one
variable are merged when nothing that may write it comes between them: an ``assign`` to it,
control flow or a call it is passed to, or a ``py_function`` (anywhere, even nested: Python may
assign any variable). An unrolled loop reading its weights every step then computes what
depends only on them once. Each region is its own scope.
"""
from __future__ import annotations

import struct
from typing import Any, Hashable

import numpy as np

from stagecraft.ir.graph import Eqn, Graph, Literal, Value
from stagecraft.ir.ops import OPS
from stagecraft.ir.passes.rewrite import rebuild, rename_results, renamed_eqns


def eliminate_common_subexpressions(graph: Graph) -> tuple[bool, Graph]:
    """``(changed, graph')`` with repeated pure equations merged into their first occurrence.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     return tf.exp(x) + tf.exp(x)
    >>> print(eliminate_common_subexpressions(
    ...     f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph)[1])
    graph @f(%x: f32[]) -> (f32[]) {
      %0: f32[] = exp %x
      %1: f32[] = add %0, %0
      return %1
    }
    """
    return _cse(graph, {})


def _cse(graph: Graph, memo: dict) -> tuple[bool, Graph]:
    subst: dict = {}
    seen: dict[Hashable, tuple] = {}
    reads: dict[int, tuple] = {}  # variable (ref uid) -> outputs of its current read
    changed = False
    eqns = []
    for c, eqn in renamed_eqns(graph, subst, lambda r: _cse(r, memo), memo):
        changed |= c
        if eqn.op == "read":
            earlier = reads.get(eqn.inputs[0].uid)
            if earlier is not None:
                subst[eqn.outputs[0].uid] = earlier[0]
                changed = True
                continue
            reads[eqn.inputs[0].uid] = eqn.outputs
        elif _calls_python(eqn):
            reads.clear()
        else:
            for x in eqn.inputs:
                if getattr(x, "ref", False):
                    reads.pop(x.uid, None)
        key = eqn_key(eqn)
        if key is not None:
            earlier = seen.get(key)
            if earlier is not None:
                for old, new in zip(eqn.outputs, earlier):
                    subst[old.uid] = new
                changed = True
                continue
            seen[key] = eqn.outputs
        eqns.append(eqn)
    return rebuild(graph, changed, eqns, rename_results(graph, subst))


def _calls_python(eqn: Eqn) -> bool:
    return eqn.op == "py_function" or any(_calls_python(e) for r in eqn.regions
                                          for e in r.eqns)


def eqn_key(eqn: Eqn) -> Hashable | None:
    """A hashable key equal for interchangeable equations, or None for those never merged.

    >>> import numpy as np
    >>> from stagecraft.ir.graph import Eqn, make_attrs
    >>> c = lambda v: Eqn("const", (), (), make_attrs({"value": np.array(v, np.float32)}))
    >>> eqn_key(c(1.0)) == eqn_key(c(1.0)), eqn_key(c(0.0)) == eqn_key(c(-0.0))
    (True, False)
    """
    if eqn.regions or any(getattr(o, "ref", False) for o in eqn.outputs):
        return None
    if eqn.op != "const":
        op = OPS.get(eqn.op)
        if op is None or op.stateful:
            return None
    operands = tuple(operand_key(x) for x in eqn.inputs)
    return (eqn.op, operands, _attr_key(eqn.attrs), tuple(o.type for o in eqn.outputs))


def operand_key(x: Value | Literal) -> tuple:
    """A key equal for the same value, or for literals of one dtype and bit pattern.

    >>> from stagecraft.ir import dtypes
    >>> zero, minus_zero = Literal.of(0.0, dtypes.float32), Literal.of(-0.0, dtypes.float32)
    >>> operand_key(zero) == operand_key(minus_zero)
    False
    """
    if isinstance(x, Value):
        return ("v", x.uid)
    return ("l", x.type.dtype.name, np.asarray(x.value, x.type.dtype.np).tobytes())


def _attr_key(v: Any) -> Hashable:
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, np.ascontiguousarray(v).tobytes())
    if isinstance(v, np.generic):
        return ("np", v.dtype.str, v.tobytes())
    if isinstance(v, tuple):
        return ("t",) + tuple(_attr_key(x) for x in v)
    if isinstance(v, float):
        return ("f", struct.pack("<d", v))  # tells 0.0 from -0.0
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))  # unhashable: equal only to itself (kept alive by the graph)
    return (type(v).__name__, v)
