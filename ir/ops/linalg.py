"""Linear algebra primitives: (batched) matmul and diagonals."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import broadcast, format_dims
from stagecraft.ir.types import TensorType


def _matmul_infer(types, transpose_a, transpose_b):
    d = check_unified("matmul", ("a", "b"), types, (0, 1), dt.NUMERIC + dt.COMPLEX)
    a, b = types[0].shape, types[1].shape
    if a is None or b is None:
        return [TensorType(d, None)]
    if len(a) < 2 or len(b) < 2:
        raise fail("matmul", f"both inputs must have rank >= 2, got shapes {format_dims(a)} and "
                             f"{format_dims(b)}. Use tf.expand_dims for vectors, or "
                             f"tf.tensordot / multiply + reduce_sum.")
    m, ka = (a[-1], a[-2]) if transpose_a else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if transpose_b else (b[-2], b[-1])
    if ka is not None and kb is not None and ka != kb:
        raise fail("matmul", f"Matrix size-incompatible: In[0]: {format_dims(a)}, In[1]: "
                             f"{format_dims(b)}; the inner dimensions {ka} and {kb} must match.")
    try:
        batch = broadcast(a[:-2], b[:-2])
    except ValueError:
        raise fail("matmul", f"batch dimensions {format_dims(a[:-2])} and {format_dims(b[:-2])} "
                             f"do not broadcast.") from None
    return [TensorType(d, batch + (m, n))]


def _matmul_kernel(a, b, transpose_a, transpose_b):
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


def _matmul_examples(rng, d):
    cases = [((3, 4), (4, 2), False, False), ((4, 3), (4, 2), True, False),
             ((3, 4), (2, 4), False, True), ((2, 3, 4), (2, 4, 5), False, False),
             ((2, 3, 4), (4, 5), False, False), ((1, 3, 4), (2, 4, 2), False, False)]
    return [Example((values(rng, d, a), values(rng, d, b)),
                    {"transpose_a": ta, "transpose_b": tb}) for a, b, ta, tb in cases]


matmul_op = OpDef(
    name="matmul", kind=Kind.LINALG, inputs=("a", "b"), attrs=("transpose_a", "transpose_b"),
    infer=_matmul_infer, kernel=_matmul_kernel, dtypes=dt.NUMERIC + dt.COMPLEX, unify=(0, 1),
    examples=_matmul_examples, copying=True,
    doc="Matrix product of the last two dimensions; leading (batch) dimensions broadcast.")


def _diag_infer(types):
    d = check_unified("diag", ("diagonal",), types, (0,), dt.NUMERIC + dt.COMPLEX)
    s = types[0].shape
    if s is not None and len(s) < 1:
        raise fail("diag", "the diagonal must have rank >= 1.")
    return [TensorType(d, None if s is None else s + (s[-1],))]


def _diag_kernel(x):
    n = x.shape[-1]
    out = np.zeros(x.shape + (n,), x.dtype)
    i = np.arange(n)
    out[..., i, i] = x
    return out


diag_op = OpDef(
    name="diag", kind=Kind.LINALG, inputs=("diagonal",), attrs=(), infer=_diag_infer,
    kernel=_diag_kernel, dtypes=dt.NUMERIC + dt.COMPLEX, unify=(0,),
    examples=lambda rng, d: [Example((values(rng, d, s),)) for s in [(3,), (2, 3)]],
    doc="A (batch of) square matrices with the given diagonal and zeros elsewhere.")


def _diag_part_infer(types):
    d = check_unified("diag_part", ("input",), types, (0,), dt.NUMERIC + dt.COMPLEX)
    s = types[0].shape
    if s is None:
        return [TensorType(d, None)]
    if len(s) < 2:
        raise fail("diag_part", f"the input must have rank >= 2, got {format_dims(s)}.")
    m, n = s[-2], s[-1]
    k = None if m is None or n is None else min(m, n)
    return [TensorType(d, s[:-2] + (k,))]


diag_part_op = OpDef(
    name="diag_part", kind=Kind.LINALG, inputs=("input",), attrs=(), infer=_diag_part_infer,
    kernel=lambda x: np.diagonal(x, axis1=-2, axis2=-1).copy(), dtypes=dt.NUMERIC + dt.COMPLEX,
    unify=(0,),
    examples=lambda rng, d: [Example((values(rng, d, s),)) for s in [(3, 3), (2, 3, 4)]],
    doc="The main diagonal of the last two dimensions.")
