"""Ops composed of primitives (array manipulation, stable math, nn activations, linalg,
clipping, map/scan/fold): each against its NumPy reference eagerly, staged on the reference
interpreter and on Numba, and (where differentiable) its gradient against central finite
differences. One table drives every check."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

rng = np.random.default_rng(7)
A = rng.normal(size=(3, 4))
B = rng.normal(size=(4, 5))
V = rng.normal(size=(6,))
P = rng.uniform(0.5, 2.0, size=(3, 4))


def erf(x):
    import math
    return np.vectorize(math.erf)(x)


def _scan_ref(x):
    acc, out = None, []
    for r in x:
        acc = r if acc is None else acc * 0.5 + r
        out.append(acc)
    return np.stack(out)


def _foldr_ref(x):
    acc = np.zeros(4)
    for r in x[::-1]:
        acc = acc * 0.5 + r
    return acc


# name: (stagecraft function, NumPy reference, float64 arguments, differentiable)
CASES = {
    "split": (lambda x: tf.split(x, [1, 3], axis=1)[1], lambda x: x[:, 1:], (A,), True),
    "pad_constant": (lambda x: tf.pad(x, [[1, 0], [0, 2]], constant_values=1.5),
                     lambda x: np.pad(x, [(1, 0), (0, 2)], constant_values=1.5), (A,), True),
    "pad_reflect": (lambda x: tf.pad(x, [[1, 1], [2, 1]], "REFLECT"),
                    lambda x: np.pad(x, [(1, 1), (2, 1)], "reflect"), (A,), True),
    "pad_symmetric": (lambda x: tf.pad(x, [[2, 0], [1, 3]], "SYMMETRIC"),
                      lambda x: np.pad(x, [(2, 0), (1, 3)], "symmetric"), (A,), True),
    "slice": (lambda x: tf.slice(x, [1, 1], [2, -1]), lambda x: x[1:3, 1:], (A,), True),
    "reverse": (lambda x: tf.reverse(x, [0, 1]), lambda x: x[::-1, ::-1], (A,), True),
    "roll": (lambda x: tf.roll(x, [1, -2], [0, 1]),
             lambda x: np.roll(np.roll(x, 1, 0), -2, 1), (A,), True),
    "repeat": (lambda x: tf.repeat(x, [1, 0, 2], axis=0),
               lambda x: np.repeat(x, [1, 0, 2], axis=0), (A,), True),
    "tensordot": (lambda a, b: tf.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1),
                  (A, B), True),
    "linspace": (lambda a: tf.linspace(a[0, 0], a[1, 1], 5),
                 lambda a: np.linspace(a[0, 0], a[1, 1], 5), (A,), True),
    "logsumexp": (lambda x: tf.math.reduce_logsumexp(x, axis=1),
                  lambda x: np.log(np.exp(x).sum(1)), (A,), True),
    "variance": (lambda x: tf.math.reduce_variance(x, axis=0), lambda x: x.var(0), (A,), True),
    "std": (lambda x: tf.math.reduce_std(x), lambda x: x.std(), (A,), True),
    "euclidean_norm": (lambda x: tf.math.reduce_euclidean_norm(x, axis=1),
                       lambda x: np.sqrt((x * x).sum(1)), (A,), True),
    "divide_no_nan": (lambda x: tf.math.divide_no_nan(x, x * 0 + np.where(A > 0, A, 0)),
                      lambda x: np.where(A > 0, x / np.where(A > 0, A, 1), 0), (A,), True),
    "leaky_relu": (lambda x: tf.nn.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x),
                   (A,), True),
    "selu": (lambda x: tf.nn.selu(x), lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0))), (A,), True),
    "silu": (lambda x: tf.nn.silu(x), lambda x: x / (1 + np.exp(-x)), (A,), True),
    "gelu": (lambda x: tf.nn.gelu(x), lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), (A,), True),
    "gelu_tanh": (lambda x: tf.nn.gelu(x, approximate=True),
                  lambda x: 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))),
                  (A,), True),
    "sigmoid_xent": (lambda x, z: tf.nn.sigmoid_cross_entropy_with_logits(z, x),
                     lambda x, z: np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))),
                     (A, (A > 0).astype(float)), True),
    "l2_normalize": (lambda x: tf.nn.l2_normalize(x, axis=1),
                     lambda x: x / np.sqrt((x * x).sum(1, keepdims=True)), (A,), True),
    "moments_var": (lambda x: tf.nn.moments(x, axes=[0])[1], lambda x: x.var(0), (A,), True),
    "matvec": (lambda a, v: tf.linalg.matvec(a, v), lambda a, v: a @ v, (A, V[:4]), True),
    "trace": (lambda a: tf.linalg.trace(a[:, :3]), lambda a: np.trace(a[:, :3]), (A,), True),
    "band_part": (lambda a: tf.linalg.band_part(a, 1, 0), lambda a: np.tril(np.triu(a, -1)),
                  (A,), True),
    "norm_inf": (lambda x: tf.norm(x, ord=np.inf, axis=1), lambda x: np.abs(x).max(1), (A,),
                 True),
    "global_clip": (lambda a, b: tf.clip_by_global_norm([a, b], 2.0)[0][1],
                    lambda a, b: b * 2.0 / max(np.sqrt((a * a).sum() + (b * b).sum()), 2.0),
                    (A, B), True),
    "gather_nd": (lambda x: tf.gather_nd(x, [[2, 1], [0, 3], [2, 1]]),
                  lambda x: x[[2, 0, 2], [1, 3, 1]], (A,), True),
    "gather_nd_rows": (lambda x: tf.gather_nd(x, [[1], [0]]), lambda x: x[[1, 0]], (A,), True),
    "boolean_mask": (lambda x: tf.boolean_mask(x, A > 0), lambda x: x[A > 0], (A,), True),
    "scatter_update": (lambda x: tf.tensor_scatter_nd_update(x, [[0], [2]], x[:2] * 3.0),
                       lambda x: np.vstack([x[0] * 3, x[1], x[1] * 3]), (A,), True),
    "scatter_add": (lambda x: tf.tensor_scatter_nd_add(x, [[1, 1], [1, 1]], [2.0, 3.0]),
                    lambda x: x + np.where((np.arange(12) == 5).reshape(3, 4), 5.0, 0.0), (A,),
                    True),
    "scatter_nd": (lambda v: tf.scatter_nd([[4], [1], [4]], v[:3], [6]),
                   lambda v: np.bincount([4, 1, 4], v[:3], minlength=6), (V,), True),
    "sort": (lambda x: tf.sort(x, axis=0, direction="DESCENDING"), lambda x: -np.sort(-x, 0),
             (A,), True),
    "top_k": (lambda x: tf.math.top_k(x, k=2)[0], lambda x: -np.sort(-x, 1)[:, :2], (A,),
              True),
    "map_fn": (lambda x: tf.map_fn(lambda r: tf.reduce_sum(r * r), x),
               lambda x: (x * x).sum(1), (A,), True),
    "scan": (lambda x: tf.scan(lambda acc, r: acc * 0.5 + r, x), _scan_ref, (A,), True),
    "foldr": (lambda x: tf.foldr(lambda acc, r: acc * 0.5 + r, x,
                                 initializer=tf.zeros(4, tf.float64)), _foldr_ref, (A,), True),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("how", ["eager", "reference", "numba"])
def test_values_match_numpy(name, how):
    fn, _, args, _ = CASES[name]
    tensors = [tf.constant(a) for a in args]
    run = fn if how == "eager" else tf.function(fn, backend=how)
    got = run(*tensors).numpy()
    np.testing.assert_allclose(got, CASES[name][1](*args), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[3]])
def test_gradients_match_finite_differences(name):
    fn, _, args, _ = CASES[name]
    weights = rng.normal(size=np.shape(CASES[name][1](*args)))
    x = tf.Variable(args[0])
    rest = [tf.constant(a) for a in args[1:]]

    def objective():
        return tf.reduce_sum(fn(x, *rest) * weights)

    with tf.GradientTape() as tape:
        value = objective()
    grad = tape.gradient(value, x)
    grad = np.zeros_like(args[0]) if grad is None else tf.convert_to_tensor(grad).numpy()
    numeric = np.zeros_like(args[0])
    eps = 1e-6
    for idx in np.ndindex(args[0].shape):
        for sign in (1, -1):
            moved = args[0].copy()
            moved[idx] += sign * eps
            x.assign(moved)
            numeric[idx] += sign * float(objective())
        numeric[idx] /= 2 * eps
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


def test_shape_arguments_must_be_known_and_sizes_must_add_up():
    with pytest.raises(ValueError, match="do not add up"):
        tf.split(tf.zeros([5]), [2, 2])
    with pytest.raises(ValueError, match="must be known when the op is traced"):
        tf.function(lambda x, n: tf.split(x, n))(tf.zeros([4]), tf.constant(2))
    with pytest.raises(ValueError, match="REFLECT padding"):
        tf.pad(tf.zeros([2]), [[2, 0]], "REFLECT")
