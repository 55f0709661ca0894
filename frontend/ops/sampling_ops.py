"""Sampling built on the uniform Philox stream (``ops/random_ops.py``):
``tf.random.categorical`` / ``stateless_categorical`` by the Gumbel-max trick (the argmax of
``logits + Gumbel noise`` is distributed as ``softmax(logits)``), ``tf.random.shuffle`` as
the order that sorts one uniform number per row, and ``tf.random.gamma`` / ``poisson`` on the
``random_gamma`` / ``random_poisson`` primitives (``ir/ops/rejection.py``). Seeds follow
TensorFlow's rules as every other random op: an op seed with the global seed names a stream
whose calls differ; a stateless op is a pure function of its seed of shape [2]."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.indexing_ops import argsort
from stagecraft.ops.array_ops import normalize_shape
from stagecraft.ops.random_ops import draw, seed_tensor
from stagecraft.state.random_generator import stateless_seed

__all__ = ["categorical", "stateless_categorical", "shuffle", "gamma", "stateless_gamma",
           "poisson", "stateless_poisson", "stateless_binomial"]


def gumbel_max(logits: Any, num_samples: Any, dtype: Any, seed: Tensor, what: str) -> Tensor:
    """``num_samples`` class indices per row of ``logits`` drawn with the seed triple
    ``seed``."""
    logits = convert_to_tensor(logits)
    if logits.shape.rank != 2:
        raise ValueError(f"{what}: logits should be a matrix [batch_size, num_classes], got "
                         f"shape {logits.shape}.")
    if not logits.dtype.is_floating:
        raise TypeError(f"{what}: logits must be float32 or float64, got {logits.dtype.name}.")
    out = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
    if out not in _dt.INTS:
        raise TypeError(f"{what}: dtype must be int32 or int64, got {out.name}.")
    batch, classes = (d if d is not None else _a.shape(logits)[i]
                      for i, d in enumerate(logits.shape.as_list()))
    u = draw("random_uniform", seed, [batch, num_samples, classes], _dt.float64)
    gumbel = _m.negative(_m.log(_m.negative(_m.log(u))))
    scores = _m.add(_a.expand_dims(_m.cast(logits, _dt.float64), 1), gumbel)
    return _m.argmax(scores, axis=2, output_type=out)


def categorical(logits: Any, num_samples: Any, dtype: Any = None, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """``num_samples`` draws of a class index per row of the unnormalized log-probabilities
    ``logits`` (``[batch_size, num_classes]``); int64 unless ``dtype`` says int32.

    >>> import stagecraft as tf
    >>> tf.random.categorical(tf.math.log([[0.5, 0.5, 0.0]]), 4, seed=1).shape
    TensorShape([1, 4])
    >>> int(tf.reduce_max(tf.random.categorical([[0.0, -float("inf")]], 20, seed=2)))
    0
    """
    return gumbel_max(logits, num_samples, dtype, seed_tensor(seed), "categorical")


def stateless_categorical(logits: Any, num_samples: Any, seed: Any, dtype: Any = _dt.int64,
                          name: str | None = None) -> Tensor:
    """``categorical`` as a pure function of ``seed`` (shape [2]): the same seed gives the same
    samples, eagerly and staged.

    >>> import stagecraft as tf
    >>> a = tf.random.stateless_categorical([[1.0, 2.0, 3.0]], 5, seed=[4, 2])
    >>> bool(tf.reduce_all(a == tf.random.stateless_categorical([[1.0, 2.0, 3.0]], 5, [4, 2])))
    True
    """
    return gumbel_max(logits, num_samples, dtype, stateless_seed(seed), "stateless_categorical")


def shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """``value`` with its first dimension randomly permuted.

    >>> import stagecraft as tf
    >>> sorted(tf.random.shuffle(tf.range(5), seed=3).numpy().tolist())
    [0, 1, 2, 3, 4]
    """
    value = convert_to_tensor(value)
    if value.shape.rank == 0:
        raise ValueError("shuffle: value must have at least one dimension, got a scalar.")
    n = value.shape[0] if value.shape[0] is not None else _a.shape(value)[0]
    keys = draw("random_uniform", seed_tensor(seed), [n], _dt.float64)
    return _a.gather(value, argsort(keys))


def _sample_dims(shape: Any, what: str) -> tuple:
    dims = normalize_shape(shape, what).dims
    if None in dims:
        raise ValueError(f"{what}: the sample shape must be known when the op is traced, got "
                         f"{list(dims)}.")
    return tuple(int(n) for n in dims)


def _gamma(shape: Any, alpha: Any, beta: Any, dtype: Any, seed: Tensor, what: str) -> Tensor:
    d = _dt.as_dtype(dtype)
    if d not in _dt.FLOATS:
        raise TypeError(f"{what}: dtype must be float32 or float64, got {d.name}.")
    dims = _sample_dims(shape, what)
    alpha = _m.cast(alpha, d)
    if beta is not None:
        beta = _m.cast(beta, d)
        alpha = _m.add(alpha, _a.zeros_like(beta))   # the broadcast shape of alpha and beta
    sample = bind(OPS["random_gamma"], seed, alpha, shape=dims)
    return sample if beta is None else _m.divide(sample, beta)


def gamma(shape: Any, alpha: Any, beta: Any = None, dtype: Any = _dt.float32,
          seed: int | None = None, name: str | None = None) -> Tensor:
    """Gamma(alpha, beta) samples (``beta`` is the rate: the mean is ``alpha / beta``) of shape
    ``shape + broadcast(alpha, beta).shape``; NaN where ``alpha <= 0``. Differentiable in
    ``beta`` and, as in TensorFlow, in ``alpha`` by implicit reparameterization: a sample
    moves with ``alpha`` at a fixed value of its CDF, ``d sample / d alpha = -(dF/d alpha) /
    (dF/d sample)`` (the op ``random_gamma_grad``).

    >>> import stagecraft as tf
    >>> x = tf.random.gamma([2000], [2.0, 4.0], seed=1, dtype=tf.float64)
    >>> x.shape, [round(m) for m in tf.reduce_mean(x, axis=0).numpy().tolist()]
    (TensorShape([2000, 2]), [2, 4])
    >>> alpha = tf.constant(3.0, tf.float64)
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(alpha)
    ...     mean = tf.reduce_mean(tf.random.gamma([4000], alpha, seed=2, dtype=tf.float64))
    >>> round(float(tape.gradient(mean, alpha)), 1)   # d E[x] / d alpha = 1
    1.0
    """
    return _gamma(shape, alpha, beta, dtype, seed_tensor(seed), "gamma")


def stateless_gamma(shape: Any, seed: Any, alpha: Any, beta: Any = None,
                    dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """``gamma`` as a pure function of ``seed`` (shape [2]).

    >>> import stagecraft as tf
    >>> a = tf.random.stateless_gamma([3], seed=[1, 2], alpha=2.0)
    >>> bool(tf.reduce_all(a == tf.random.stateless_gamma([3], seed=[1, 2], alpha=2.0)))
    True
    """
    return _gamma(shape, alpha, beta, dtype, stateless_seed(seed), "stateless_gamma")


def _poisson(shape: Any, lam: Any, dtype: Any, seed: Tensor, what: str) -> Tensor:
    d = _dt.as_dtype(dtype)
    if d not in _dt.FLOATS and d not in _dt.INTS:
        raise TypeError(f"{what}: dtype must be float32, float64, int32 or int64, got "
                        f"{d.name}.")
    lam = convert_to_tensor(lam)
    # counts computed in float64 unless a float32 result is asked for
    work = _dt.float32 if d == _dt.float32 else _dt.float64
    counts = bind(OPS["random_poisson"], seed, _m.cast(lam, work), shape=_sample_dims(shape, what))
    return _m.cast(counts, d)


def poisson(shape: Any, lam: Any, dtype: Any = _dt.float32, seed: int | None = None,
            name: str | None = None) -> Tensor:
    """Poisson(lam) counts of shape ``shape + lam.shape`` in ``dtype`` (float32 by default;
    int32 and int64 too); 0 where ``lam`` is 0, NaN where it is negative (float dtypes).
    Not differentiable, as in TensorFlow.

    >>> import stagecraft as tf
    >>> x = tf.random.poisson([4000], [2.0, 30.0], seed=2, dtype=tf.int64)
    >>> x.dtype, [round(m) for m in tf.reduce_mean(tf.cast(x, tf.float64), axis=0).numpy()]
    (stagecraft.int64, [2, 30])
    """
    return _poisson(shape, lam, dtype, seed_tensor(seed), "poisson")


def stateless_poisson(shape: Any, seed: Any, lam: Any, dtype: Any = _dt.int32,
                      name: str | None = None) -> Tensor:
    """``poisson`` as a pure function of ``seed`` (shape [2]); int32 by default, as in
    TensorFlow.

    >>> import stagecraft as tf
    >>> tf.random.stateless_poisson([3], seed=[1, 2], lam=4.0).dtype
    stagecraft.int32
    """
    return _poisson(shape, lam, dtype, stateless_seed(seed), "stateless_poisson")


_BINOMIAL_OUT = ("float16", "float32", "float64", "int32", "int64")


def stateless_binomial(shape: Any, seed: Any, counts: Any, probs: Any,
                       output_dtype: Any = _dt.int32, name: str | None = None) -> Tensor:
    """Binomial(counts, probs) samples of shape ``shape`` as a pure function of ``seed`` (shape
    [2]). ``counts`` and ``probs`` broadcast with each other and with the rightmost dimensions
    of ``shape``; ``counts`` takes the dtype of ``probs`` (as in TensorFlow). The result is
    ``output_dtype`` (int32 by default; float16, float32, float64 and int64 too). ``counts <= 0``
    or ``probs <= 0`` gives 0, ``probs >= 1`` gives ``counts``. Not differentiable.

    >>> import stagecraft as tf
    >>> x = tf.random.stateless_binomial([2, 3], seed=[1, 2], counts=[10.0, 20.0, 0.0],
    ...                                  probs=[0.5])
    >>> x.dtype, x.shape, x.numpy()[:, 2].tolist()
    (stagecraft.int32, TensorShape([2, 3]), [0, 0])
    """
    what = "tf.random.stateless_binomial"
    out = _dt.as_dtype(output_dtype)
    if out.name not in _BINOMIAL_OUT:
        raise TypeError(f"{what}: output_dtype must be one of {', '.join(_BINOMIAL_OUT)}, got "
                        f"{out.name}.")
    probs = convert_to_tensor(probs)
    if not probs.dtype.is_floating:
        probs = _m.cast(probs, _dt.float32)
    counts = convert_to_tensor(counts)
    # float64 work: float32 counts above 2**24 would already round the result
    n, p = _m.cast(counts, _dt.float64), _m.cast(probs, _dt.float64)
    dims = _sample_dims(shape, what)
    try:
        both = np.broadcast_shapes(tuple(n.shape.as_list()), tuple(p.shape.as_list()))
        if np.broadcast_shapes(both, dims) != dims:
            raise ValueError
    except (ValueError, TypeError):
        raise ValueError(f"{what}: counts (shape {counts.shape}) and probs (shape "
                         f"{probs.shape}) must broadcast to the sample shape {list(dims)} (they "
                         f"fill its rightmost dimensions).") from None
    n, p = _a.broadcast_to(n, list(dims)), _a.broadcast_to(p, list(dims))
    return _m.cast(bind(OPS["random_binomial"], stateless_seed(seed), n, p), out)
