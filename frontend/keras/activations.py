"""``keras.activations``: element-wise activation functions, looked up by name with ``get``.

Each function is built from stagecraft ops, so it is differentiable on a tape and stages under
``@function`` like any other op.
"""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.ops import array_ops as _a
from stagecraft.ops import indexing_ops as _ix
from stagecraft.ops import manip_ops as _manip
from stagecraft.ops import math_ops as _m
from stagecraft.ops import nn_ops as _nn
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor


def relu(x: Any, alpha: float = 0.0, max_value: float | None = None,
         threshold: float = 0.0, *, negative_slope: float | None = None) -> Tensor:
    """Rectified linear unit: ``x`` where ``x > threshold``, ``alpha * (x - threshold)`` below;
    capped at ``max_value`` when given (TensorFlow Keras's ``relu``; ``negative_slope`` is
    Keras 3's name for ``alpha``).

    >>> import stagecraft as tf
    >>> tf.keras.activations.relu([-2., 1., 8.]).numpy().tolist()
    [0.0, 1.0, 8.0]
    >>> tf.keras.activations.relu([-2., 1., 8.], alpha=0.5, max_value=6.).numpy().tolist()
    [-1.0, 1.0, 6.0]
    """
    x = convert_to_tensor(x)
    if negative_slope is not None:
        alpha = negative_slope
    if alpha == 0 and threshold == 0:
        y = _nn.relu(x)  # the primitive: cheaper and its gradient at 0 is TensorFlow's (0)
    else:
        above = _m.greater(x, threshold)
        y = _m.where(above, x, _m.multiply(_m.subtract(x, threshold), alpha))
    if max_value is not None:
        y = _m.minimum(y, max_value)
    return y


def tanh(x: Any) -> Tensor:
    """Hyperbolic tangent.

    >>> import stagecraft as tf
    >>> tf.keras.activations.tanh([0.]).numpy().tolist()
    [0.0]
    """
    return _m.tanh(x)


def sigmoid(x: Any) -> Tensor:
    """Logistic sigmoid ``1 / (1 + exp(-x))``.

    >>> import stagecraft as tf
    >>> tf.keras.activations.sigmoid([0.]).numpy().tolist()
    [0.5]
    """
    return _m.sigmoid(x)


def softplus(x: Any) -> Tensor:
    """``log(exp(x) + 1)``, computed stably.

    >>> import stagecraft as tf
    >>> round(float(tf.keras.activations.softplus([0.])[0]), 4)
    0.6931
    """
    return _m.softplus(x)


def softmax(x: Any, axis: int = -1) -> Tensor:
    """Softmax along ``axis``. Like Keras, a rank-0 or rank-1 input is an error (Keras expects a
    batch dimension; use ``tf.nn.softmax`` for a single vector).

    >>> import stagecraft as tf
    >>> tf.keras.activations.softmax([[1., 1.]]).numpy().tolist()
    [[0.5, 0.5]]
    """
    x = convert_to_tensor(x)
    if x.shape.rank is not None and x.shape.rank <= 1:
        raise ValueError(f"keras.activations.softmax: cannot apply softmax to a tensor of rank "
                         f"{x.shape.rank} (shape {x.shape}); it expects a batch of vectors. "
                         f"Add a batch dimension (x[None, :]) or use tf.nn.softmax.")
    return _nn.softmax(x, axis=axis)


def linear(x: Any) -> Any:
    """The identity (what ``activation=None`` means).

    >>> import stagecraft as tf
    >>> tf.keras.activations.linear(tf.constant([-1.])).numpy().tolist()
    [-1.0]
    """
    return x


def _t(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def elu(x: Any, alpha: float = 1.0) -> Tensor:
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.activations.elu([-1., 2.]).numpy().tolist()]
    [-0.6321, 2.0]
    """
    x = _t(x)
    y = _nn.elu(x)
    if alpha == 1.0:
        return y
    return _m.where(_m.greater(x, 0.0), y, _m.multiply(y, alpha))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: Any) -> Tensor:
    """Scaled ELU: ``scale * elu(x, alpha)`` with Klambauer et al.'s constants
    (``alpha ~ 1.6733``, ``scale ~ 1.0507``).

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.activations.selu([-1., 1.]).numpy().tolist()]
    [-1.1113, 1.0507]
    """
    return _nn.selu(_t(x))


def gelu(x: Any, approximate: bool = False) -> Tensor:
    """Gaussian error linear unit ``x * P(X <= x)`` for a standard normal ``X``; exactly
    (``erf``) or, with ``approximate=True``, by the tanh formula.

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.activations.gelu([1.]).numpy().tolist()]
    [0.8413]
    """
    return _nn.gelu(_t(x), approximate=approximate)


def celu(x: Any, alpha: float = 1.0) -> Tensor:
    """Continuously differentiable ELU: ``x`` for ``x >= 0``, ``alpha * (exp(x / alpha) -
    1)`` below (Keras 3).

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.activations.celu([-2., 3.], alpha=2.).numpy().tolist()]
    [-1.2642, 3.0]
    """
    x = _t(x)
    # exp of the clamped value: the unused branch never overflows (its gradient stays finite).
    neg = _m.multiply(alpha, _m.expm1(_m.truediv(_m.minimum(x, 0.0), alpha)))
    return _m.where(_m.greater_equal(x, 0.0), x, neg)


def leaky_relu(x: Any, negative_slope: float = 0.2) -> Tensor:
    """``x`` for ``x >= 0``, ``negative_slope * x`` below.

    >>> import stagecraft as tf
    >>> tf.keras.activations.leaky_relu([-1., 2.]).numpy().tolist()
    [-0.20000000298023224, 2.0]
    """
    return _nn.leaky_relu(_t(x), alpha=negative_slope)


def relu6(x: Any) -> Tensor:
    """``min(max(x, 0), 6)``.

    >>> import stagecraft as tf
    >>> tf.keras.activations.relu6([-1., 3., 9.]).numpy().tolist()
    [0.0, 3.0, 6.0]
    """
    return _nn.relu6(_t(x))


def softsign(x: Any) -> Tensor:
    """``x / (abs(x) + 1)``.

    >>> import stagecraft as tf
    >>> tf.keras.activations.softsign([1., -3.]).numpy().tolist()
    [0.5, -0.75]
    """
    return _m.softsign(_t(x))


def silu(x: Any) -> Tensor:
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``.

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.activations.silu([1.]).numpy().tolist()]
    [0.7311]
    """
    return _nn.silu(_t(x))


def exponential(x: Any) -> Tensor:
    """``exp(x)``.

    >>> import stagecraft as tf
    >>> tf.keras.activations.exponential([0.]).numpy().tolist()
    [1.0]
    """
    return _m.exp(_t(x))


def hard_sigmoid(x: Any) -> Tensor:
    """Piecewise linear sigmoid, Keras 3's (TensorFlow 2.16+) definition ``relu6(x + 3) /
    6``: 0 below -3, 1 above 3. (Keras 2 used the slope 0.2 instead of 1/6.)

    >>> import stagecraft as tf
    >>> tf.keras.activations.hard_sigmoid([-4., 0., 4.]).numpy().tolist()
    [0.0, 0.5, 1.0]
    """
    return _m.truediv(_nn.relu6(_m.add(_t(x), 3.0)), 6.0)


def hard_silu(x: Any) -> Tensor:
    """Hard swish: ``x * hard_sigmoid(x)`` (``x * relu6(x + 3) / 6``).

    >>> import stagecraft as tf
    >>> tf.keras.activations.hard_silu([-4., 3.]).numpy().tolist()
    [-0.0, 3.0]
    """
    x = _t(x)
    return _m.multiply(x, hard_sigmoid(x))


def hard_tanh(x: Any) -> Tensor:
    """``clip(x, -1, 1)``.

    >>> import stagecraft as tf
    >>> tf.keras.activations.hard_tanh([-2., 0.5, 2.]).numpy().tolist()
    [-1.0, 0.5, 1.0]
    """
    return _m.clip_by_value(_t(x), -1.0, 1.0)


def hard_shrink(x: Any, threshold: float = 0.5) -> Tensor:
    """``x`` where ``|x| > threshold``, 0 elsewhere.

    >>> import stagecraft as tf
    >>> tf.keras.activations.hard_shrink([-1., 0.25, 0.75]).numpy().tolist()
    [-1.0, 0.0, 0.75]
    """
    x = _t(x)
    return _m.where(_m.greater(_m.abs(x), threshold), x, _m.multiply(x, 0.0))


def soft_shrink(x: Any, threshold: float = 0.5) -> Tensor:
    """Moves ``x`` toward 0 by ``threshold``: ``x - threshold`` above it, ``x + threshold``
    below ``-threshold``, 0 between.

    >>> import stagecraft as tf
    >>> tf.keras.activations.soft_shrink([-1., 0.25, 0.75]).numpy().tolist()
    [-0.5, 0.0, 0.25]
    """
    x = _t(x)
    zero = _m.multiply(x, 0.0)
    return _m.where(_m.greater(x, threshold), _m.subtract(x, threshold),
                    _m.where(_m.less(x, -threshold), _m.add(x, threshold), zero))


def tanh_shrink(x: Any) -> Tensor:
    """``x - tanh(x)``.

    >>> import stagecraft as tf
    >>> tf.keras.activations.tanh_shrink([0.]).numpy().tolist()
    [0.0]
    """
    x = _t(x)
    return _m.subtract(x, _m.tanh(x))


def sparse_plus(x: Any) -> Tensor:
    """A smooth ReLU: 0 for ``x <= -1``, ``(x + 1)^2 / 4`` on ``(-1, 1)``, ``x`` from 1.

    >>> import stagecraft as tf
    >>> tf.keras.activations.sparse_plus([-2., 0., 2.]).numpy().tolist()
    [0.0, 0.25, 2.0]
    """
    x = _t(x)
    middle = _m.multiply(0.25, _m.square(_m.add(_m.clip_by_value(x, -1.0, 1.0), 1.0)))
    return _m.where(_m.greater_equal(x, 1.0), x, middle)


def sparse_sigmoid(x: Any) -> Tensor:
    """Piecewise linear sigmoid: 0 for ``x <= -1``, ``(x + 1) / 2`` on ``(-1, 1)``, 1 from 1.

    >>> import stagecraft as tf
    >>> tf.keras.activations.sparse_sigmoid([-2., 0., 2.]).numpy().tolist()
    [0.0, 0.5, 1.0]
    """
    return _m.multiply(0.5, _m.add(_m.clip_by_value(_t(x), -1.0, 1.0), 1.0))


def squareplus(x: Any, b: float = 4.0) -> Tensor:
    """``(x + sqrt(x^2 + b)) / 2``, a softplus without exponentials.

    >>> import stagecraft as tf
    >>> tf.keras.activations.squareplus([0.]).numpy().tolist()
    [1.0]
    """
    x = _t(x)
    return _m.multiply(0.5, _m.add(x, _m.sqrt(_m.add(_m.square(x), float(b)))))


def log_sigmoid(x: Any) -> Tensor:
    """``log(sigmoid(x))``, computed stably as ``-softplus(-x)``.

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.activations.log_sigmoid([0.]).numpy().tolist()]
    [-0.6931]
    """
    return _m.negative(_m.softplus(_m.negative(_t(x))))


def mish(x: Any) -> Tensor:
    """``x * tanh(softplus(x))``.

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.activations.mish([1.]).numpy().tolist()]
    [0.8651]
    """
    x = _t(x)
    return _m.multiply(x, _m.tanh(_m.softplus(x)))


def log_softmax(x: Any, axis: int = -1) -> Tensor:
    """``x - logsumexp(x, axis)``: the log of the softmax, computed stably.

    >>> import stagecraft as tf
    >>> [round(v, 4) for v in tf.keras.activations.log_softmax([[0., 0.]]).numpy()[0].tolist()]
    [-0.6931, -0.6931]
    """
    return _nn.log_softmax(_t(x), axis=axis)


def glu(x: Any, axis: int = -1) -> Tensor:
    """Gated linear unit: splits ``x`` in two halves ``a, b`` along ``axis`` and returns
    ``a * sigmoid(b)``; the size along ``axis`` must be even.

    >>> import stagecraft as tf
    >>> tf.keras.activations.glu([[2., 0.]]).numpy().tolist()
    [[1.0]]
    """
    x = _t(x)
    n = x.shape[axis] if x.shape.rank is not None else None
    if n is None or n % 2:
        raise ValueError(f"keras.activations.glu: the size of axis {axis} must be known and "
                         f"even, to split it into two halves; got shape {x.shape}.")
    a, b = _manip.split(x, 2, axis=axis)
    return _m.multiply(a, _m.sigmoid(b))


def sparsemax(x: Any, axis: int = -1) -> Tensor:
    """Euclidean projection of ``x`` onto the probability simplex along ``axis`` (Martins
    and Astudillo, 2016): like softmax, but most outputs are exactly 0.

    >>> import stagecraft as tf
    >>> tf.keras.activations.sparsemax([[1., 0.5, -2.]]).numpy().tolist()
    [[0.75, 0.25, 0.0]]
    """
    x = _t(x)
    rank = x.shape.rank
    if rank is None:
        raise ValueError("keras.activations.sparsemax needs an input of known rank.")
    axis = axis % rank
    if axis != rank - 1:  # work on the last axis
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        return _a.transpose(sparsemax(_a.transpose(x, perm)), perm)
    n = x.shape[-1]
    if n is None:
        raise ValueError("keras.activations.sparsemax needs a known size along its axis.")
    z, _ = _ix.top_k(x, k=n)  # sorted, largest first
    k = _m.cast(_a.range(1, n + 1), x.dtype)
    cumulative = _m.cumsum(z, axis=-1)
    support = _m.cast(_m.greater(_m.add(1.0, _m.multiply(k, z)), cumulative), x.dtype)
    size = _m.reduce_sum(support, axis=-1, keepdims=True)
    tau = _m.truediv(_m.subtract(_m.reduce_sum(_m.multiply(support, z), axis=-1,
                                                keepdims=True), 1.0), size)
    return _m.maximum(_m.subtract(x, tau), 0.0)


def threshold(x: Any, threshold: float, default_value: float) -> Tensor:
    """``x`` where ``x > threshold``, ``default_value`` elsewhere.

    >>> import stagecraft as tf
    >>> tf.keras.activations.threshold([-1., 2.], 0., -5.).numpy().tolist()
    [-5.0, 2.0]
    """
    x = _t(x)
    return _m.where(_m.greater(x, threshold), x,
                    _m.add(_m.multiply(x, 0.0), float(default_value)))


# Keras's other names for the same functions.
swish = silu
hard_swish = hard_silu


_BY_NAME: dict[str, Callable[..., Any]] = {
    "relu": relu, "tanh": tanh, "sigmoid": sigmoid, "softmax": softmax, "linear": linear,
    "softplus": softplus, "elu": elu, "selu": selu, "gelu": gelu, "celu": celu,
    "leaky_relu": leaky_relu, "relu6": relu6, "softsign": softsign, "silu": silu,
    "swish": silu, "exponential": exponential, "hard_sigmoid": hard_sigmoid,
    "hard_silu": hard_silu, "hard_swish": hard_silu, "hard_tanh": hard_tanh,
    "hard_shrink": hard_shrink, "soft_shrink": soft_shrink, "tanh_shrink": tanh_shrink,
    "sparse_plus": sparse_plus, "sparse_sigmoid": sparse_sigmoid, "squareplus": squareplus,
    "log_sigmoid": log_sigmoid, "mish": mish, "log_softmax": log_softmax, "glu": glu,
    "sparsemax": sparsemax, "threshold": threshold,
}


def get(identifier: str | Callable[..., Any] | None) -> Callable[..., Any]:
    """The activation function for ``identifier``: a name (``'relu'``), a callable (returned
    as is) or None (``linear``).

    >>> import stagecraft as tf
    >>> tf.keras.activations.get('tanh') is tf.keras.activations.tanh
    True
    >>> tf.keras.activations.get(None) is tf.keras.activations.linear
    True
    """
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise ValueError(f"Unknown activation function: {identifier!r}. Valid names are "
                             f"{', '.join(repr(n) for n in sorted(_BY_NAME))}; or pass a "
                             f"callable (e.g. activation=tf.nn.relu6).")
        return fn
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r} (of "
                    f"type {type(identifier).__name__}). Pass a name such as 'relu', a "
                    f"callable, or None.")


def serialize(activation: Callable[..., Any]) -> str:
    """The name of a built-in activation (the inverse of ``get`` for names).

    >>> import stagecraft as tf
    >>> tf.keras.activations.serialize(tf.keras.activations.relu)
    'relu'
    """
    for name, fn in _BY_NAME.items():
        if fn is activation:
            return name
    raise ValueError(f"keras.activations.serialize: {activation!r} is not a built-in "
                     f"activation; only {', '.join(sorted(_BY_NAME))} have names.")


def deserialize(config: str | dict, custom_objects: dict | None = None) -> Callable[..., Any]:
    """The activation that ``serialize`` named: a name (``'relu'``), Keras's dict form
    ``{'class_name': 'function', 'config': 'relu'}``, or a name in ``custom_objects``.

    >>> import stagecraft as tf
    >>> tf.keras.activations.deserialize('mish') is tf.keras.activations.mish
    True
    """
    if isinstance(config, dict):
        config = config.get("config", config.get("class_name"))
        if isinstance(config, dict):  # {'config': {'name': ...}}
            config = config.get("name")
    if not isinstance(config, str):
        raise ValueError(f"keras.activations.deserialize: expected an activation name or "
                         f"{{'class_name': 'function', 'config': name}}; got {config!r}.")
    if custom_objects and config in custom_objects:
        return custom_objects[config]
    return get(config)


__all__ = ["celu", "deserialize", "elu", "exponential", "gelu", "get", "glu", "hard_shrink",
           "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "leaky_relu", "linear",
           "log_sigmoid", "log_softmax", "mish", "relu", "relu6", "selu", "serialize",
           "sigmoid", "silu", "soft_shrink", "softmax", "softplus", "softsign", "sparse_plus",
           "sparse_sigmoid", "sparsemax", "squareplus", "swish", "tanh", "tanh_shrink",
           "threshold"]
