"""``eig``: the eigen-decomposition of general square matrices (TensorFlow's ``tf.linalg.eig``).

Real or complex input; the eigenvalues and eigenvectors are complex (complex64 from float32 and
complex64, complex128 from float64 and complex128), the eigenvectors unit-norm columns, in
LAPACK's (geev's) order and phase, as NumPy and TensorFlow return them."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.decompositions import SQUARE_SHAPES, _matrix
from stagecraft.ir.ops.infer import check_unified
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.types import TensorType

DTYPES = (dt.float32, dt.float64, dt.complex64, dt.complex128)
EIG_FAILED = "The eigen-decomposition did not converge."


def complex_of(d: dt.DType) -> dt.DType:
    """The complex dtype of ``d``'s precision (complex64 for float32 and complex64)."""
    return dt.complex64 if d in (dt.float32, dt.complex64) else dt.complex128


def _eig_infer(types):
    d = complex_of(check_unified("eig", ("input",), types, (0,), DTYPES))
    s = _matrix("eig", "input", types[0], square=True)
    if s is None:
        return [TensorType(d, None), TensorType(d, None)]
    n = s[-1] if s[-1] is not None else s[-2]
    return [TensorType(d, s[:-2] + (n,)), TensorType(d, s[:-2] + (n, n))]


def _eig_kernel(x):
    x = np.asarray(x)
    out = np.complex64 if x.dtype in (np.float32, np.complex64) else np.complex128
    try:
        # (a complex input keeps real matrices' eigenvalues complex in NumPy's result dtype)
        e, v = np.linalg.eig(x.astype(out))
    except np.linalg.LinAlgError:
        raise ValueError(EIG_FAILED) from None
    return np.ascontiguousarray(e, out), np.ascontiguousarray(v, out)


def _distinct(rng, d, shape):
    """Matrices with well separated eigenvalues (for the eigenvector gradients)."""
    n = shape[-1]
    a = rng.uniform(-0.5, 0.5, shape)
    if d.is_complex:
        a = a + 1j * rng.uniform(-0.5, 0.5, shape)
    return np.asarray(a + np.diag(np.arange(n) * 2.0 + 1.0), d.np)


eig_op = OpDef(
    name="eig", kind=Kind.LINALG, inputs=("input",), attrs=(), infer=_eig_infer,
    kernel=_eig_kernel, dtypes=DTYPES, unify=(0,), copying=True, num_outputs=2,
    examples=lambda rng, d: [Example((_distinct(rng, d, s),)) for s in SQUARE_SHAPES],
    doc="(e, v) of each square matrix: the complex eigenvalues and unit-norm eigenvectors (the "
        "columns of v), in LAPACK's order.")
