"""More ``keras.losses``: hinge losses, log-cosh, Poisson, KL divergence, cosine similarity,
percentage and logarithmic errors, focal cross-entropies, Dice, Tversky and the generalized
cross-entropy, as functions (one loss per example) and as ``Loss`` classes, with Keras's
names, defaults and formulas. ``stagecraft.keras.losses`` re-exports them all."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.basic_losses import (EPSILON, LossFunctionWrapper, Reduction, _binary_terms,
                                     _clipped_probabilities, _prepare, _smooth_categorical)
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn

__all__ = ["BinaryFocalCrossentropy", "CategoricalFocalCrossentropy",
           "CategoricalGeneralizedCrossEntropy", "CategoricalHinge", "CosineSimilarity", "Dice",
           "Hinge", "KLD", "KLDivergence", "LogCosh", "MAPE", "MSLE",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "Poisson",
           "SquaredHinge", "Tversky", "binary_focal_crossentropy",
           "categorical_focal_crossentropy", "categorical_generalized_cross_entropy",
           "categorical_hinge", "cosine_similarity", "dice", "hinge", "kld",
           "kl_divergence", "kullback_leibler_divergence", "log_cosh", "logcosh", "mape",
           "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "msle",
           "poisson", "squared_hinge", "tversky"]


def _hinge_labels(y_true: Tensor) -> Tensor:
    """Keras's hinge labels: 0/1 labels become -1/1 (when every label is 0 or 1)."""
    binary = _m.reduce_all(_m.logical_or(_m.equal(y_true, 0.0), _m.equal(y_true, 1.0)))
    return _m.where(binary, _m.subtract(_m.multiply(2.0, y_true), 1.0), y_true)


def hinge(y_true: Any, y_pred: Any) -> Tensor:
    """``mean(maximum(1 - y_true * y_pred, 0), axis=-1)``; labels are -1/1 (0/1 labels are
    converted).

    >>> import stagecraft as tf
    >>> tf.keras.losses.hinge([[0., 1.]], [[0.5, 0.5]]).numpy().tolist()
    [1.0]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    margin = _m.maximum(_m.subtract(1.0, _m.multiply(_hinge_labels(y_true), y_pred)), 0.0)
    return _m.reduce_mean(margin, axis=-1)


def squared_hinge(y_true: Any, y_pred: Any) -> Tensor:
    """``mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)`` (labels as in ``hinge``).

    >>> import stagecraft as tf
    >>> tf.keras.losses.squared_hinge([[0., 1.]], [[0.5, 0.5]]).numpy().tolist()
    [1.25]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    margin = _m.maximum(_m.subtract(1.0, _m.multiply(_hinge_labels(y_true), y_pred)), 0.0)
    return _m.reduce_mean(_m.square(margin), axis=-1)


def categorical_hinge(y_true: Any, y_pred: Any) -> Tensor:
    """``maximum(neg - pos + 1, 0)`` with ``pos = sum(y_true * y_pred)`` and ``neg =
    max((1 - y_true) * y_pred)`` over the last axis (one-hot labels).

    >>> import stagecraft as tf
    >>> tf.keras.losses.categorical_hinge([[0., 1.]], [[0.5, 0.25]]).numpy().tolist()
    [1.25]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    pos = _m.reduce_sum(_m.multiply(y_true, y_pred), axis=-1)
    neg = _m.reduce_max(_m.multiply(_m.subtract(1.0, y_true), y_pred), axis=-1)
    return _m.maximum(_m.add(_m.subtract(neg, pos), 1.0), 0.0)


def log_cosh(y_true: Any, y_pred: Any) -> Tensor:
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, computed without overflow as
    ``x + softplus(-2x) - log(2)``.

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.losses.log_cosh([[0.]], [[1.]]).numpy().tolist()]
    [0.4338]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    x = _m.subtract(y_pred, y_true)
    value = _m.subtract(_m.add(x, _m.softplus(_m.multiply(-2.0, x))), 0.6931471805599453)
    return _m.reduce_mean(value, axis=-1)


def poisson(y_true: Any, y_pred: Any) -> Tensor:
    """``mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1)``.

    >>> import stagecraft as tf
    >>> tf.keras.losses.poisson([[0.]], [[1.]]).numpy().tolist()
    [1.0]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    return _m.reduce_mean(_m.subtract(y_pred, _m.multiply(y_true, _m.log(
        _m.add(y_pred, EPSILON)))), axis=-1)


def kl_divergence(y_true: Any, y_pred: Any) -> Tensor:
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to ``[1e-7, 1]``.

    >>> import stagecraft as tf
    >>> loss = tf.keras.losses.kl_divergence([[0.5, 0.5]], [[0.25, 0.75]])
    >>> [round(v, 4) for v in loss.numpy().tolist()]
    [0.1438]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = _m.clip_by_value(y_true, EPSILON, 1.0)
    y_pred = _m.clip_by_value(y_pred, EPSILON, 1.0)
    return _m.reduce_sum(_m.multiply(y_true, _m.log(_m.truediv(y_true, y_pred))), axis=-1)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Tensor:
    """The negated cosine similarity of the two along ``axis`` (-1: same direction, 0:
    orthogonal), each L2-normalized first (``tf.nn.l2_normalize``).

    >>> import stagecraft as tf
    >>> tf.keras.losses.cosine_similarity([[1., 0.]], [[2., 0.]]).numpy().tolist()
    [-1.0]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    return _m.negative(_m.reduce_sum(_m.multiply(_nn.l2_normalize(y_true, axis=axis),
                                                 _nn.l2_normalize(y_pred, axis=axis)),
                                     axis=axis))


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Tensor:
    """``100 * mean(abs((y_true - y_pred) / maximum(abs(y_true), 1e-7)), axis=-1)``.

    >>> import stagecraft as tf
    >>> tf.keras.losses.mean_absolute_percentage_error([[2., 4.]], [[1., 4.]]).numpy().tolist()
    [25.0]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    ratio = _m.truediv(_m.subtract(y_true, y_pred), _m.maximum(_m.abs(y_true), EPSILON))
    return _m.multiply(100.0, _m.reduce_mean(_m.abs(ratio), axis=-1))


def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> Tensor:
    """``mean(square(log(y_pred + 1) - log(y_true + 1)), axis=-1)``, both floored at 1e-7.

    >>> import stagecraft as tf
    >>> loss = tf.keras.losses.mean_squared_logarithmic_error([[0.]], [[1.]])
    >>> [round(v, 4) for v in loss.numpy().tolist()]
    [0.4805]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    first = _m.log1p(_m.maximum(y_pred, EPSILON))
    second = _m.log1p(_m.maximum(y_true, EPSILON))
    return _m.reduce_mean(_m.square(_m.subtract(first, second)), axis=-1)


def binary_focal_crossentropy(y_true: Any, y_pred: Any, apply_class_balancing: bool = False,
                              alpha: float = 0.25, gamma: float = 2.0,
                              from_logits: bool = False, label_smoothing: float = 0.0,
                              axis: int = -1) -> Tensor:
    """Binary cross-entropy scaled by ``(1 - p_t)^gamma`` (Lin et al.), ``p_t`` the
    probability given to the true label; with ``apply_class_balancing``, also by ``alpha``
    for positives and ``1 - alpha`` for negatives. Averaged over ``axis``.

    >>> import stagecraft as tf
    >>> loss = tf.keras.losses.binary_focal_crossentropy([[1.]], [[0.5]])
    >>> [round(v, 4) for v in loss.numpy().tolist()]
    [0.1733]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    if label_smoothing:
        y_true = _m.add(_m.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    bce = _binary_terms(y_true, y_pred, from_logits)
    if from_logits:
        y_pred = _m.sigmoid(y_pred)
    p_t = _m.add(_m.multiply(y_true, y_pred),
                 _m.multiply(_m.subtract(1.0, y_true), _m.subtract(1.0, y_pred)))
    focal = _m.multiply(_m.pow(_m.subtract(1.0, p_t), gamma), bce)
    if apply_class_balancing:
        weight = _m.add(_m.multiply(y_true, alpha), _m.multiply(_m.subtract(1.0, y_true),
                                                                1.0 - alpha))
        focal = _m.multiply(weight, focal)
    return _m.reduce_mean(focal, axis=axis)


def categorical_focal_crossentropy(y_true: Any, y_pred: Any, alpha: float = 0.25,
                                   gamma: float = 2.0, from_logits: bool = False,
                                   label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """Categorical cross-entropy with each class's term scaled by ``alpha * (1 - p)^gamma``;
    probabilities are rescaled to sum to 1 and clipped to ``[1e-7, 1 - 1e-7]``.

    >>> import stagecraft as tf
    >>> loss = tf.keras.losses.categorical_focal_crossentropy([[0., 1.]], [[0.5, 0.5]])
    >>> [round(v, 4) for v in loss.numpy().tolist()]
    [0.0433]
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    y_true = _smooth_categorical(y_true, y_pred, label_smoothing, axis,
                                 "categorical_focal_crossentropy")
    if from_logits:
        y_pred = _nn.softmax(y_pred, axis=axis)
    probs = _clipped_probabilities(y_pred, axis)
    cce = _m.negative(_m.multiply(y_true, _m.log(probs)))
    weight = _m.multiply(alpha, _m.pow(_m.subtract(1.0, probs), gamma))
    return _m.reduce_sum(_m.multiply(weight, cce), axis=axis)


def categorical_generalized_cross_entropy(y_true: Any, y_pred: Any, q: float = 0.5) -> Tensor:
    """The generalized cross-entropy (Zhang and Sabuncu) of integer labels:
    ``(1 - p^q) / q`` with ``p`` the probability of the true class; robust to noisy labels.

    >>> import stagecraft as tf
    >>> loss = tf.keras.losses.categorical_generalized_cross_entropy([1], [[0.75, 0.25]])
    >>> loss.numpy().tolist()
    [1.0]
    """
    y_pred = _prepare(y_pred, y_pred)[1]
    n = y_pred.shape[-1]
    if n is None:
        raise ValueError("categorical_generalized_cross_entropy: y_pred needs a known number "
                         "of classes (its last dimension).")
    labels = _m.cast(y_true if isinstance(y_true, Tensor) else _prepare(y_true, y_true)[1],
                     _dt.int32)
    p = _m.reduce_sum(_m.multiply(y_pred, _a.one_hot(labels, n, dtype=y_pred.dtype)), axis=-1)
    return _m.truediv(_m.subtract(1.0, _m.pow(p, q)), q)


def _sum(x: Tensor, axis: Any) -> Tensor:
    return _m.reduce_sum(x, axis=axis)


def dice(y_true: Any, y_pred: Any, axis: Any = None) -> Tensor:
    """``1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + 1e-7)`` over ``axis``
    (None: everything).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.dice([[1., 0.]], [[1., 1.]]))
    0.3333333134651184
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    overlap = _sum(_m.multiply(y_true, y_pred), axis)
    total = _m.add(_m.add(_sum(y_true, axis), _sum(y_pred, axis)), EPSILON)
    return _m.subtract(1.0, _m.truediv(_m.multiply(2.0, overlap), total))


def tversky(y_true: Any, y_pred: Any, alpha: float = 0.5, beta: float = 0.5,
            axis: Any = None) -> Tensor:
    """``1 - TP / (TP + alpha * FP + beta * FN + 1e-7)`` with the soft counts ``TP =
    sum(y_true * y_pred)``, ``FP = sum((1 - y_true) * y_pred)``, ``FN = sum(y_true * (1 -
    y_pred))`` over ``axis``; ``alpha = beta = 0.5`` is the Dice loss.

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.tversky([[1., 0.]], [[1., 1.]], alpha=1.0, beta=0.0)), 4)
    0.5
    """
    y_true, y_pred = _prepare(y_true, y_pred)
    tp = _sum(_m.multiply(y_true, y_pred), axis)
    fp = _sum(_m.multiply(_m.subtract(1.0, y_true), y_pred), axis)
    fn = _sum(_m.multiply(y_true, _m.subtract(1.0, y_pred)), axis)
    denominator = _m.add(_m.add(_m.add(tp, _m.multiply(alpha, fp)), _m.multiply(beta, fn)),
                         EPSILON)
    return _m.subtract(1.0, _m.truediv(tp, denominator))


# Keras's other names.
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error


def _wrapper_class(name: str, fn: Any, default_name: str, doc: str) -> type:
    """A ``LossFunctionWrapper`` subclass for a loss function without options."""
    def __init__(self: Any, reduction: str = Reduction.AUTO, name: str = default_name) -> None:
        LossFunctionWrapper.__init__(self, fn, reduction, name)
    cls = type(name, (LossFunctionWrapper,), {"__init__": __init__, "__doc__": doc,
                                               "__module__": __name__})
    __init__.__qualname__ = f"{name}.__init__"
    return cls


Hinge = _wrapper_class("Hinge", hinge, "hinge", """The hinge loss (see ``hinge``).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.Hinge()([[0., 1.]], [[0.5, 0.5]]))
    1.0
    """)
SquaredHinge = _wrapper_class("SquaredHinge", squared_hinge, "squared_hinge",
                              """The squared hinge loss (see ``squared_hinge``).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.SquaredHinge()([[0., 1.]], [[0.5, 0.5]]))
    1.25
    """)
CategoricalHinge = _wrapper_class("CategoricalHinge", categorical_hinge, "categorical_hinge",
                                  """The categorical hinge loss (see ``categorical_hinge``).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.CategoricalHinge()([[0., 1.]], [[0.5, 0.25]]))
    1.25
    """)
LogCosh = _wrapper_class("LogCosh", log_cosh, "log_cosh", """The log-cosh loss (see
    ``log_cosh``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.LogCosh()([[0.]], [[1.]])), 4)
    0.4338
    """)
Poisson = _wrapper_class("Poisson", poisson, "poisson", """The Poisson loss (see ``poisson``).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.Poisson()([[0.]], [[1.]]))
    1.0
    """)
KLDivergence = _wrapper_class("KLDivergence", kl_divergence, "kl_divergence",
                              """The Kullback-Leibler divergence (see ``kl_divergence``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.KLDivergence()([[0.5, 0.5]], [[0.25, 0.75]])), 4)
    0.1438
    """)
MeanAbsolutePercentageError = _wrapper_class(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error", """The mean absolute percentage error (see
    ``mean_absolute_percentage_error``).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.MeanAbsolutePercentageError()([[2., 4.]], [[1., 4.]]))
    25.0
    """)
MeanSquaredLogarithmicError = _wrapper_class(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", """The mean squared logarithmic error (see
    ``mean_squared_logarithmic_error``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.MeanSquaredLogarithmicError()([[0.]], [[1.]])), 4)
    0.4805
    """)


class CosineSimilarity(LossFunctionWrapper):
    """The negated cosine similarity along ``axis`` (see ``cosine_similarity``).

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.CosineSimilarity()([[1., 0.], [0., 1.]], [[1., 0.], [1., 0.]]))
    -0.5
    """

    def __init__(self, axis: int = -1, reduction: str = Reduction.AUTO,
                 name: str = "cosine_similarity"):
        super().__init__(cosine_similarity, reduction, name, axis=axis)


class BinaryFocalCrossentropy(LossFunctionWrapper):
    """The binary focal cross-entropy (see ``binary_focal_crossentropy``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.BinaryFocalCrossentropy()([[1.]], [[0.5]])), 4)
    0.1733
    """

    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25,
                 gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = Reduction.AUTO,
                 name: str = "binary_focal_crossentropy"):
        super().__init__(binary_focal_crossentropy, reduction, name,
                         apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class CategoricalFocalCrossentropy(LossFunctionWrapper):
    """The categorical focal cross-entropy (see ``categorical_focal_crossentropy``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.CategoricalFocalCrossentropy()([[0., 1.]], [[0.5, 0.5]])), 4)
    0.0433
    """

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1, reduction: str = Reduction.AUTO,
                 name: str = "categorical_focal_crossentropy"):
        super().__init__(categorical_focal_crossentropy, reduction, name, alpha=alpha,
                         gamma=gamma, from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=axis)


class CategoricalGeneralizedCrossEntropy(LossFunctionWrapper):
    """The generalized cross-entropy of integer labels (see
    ``categorical_generalized_cross_entropy``); ``q`` in (0, 1].

    >>> import stagecraft as tf
    >>> float(tf.keras.losses.CategoricalGeneralizedCrossEntropy()([1], [[0.75, 0.25]]))
    1.0
    """

    def __init__(self, q: float = 0.5, reduction: str = Reduction.AUTO,
                 name: str = "categorical_generalized_cross_entropy"):
        if not 0 < q <= 1:
            raise ValueError(f"CategoricalGeneralizedCrossEntropy: q must be in (0, 1]; got "
                             f"{q}.")
        super().__init__(categorical_generalized_cross_entropy, reduction, name, q=q)


class Dice(LossFunctionWrapper):
    """The Dice loss (see ``dice``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.Dice()([[1., 0.]], [[1., 1.]])), 4)
    0.3333
    """

    def __init__(self, reduction: str = Reduction.AUTO, name: str = "dice",
                 axis: Any = None):
        super().__init__(dice, reduction, name, axis=axis)


class Tversky(LossFunctionWrapper):
    """The Tversky loss (see ``tversky``).

    >>> import stagecraft as tf
    >>> round(float(tf.keras.losses.Tversky(alpha=1.0, beta=0.0)([[1., 0.]], [[1., 1.]])), 4)
    0.5
    """

    def __init__(self, alpha: float = 0.5, beta: float = 0.5, reduction: str = Reduction.AUTO,
                 name: str = "tversky", axis: Any = None):
        super().__init__(tversky, reduction, name, alpha=alpha, beta=beta, axis=axis)
