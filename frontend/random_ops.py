"""Random ops with TensorFlow's seeding rules (``stagecraft.random``).

A (global seed, op seed) pair names a stream; each call advances that stream's counter, and
``set_seed`` resets every counter, so a program that sets the global seed is reproducible.
"""
from __future__ import annotations

import itertools
import secrets
from typing import Any

from stagecraft.array_ops import _static_dims
from stagecraft.bind import bind
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.tensor import Tensor

DEFAULT_GLOBAL_SEED = 87654321  # used when only an op seed is given, as in TensorFlow


class _Seeds:
    def __init__(self) -> None:
        self.global_seed: int | None = None
        self.op_counter = itertools.count()
        self.calls: dict[tuple[int, int], int] = {}


_SEEDS = _Seeds()


def set_seed(seed: int | None) -> None:
    """Sets the global seed and restarts every random stream.

    >>> import stagecraft as tf
    >>> tf.random.set_seed(1); a = tf.random.uniform([2])
    >>> tf.random.set_seed(1); b = tf.random.uniform([2])
    >>> bool(tf.reduce_all(a == b))
    True
    """
    _SEEDS.global_seed = None if seed is None else int(seed)
    _SEEDS.op_counter = itertools.count()
    _SEEDS.calls = {}


def get_seed(op_seed: int | None) -> tuple[int, int, int]:
    """The (global, op, counter) triple for the next call of an op with ``op_seed``."""
    g = _SEEDS.global_seed
    if g is None and op_seed is None:
        return (secrets.randbits(63), secrets.randbits(63), 0)
    if g is None:
        g = DEFAULT_GLOBAL_SEED
    if op_seed is None:
        op_seed = next(_SEEDS.op_counter)
    key = (g, int(op_seed))
    n = _SEEDS.calls.get(key, 0)
    _SEEDS.calls[key] = n + 1
    return (g, int(op_seed), n)


def normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
           seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a normal distribution.

    >>> import stagecraft as tf
    >>> tf.random.normal([2, 3], seed=1).shape
    TensorShape([2, 3])
    """
    d = _dt.as_dtype(dtype)
    z = bind(OPS["random_normal"], shape=_static_dims(shape, "random"), dtype=d,
             seed=get_seed(seed))
    from stagecraft.math_ops import add, cast, multiply
    return add(multiply(z, cast(stddev, d)), cast(mean, d))


def uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dt.float32,
            seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples uniformly from [minval, maxval) (maxval defaults to 1 for floats; integer
    dtypes need an explicit maxval)."""
    d = _dt.as_dtype(dtype)
    from stagecraft.math_ops import add, cast, multiply, subtract
    if d.is_integer:
        if maxval is None:
            raise ValueError(f"random.uniform: maxval must be given for integer dtype {d.name}.")
        return bind(OPS["random_uniform_int"], cast(minval, d), cast(maxval, d),
                    shape=_static_dims(shape, "random"), seed=get_seed(seed))
    u = bind(OPS["random_uniform"], shape=_static_dims(shape, "random"), dtype=d,
             seed=get_seed(seed))
    lo, hi = cast(minval, d), cast(1.0 if maxval is None else maxval, d)
    return add(multiply(u, subtract(hi, lo)), lo)


__all__ = ["set_seed", "normal", "uniform"]
