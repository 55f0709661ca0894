"""Matrix decompositions and solvers (``tf.linalg.inv``, ``det``, ``slogdet``, ``cholesky``,
``qr``, ``svd``, ``eigh``, ``solve``, ``triangular_solve``): float32 / float64, batched over
every leading dimension, with TensorFlow's output conventions.

The NumPy kernels call LAPACK through ``np.linalg`` (one call for the whole batch); the
triangular solve is a substitution of its own, because TensorFlow's neither checks the
diagonal nor reads the other triangle (a zero on the diagonal gives inf / nan, not an error).
Errors that depend on the values are TensorFlow's: a singular matrix given to ``inv`` is
"Input is not invertible.", to ``solve`` "Input matrix is not invertible.", and a matrix that
is not positive definite given to ``cholesky`` "Cholesky decomposition was not successful.
The input might not be valid." (raised eagerly, and when the staged function runs).
"""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.shapes import broadcast, format_dims
from stagecraft.ir.types import TensorType

FLOATS = (dt.float32, dt.float64)
FLOATS_AND_COMPLEX = FLOATS + dt.COMPLEX  # inverse, determinant and solve: as TF's kernels

NOT_INVERTIBLE = "Input is not invertible."
SOLVE_NOT_INVERTIBLE = "Input matrix is not invertible."
CHOLESKY_FAILED = "Cholesky decomposition was not successful. The input might not be valid."
EIGH_FAILED = ("Self-adjoint eigen decomposition was not successful. The input might not be "
               "valid.")
SVD_FAILED = "SVD did not converge. The input might not be valid."


# ----------------------------------------------------------------------------- inference

def _matrix(op: str, name: str, t: TensorType, square: bool) -> tuple | None:
    """The shape of a (batch of) matrices ``t`` (None when its rank is unknown); raises for a
    rank below 2 and, with ``square``, for a non-square known matrix."""
    s = t.shape
    if s is None:
        return None
    if len(s) < 2:
        raise fail(op, f"'{name}' must have rank >= 2 (a matrix or a batch of matrices), got "
                       f"shape {format_dims(s)}.")
    if square and s[-1] is not None and s[-2] is not None and s[-1] != s[-2]:
        raise fail(op, f"Input matrix must be square: '{name}' has shape {format_dims(s)}; "
                       f"its last two dimensions must be equal.")
    return s


def _square_infer(op: str, *extra: str, dtypes: tuple = FLOATS):
    """Inference of ops mapping square matrices to outputs shaped from ``(batch, n)``: each
    entry of ``extra`` is "matrix" (batch + (n, n)), "vector" (batch + (n,)) or "scalar"."""
    def infer(types, **attrs):
        d = check_unified(op, ("input",), types, (0,), dtypes)
        s = _matrix(op, "input", types[0], square=True)
        out = []
        for kind in extra:
            if s is None:
                out.append(TensorType(d, None))
                continue
            n = s[-1] if s[-1] is not None else s[-2]
            out.append(TensorType(d, s[:-2] + {"matrix": (n, n), "vector": (n,),
                                                "scalar": ()}[kind]))
        return out
    return infer


def _qr_infer(types, full_matrices):
    d = check_unified("qr", ("input",), types, (0,), FLOATS)
    s = _matrix("qr", "input", types[0], square=False)
    if s is None:
        return [TensorType(d, None), TensorType(d, None)]
    m, n = s[-2], s[-1]
    p = m if full_matrices else (None if m is None or n is None else min(m, n))
    return [TensorType(d, s[:-2] + (m, p)), TensorType(d, s[:-2] + (p, n))]


def _svd_infer(types, full_matrices):
    d = check_unified("svd", ("input",), types, (0,), FLOATS)
    s = _matrix("svd", "input", types[0], square=False)
    if s is None:
        return [TensorType(d, None)] * 3
    m, n = s[-2], s[-1]
    p = None if m is None or n is None else min(m, n)
    b = s[:-2]
    return [TensorType(d, b + (p,)), TensorType(d, b + (m, m if full_matrices else p)),
            TensorType(d, b + (n, n if full_matrices else p))]


def _solve_infer(op: str, broadcast_batch: bool, dtypes: tuple = FLOATS):
    def infer(types, **attrs):
        d = check_unified(op, ("matrix", "rhs"), types, (0, 1), dtypes)
        a = _matrix(op, "matrix", types[0], square=True)
        b = _matrix(op, "rhs", types[1], square=False)
        if a is None or b is None:
            return [TensorType(d, None)]
        n = a[-1] if a[-1] is not None else a[-2]
        if n is not None and b[-2] is not None and n != b[-2]:
            raise fail(op, f"Input matrix and right-hand side must have the same number of "
                           f"rows: 'matrix' has shape {format_dims(a)} and 'rhs' "
                           f"{format_dims(b)}.")
        if broadcast_batch:
            try:
                batch = broadcast(a[:-2], b[:-2])
            except ValueError:
                raise fail(op, f"the batch dimensions of 'matrix' {format_dims(a[:-2])} and "
                               f"'rhs' {format_dims(b[:-2])} do not broadcast.") from None
        else:
            if len(a) != len(b) or any(x is not None and y is not None and x != y
                                       for x, y in zip(a[:-2], b[:-2])):
                raise fail(op, f"'matrix' {format_dims(a)} and 'rhs' {format_dims(b)} must "
                               f"have the same batch dimensions (this op does not "
                               f"broadcast; use tf.broadcast_to first).")
            batch = tuple(x if x is not None else y for x, y in zip(a[:-2], b[:-2]))
        return [TensorType(d, batch + (b[-2] if b[-2] is not None else n, b[-1]))]
    return infer


# ----------------------------------------------------------------------------- kernels

def _adjoint(x: np.ndarray) -> np.ndarray:
    """The conjugate transpose of the matrices (the transpose of real ones)."""
    t = np.swapaxes(x, -1, -2)
    return np.conj(t) if t.dtype.kind == "c" else t


def _inverse_kernel(x, adjoint):
    try:
        out = np.linalg.inv(_adjoint(x) if adjoint else x)
    except np.linalg.LinAlgError:
        raise ValueError(NOT_INVERTIBLE) from None
    return np.ascontiguousarray(out, x.dtype)


def _determinant_kernel(x):
    return np.asarray(np.linalg.det(x), x.dtype)


def _slogdet_kernel(x):
    sign, logdet = np.linalg.slogdet(x)
    return np.asarray(sign, x.dtype), np.asarray(logdet, x.dtype)


def _cholesky_kernel(x):
    try:
        return np.ascontiguousarray(np.linalg.cholesky(x), x.dtype)
    except np.linalg.LinAlgError:
        raise ValueError(CHOLESKY_FAILED) from None


def _qr_kernel(x, full_matrices):
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return np.ascontiguousarray(q, x.dtype), np.ascontiguousarray(r, x.dtype)


def _svd_kernel(x, full_matrices):
    try:
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        raise ValueError(SVD_FAILED) from None
    return (np.ascontiguousarray(s, x.dtype), np.ascontiguousarray(u, x.dtype),
            np.ascontiguousarray(_adjoint(vh), x.dtype))


def _eigh_kernel(x):
    try:
        e, v = np.linalg.eigh(x)   # reads the lower triangle, like TensorFlow
    except np.linalg.LinAlgError:
        raise ValueError(EIGH_FAILED) from None
    return np.ascontiguousarray(e, x.dtype), np.ascontiguousarray(v, x.dtype)


def _check_solve_shapes(matrix, rhs, same_batch):
    """Shape errors NumPy would not raise (broadcast batches, a non-square triangle): the
    ValueError makes ``bind`` report inference's message."""
    if (matrix.ndim < 2 or rhs.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]
            or rhs.shape[-2] != matrix.shape[-1]
            or same_batch and matrix.shape[:-2] != rhs.shape[:-2]):
        raise ValueError(f"incompatible shapes {matrix.shape} and {rhs.shape}")


def _solve_kernel(matrix, rhs, adjoint):
    _check_solve_shapes(matrix, rhs, same_batch=True)
    try:
        out = np.linalg.solve(_adjoint(matrix) if adjoint else matrix, rhs)
    except np.linalg.LinAlgError:
        raise ValueError(SOLVE_NOT_INVERTIBLE) from None
    return np.ascontiguousarray(out, matrix.dtype)


def triangular_solve_kernel(matrix, rhs, lower, adjoint):
    """Substitution over the rows (vectorized over the batch and the right-hand sides): only
    the ``lower`` (else upper) triangle of ``matrix`` is read; ``adjoint`` solves with its
    transpose."""
    _check_solve_shapes(matrix, rhs, same_batch=False)
    batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    a = np.broadcast_to(matrix, batch + matrix.shape[-2:])
    x = np.array(np.broadcast_to(rhs, batch + rhs.shape[-2:]), matrix.dtype)
    if adjoint:   # op(A) = A^T: its triangle flips
        a, lower = _adjoint(a), not lower
    n = a.shape[-1]
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):   # a zero pivot: inf / nan
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = np.einsum("...k,...kj->...j", a[..., i, done], x[..., done, :])
            x[..., i, :] = (x[..., i, :] - acc) / a[..., i, i, None]
    return x


def _lu_infer(types, out_type):
    out = _square_infer("lu", "matrix", "vector")(types)
    if out_type not in (dt.int32, dt.int64):
        raise fail("lu", f"output_idx_type must be int32 or int64, got {out_type.name}.")
    return [out[0], TensorType(out_type, out[1].shape)]


def lu_kernel(x, out_type):
    """LU with partial pivoting (LAPACK getrf's choice of pivots: the first largest |value|),
    vectorized over the batch: (lu, p) with L below the diagonal (unit diagonal implied), U
    on and above, and p the row order, lu's L U = x[..., p, :]. A zero pivot column is left
    unscaled (the matrix is singular; no error, as in TensorFlow)."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"lu needs square matrices, got shape {x.shape}")
    n = x.shape[-1]
    a = np.array(x, x.dtype).reshape(-1, n, n)
    perm = np.tile(np.arange(n), (a.shape[0], 1))
    every = np.arange(a.shape[0])
    for k in range(n):
        p = k + np.argmax(np.abs(a[:, k:, k]), axis=1)
        a[every, k], a[every, p] = a[every, p], a[every, k].copy()
        perm[every, k], perm[every, p] = perm[every, p], perm[every, k].copy()
        d = a[:, k, k, None]
        a[:, k + 1:, k] = np.where(d != 0, a[:, k + 1:, k] / np.where(d != 0, d, 1),
                                   a[:, k + 1:, k])
        a[:, k + 1:, k + 1:] -= a[:, k + 1:, k, None] * a[:, k, None, k + 1:]
    return a.reshape(x.shape), perm.astype(out_type.np).reshape(x.shape[:-1])


# ----------------------------------------------------------------------------- examples

def _random(rng, d, shape):
    if d.is_complex:
        return rng.uniform(-1.0, 1.0, shape) + 1j * rng.uniform(-1.0, 1.0, shape)
    return rng.uniform(-1.0, 1.0, shape)


def _well_conditioned(rng, d, shape):
    """Square matrices with a dominant diagonal: far from singular, every pivot nonzero."""
    n = shape[-1]
    return np.asarray(_random(rng, d, shape) + n * np.eye(n), d.np)


def _positive_definite(rng, d, shape):
    a = _random(rng, d, shape)
    return np.asarray(a @ _adjoint(a) + shape[-1] * np.eye(shape[-1]), d.np)


def _symmetric(rng, d, shape):
    """Symmetric matrices with well separated eigenvalues (for the eigenvector gradients)."""
    n = shape[-1]
    a = _random(rng, d, shape)
    return np.asarray(a + _adjoint(a) + np.diag(np.arange(n) * 2.0), d.np)


SQUARE_SHAPES = [(3, 3), (2, 3, 3)]


def _square_examples(make, attrs=None):
    def examples(rng, d):
        attr_sets = attrs or [{}]
        return [Example((make(rng, d, s),), a) for s in SQUARE_SHAPES for a in attr_sets]
    return examples


def _lu_examples(rng, d):
    return [Example((np.asarray(_random(rng, d, s), d.np),), {"out_type": t})
            for s, t in [((3, 3), dt.int32), ((2, 4, 4), dt.int64)]]


def _qr_examples(rng, d):
    cases = [((4, 3), False), ((3, 3), True), ((2, 2, 4), False), ((2, 4), True)]
    return [Example((np.asarray(_random(rng, d, s), d.np),), {"full_matrices": f})
            for s, f in cases]


def _svd_examples(rng, d):
    cases = [((4, 3), False), ((2, 3, 3), False), ((2, 4), False), ((3, 4), True)]
    return [Example((np.asarray(_random(rng, d, s), d.np),), {"full_matrices": f})
            for s, f in cases]


def _solve_examples(rng, d):
    cases = [((3, 3), (3, 2), False), ((2, 3, 3), (2, 3, 1), True)]
    return [Example((_well_conditioned(rng, d, a), np.asarray(_random(rng, d, b), d.np)),
                    {"adjoint": adj}) for a, b, adj in cases]


def _triangular_solve_examples(rng, d):
    cases = [((3, 3), (3, 2), True, False), ((2, 3, 3), (3, 1), False, True),
             ((3, 3), (2, 3, 2), True, True)]
    return [Example((_well_conditioned(rng, d, a), np.asarray(_random(rng, d, b), d.np)),
                    {"lower": lo, "adjoint": adj}) for a, b, lo, adj in cases]


# ----------------------------------------------------------------------------- the ops

matrix_inverse_op = OpDef(
    name="matrix_inverse", kind=Kind.LINALG, inputs=("input",), attrs=("adjoint",),
    infer=_square_infer("matrix_inverse", "matrix", dtypes=FLOATS_AND_COMPLEX),
    kernel=_inverse_kernel, dtypes=FLOATS_AND_COMPLEX, unify=(0,), copying=True,
    examples=_square_examples(_well_conditioned, [{"adjoint": False}, {"adjoint": True}]),
    doc="The inverse of each square matrix (of its conjugate transpose with ``adjoint``); a "
        "singular matrix (an exactly zero pivot of the LU factorization) raises 'Input is not "
        "invertible.'.")

matrix_determinant_op = OpDef(
    name="matrix_determinant", kind=Kind.LINALG, inputs=("input",), attrs=(),
    infer=_square_infer("matrix_determinant", "scalar", dtypes=FLOATS_AND_COMPLEX),
    kernel=_determinant_kernel, dtypes=FLOATS_AND_COMPLEX, unify=(0,), copying=True,
    examples=_square_examples(_well_conditioned),
    doc="The determinant of each square matrix (shape: the batch dimensions).")

log_matrix_determinant_op = OpDef(
    name="log_matrix_determinant", kind=Kind.LINALG, inputs=("input",), attrs=(),
    infer=_square_infer("log_matrix_determinant", "scalar", "scalar"), kernel=_slogdet_kernel,
    dtypes=FLOATS, unify=(0,), copying=True, num_outputs=2,
    examples=_square_examples(_well_conditioned),
    doc="(sign, log_abs_determinant) of each square matrix; a singular one gives (0, -inf).")

cholesky_op = OpDef(
    name="cholesky", kind=Kind.LINALG, inputs=("input",), attrs=(),
    infer=_square_infer("cholesky", "matrix"), kernel=_cholesky_kernel, dtypes=FLOATS,
    unify=(0,), copying=True, examples=_square_examples(_positive_definite),
    doc="The lower-triangular Cholesky factor L (A = L L^T) of each symmetric positive "
        "definite matrix; only the lower triangle of the input is read. A matrix that is not "
        "positive definite raises 'Cholesky decomposition was not successful. The input might "
        "not be valid.'.")

qr_op = OpDef(
    name="qr", kind=Kind.LINALG, inputs=("input",), attrs=("full_matrices",),
    infer=_qr_infer, kernel=_qr_kernel, dtypes=FLOATS, unify=(0,), copying=True,
    num_outputs=2, examples=_qr_examples,
    doc="(q, r) of the QR decomposition (Householder, LAPACK's signs) of each [M, N] matrix: "
        "q [M, P] with orthonormal columns and upper-triangular r [P, N], P = min(M, N); with "
        "``full_matrices`` q is [M, M] and r [M, N].")

svd_op = OpDef(
    name="svd", kind=Kind.LINALG, inputs=("input",), attrs=("full_matrices",),
    infer=_svd_infer, kernel=_svd_kernel, dtypes=FLOATS, unify=(0,), copying=True,
    num_outputs=3, examples=_svd_examples,
    doc="(s, u, v) with A = u diag(s) v^T for each [M, N] matrix: singular values s [P] in "
        "descending order (P = min(M, N)), u [M, P] and v [N, P] (v itself, not its "
        "transpose); with ``full_matrices`` u is [M, M] and v [N, N].")

eigh_op = OpDef(
    name="eigh", kind=Kind.LINALG, inputs=("input",), attrs=(),
    infer=_square_infer("eigh", "vector", "matrix"), kernel=_eigh_kernel, dtypes=FLOATS,
    unify=(0,), copying=True, num_outputs=2, examples=_square_examples(_symmetric),
    doc="(e, v) of each self-adjoint matrix: eigenvalues e in ascending order and the "
        "orthonormal eigenvectors as the columns of v; only the lower triangle is read.")

matrix_solve_op = OpDef(
    name="matrix_solve", kind=Kind.LINALG, inputs=("matrix", "rhs"), attrs=("adjoint",),
    infer=_solve_infer("matrix_solve", broadcast_batch=False, dtypes=FLOATS_AND_COMPLEX),
    kernel=_solve_kernel, dtypes=FLOATS_AND_COMPLEX, unify=(0, 1), copying=True,
    examples=_solve_examples,
    doc="x with matrix @ x = rhs (matrix^H @ x = rhs with ``adjoint``) for each square matrix "
        "[N, N] and right-hand sides [N, K] (the same batch dimensions); a singular matrix "
        "raises 'Input matrix is not invertible.'.")

triangular_solve_op = OpDef(
    name="triangular_solve", kind=Kind.LINALG, inputs=("matrix", "rhs"),
    attrs=("lower", "adjoint"), infer=_solve_infer("triangular_solve", broadcast_batch=True),
    kernel=triangular_solve_kernel, dtypes=FLOATS, unify=(0, 1), copying=True,
    examples=_triangular_solve_examples,
    doc="x with op(matrix) @ x = rhs by substitution, reading only the ``lower`` (else upper) "
        "triangle of matrix; op is the transpose with ``adjoint``. Batch dimensions "
        "broadcast. The diagonal is not checked: a zero on it gives inf / nan, as in "
        "TensorFlow.")

lu_op = OpDef(
    name="lu", kind=Kind.LINALG, inputs=("input",), attrs=("out_type",), infer=_lu_infer,
    kernel=lu_kernel, dtypes=FLOATS, unify=(0,), copying=True, num_outputs=2,
    examples=_lu_examples,
    doc="(lu, p) of the LU factorization with partial pivoting of each square matrix: L "
        "(unit diagonal, not stored) below the diagonal of lu, U on and above it, and the row "
        "order p (``out_type``: int32 or int64) with L @ U = input[..., p, :]. Singular "
        "matrices factor without error (a zero on U's diagonal).")
