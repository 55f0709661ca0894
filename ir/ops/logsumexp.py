"""``cumulative_logsumexp``: log(cumsum(exp(x))) along an axis, accumulated with ``logaddexp``
one element at a time (TensorFlow's CumulativeLogsumexp), so it neither overflows nor loses
elements far below the running maximum. ``exclusive`` starts from log(0) = -inf, ``reverse``
accumulates from the end."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_unified, fail, normalize_axis
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.types import TensorType


def _infer(types, axis, exclusive, reverse):
    op = "cumulative_logsumexp"
    d = check_unified(op, ("x",), types, (0,), dt.FLOATS)
    if types[0].rank == 0:
        raise fail(op, "the input is a scalar; it needs at least one dimension.")
    normalize_axis(op, axis, types[0].rank)
    return [TensorType(d, types[0].shape)]


def _kernel(x, axis, exclusive, reverse):
    x = np.asarray(x)
    if reverse:
        x = np.flip(x, axis)
    out = np.logaddexp.accumulate(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = np.roll(out, 1, axis=axis)
        first = [slice(None)] * x.ndim
        first[axis] = slice(0, 1)
        out[tuple(first)] = -np.inf
    return np.flip(out, axis) if reverse else out


cumulative_logsumexp_op = OpDef(
    name="cumulative_logsumexp", kind=Kind.REDUCE, inputs=("x",),
    attrs=("axis", "exclusive", "reverse"), infer=_infer, kernel=_kernel, dtypes=dt.FLOATS,
    unify=(0,),
    # inclusive only: an exclusive result starts at -inf, which finite differences cannot
    # check (tests/frontend/test_special_ops.py and tests/backends/cuda/test_cuda_misc_ops.py
    # cover exclusive on every backend)
    examples=lambda rng, d: [Example((values(rng, d, s, -30, 30),),
                                     {"axis": a, "exclusive": False, "reverse": r})
                             for s, a in [((5,), 0), ((3, 4), 1), ((3, 4), -2)]
                             for r in (False, True)],
    doc="log(cumsum(exp(x))) along `axis`, accumulated with logaddexp (optionally exclusive, "
        "starting from -inf, and/or reversed).")
