"""Stateless random ops and ``tf.random.Generator``.

Stateless ops are pure functions of a ``seed`` of shape [2]: the same seed gives the same
numbers, eagerly and staged, on every backend. A ``Generator`` keeps its state (the seed
triple of the Philox stream, see ``ir/ops/philox.py``) in an int64 variable: each draw reads
it and advances the counter, so draws inside ``@function`` are new on every call, and the
state is saved and restored by checkpoints like any variable of a ``tf.Module``.
"""
from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.state.module import Module
from stagecraft.ops.random_ops import draw, scale, shift, uniform_int
from stagecraft.eager.tensor import Tensor
from stagecraft.state.variables import Variable
from stagecraft.ops.array_ops import concat
from stagecraft.ops.math_ops import cast

STATELESS_STREAM = 0  # the counter word of stateless draws
_GENERATOR_STREAM = 0x67656E  # the op-seed half of a Generator seeded with one int ("gen")


def stateless_seed(seed: Any) -> Tensor:
    """The seed triple of a stateless op from its ``seed`` of shape [2]."""
    s = convert_to_tensor(seed)
    if not s.dtype.is_integer or s.shape.as_list() != [2]:
        raise ValueError(f"stateless random ops: seed must be an integer tensor of shape [2] "
                         f"(e.g. seed=[1, 2]), got {s.dtype.name} of shape {s.shape}.")
    return concat([cast(s, _dt.int64), convert_to_tensor(np.asarray([STATELESS_STREAM],
                                                                    np.int64))], 0)


def _uniform(seed: Tensor, shape: Any, minval: Any, maxval: Any, dtype: Any) -> Tensor:
    d = _dt.as_dtype(dtype)
    if d.is_integer:
        if maxval is None:
            raise ValueError(f"uniform: maxval must be given for integer dtype {d.name}.")
        return uniform_int(seed, shape, minval, maxval, d)
    return shift(draw("random_uniform", seed, shape, d), minval, maxval, d)


def stateless_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                     dtype: Any = _dt.float32, name: str | None = None,
                     alg: Any = "auto_select") -> Tensor:
    """Normal samples that depend only on ``seed`` (shape [2]).

    >>> import stagecraft as tf
    >>> a = tf.random.stateless_normal([3], seed=[1, 2])
    >>> bool(tf.reduce_all(a == tf.random.stateless_normal([3], seed=[1, 2])))
    True
    """
    d = _dt.as_dtype(dtype)
    return scale(draw("random_normal", stateless_seed(seed), shape, d), mean, stddev, d)


def stateless_truncated_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                               dtype: Any = _dt.float32, name: str | None = None,
                               alg: Any = "auto_select") -> Tensor:
    """Normal samples within two standard deviations that depend only on ``seed``.

    >>> import stagecraft as tf
    >>> z = tf.random.stateless_truncated_normal([500], seed=[3, 4])
    >>> bool(tf.reduce_max(tf.abs(z)) <= 2.0)
    True
    """
    d = _dt.as_dtype(dtype)
    z = draw("random_truncated_normal", stateless_seed(seed), shape, d)
    return scale(z, mean, stddev, d)


def stateless_uniform(shape: Any, seed: Any, minval: Any = 0, maxval: Any = None,
                      dtype: Any = _dt.float32, name: str | None = None,
                      alg: Any = "auto_select") -> Tensor:
    """Uniform samples in [minval, maxval) that depend only on ``seed`` (integer dtypes need
    ``maxval``).

    >>> import stagecraft as tf
    >>> tf.random.stateless_uniform([2], seed=[1, 2], maxval=10, dtype=tf.int32).dtype
    stagecraft.int32
    """
    return _uniform(stateless_seed(seed), shape, minval, maxval, dtype)


class Generator(Module):
    """A random number generator whose state is a variable.

    >>> import stagecraft as tf
    >>> g = tf.random.Generator.from_seed(1)
    >>> a = g.normal([2])
    >>> bool(tf.reduce_all(a == tf.random.Generator.from_seed(1).normal([2])))
    True
    >>> bool(tf.reduce_all(a == g.normal([2])))    # the state moved on
    False
    """

    def __init__(self, copy_from: "Generator | None" = None, state: Any = None,
                 alg: Any = None):
        super().__init__(name="generator")
        if copy_from is not None:
            state = copy_from.state.numpy()
        if state is None:
            raise ValueError("Generator: give `state` (or `copy_from`); or use "
                             "Generator.from_seed(seed) / from_non_deterministic_state().")
        self._state_var = Variable(_state_array(state), trainable=False, name="generator_state")

    @classmethod
    def from_seed(cls, seed: int, alg: Any = None) -> "Generator":
        """A generator whose stream depends only on ``seed``."""
        return cls(state=[int(seed), _GENERATOR_STREAM, 0], alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg: Any = None) -> "Generator":
        """A generator keyed by the operating system's randomness."""
        return cls(state=[secrets.randbits(63), secrets.randbits(63), 0], alg=alg)

    @classmethod
    def from_state(cls, state: Any, alg: Any = None) -> "Generator":
        """A generator with the given state (int64 [global seed, op seed, counter])."""
        return cls(state=state, alg=alg)

    @property
    def state(self) -> Variable:
        """The state variable."""
        return self._state_var

    @property
    def algorithm(self) -> str:
        return "philox"

    def reset(self, state: Any) -> None:
        """Sets the state."""
        self._state_var.assign(_state_array(state))

    def reset_from_seed(self, seed: int) -> None:
        """Restarts the stream of ``Generator.from_seed(seed)``."""
        self.reset([int(seed), _GENERATOR_STREAM, 0])

    def _next(self) -> Tensor:
        seed = self._state_var.read_value()
        self._state_var.assign_add(np.asarray([0, 0, 1], np.int64))
        return seed

    def normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
               name: str | None = None) -> Tensor:
        """Normal samples."""
        d = _dt.as_dtype(dtype)
        return scale(draw("random_normal", self._next(), shape, d), mean, stddev, d)

    def truncated_normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0,
                         dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
        """Normal samples within two standard deviations of ``mean``."""
        d = _dt.as_dtype(dtype)
        return scale(draw("random_truncated_normal", self._next(), shape, d), mean, stddev, d)

    def uniform(self, shape: Any, minval: Any = 0, maxval: Any = None,
                dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
        """Uniform samples in [minval, maxval)."""
        return _uniform(self._next(), shape, minval, maxval, dtype)

    def make_seeds(self, count: int = 1) -> Tensor:
        """``count`` seeds for the stateless ops, as an int64 tensor of shape [2, count]."""
        return uniform_int(self._next(), [2, int(count)], 0, 1 << 62, _dt.int64)

    def split(self, count: int = 1) -> list["Generator"]:
        """``count`` new generators with independent streams (this one advances)."""
        keys = self.make_seeds(count).numpy()
        return [Generator(state=[int(keys[0, i]), int(keys[1, i]), 0]) for i in range(count)]


def _state_array(state: Any) -> np.ndarray:
    s = np.asarray(state.numpy() if hasattr(state, "numpy") else state)
    if s.shape != (3,) or not np.issubdtype(s.dtype, np.integer):
        raise ValueError(f"Generator: state must be 3 integers (global seed, op seed, counter), "
                         f"got {s.dtype} of shape {list(s.shape)}.")
    return s.astype(np.int64)


_GLOBAL: list[Generator] = []


def get_global_generator() -> Generator:
    """The global generator (created from the OS's randomness on first use)."""
    if not _GLOBAL:
        _GLOBAL.append(Generator.from_non_deterministic_state())
    return _GLOBAL[0]


def set_global_generator(generator: Generator) -> None:
    """Replaces the global generator."""
    _GLOBAL[:] = [generator]
