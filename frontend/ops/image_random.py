"""``tf.image``'s random augmentations: ``random_*`` draw from ``tf.random``'s seeded streams
(an op ``seed`` with the global seed, as ``tf.random.uniform``), ``stateless_random_*`` depend
only on their ``seed`` (a shape [2] integer tensor, as ``tf.random.stateless_uniform``). Both
work eagerly, inside ``tf.function`` and in ``tf.data`` map functions: flips select with
``where`` and crops gather at the drawn offsets, so shapes stay static."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import random_ops as _r
from stagecraft.ops.image_color import adjust_brightness, adjust_contrast, adjust_hue
from stagecraft.ops.image_color import adjust_saturation
from stagecraft.ops.image_common import as_image, dims, static_float
from stagecraft.ops.image_geometry import take
from stagecraft.ops.manip_ops import reverse
from stagecraft.state.random_generator import stateless_uniform

Draw = Callable[..., Tensor]  # (shape, minval, maxval, dtype) -> uniform samples


def _stateful(seed: int | None) -> Draw:
    def draw(shape: Any, minval: Any, maxval: Any, dtype: Any = _dt.float32) -> Tensor:
        return _r.uniform(shape, minval, maxval, dtype, seed=seed)
    return draw


def _stateless(seed: Any) -> Draw:
    def draw(shape: Any, minval: Any, maxval: Any, dtype: Any = _dt.float32) -> Tensor:
        return stateless_uniform(shape, seed, minval, maxval, dtype)
    return draw


def _flip(api: str, image: Any, axis: int, draw: Draw) -> Tensor:
    x = as_image(image, api)
    if x.shape.rank == 3:
        return _m.where(_m.less(draw([], 0.0, 1.0), 0.5), reverse(x, [axis]), x)
    n = dims(x)[0]
    u = draw([n] if n is not None else _a.shape(x)[:1], 0.0, 1.0)
    flip = _a.reshape(_m.less(u, 0.5), [-1, 1, 1, 1])
    return _m.where(flip, reverse(x, [axis]), x)


def _range(api: str, lower: Any, upper: Any) -> tuple[float, float]:
    lo = static_float(lower, api, "lower")
    hi = static_float(upper, api, "upper")
    if lo is None or hi is None:
        raise ValueError(f"{api}: lower and upper must be known when the function is traced.")
    if hi <= lo:
        raise ValueError(f"{api}: upper must be > lower, got lower={lo}, upper={hi}.")
    if lo < 0:
        raise ValueError(f"{api}: lower must be non-negative, got {lo}.")
    return lo, hi


def _max_delta(api: str, max_delta: Any, limit: float | None = None) -> float:
    m = static_float(max_delta, api, "max_delta")
    if m is None:
        raise ValueError(f"{api}: max_delta must be known when the function is traced.")
    if m < 0:
        raise ValueError(f"{api}: max_delta must be non-negative, got {m}.")
    if limit is not None and m > limit:
        raise ValueError(f"{api}: max_delta must be <= {limit}, got {m}.")
    return m


def _by_factor(api: str, adjust: Callable, image: Any, lower: Any, upper: Any,
               draw: Draw) -> Tensor:
    """``adjust(image, f)`` with f drawn uniformly from [lower, upper)."""
    lo, hi = _range(api, lower, upper)
    return adjust(image, draw([], lo, hi))


def _by_delta(api: str, adjust: Callable, image: Any, max_delta: Any, draw: Draw,
              limit: float | None = None) -> Tensor:
    """``adjust(image, d)`` with d drawn uniformly from [-max_delta, max_delta)."""
    m = _max_delta(api, max_delta, limit)
    return adjust(image, draw([], -m, m))


def _crop(api: str, value: Any, size: Any, draw: Draw) -> Tensor:
    x = convert_to_tensor(value)
    known = _a.get_static_value(size) if isinstance(size, Tensor) else size
    if known is None:
        raise ValueError(f"{api}: size must be known when the function is traced.")
    want = [int(s) for s in np.asarray(known).reshape(-1)]
    have = dims(x)
    if len(want) != len(have):
        raise ValueError(f"{api}: size {want} must have one entry per dimension of the value "
                         f"(shape {x.shape}).")
    if any(h is not None and h < s for h, s in zip(have, want)):
        raise InvalidArgumentError(f"{api}: need value.shape >= size, got {have} and {want}.")
    limit = _m.add(_m.subtract(_a.shape(x), convert_to_tensor(np.asarray(want, np.int32))), 1)
    offsets = _m.floormod(draw([len(want)], 0, np.iinfo(np.int32).max, _dt.int32), limit)
    out = x
    for axis, (h, s) in enumerate(zip(have, want)):
        if h != s:
            out = take(out, axis, offsets[axis], s)
    return out


# ------------------------------------------------------------------------- stateful

def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """Mirrors each image horizontally with probability 1/2.

    >>> import stagecraft as tf
    >>> tf.image.random_flip_left_right(tf.ones([2, 2, 1]), seed=1).shape
    TensorShape([2, 2, 1])
    """
    return _flip("tf.image.random_flip_left_right", image, -2, _stateful(seed))


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """Mirrors each image vertically with probability 1/2.

    >>> import stagecraft as tf
    >>> tf.image.random_flip_up_down(tf.ones([2, 2, 1]), seed=1).shape
    TensorShape([2, 2, 1])
    """
    return _flip("tf.image.random_flip_up_down", image, -3, _stateful(seed))


def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """``adjust_brightness`` by a delta drawn uniformly from [-max_delta, max_delta).

    >>> import stagecraft as tf
    >>> y = tf.image.random_brightness(tf.fill([1, 1, 1], 0.5), 0.1, seed=1)
    >>> 0.4 <= float(y[0, 0, 0]) <= 0.6
    True
    """
    return _by_delta("tf.image.random_brightness", adjust_brightness, image, max_delta,
                     _stateful(seed))


def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """``adjust_contrast`` by a factor drawn uniformly from [lower, upper).

    >>> import stagecraft as tf
    >>> tf.image.random_contrast(tf.ones([2, 2, 3]), 0.5, 1.5, seed=1).shape
    TensorShape([2, 2, 3])
    """
    return _by_factor("tf.image.random_contrast", adjust_contrast, image, lower, upper,
                      _stateful(seed))


def random_saturation(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """``adjust_saturation`` by a factor drawn uniformly from [lower, upper).

    >>> import stagecraft as tf
    >>> tf.image.random_saturation(tf.ones([2, 2, 3]), 0.5, 1.5, seed=1).shape
    TensorShape([2, 2, 3])
    """
    return _by_factor("tf.image.random_saturation", adjust_saturation, image, lower, upper,
                      _stateful(seed))


def random_hue(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """``adjust_hue`` by a delta drawn uniformly from [-max_delta, max_delta), max_delta in
    [0, 0.5].

    >>> import stagecraft as tf
    >>> tf.image.random_hue(tf.ones([2, 2, 3]), 0.2, seed=1).shape
    TensorShape([2, 2, 3])
    """
    return _by_delta("tf.image.random_hue", adjust_hue, image, max_delta, _stateful(seed), 0.5)


def random_crop(value: Any, size: Any, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """A window of shape ``size`` (one entry per dimension of ``value``) at a uniformly drawn
    offset.

    >>> import stagecraft as tf
    >>> tf.image.random_crop(tf.zeros([5, 5, 3]), [2, 3, 3], seed=1).shape
    TensorShape([2, 3, 3])
    """
    return _crop("tf.image.random_crop", value, size, _stateful(seed))


# ------------------------------------------------------------------------ stateless

def stateless_random_flip_left_right(image: Any, seed: Any) -> Tensor:
    """``random_flip_left_right`` decided by ``seed`` alone (shape [2] integers).

    >>> import stagecraft as tf
    >>> a = tf.image.stateless_random_flip_left_right(tf.eye(3)[..., None], seed=[1, 2])
    >>> b = tf.image.stateless_random_flip_left_right(tf.eye(3)[..., None], seed=[1, 2])
    >>> bool(tf.reduce_all(a == b))
    True
    """
    return _flip("tf.image.stateless_random_flip_left_right", image, -2, _stateless(seed))


def stateless_random_flip_up_down(image: Any, seed: Any) -> Tensor:
    """``random_flip_up_down`` decided by ``seed`` alone (shape [2] integers).

    >>> import stagecraft as tf
    >>> tf.image.stateless_random_flip_up_down(tf.ones([2, 2, 1]), seed=[1, 2]).shape
    TensorShape([2, 2, 1])
    """
    return _flip("tf.image.stateless_random_flip_up_down", image, -3, _stateless(seed))


def stateless_random_brightness(image: Any, max_delta: float, seed: Any) -> Tensor:
    """``random_brightness`` with the delta drawn from ``seed`` alone.

    >>> import stagecraft as tf
    >>> tf.image.stateless_random_brightness(tf.ones([1, 1, 1]), 0.1, seed=[1, 2]).shape
    TensorShape([1, 1, 1])
    """
    return _by_delta("tf.image.stateless_random_brightness", adjust_brightness, image, max_delta,
                     _stateless(seed))


def stateless_random_contrast(image: Any, lower: float, upper: float, seed: Any) -> Tensor:
    """``random_contrast`` with the factor drawn from ``seed`` alone.

    >>> import stagecraft as tf
    >>> tf.image.stateless_random_contrast(tf.ones([2, 2, 3]), 0.5, 1.5, seed=[1, 2]).shape
    TensorShape([2, 2, 3])
    """
    return _by_factor("tf.image.stateless_random_contrast", adjust_contrast, image, lower, upper,
                      _stateless(seed))


def stateless_random_saturation(image: Any, lower: float, upper: float, seed: Any) -> Tensor:
    """``random_saturation`` with the factor drawn from ``seed`` alone.

    >>> import stagecraft as tf
    >>> tf.image.stateless_random_saturation(tf.ones([2, 2, 3]), 0.5, 1.5, seed=[1, 2]).shape
    TensorShape([2, 2, 3])
    """
    return _by_factor("tf.image.stateless_random_saturation", adjust_saturation, image, lower,
                      upper, _stateless(seed))


def stateless_random_hue(image: Any, max_delta: float, seed: Any) -> Tensor:
    """``random_hue`` with the delta drawn from ``seed`` alone.

    >>> import stagecraft as tf
    >>> tf.image.stateless_random_hue(tf.ones([2, 2, 3]), 0.2, seed=[1, 2]).shape
    TensorShape([2, 2, 3])
    """
    return _by_delta("tf.image.stateless_random_hue", adjust_hue, image, max_delta,
                     _stateless(seed), 0.5)


def stateless_random_crop(value: Any, size: Any, seed: Any, name: str | None = None) -> Tensor:
    """``random_crop`` with the offset drawn from ``seed`` alone.

    >>> import stagecraft as tf
    >>> tf.image.stateless_random_crop(tf.zeros([5, 5, 3]), [2, 3, 3], seed=[1, 2]).shape
    TensorShape([2, 3, 3])
    """
    return _crop("tf.image.stateless_random_crop", value, size, _stateless(seed))


__all__ = ["random_flip_left_right", "random_flip_up_down", "random_brightness",
           "random_contrast", "random_saturation", "random_hue", "random_crop",
           "stateless_random_flip_left_right", "stateless_random_flip_up_down",
           "stateless_random_brightness", "stateless_random_contrast",
           "stateless_random_saturation", "stateless_random_hue", "stateless_random_crop"]
