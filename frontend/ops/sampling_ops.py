"""Sampling built on the uniform Philox stream (``ops/random_ops.py``):
``tf.random.categorical`` / ``stateless_categorical`` by the Gumbel-max trick (the argmax of
``logits + Gumbel noise`` is distributed as ``softmax(logits)``), ``tf.random.shuffle`` as
the order that sorts one uniform number per row, and ``tf.random.gamma`` / ``poisson`` on the
``random_gamma`` / ``random_poisson`` primitives (``ir/ops/rejection.py``). Seeds follow
TensorFlow's rules as every other random op: an op seed with the global seed names a stream
whose calls differ; a stateless op is a pure function of its seed of shape [2]."""
from __future__ import annotations

from typing import Any

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
           "poisson", "stateless_poisson"]


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
    ``beta``; unlike TensorFlow, which reparameterizes the sample, no gradient flows to
    ``alpha`` (it is None).

    >>> import stagecraft as tf
    >>> x = tf.random.gamma([2000], [2.0, 4.0], seed=1, dtype=tf.float64)
    >>> x.shape, [round(m) for m in tf.reduce_mean(x, axis=0).numpy().tolist()]
    (TensorShape([2000, 2]), [2, 4])
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
