"""The fusion policy both Numba code generators follow: which runs of equations become one
elementwise loop nest (CPU) or one kernel (CUDA), so both fuse the same equations."""
from __future__ import annotations

from typing import Sequence

from stagecraft.backends.codegen.scalar_ops import SCALAR
from stagecraft.ir.graph import Eqn, Value


def fusible(e: Eqn) -> bool:
    """Whether ``e`` is elementwise: one scalar expression per element (see .scalar_ops)."""
    return e.op in SCALAR


def fusion_group(eqns: Sequence[Eqn], i: int, fold_reductions: bool = True) -> int:
    """How many equations from ``i`` on form one fused elementwise loop (0: ``eqns[i]`` is not
    elementwise): the run of elementwise equations with the same static output shape (a
    rank-0 or not fully known shape is a group of one). With ``fold_reductions`` a following
    max/min over the whole iteration space joins the group (the loop accumulates it). Shared
    by the CPU and CUDA code generators, so both fuse the same equations.

    >>> from stagecraft.ir import dtypes as dt
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("f")
    >>> x = b.param(TensorType(dt.float32, (3,)), "x")
    >>> (y,) = b.add("exp", [x], [x.type])
    >>> (z,) = b.add("multiply", [y, x], [x.type])
    >>> (m,) = b.add("reduce_max", [z], [TensorType(dt.float32, ())],
    ...              {"axes": None, "keepdims": False})
    >>> eqns = b.build([m]).eqns
    >>> fusion_group(eqns, 0), fusion_group(eqns, 0, fold_reductions=False), fusion_group(eqns, 2)
    (3, 2, 0)
    """
    if not fusible(eqns[i]):
        return 0
    shape = eqns[i].outputs[0].type.shape
    if shape is None or len(shape) == 0 or None in shape:
        return 1
    n = 1
    while (i + n < len(eqns) and fusible(eqns[i + n])
           and eqns[i + n].outputs[0].type.shape == shape):
        n += 1
    if fold_reductions and i + n < len(eqns) and folded_reduction(eqns[i + n], shape):
        n += 1  # the loop also accumulates a max/min of the whole iteration space
    return n


def folded_reduction(e: Eqn, shape: tuple) -> bool:
    """A max/min over every axis of a value of ``shape``, which the loop nest computing that
    shape can accumulate instead of storing the value (exact: no rounding order involved)."""
    if e.op not in ("reduce_max", "reduce_min") or e.params.get("keepdims"):
        return False
    x = e.inputs[0]
    axes = e.params.get("axes")
    axes = (axes,) if isinstance(axes, int) else axes
    d = e.outputs[0].type.dtype
    return (isinstance(x, Value) and x.type.shape == shape and len(shape) > 0
            and (axes is None or sorted(a % len(shape) for a in axes) == list(range(len(shape))))
            and (d.is_floating or d.is_integer))
