"""tf.linalg's decompositions, solvers and their compositions against NumPy / SciPy: one table
of cases, each run eagerly and staged on the reference interpreter (one function per case),
and all of them in one staged function on Numba (one compile); batched shapes; TensorFlow's
output conventions (shapes, orders, which triangle is read); the error messages of bad
shapes, dtypes and values, eagerly and staged."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

import stagecraft as tf

rng = np.random.default_rng(18)


def _spd(*shape):
    a = rng.normal(size=shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _sym(*shape):
    a = rng.normal(size=shape)
    return a + np.swapaxes(a, -1, -2)


SQ = rng.normal(size=(3, 3)) + 3 * np.eye(3)
SQB = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
TALL = rng.normal(size=(5, 3))
WIDE = rng.normal(size=(2, 4))
TALLB = rng.normal(size=(2, 4, 3))
SPD = _spd(3, 3)
SPDB = _spd(2, 3, 3)
SYM = _sym(3, 3)
SYMB = _sym(2, 4, 4)
RHS = rng.normal(size=(3, 2))
RHSB = rng.normal(size=(2, 3, 2))
RHS5 = rng.normal(size=(5, 2))
LOWER = np.tril(SQ)
UPPERB = np.triu(SQB)
RANK1 = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 0.5, 2.0])


def _with_upper_garbage(a):
    """``a`` with its strict upper triangle overwritten: ops that read the lower triangle
    must not notice."""
    return a + np.triu(np.full(a.shape, 7.0), 1)


def _from_lower(a):
    """The symmetric matrices whose lower triangles are ``a``'s."""
    return np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)


def _eigh_vectors_ok(a, e, v):
    return np.allclose(a @ v, v * e[..., None, :], atol=1e-9)


def _reconstructs_qr(a, q, r):
    return np.allclose(q @ r, a) and np.allclose(np.triu(r), r) and np.allclose(
        np.swapaxes(q, -1, -2) @ q, np.eye(q.shape[-1]))


def _set_diag_ref(x, d, k):
    out = x.copy()
    m, n = x.shape[-2:]
    for t, i in enumerate(range(max(0, -k), min(m, n - k))):
        out[..., i, i + k] = d[..., t]
    return out


# name: (stagecraft function of tensors, NumPy / SciPy reference of arrays, float64 arguments)
CASES = {
    "inv": (tf.linalg.inv, np.linalg.inv, (SQ,)),
    "inv_batched_adjoint": (lambda a: tf.linalg.inv(a, adjoint=True),
                            lambda a: np.linalg.inv(np.swapaxes(a, -1, -2)), (SQB,)),
    "det": (tf.linalg.det, np.linalg.det, (SQB,)),
    "slogdet": (lambda a: tf.stack(tf.linalg.slogdet(a)),
                lambda a: np.stack(np.linalg.slogdet(a)), (SQB,)),
    "cholesky_reads_lower": (lambda a: tf.linalg.cholesky(a),
                             lambda a: np.linalg.cholesky(_from_lower(a)),
                             (_with_upper_garbage(SPDB),)),
    "qr_reduced_tall": (lambda a: tf.concat(tf.linalg.qr(a), 0),
                        lambda a: np.concatenate(np.linalg.qr(a), 0), (TALL,)),
    "qr_complete_tall": (lambda a: tf.linalg.qr(a, full_matrices=True).q,
                         lambda a: np.linalg.qr(a, mode="complete")[0], (TALL,)),
    "qr_batched_r": (lambda a: tf.linalg.qr(a).r, lambda a: np.linalg.qr(a)[1], (TALLB,)),
    "svd_values": (lambda a: tf.linalg.svd(a, compute_uv=False),
                   lambda a: np.linalg.svd(a, compute_uv=False), (TALLB,)),
    "svd_reconstructs": (lambda a: (lambda s, u, v: tf.matmul(u * s[..., None, :], v,
                                                              transpose_b=True))(
        *tf.linalg.svd(a)), lambda a: a, (TALLB,)),
    "svd_v_not_transposed": (lambda a: tf.linalg.svd(a)[2],
                             lambda a: np.swapaxes(np.linalg.svd(a, full_matrices=False)[2],
                                                   -1, -2), (WIDE,)),
    "svd_full_u": (lambda a: tf.linalg.svd(a, full_matrices=True)[1],
                   lambda a: np.linalg.svd(a)[0], (TALL,)),
    "eigh_values": (lambda a: tf.linalg.eigh(a)[0], np.linalg.eigvalsh, (SYMB,)),
    "eigvalsh_reads_lower": (tf.linalg.eigvalsh,
                             lambda a: np.linalg.eigvalsh(_from_lower(a)),
                             (_with_upper_garbage(SYM),)),
    "solve": (tf.linalg.solve, np.linalg.solve, (SQ, RHS)),
    "solve_batched_adjoint": (lambda a, b: tf.linalg.solve(a, b, adjoint=True),
                              lambda a, b: np.linalg.solve(np.swapaxes(a, -1, -2), b),
                              (SQB, RHSB)),
    "triangular_solve_lower": (tf.linalg.triangular_solve,
                               lambda a, b: sla.solve_triangular(a, b, lower=True),
                               (_with_upper_garbage(LOWER), RHS)),
    "triangular_solve_upper_adjoint_broadcast": (
        lambda a, b: tf.linalg.triangular_solve(a, b, lower=False, adjoint=True),
        lambda a, b: np.stack([sla.solve_triangular(m, b, lower=False, trans="T") for m in a]),
        (UPPERB, RHS)),
    "cholesky_solve": (lambda a, b: tf.linalg.cholesky_solve(tf.linalg.cholesky(a), b),
                       lambda a, b: sla.cho_solve((np.linalg.cholesky(a), True), b),
                       (SPD, RHS)),
    "lstsq_tall": (tf.linalg.lstsq, lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
                   (TALL, RHS5)),
    "lstsq_wide_min_norm": (lambda a, b: tf.linalg.lstsq(a, b[:2]),
                            lambda a, b: np.linalg.lstsq(a, b[:2], rcond=None)[0],
                            (WIDE, RHS5)),
    "lstsq_l2": (lambda a, b: tf.linalg.lstsq(a, b, l2_regularizer=0.5),
                 lambda a, b: np.linalg.solve(a.T @ a + 0.5 * np.eye(3), a.T @ b),
                 (TALL, RHS5)),
    "lstsq_slow_rank_deficient": (lambda a, b: tf.linalg.lstsq(a, b[:3], fast=False),
                                  lambda a, b: np.linalg.lstsq(a, b[:3], rcond=None)[0],
                                  (RANK1, RHS5)),
    "logdet": (tf.linalg.logdet, lambda a: np.linalg.slogdet(a)[1], (SPDB,)),
    "pinv": (tf.linalg.pinv, np.linalg.pinv, (TALLB,)),
    "pinv_rank_deficient": (tf.linalg.pinv, np.linalg.pinv, (RANK1,)),
    "set_diag": (lambda x, d: tf.linalg.set_diag(x, d[0, :3]),
                 lambda x, d: _set_diag_ref(x, d[0, :3], 0), (TALL, RHS5.T)),
    "set_diag_k": (lambda x, d: tf.linalg.set_diag(x, d[0, :1], k=-1),
                   lambda x, d: _set_diag_ref(x, d[0, :1], -1), (WIDE, WIDE)),
    "adjoint": (tf.linalg.adjoint, lambda a: np.swapaxes(a, -1, -2), (TALLB,)),
    "expm_batched_scaled": (tf.linalg.expm, lambda a: np.stack([sla.expm(m) for m in a]),
                            (SQB * 3.0,)),
    "expm_small": (tf.linalg.expm, sla.expm, (SQ * 0.1,)),
    "lu_factors": (lambda a: tf.linalg.lu(a).lu, lambda a: sla.lu_factor(a)[0], (SQ,)),
    "lu_reconstruct": (lambda a: tf.linalg.lu_reconstruct(*tf.linalg.lu(a)), lambda a: a,
                       (SQB,)),
    "lu_solve": (lambda a, b: tf.linalg.lu_solve(*tf.linalg.lu(a), b), np.linalg.solve,
                 (SQB, RHSB)),
    "lu_matrix_inverse": (lambda a: tf.linalg.lu_matrix_inverse(*tf.linalg.lu(a)),
                          np.linalg.inv, (SQB,)),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("how", ["eager", "reference"])
def test_values_match_numpy(name, how):
    fn, ref, args = CASES[name]
    run = fn if how == "eager" else tf.function(fn, backend="reference")
    got = run(*[tf.constant(a) for a in args])
    assert got.dtype == tf.float64
    np.testing.assert_allclose(got.numpy(), ref(*args), rtol=1e-7, atol=1e-9)


# The compositions on Numba in the default run (the primitives' lowerings are checked on
# every example by tests/backends/test_numba_ops.py); every case with --full-matrix. A cold
# compile of all cases in one function takes about a minute.
NUMBA_SAMPLE = ["cholesky_solve", "lstsq_tall", "logdet", "set_diag_k",
                "triangular_solve_upper_adjoint_broadcast"]


@pytest.mark.backend("numba")
@pytest.mark.parametrize("names", [
    NUMBA_SAMPLE, pytest.param([n for n in CASES if n not in NUMBA_SAMPLE],
                               marks=pytest.mark.full_matrix)], ids=["sample", "rest"])
def test_values_match_numpy_staged_on_numba(names):
    """The cases in one function (one Numba compile)."""
    flat = [a for n in names for a in CASES[n][2]]

    def all_cases(*xs):
        outs, k = [], 0
        for n in names:
            fn, _, args = CASES[n]
            outs.append(fn(*xs[k:k + len(args)]))
            k += len(args)
        return outs

    got = tf.function(all_cases, backend="numba")(*[tf.constant(a) for a in flat])
    for n, g in zip(names, got):
        _, ref, args = CASES[n]
        np.testing.assert_allclose(g.numpy(), ref(*args), rtol=1e-7, atol=1e-9, err_msg=n)


def test_float32_results_keep_their_dtype():
    a = SPD.astype(np.float32)
    outs = [tf.linalg.inv(a), tf.linalg.det(a), tf.linalg.cholesky(a), *tf.linalg.qr(a),
            *tf.linalg.svd(a), *tf.linalg.eigh(a), *tf.linalg.slogdet(a),
            tf.linalg.solve(a, a), tf.linalg.triangular_solve(a, a)]
    assert {o.dtype for o in outs} == {tf.float32}
    np.testing.assert_allclose(outs[0].numpy(), np.linalg.inv(SPD), rtol=1e-5)


def test_output_conventions():
    q, r = tf.linalg.qr(TALL)
    assert (q.shape, r.shape) == ((5, 3), (3, 3))
    q, r = tf.linalg.qr(TALL, full_matrices=True)
    assert (q.shape, r.shape) == ((5, 5), (5, 3))
    assert _reconstructs_qr(TALL, q.numpy(), r.numpy())
    s, u, v = tf.linalg.svd(WIDE)
    assert (s.shape, u.shape, v.shape) == ((2,), (2, 2), (4, 2))
    assert np.all(np.diff(s.numpy()) <= 0)   # descending
    s, u, v = tf.linalg.svd(WIDE, full_matrices=True)
    assert (u.shape, v.shape) == ((2, 2), (4, 4))
    e, v = tf.linalg.eigh(SYMB)
    assert np.all(np.diff(e.numpy(), axis=-1) >= 0)   # ascending
    assert _eigh_vectors_ok(SYMB, e.numpy(), v.numpy())
    sign, logdet = tf.linalg.slogdet(np.diag([-2.0, 3.0]))
    assert (float(sign), float(logdet)) == (-1.0, pytest.approx(np.log(6.0)))
    assert float(tf.linalg.det(np.zeros((2, 2)))) == 0.0
    sign, logdet = tf.linalg.slogdet(np.zeros((2, 2)))
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    assert tf.linalg.matrix_rank(RANK1).numpy() == 1 and tf.linalg.matrix_rank(SQ).numpy() == 3
    assert tf.linalg.matrix_rank(RANK1).dtype == tf.int32
    assert tf.linalg.slogdet(SQ).sign.shape == () and tf.linalg.qr(SQ).r.shape == (3, 3)
    lu, p = tf.linalg.lu(SQB, output_idx_type=tf.int64)
    assert p.dtype == tf.int64 and p.shape == (2, 3)
    low = np.tril(lu.numpy(), -1) + np.eye(3)
    np.testing.assert_allclose(low @ np.triu(lu.numpy()), np.take_along_axis(
        SQB, p.numpy()[..., None], axis=-2))


def test_triangular_solve_does_not_check_the_diagonal():
    """A zero on the diagonal gives inf / nan, as TensorFlow's kernel does (no error)."""
    x = tf.linalg.triangular_solve(np.array([[0.0, 0.0], [1.0, 1.0]]), np.ones((2, 1)))
    assert not np.all(np.isfinite(x.numpy()))


# --------------------------------------------------------------------------- errors

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])

ERRORS = {
    "inv_singular": (lambda: tf.linalg.inv(SINGULAR),
                     "matrix_inverse: Input is not invertible."),
    "solve_singular": (lambda: tf.linalg.solve(SINGULAR, np.ones((2, 1))),
                       "matrix_solve: Input matrix is not invertible."),
    "cholesky_not_pd": (lambda: tf.linalg.cholesky(NOT_PD),
                        "cholesky: Cholesky decomposition was not successful. The input might "
                        "not be valid."),
    "not_square": (lambda: tf.linalg.det(TALL),
                   "matrix_determinant: Input matrix must be square: 'input' has shape [5,3]; "
                   "its last two dimensions must be equal."),
    "rank_1": (lambda: tf.linalg.qr(np.ones(3)),
               "qr: 'input' must have rank >= 2 (a matrix or a batch of matrices), got shape "
               "[3]."),
    "rows_differ": (lambda: tf.linalg.solve(SQ, RHS5),
                    "matrix_solve: Input matrix and right-hand side must have the same number "
                    "of rows: 'matrix' has shape [3,3] and 'rhs' [5,2]."),
    "solve_batches_differ": (lambda: tf.linalg.solve(SQB, RHS),
                             "matrix_solve: 'matrix' [2,3,3] and 'rhs' [3,2] must have the "
                             "same batch dimensions (this op does not broadcast; use "
                             "tf.broadcast_to first)."),
    "integers": (lambda: tf.linalg.inv(np.eye(2, dtype=np.int32)),
                 "matrix_inverse: 'input' has dtype int32, which matrix_inverse does not "
                 "support; supported: float32, float64, complex64, complex128. Cast it with "
                 "tf.cast first."),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_messages(name):
    fn, message = ERRORS[name]
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        fn()
    assert str(info.value).splitlines()[0] == message


@pytest.mark.parametrize("backend", ["reference", pytest.param("numba", marks=pytest.mark.backend(
    "numba"))])
def test_value_errors_when_staged(backend):
    @tf.function(backend=backend)
    def f(a, b, c):
        return tf.linalg.inv(a), tf.linalg.cholesky(b), tf.linalg.solve(c, c)

    good = np.eye(2)
    for args, name in [((SINGULAR, good, good), "inv_singular"),
                       ((good, NOT_PD, good), "cholesky_not_pd"),
                       ((good, good, SINGULAR), "solve_singular")]:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            f(*[tf.constant(x) for x in args])
        assert str(info.value).splitlines()[0] == ERRORS[name][1]


def test_gradient_errors_where_tensorflow_has_none():
    x = tf.constant(TALL)
    with tf.GradientTape() as tape:
        tape.watch(x)
        q = tf.linalg.qr(x, full_matrices=True).q
    with pytest.raises(tf.errors.InvalidArgumentError, match="full_matrices=False"):
        tape.gradient(q, x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        u = tf.linalg.svd(x, full_matrices=True)[1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="differ by at most 1"):
        tape.gradient(u, x)


def test_set_diag_refuses_a_band_of_the_wrong_shape():
    # (bands themselves are supported: tests/frontend/test_diag_ops.py)
    with pytest.raises(ValueError, match="diagonal must end in dimensions"):
        tf.linalg.set_diag(TALL, np.ones(3), k=(0, 1))
