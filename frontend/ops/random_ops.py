"""Random ops with TensorFlow's seeding rules (``stagecraft.random``).

A (global seed, op seed) pair names a stream; each call advances that stream's counter, and
``set_seed`` resets every counter, so a program that sets the global seed is reproducible.
Eager calls pass the triple (global seed, op seed, counter) as a constant seed input; a traced
op reads it from its site's state, which the compiled code advances on every call (see
``random_state``).
"""
from __future__ import annotations

import itertools
import secrets
from typing import Any

import numpy as np

from stagecraft.ops.array_ops import normalize_shape
from stagecraft.eager.bind import bind
from stagecraft.eager.context import STATE
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ops.math_ops import add, cast, multiply, subtract
from stagecraft.state.random_state import DEFAULT_GLOBAL_SEED, SEEDS, restart_sites, site_state


def set_seed(seed: int | None) -> None:
    """Sets the global seed and restarts every random stream.

    >>> import stagecraft as tf
    >>> tf.random.set_seed(1); a = tf.random.uniform([2])
    >>> tf.random.set_seed(1); b = tf.random.uniform([2])
    >>> bool(tf.reduce_all(a == b))
    True
    """
    SEEDS.global_seed = None if seed is None else int(seed)
    SEEDS.op_counter = itertools.count()
    SEEDS.calls = {}
    restart_sites()


def get_seed(op_seed: int | None) -> tuple[int, int, int]:
    """The (global, op, counter) triple for the next eager call of an op with ``op_seed``."""
    g = SEEDS.global_seed
    if g is None and op_seed is None:
        return (secrets.randbits(63), secrets.randbits(63), 0)
    if g is None:
        g = DEFAULT_GLOBAL_SEED
    if op_seed is None:
        op_seed = next(SEEDS.op_counter)
    key = (g, int(op_seed))
    n = SEEDS.calls.get(key, 0)
    SEEDS.calls[key] = n + 1
    return (g, int(op_seed), n)


def get_seed_pair(op_seed: int | None) -> tuple[int, int]:
    """TensorFlow's ``random_seed.get_seed``: the (global, op) pair of a new stateful object
    (a dataset's ``shuffle``): equal seeds give equal pairs, an unseeded object under a global
    seed takes the next op seed, and with no seed at all the pair is random.

    >>> get_seed_pair(7) == get_seed_pair(7)
    True
    """
    g = SEEDS.global_seed
    if g is None and op_seed is None:
        return (secrets.randbits(63), secrets.randbits(63))
    if op_seed is None:
        op_seed = next(SEEDS.op_counter)
    return (DEFAULT_GLOBAL_SEED if g is None else g, int(op_seed))


def seed_tensor(op_seed: int | None) -> Tensor:
    """The seed input of the next random op: the eager triple as a constant, or, while
    tracing, the value of this op site's state (a ``RandomState`` that the staged code
    advances, so every call of the compiled function draws new numbers)."""
    graph = STATE.get().graph
    if graph is None:
        return wrap(np.asarray(get_seed(op_seed), np.int64))
    return site_state(graph.root(), op_seed).next_seed()


def draw(kind: str, seed: Tensor, shape: Any, dtype: _dt.DType, *bounds: Any) -> Tensor:
    """The random op ``kind`` with the seed triple ``seed``; ``shape`` may mix ints and scalar
    int tensors or be a 1-D int tensor (then the ``*_dynamic`` op draws it)."""
    if kind != "random_uniform_int" and dtype not in _dt.FLOATS:
        raise ValueError(f"tf.random: dtype must be a floating type (float32 or float64) or, "
                         f"for uniform, an integer type; got {dtype.name}.")
    s = normalize_shape(shape, "tf.random")
    attrs = {} if kind == "random_uniform_int" else {"dtype": dtype}
    if s.tensor is None:
        return bind(OPS[kind], seed, *bounds, shape=s.dims, **attrs)
    return bind(OPS[kind + "_dynamic"], seed, s.tensor, *bounds, static=s.dims, **attrs)


def _float(kind: str, shape: Any, dtype: _dt.DType, seed: int | None) -> Tensor:
    return draw(kind, seed_tensor(seed), shape, dtype)


def normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
           seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a normal distribution.

    >>> import stagecraft as tf
    >>> tf.random.normal([2, 3], seed=1).shape
    TensorShape([2, 3])
    """
    d = _dt.as_dtype(dtype)
    return scale(_float("random_normal", shape, d, seed), mean, stddev, d)


def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
                     seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a normal distribution truncated to two standard deviations (values
    further from ``mean`` are drawn again).

    >>> import stagecraft as tf
    >>> bool(tf.reduce_all(tf.abs(tf.random.truncated_normal([1000], seed=1)) <= 2.0))
    True
    """
    d = _dt.as_dtype(dtype)
    return scale(_float("random_truncated_normal", shape, d, seed), mean, stddev, d)


def uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dt.float32,
            seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples uniformly from [minval, maxval) (maxval defaults to 1 for floats; integer
    dtypes need an explicit maxval).

    >>> import stagecraft as tf
    >>> x = tf.random.uniform([100], minval=-2, maxval=5, dtype=tf.int32, seed=3)
    >>> bool(tf.reduce_all((x >= -2) & (x < 5)))
    True
    """
    d = _dt.as_dtype(dtype)
    if d.is_integer:
        if maxval is None:
            raise ValueError(f"random.uniform: maxval must be given for integer dtype {d.name}.")
        return uniform_int(seed_tensor(seed), shape, minval, maxval, d)
    return shift(_float("random_uniform", shape, d, seed), minval, maxval, d)


def uniform_int(seed: Tensor, shape: Any, minval: Any, maxval: Any, d: _dt.DType) -> Tensor:
    """``random_uniform_int`` of the seed triple ``seed``."""
    return draw("random_uniform_int", seed, shape, d, cast(minval, d), cast(maxval, d))


def scale(z: Tensor, mean: Any, stddev: Any, d: _dt.DType) -> Tensor:
    """``z * stddev + mean`` in dtype ``d``."""
    return add(multiply(z, cast(stddev, d)), cast(mean, d))


def shift(u: Tensor, minval: Any, maxval: Any, d: _dt.DType) -> Tensor:
    """Uniform ``u`` in [0, 1) moved to [minval, maxval) (maxval None: 1)."""
    lo, hi = cast(minval, d), cast(1.0 if maxval is None else maxval, d)
    return add(multiply(u, subtract(hi, lo)), lo)


__all__ = ["set_seed", "normal", "uniform", "truncated_normal"]
