"""``keras.initializers``: objects that make the initial value of a weight from its shape.

Seeding follows TensorFlow 2 Keras: an initializer built with ``seed=`` is *stateless* and
gives the same values on every call (two ``GlorotUniform(seed=1)`` agree); without a seed each
call draws fresh values from the global random stream, which ``tf.random.set_seed`` makes
reproducible. Values are drawn with stagecraft's random ops (they need not equal TensorFlow's).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from stagecraft.ops import math_ops as _m
from stagecraft.ops import array_ops as _a
from stagecraft.ops.array_ops import _static_dims, fill
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.ops.random_ops import get_seed
from stagecraft.eager.tensor import Tensor, wrap

# The "global seed" half of the (global, op, counter) triple of a seeded initializer: fixed, so
# the values depend on the initializer's seed alone (Keras's stateless seeded initializers).
_STATELESS_STREAM = 0x6B6572617300  # "keras" + 0


class Initializer:
    """Base class: ``initializer(shape, dtype=None)`` returns a tensor of that shape.

    Subclass it and define ``__call__`` for a custom initializer; any callable with the same
    signature can be passed where an initializer is expected.

    >>> import stagecraft as tf
    >>> class Twos(tf.keras.initializers.Initializer):
    ...     def __call__(self, shape, dtype=None, **kwargs):
    ...         return tf.fill(shape, tf.constant(2.0, dtype or tf.float32))
    >>> Twos()([2]).numpy().tolist()
    [2.0, 2.0]
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define "
                                  f"__call__(self, shape, dtype=None, **kwargs).")

    def get_config(self) -> dict:
        """The constructor arguments (``type(init)(**init.get_config())`` is a copy)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _dtype(dtype: Any, what: str, floating: bool) -> _dt.DType:
    d = _dt.float32 if dtype is None else _dt.as_dtype(dtype)
    if floating and not d.is_floating:
        raise ValueError(f"{what}: expected a floating point dtype, got {d.name}. Random "
                         f"initializers only make float32/float64 values; use 'zeros' or "
                         f"'ones' for integer weights.")
    return d


class Zeros(Initializer):
    """All zeros.

    >>> import stagecraft as tf
    >>> tf.keras.initializers.Zeros()([2]).numpy().tolist()
    [0.0, 0.0]
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        return _a.zeros(_static_dims(shape, "Zeros"), dtype=_dtype(dtype, "Zeros", False))


class Ones(Initializer):
    """All ones.

    >>> import stagecraft as tf
    >>> tf.keras.initializers.Ones()([2], dtype=tf.int32).numpy().tolist()
    [1, 1]
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        return _a.ones(_static_dims(shape, "Ones"), dtype=_dtype(dtype, "Ones", False))


class Constant(Initializer):
    """Every element equal to the scalar ``value``.

    >>> import stagecraft as tf
    >>> tf.keras.initializers.Constant(3.)([2]).numpy().tolist()
    [3.0, 3.0]
    """

    def __init__(self, value: Any = 0):
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        d = _dtype(dtype, "Constant", False)
        value = self.value.numpy() if isinstance(self.value, Tensor) else self.value
        if np.ndim(value) != 0:
            raise TypeError(f"Constant: value must be a scalar, got an array of shape "
                            f"{np.shape(value)}. Use a callable initializer to set a whole "
                            f"array, e.g. lambda shape, dtype=None: tf.constant(array).")
        return fill(_static_dims(shape, "Constant"), np.asarray(value, d.np))

    def get_config(self) -> dict:
        return {"value": self.value}


class _Random(Initializer):
    """Shared seeding: a seeded initializer always uses the same seed triples (stateless)."""

    def __init__(self, seed: int | None = None):
        if seed is not None and not isinstance(seed, int):
            raise TypeError(f"{type(self).__name__}: seed must be an int or None, got "
                            f"{type(seed).__name__}.")
        self.seed = seed

    def _seeds(self) -> Callable[[], tuple[int, int, int]]:
        """A generator of seed triples for one call: fixed for a seeded initializer, drawn
        from the global stream otherwise."""
        if self.seed is None:
            return lambda: get_seed(None)
        counter = iter(range(1 << 62))
        return lambda: (_STATELESS_STREAM, self.seed, next(counter))

    def get_config(self) -> dict:
        return {"seed": self.seed}


def _seed(triple: tuple) -> Tensor:
    return wrap(np.asarray(triple, np.int64))


def _uniform(shape: tuple, dtype: _dt.DType, lo: float, hi: float, seed: tuple) -> Tensor:
    u = bind(OPS["random_uniform"], _seed(seed), shape=shape, dtype=dtype)
    return _m.add(_m.multiply(u, hi - lo), lo)


def _normal(shape: tuple, dtype: _dt.DType, mean: float, stddev: float, seed: tuple,
            op: str = "random_normal") -> Tensor:
    z = bind(OPS[op], _seed(seed), shape=shape, dtype=dtype)
    return _m.add(_m.multiply(z, stddev), mean)


def _truncated_normal(shape: tuple, dtype: _dt.DType, mean: float, stddev: float,
                      seed: tuple) -> Tensor:
    """Normal samples within two standard deviations (TensorFlow's truncated normal)."""
    return _normal(shape, dtype, mean, stddev, seed, "random_truncated_normal")


class RandomUniform(_Random):
    """Uniform values in ``[minval, maxval)``.

    >>> import stagecraft as tf
    >>> init = tf.keras.initializers.RandomUniform(-1., 1., seed=3)
    >>> bool(tf.reduce_all(init([4]) == init([4])))  # seeded: the same values every call
    True
    """

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        d = _dtype(dtype, "RandomUniform", True)
        return _uniform(_static_dims(shape, "RandomUniform"), d, self.minval, self.maxval,
                        self._seeds()())

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class RandomNormal(_Random):
    """Normal values with mean ``mean`` and standard deviation ``stddev``.

    >>> import stagecraft as tf
    >>> tf.keras.initializers.RandomNormal(stddev=1., seed=0)([3, 2]).shape
    TensorShape([3, 2])
    """

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        d = _dtype(dtype, "RandomNormal", True)
        return _normal(_static_dims(shape, "RandomNormal"), d, self.mean, self.stddev,
                       self._seeds()())

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(_Random):
    """Normal values redrawn when more than two standard deviations from the mean.

    >>> import stagecraft as tf
    >>> w = tf.keras.initializers.TruncatedNormal(stddev=1., seed=0)([1000])
    >>> bool(tf.reduce_all(tf.abs(w) <= 2.))
    True
    """

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        d = _dtype(dtype, "TruncatedNormal", True)
        return _truncated_normal(_static_dims(shape, "TruncatedNormal"), d, self.mean,
                                 self.stddev, self._seeds()())

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


def _compute_fans(shape: tuple) -> tuple[float, float]:
    """(fan_in, fan_out) as Keras computes them: a kernel is (..., in, out); leading
    dimensions are a receptive field (convolutions)."""
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = math.prod(shape[:-2])
    return float(shape[-2] * receptive), float(shape[-1] * receptive)


class VarianceScaling(_Random):
    """Values scaled to the weight's fan: variance ``scale / n`` where ``n`` is fan_in,
    fan_out or their average (``mode``), from a truncated normal, an untruncated normal or a
    uniform distribution (``distribution``). Glorot and He initializers are special cases.

    >>> import stagecraft as tf
    >>> w = tf.keras.initializers.VarianceScaling(2., 'fan_in', 'uniform', seed=1)([8, 4])
    >>> bool(tf.reduce_max(tf.abs(w)) <= (3 * 2. / 8) ** 0.5)
    True
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None):
        super().__init__(seed)
        if scale <= 0.0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale}.")
        if mode not in self._MODES:
            raise ValueError(f"VarianceScaling: mode must be one of {self._MODES}, got "
                             f"{mode!r}.")
        if distribution == "normal":
            distribution = "truncated_normal"  # Keras's legacy spelling
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"VarianceScaling: distribution must be one of "
                             f"{self._DISTRIBUTIONS}, got {distribution!r}.")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        name = type(self).__name__
        d = _dtype(dtype, name, True)
        dims = _static_dims(shape, name)
        fan_in, fan_out = _compute_fans(dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        variance = self.scale / max(1.0, n[self.mode])
        if self.distribution == "truncated_normal":
            # The stddev of a standard normal truncated to [-2, 2].
            stddev = math.sqrt(variance) / 0.87962566103423978
            return _truncated_normal(dims, d, 0.0, stddev, self._seeds()())
        if self.distribution == "untruncated_normal":
            return _normal(dims, d, 0.0, math.sqrt(variance), self._seeds()())
        limit = math.sqrt(3.0 * variance)
        return _uniform(dims, d, -limit, limit, self._seeds()())

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class GlorotUniform(VarianceScaling):
    """Uniform in ``[-limit, limit]`` with ``limit = sqrt(6 / (fan_in + fan_out))`` (Keras's
    default kernel initializer).

    >>> import stagecraft as tf
    >>> w = tf.keras.initializers.GlorotUniform(seed=0)([3, 3])
    >>> bool(tf.reduce_max(tf.abs(w)) <= 1.0)
    True
    """

    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_avg", "uniform", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class GlorotNormal(VarianceScaling):
    """Truncated normal with stddev ``sqrt(2 / (fan_in + fan_out))``.

    >>> import stagecraft as tf
    >>> tf.keras.initializers.GlorotNormal(seed=0)([3, 3]).dtype.name
    'float32'
    """

    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class HeNormal(VarianceScaling):
    """Truncated normal with stddev ``sqrt(2 / fan_in)`` (for ReLU layers).

    >>> import stagecraft as tf
    >>> tf.keras.initializers.HeNormal(seed=0)([4, 2]).shape
    TensorShape([4, 2])
    """

    def __init__(self, seed: int | None = None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class HeUniform(VarianceScaling):
    """Uniform in ``[-limit, limit]`` with ``limit = sqrt(6 / fan_in)``.

    >>> import stagecraft as tf
    >>> tf.keras.initializers.HeUniform(seed=0)([4, 2]).shape
    TensorShape([4, 2])
    """

    def __init__(self, seed: int | None = None):
        super().__init__(2.0, "fan_in", "uniform", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class LecunNormal(VarianceScaling):
    """Truncated normal with stddev ``sqrt(1 / fan_in)``.

    >>> import stagecraft as tf
    >>> tf.keras.initializers.LecunNormal(seed=0)([4, 2]).shape
    TensorShape([4, 2])
    """

    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class Orthogonal(_Random):
    """A (semi-)orthogonal matrix times ``gain``: the Q of a QR decomposition of a normal
    matrix, its columns' signs fixed by R's diagonal (TensorFlow's algorithm; shapes of rank
    > 2 are flattened to ``(prod(shape[:-1]), shape[-1])``). Keras's default for recurrent
    kernels.

    >>> import numpy as np, stagecraft as tf
    >>> q = tf.keras.initializers.Orthogonal(seed=1)([3, 3]).numpy()
    >>> bool(np.allclose(q.T @ q, np.eye(3), atol=1e-5))
    True
    """

    def __init__(self, gain: float = 1.0, seed: int | None = None):
        super().__init__(seed)
        self.gain = float(gain)

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        d = _dtype(dtype, "Orthogonal", floating=True)
        shape = tuple(int(n) for n in shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: the shape must have rank >= 2; got {list(shape)}.")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        a = _normal((max(rows, cols), min(rows, cols)), _dt.float64, 0.0, 1.0,
                    self._seeds()()).numpy()
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return wrap((self.gain * q).reshape(shape).astype(d.np))

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


_BY_NAME: dict[str, type] = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_uniform": RandomUniform,
    "random_normal": RandomNormal, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
    "lecun_normal": LecunNormal, "orthogonal": Orthogonal,
}
_BY_CLASS_NAME = {cls.__name__: cls for cls in _BY_NAME.values()}


def get(identifier: str | Callable[..., Any] | None) -> Callable[..., Any] | None:
    """The initializer for ``identifier``: a name (``'glorot_uniform'`` or
    ``'GlorotUniform'``, made with default arguments), an initializer or callable (returned as
    is), or None (None).

    >>> import stagecraft as tf
    >>> tf.keras.initializers.get('zeros')
    Zeros()
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):  # serialize()'s form, as configs hold it
        cls = _BY_CLASS_NAME.get(identifier.get("class_name"))
        config = identifier.get("config", {})
        if cls is None or not isinstance(config, dict):
            raise ValueError(f"Unknown initializer config: {str(identifier)[:200]}. Valid "
                             f"class names are {', '.join(sorted(_BY_CLASS_NAME))}.")
        return cls(**config)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier) or _BY_CLASS_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"Unknown initializer: {identifier!r}. Valid names are "
                             f"{', '.join(repr(n) for n in sorted(_BY_NAME))} (or their class "
                             f"names, e.g. 'GlorotUniform'); or pass an initializer object "
                             f"such as tf.keras.initializers.RandomNormal(stddev=0.1).")
        return cls()
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret initializer identifier: {identifier!r} (of type "
                    f"{type(identifier).__name__}). Pass a name such as 'zeros', an "
                    f"initializer object, or a callable(shape, dtype=None).")


def serialize(initializer: Any) -> dict:
    """``{"class_name": ..., "config": ...}`` of a built-in initializer (``get`` reads it).

    >>> import stagecraft as tf
    >>> tf.keras.initializers.serialize(tf.keras.initializers.Constant(2.0))
    {'class_name': 'Constant', 'config': {'value': 2.0}}
    """
    name = type(initializer).__name__
    if _BY_CLASS_NAME.get(name) is not type(initializer):
        raise ValueError(f"keras.initializers.serialize: {initializer!r} is not a built-in "
                         f"initializer, so a saved config cannot name it.")
    return {"class_name": name, "config": initializer.get_config()}


# Keras's lower-case aliases.
zeros, ones, constant = Zeros, Ones, Constant
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
he_normal, he_uniform, lecun_normal = HeNormal, HeUniform, LecunNormal
orthogonal = Orthogonal

__all__ = ["Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "Initializer",
           "LecunNormal", "Ones", "Orthogonal", "RandomNormal", "RandomUniform", "TruncatedNormal",
           "VarianceScaling", "Zeros", "get", "serialize"]
