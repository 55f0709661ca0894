"""``tf.nn`` normalization: ``batch_normalization``, ``fused_batch_norm`` and
``local_response_normalization`` (``lrn``), composed from differentiable primitives with
TensorFlow's formulas, defaults and outputs."""
from __future__ import annotations

import math
from typing import Any

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import manip_ops as _manip


def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any,
                        variance_epsilon: float, name: str | None = None) -> Tensor:
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset`` (``offset`` and
    ``scale`` may be None), every argument broadcast against ``x``.

    >>> import stagecraft as tf
    >>> y = tf.nn.batch_normalization(tf.constant([1.0, 3.0]), 2.0, 1.0, 0.5, 2.0, 0.0)
    >>> y.numpy().tolist()
    [-1.5, 2.5]
    """
    x = convert_to_tensor(x)
    inv = _m.rsqrt(_m.add(convert_to_tensor(variance, x.dtype), variance_epsilon))
    if scale is not None:
        inv = _m.multiply(inv, convert_to_tensor(scale, x.dtype))
    shift = _m.negative(_m.multiply(convert_to_tensor(mean, x.dtype), inv))
    if offset is not None:
        shift = _m.add(shift, convert_to_tensor(offset, x.dtype))
    return _m.add(_m.multiply(x, inv), shift)


def _channel_axis(data_format: str, rank: int | None) -> int:
    if rank not in (4, 5):
        raise ValueError(f"fused_batch_norm: x must have rank 4 or 5, got rank {rank}.")
    if data_format in ("NHWC", "NDHWC"):
        return rank - 1
    if data_format in ("NCHW", "NCDHW"):
        return 1
    raise ValueError(f"fused_batch_norm: data_format must be 'NHWC', 'NCHW', 'NDHWC' or "
                     f"'NCDHW', got {data_format!r}.")


def bessel_correction(variance: Tensor, x: Tensor, axes: list[int]) -> Tensor:
    """``variance`` (biased, of ``x`` over ``axes``) times ``n / (n - 1)``, ``n`` the number of
    values reduced (``n / 1`` when ``n`` is 1, as TensorFlow's fused batch norm does).

    >>> import stagecraft as tf
    >>> float(bessel_correction(tf.constant(1.0), tf.zeros([4, 2]), [0]))
    1.3333333730697632
    """
    dims = x.shape.as_list()
    if all(dims[a] is not None for a in axes):
        n = math.prod(dims[a] for a in axes)
        return _m.multiply(variance, n / max(n - 1, 1))
    # a dynamic batch: the count is computed when the function runs
    n = _m.cast(_m.reduce_prod(_a.gather(_a.shape(x), axes)), x.dtype)
    return _m.multiply(variance, _m.truediv(n, _m.maximum(_m.subtract(n, 1.0), 1.0)))


def fused_batch_norm(x: Any, scale: Any, offset: Any, mean: Any = None, variance: Any = None,
                     epsilon: float = 0.001, data_format: str = "NHWC",
                     is_training: bool = True, name: str | None = None,
                     exponential_avg_factor: float = 1.0) -> tuple[Tensor, Tensor, Tensor]:
    """Batch normalization of a 4-D or 5-D ``x`` over every axis but the channels, returning
    ``(y, batch_mean, batch_variance)`` as TensorFlow 2 does.

    Training (``is_training=True``): ``y`` is normalized with the batch mean and the biased
    batch variance; the returned variance is the unbiased one (Bessel's correction ``n / (n -
    1)``, ``n`` the number of values per channel). With ``exponential_avg_factor`` ``f != 1``
    the returned statistics are moving averages: ``(1 - f) * mean + f * batch_mean``, and the
    same for the variance (``mean``/``variance`` are then required). Inference: ``y`` uses
    ``mean``/``variance``, which are returned unchanged.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.constant([1.0, 3.0]), [2, 1, 1, 1])
    >>> y, m, v = tf.nn.fused_batch_norm(x, [1.0], [0.0], epsilon=0.0)
    >>> y.numpy().ravel().tolist(), float(m[0]), float(v[0])
    ([-1.0, 1.0], 2.0, 2.0)
    """
    x = convert_to_tensor(x)
    axis = _channel_axis(data_format, x.shape.rank)
    rank = x.shape.rank
    axes = [a for a in range(rank) if a != axis]
    shape = [-1 if a == axis else 1 for a in range(rank)]
    scale, offset = convert_to_tensor(scale, x.dtype), convert_to_tensor(offset, x.dtype)

    def norm(m: Tensor, v: Tensor) -> Tensor:
        return batch_normalization(x, _a.reshape(m, shape), _a.reshape(v, shape),
                                   _a.reshape(offset, shape), _a.reshape(scale, shape), epsilon)

    if not is_training:
        if mean is None or variance is None:
            raise ValueError("fused_batch_norm: with is_training=False, pass the population "
                             "mean and variance.")
        mean, variance = convert_to_tensor(mean, x.dtype), convert_to_tensor(variance, x.dtype)
        return norm(mean, variance), mean, variance
    batch_mean = _m.reduce_mean(x, axis=axes)
    centered = _m.subtract(x, _a.reshape(batch_mean, shape))
    batch_var = _m.reduce_mean(_m.square(centered), axis=axes)
    y = norm(batch_mean, batch_var)
    unbiased = bessel_correction(batch_var, x, axes)
    if exponential_avg_factor == 1.0:
        return y, batch_mean, unbiased
    if mean is None or variance is None:
        raise ValueError("fused_batch_norm: an exponential_avg_factor other than 1 needs the "
                         "running mean and variance to average with.")
    f = float(exponential_avg_factor)
    mean, variance = convert_to_tensor(mean, x.dtype), convert_to_tensor(variance, x.dtype)
    return (y, _m.add(_m.multiply(mean, 1.0 - f), _m.multiply(batch_mean, f)),
            _m.add(_m.multiply(variance, 1.0 - f), _m.multiply(unbiased, f)))


def local_response_normalization(input: Any, depth_radius: int = 5,  # noqa: A002
                                 bias: float = 1.0, alpha: float = 1.0, beta: float = 0.5,
                                 name: str | None = None) -> Tensor:
    """``input / (bias + alpha * sqr_sum) ** beta`` where ``sqr_sum`` sums the squares over
    the ``2 * depth_radius + 1`` neighbouring channels (last axis, clipped at the edges) of a
    4-D input.

    >>> import stagecraft as tf
    >>> y = tf.nn.local_response_normalization(tf.ones([1, 1, 1, 3]), depth_radius=1,
    ...                                        bias=0.0, alpha=1.0, beta=1.0)
    >>> [round(v, 4) for v in y.numpy().ravel().tolist()]
    [0.5, 0.3333, 0.5]
    """
    x = convert_to_tensor(input)
    if x.shape.rank != 4:
        raise ValueError(f"local_response_normalization: input must be 4-D (batch, height, "
                         f"width, channels), got shape {x.shape}.")
    r = int(depth_radius)
    if r < 0:
        raise ValueError(f"local_response_normalization: depth_radius must be >= 0, got {r}.")
    # The channel window sums: a VALID average pool over the channels padded with r zeros
    # on each side, times the window length (every window then has 2r + 1 elements).
    c = x.shape.as_list()[-1]
    if c is None:
        raise ValueError(f"local_response_normalization: the channel dimension must be known, "
                         f"got shape {x.shape}.")
    window = 2 * r + 1
    sq = _manip.pad(_a.reshape(_m.square(x), [-1, c, 1]), [[0, 0], [r, r], [0, 0]])
    mean = bind(OPS["avg_pool"], sq, ksize=(window,), strides=(1,), padding=((0, 0),))
    sqr_sum = _a.reshape(_m.multiply(mean, float(window)), _a.shape(x))
    return _m.multiply(x, _m.pow(_m.add(_m.multiply(sqr_sum, alpha), bias), -beta))


lrn = local_response_normalization

__all__ = ["batch_normalization", "fused_batch_norm", "local_response_normalization", "lrn"]
