"""tf.einsum against np.einsum (explicit and implicit outputs, '...', diagonals, broadcasting,
several operands): eagerly, staged on the reference interpreter and on Numba (one function,
one compile; the whole table on Numba with --full-matrix), on Numba with dims unknown when
tracing, gradients against finite differences, and the errors for bad equations."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

rng = np.random.default_rng(5)


def r(*shape):
    return rng.normal(size=shape)


CASES = [("ij,jk->ik", r(2, 3), r(3, 4)), ("ij,jk", r(2, 3), r(3, 4)), ("ii", r(3, 3)),
         ("ii->i", r(3, 3)), ("ij->ji", r(2, 3)), ("ij->", r(2, 3)),
         ("bij,bjk->bik", r(5, 2, 3), r(5, 3, 4)), ("...ij,...jk->...ik", r(5, 2, 3), r(3, 4)),
         ("...ij,...jk", r(1, 2, 3), r(5, 3, 4)), ("i,i->", r(4), r(4)), ("i,j->ij", r(3), r(4)),
         ("ij,jk,kl->il", r(2, 3), r(3, 4), r(4, 5)),
         ("abc,cd,bd->a", r(2, 3, 4), r(4, 5), r(3, 5)),
         ("iij->j", r(3, 3, 2)), ("ba", r(2, 3)), ("...i,...i->...", r(2, 1, 4), r(3, 4)),
         ("ij,ij->ij", r(2, 3), r(2, 3)), ("i...->...", r(3, 2, 4)), ("bii->bi", r(2, 3, 3)),
         ("aij,aj->ai", r(2, 3, 4), r(2, 4)), ("ij,kl->", r(2, 3), r(4, 5)),
         ("Ab,bC->AC", r(2, 3), r(3, 2)), (" ij , jk -> ki ", r(2, 3), r(3, 4))]


def _all(*tensors):
    out, k = [], 0
    for eq, *args in CASES:
        out.append(tf.einsum(eq, *tensors[k:k + len(args)]))
        k += len(args)
    return out


# Einsum lowers to existing primitives (each checked on Numba by the generated tests); the
# whole table compiled on Numba (~30 s) runs with --full-matrix, one case below by default.
@pytest.mark.parametrize("how", ["eager", "reference",
                                 pytest.param("numba", marks=pytest.mark.full_matrix)])
def test_values_match_numpy(how):
    tensors = [tf.constant(a) for _, *args in CASES for a in args]
    run = _all if how == "eager" else tf.function(_all, backend=how)
    for (eq, *args), got in zip(CASES, run(*tensors)):
        want = np.einsum(eq.replace(" ", ""), *args)
        assert got.shape == want.shape, eq
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=eq)


def test_unknown_dims_when_traced():
    f = tf.function(lambda a, b: tf.einsum("...ij,jk->...ik", a, b), backend="numba")
    cf = f.get_concrete_function(tf.TensorSpec([None, None, 3], tf.float64),
                                 tf.TensorSpec([3, None], tf.float64))
    a, b = r(4, 2, 3), r(3, 5)
    np.testing.assert_allclose(cf(tf.constant(a), tf.constant(b)).numpy(),
                               np.einsum("...ij,jk->...ik", a, b), rtol=1e-12)


@pytest.mark.parametrize("eq", ["ij,jk->ik", "ii->i", "...ij,...jk", "abc,cd,bd->a"])
def test_gradients_match_finite_differences(eq):
    case = next(c for c in CASES if c[0] == eq)
    args = case[1:]
    w = rng.normal(size=np.einsum(eq, *args).shape)
    x = tf.Variable(args[0])
    rest = [tf.constant(a) for a in args[1:]]
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.einsum(eq, x, *rest) * w)
    grad = tape.gradient(y, x).numpy()
    numeric = np.zeros_like(args[0])
    for i in np.ndindex(args[0].shape):
        for sign in (1, -1):
            moved = args[0].copy()
            moved[i] += sign * 1e-6
            numeric[i] += sign * float(np.sum(np.einsum(eq, moved, *args[1:]) * w))
    np.testing.assert_allclose(grad, numeric / 2e-6, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("eq, shapes, message", [
    ("ij,jk->ik", [(2, 3)], "it has subscripts for 2 operands but 1 was given"),
    ("ij->ik", [(2, 3)], "output subscript 'k' appears in no input"),
    ("ij", [(2, 3, 4)], "operand 0 has rank 3 but its subscripts 'ij' name 2 dimensions"),
    ("i#", [(2, 2)], "contain '#'"),
    ("ii", [(2, 3)], "subscript 'i' repeats over dimensions of sizes 2 and 3"),
    ("ij->ii", [(2, 2)], "an output subscript appears more than once"),
    ("i->j->k", [(2,)], "more than one '->'"),
])
def test_bad_equations_are_explained(eq, shapes, message):
    with pytest.raises(ValueError) as e:
        tf.einsum(eq, *[tf.zeros(s) for s in shapes])
    first = str(e.value).splitlines()[0]
    assert first.startswith(f"einsum: invalid equation {eq!r}: ") and message in first
