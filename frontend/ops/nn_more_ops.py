"""More of ``tf.nn``, each a composition of existing ops (so gradients come from their rules):
``l2_loss``, ``crelu``, ``weighted_cross_entropy_with_logits``, ``log_poisson_loss``, the
moment helpers ``sufficient_statistics`` / ``normalize_moments`` / ``weighted_moments``,
``zero_fraction``, the per-replica loss scalings ``compute_average_loss`` /
``scale_regularization_loss`` (one replica: stagecraft has no distribution strategies),
``collapse_repeated`` and the grayscale morphology ``dilation2d`` / ``erosion2d``. Formulas
follow TensorFlow's implementations."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.ops.counting_ops import sequence_mask
from stagecraft.ops.manip_ops import pad, reverse

__all__ = ["l2_loss", "crelu", "weighted_cross_entropy_with_logits", "log_poisson_loss",
           "sufficient_statistics", "normalize_moments", "weighted_moments", "zero_fraction",
           "compute_average_loss", "scale_regularization_loss", "collapse_repeated",
           "dilation2d", "erosion2d"]


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """``sum(t ** 2) / 2``.

    >>> import stagecraft as tf
    >>> float(tf.nn.l2_loss([1.0, 2.0, 3.0]))
    7.0
    """
    t = convert_to_tensor(t)
    return _m.multiply(_m.reduce_sum(_m.square(t)), _m.cast(0.5, t.dtype))


def crelu(features: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """``concat([relu(x), relu(-x)], axis)``: the positive and the negative part.

    >>> import stagecraft as tf
    >>> tf.nn.crelu([1.0, -2.0]).numpy().tolist()
    [1.0, 0.0, 0.0, 2.0]
    """
    x = convert_to_tensor(features)
    return _a.concat([_nn.relu(x), _nn.relu(_m.negative(x))], axis)


def weighted_cross_entropy_with_logits(labels: Any, logits: Any, pos_weight: Any,
                                       name: str | None = None) -> Tensor:
    """Sigmoid cross-entropy with the positive term weighted by ``pos_weight``:
    ``labels * -log(sigmoid(logits)) * pos_weight + (1 - labels) * -log(1 - sigmoid(logits))``,
    computed stably as TensorFlow does.

    >>> import stagecraft as tf
    >>> round(float(tf.nn.weighted_cross_entropy_with_logits(1.0, 0.0, 3.0)), 6)
    2.079442
    """
    logits = convert_to_tensor(logits)
    labels = _m.cast(labels, logits.dtype)
    pos_weight = _m.cast(pos_weight, logits.dtype)
    log_weight = _m.add(_m.multiply(_m.subtract(pos_weight, 1.0), labels), 1.0)
    soft = _m.add(_m.log1p(_m.exp(_m.negative(_m.abs(logits)))), _nn.relu(_m.negative(logits)))
    return _m.add(_m.multiply(_m.subtract(1.0, labels), logits), _m.multiply(log_weight, soft))


def log_poisson_loss(targets: Any, log_input: Any, compute_full_loss: bool = False,
                     name: str | None = None) -> Tensor:
    """The negative log-likelihood of ``targets`` under Poisson(exp(log_input)) without the
    constant ``log(targets!)``: ``exp(log_input) - log_input * targets``; with
    ``compute_full_loss`` Stirling's approximation of it is added where ``targets > 1``.

    >>> import stagecraft as tf
    >>> float(tf.nn.log_poisson_loss(2.0, 0.0))
    1.0
    """
    log_input = convert_to_tensor(log_input)
    targets = _m.cast(targets, log_input.dtype)
    result = _m.subtract(_m.exp(log_input), _m.multiply(log_input, targets))
    if not compute_full_loss:
        return result
    safe = _m.maximum(targets, _m.cast(1.0, targets.dtype))
    stirling = _m.add(_m.subtract(_m.multiply(targets, _m.log(safe)), targets),
                      _m.multiply(0.5, _m.log(_m.multiply(2.0 * math.pi, safe))))
    keep = _m.greater(targets, _m.cast(1.0, targets.dtype))
    return _m.add(result, _m.where(keep, stirling, _a.zeros_like(targets)))


def _axes(axes: Any) -> list[int]:
    if isinstance(axes, Tensor):
        axes = axes.numpy()
    return [int(a) for a in np.asarray(axes).reshape(-1)]


def sufficient_statistics(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
                          name: str | None = None) -> tuple:
    """``(count, sum(x - shift), sum((x - shift)**2), shift)`` over ``axes`` (without the
    shift when it is None): what ``normalize_moments`` turns into a mean and variance.

    >>> import stagecraft as tf
    >>> [float(t) for t in tf.nn.sufficient_statistics(tf.constant([1.0, 3.0]), [0])[:3]]
    [2.0, 4.0, 10.0]
    """
    x = convert_to_tensor(x)
    axes = _axes(axes)
    dims = x.shape.as_list()
    if all(dims[a] is not None for a in axes):
        count = _m.cast(int(np.prod([dims[a] for a in axes])), x.dtype)
    else:
        count = _m.cast(_m.reduce_prod(_a.gather(_a.shape(x), axes)), x.dtype)
    if shift is not None:
        shift = _m.cast(shift, x.dtype)
        centred = _m.subtract(x, shift)
    else:
        centred = x
    m_ss = _m.reduce_sum(centred, axis=axes, keepdims=keepdims)
    v_ss = _m.reduce_sum(_m.square(centred), axis=axes, keepdims=keepdims)
    return count, m_ss, v_ss, shift


def normalize_moments(counts: Any, mean_ss: Any, variance_ss: Any, shift: Any,
                      name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean and variance from sufficient statistics: ``mean_ss / counts (+ shift)`` and
    ``variance_ss / counts - (mean_ss / counts)**2``.

    >>> import stagecraft as tf
    >>> [float(t) for t in tf.nn.normalize_moments(2.0, 4.0, 10.0, None)]
    [2.0, 1.0]
    """
    mean_ss = convert_to_tensor(mean_ss)
    divisor = _m.reciprocal(_m.cast(counts, mean_ss.dtype))
    shifted_mean = _m.multiply(mean_ss, divisor)
    mean = shifted_mean if shift is None else _m.add(shifted_mean, _m.cast(shift, mean_ss.dtype))
    variance = _m.subtract(_m.multiply(_m.cast(variance_ss, mean_ss.dtype), divisor),
                           _m.square(shifted_mean))
    return mean, variance


def weighted_moments(x: Any, axes: Any, frequency_weights: Any, keepdims: bool = False,
                     name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean and variance of ``x`` over ``axes`` with each element counted
    ``frequency_weights`` times (weights broadcast against ``x``).

    >>> import stagecraft as tf
    >>> [float(t) for t in tf.nn.weighted_moments(tf.constant([1.0, 3.0]), [0], [1.0, 3.0])]
    [2.5, 0.75]
    """
    x = convert_to_tensor(x)
    axes = _axes(axes)
    w = _m.cast(frequency_weights, x.dtype)
    weighted_sum = _m.reduce_sum(_m.multiply(w, x), axis=axes, keepdims=True)
    total = _m.reduce_sum(_m.add(w, _a.zeros_like(x)), axis=axes, keepdims=True)
    divisor = _m.reciprocal(total)
    mean = _m.multiply(weighted_sum, divisor)
    variance = _m.multiply(_m.reduce_sum(_m.multiply(w, _m.squared_difference(x, mean)),
                                         axis=axes, keepdims=True), divisor)
    if not keepdims:
        mean, variance = _a.squeeze(mean, axes), _a.squeeze(variance, axes)
    return mean, variance


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """The fraction of elements of ``value`` that are zero (float32).

    >>> import stagecraft as tf
    >>> float(tf.nn.zero_fraction([0, 1, 0, 5]))
    0.5
    """
    value = convert_to_tensor(value)
    zero = _m.equal(value, _a.zeros_like(value))
    return _m.reduce_mean(_m.cast(zero, _dt.float32))


def compute_average_loss(per_example_loss: Any, sample_weight: Any = None,
                         global_batch_size: Any = None) -> Tensor:
    """The sum of the (weighted) per-example losses over the global batch size (by default
    the first dimension of ``per_example_loss`` times the replica count, 1 here).

    >>> import stagecraft as tf
    >>> float(tf.nn.compute_average_loss([1.0, 2.0, 3.0], global_batch_size=6))
    1.0
    """
    loss = convert_to_tensor(per_example_loss)
    if not loss.dtype.is_floating:
        raise TypeError(f"tf.nn.compute_average_loss: per_example_loss must be a float tensor, "
                        f"got {loss.dtype.name}.")
    if loss.shape.rank == 0:
        raise ValueError("tf.nn.compute_average_loss: per_example_loss must have rank >= 1 (one "
                         "loss per example), got a scalar.")
    if sample_weight is not None:
        loss = _m.multiply(loss, _m.cast(sample_weight, loss.dtype))
    if global_batch_size is None:
        n = loss.shape[0]
        global_batch_size = n if n is not None else _a.shape(loss)[0]
    return _m.divide(_m.reduce_sum(loss), _m.cast(global_batch_size, loss.dtype))


def scale_regularization_loss(regularization_loss: Any) -> Tensor:
    """The regularization loss (summed, when a list) divided by the replica count (1 here).

    >>> import stagecraft as tf
    >>> float(tf.nn.scale_regularization_loss([0.5, 0.25]))
    0.75
    """
    if isinstance(regularization_loss, (list, tuple)):
        regularization_loss = _m.add_n([convert_to_tensor(t) for t in regularization_loss])
    return _m.reduce_sum(convert_to_tensor(regularization_loss))


def collapse_repeated(labels: Any, seq_length: Any, name: str | None = None) -> tuple:
    """Each run of a repeated label within the first ``seq_length[b]`` entries of row ``b``
    of ``labels`` [batch, max_len] merged into one: the collapsed rows (zero-padded to the
    longest) and their new lengths.

    >>> import stagecraft as tf
    >>> out, n = tf.nn.collapse_repeated([[1, 1, 2, 2, 2, 3], [4, 4, 4, 5, 0, 0]], [6, 4])
    >>> out.numpy().tolist(), n.numpy().tolist()
    ([[1, 2, 3], [4, 5, 0]], [3, 2])
    """
    labels, seq_length = convert_to_tensor(labels), convert_to_tensor(seq_length)
    if labels.shape.rank != 2:
        raise ValueError(f"tf.nn.collapse_repeated: labels must be [batch, max_len], got shape "
                         f"{labels.shape}.")
    first = _a.ones_like(labels[:, :1], dtype=_dt.bool_)
    changed = _a.concat([first, _m.not_equal(labels[:, 1:], labels[:, :-1])], 1)
    max_len = labels.shape[1] if labels.shape[1] is not None else _a.shape(labels)[1]
    keep = _m.logical_and(changed, sequence_mask(seq_length, maxlen=max_len))
    new_len = _m.reduce_sum(_m.cast(keep, _dt.int32), axis=1)
    # each kept label goes to column (kept before it in its row); the others to a spare last
    # column, dropped with the columns past the longest collapsed row
    column = _m.subtract(_m.cumsum(_m.cast(keep, _dt.int32), axis=1), 1)
    column = _m.where(keep, column, _a.zeros_like(column) + max_len)
    placed = _a.one_hot(column, max_len + 1, dtype=labels.dtype)   # [batch, len, len + 1]
    out = _m.reduce_sum(_m.multiply(placed, _a.expand_dims(labels, -1)), axis=1)
    return out[:, :_m.reduce_max(new_len)], _m.cast(new_len, seq_length.dtype)


def _four(values: Any, what: str, name: str) -> tuple[int, int]:
    v = [int(x) for x in np.asarray(values).reshape(-1)]
    if len(v) != 4 or v[0] != 1 or v[3] != 1 or min(v) < 1:
        raise ValueError(f"{what}: {name} must be [1, rows, cols, 1] with positive entries, got "
                         f"{v}.")
    return v[1], v[2]


def _morphology(x: Tensor, filters: Tensor, strides: Any, padding: str, dilations: Any,
                data_format: str, what: str) -> Tensor:
    """max over the filter taps (dy, dx) of x[y*sh + dy*rh, x*sw + dx*rw] + filters[dy, dx];
    positions outside the input never win (padded with -inf)."""
    if data_format != "NHWC":
        raise ValueError(f"{what}: only data_format='NHWC' is supported, got {data_format!r}.")
    dims, fdims = x.shape.as_list(), filters.shape.as_list()
    if len(dims) != 4 or None in dims[1:] or len(fdims) != 3 or None in fdims:
        raise ValueError(f"{what}: input must be [batch, height, width, depth] (known height, "
                         f"width, depth) and filters [rows, cols, depth], got {x.shape} and "
                         f"{filters.shape}.")
    if fdims[2] != dims[3]:
        raise ValueError(f"{what}: filters depth {fdims[2]} must equal the input depth "
                         f"{dims[3]}.")
    sh, sw = _four(strides, what, "strides")
    rh, rw = _four(dilations, what, "dilations")
    h, w = dims[1], dims[2]
    eh, ew = (fdims[0] - 1) * rh + 1, (fdims[1] - 1) * rw + 1
    if padding == "VALID":
        oh, ow = (h - eh) // sh + 1, (w - ew) // sw + 1
        top = left = 0
        if oh < 1 or ow < 1:
            raise ValueError(f"{what}: the dilated filter ({eh}x{ew}) is larger than the input "
                             f"({h}x{w}) with VALID padding.")
    elif padding == "SAME":
        oh, ow = -(-h // sh), -(-w // sw)
        top = max((oh - 1) * sh + eh - h, 0) // 2
        left = max((ow - 1) * sw + ew - w, 0) // 2
    else:
        raise ValueError(f"{what}: padding must be 'SAME' or 'VALID', got {padding!r}.")
    bottom = max((oh - 1) * sh + eh - h - top, 0)
    right = max((ow - 1) * sw + ew - w - left, 0)
    lowest = float(x.dtype.min) if x.dtype.is_floating else int(x.dtype.min)  # (bfloat16 too)
    padded = pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]], constant_values=lowest) \
        if top or bottom or left or right else x
    taps = []
    for dy in range(fdims[0]):
        for dx in range(fdims[1]):
            y0, x0 = dy * rh, dx * rw
            window = padded[:, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw, :]
            taps.append(_m.add(window, filters[dy, dx]))
    return _m.reduce_max(_a.stack(taps, 0), axis=0)


def dilation2d(input: Any, filters: Any, strides: Any, padding: str,  # noqa: A002
               data_format: str = "NHWC", dilations: Any = None,
               name: str | None = None) -> Tensor:
    """Grayscale morphological dilation of ``input`` [N, H, W, C] by ``filters`` [R, S, C]:
    the max over the window of ``input + filters``; ``strides`` and ``dilations`` are
    [1, rows, cols, 1], ``padding`` 'SAME' or 'VALID'.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.constant([1.0, 5.0, 2.0, 0.0]), [1, 2, 2, 1])
    >>> tf.nn.dilation2d(x, tf.zeros([2, 2, 1]), [1, 1, 1, 1], "VALID").numpy().tolist()
    [[[[5.0]]]]
    """
    x, f = convert_to_tensor(input), convert_to_tensor(filters)
    return _morphology(x, _m.cast(f, x.dtype), strides, padding,
                       [1, 1, 1, 1] if dilations is None else dilations, data_format,
                       "tf.nn.dilation2d")


def erosion2d(value: Any, filters: Any, strides: Any, padding: str, data_format: str = "NHWC",
              dilations: Any = None, name: str | None = None) -> Tensor:
    """Grayscale morphological erosion: ``-dilation2d(-value, filters reversed in rows and
    columns)``, the min over the window of ``value - filters``.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.constant([1.0, 5.0, 2.0, 3.0]), [1, 2, 2, 1])
    >>> tf.nn.erosion2d(x, tf.zeros([2, 2, 1]), [1, 1, 1, 1], "VALID").numpy().tolist()
    [[[[1.0]]]]
    """
    x, f = convert_to_tensor(value), convert_to_tensor(filters)
    flipped = reverse(_m.cast(f, x.dtype), [0, 1])
    return _m.negative(_morphology(_m.negative(x), flipped, strides, padding,
                                   [1, 1, 1, 1] if dilations is None else dilations,
                                   data_format, "tf.nn.erosion2d"))
