"""``tf.vectorized_map``: TensorFlow vectorizes ``fn`` over the first dimension with its pfor
transform and falls back to a ``while_loop`` for ops it cannot convert. stagecraft runs
``fn`` once per element in a loop (``map_fn``) for every function: the results are those
TensorFlow gives, only the speed differs. A staged loop compiles to a native loop, so within
``@tf.function`` the cost per element is small."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.ops.functional_ops import map_fn

__all__ = ["vectorized_map"]


def vectorized_map(fn: Callable, elems: Any, fallback_to_while_loop: bool = True,
                   warn: bool = True) -> Any:
    """``fn`` applied to every slice of ``elems`` (a tensor or a structure of tensors) along
    the first dimension, the results stacked. Always computed by a loop over the slices (see
    the module docstring); ``fallback_to_while_loop`` and ``warn`` are accepted for
    TensorFlow compatibility and change nothing, since there is no vectorization to fall back
    from.

    >>> import stagecraft as tf
    >>> tf.vectorized_map(lambda r: tf.reduce_sum(r * r), tf.constant([[1, 2], [3, 4]]))
    ... # doctest: +ELLIPSIS
    <stagecraft.Tensor: shape=(2,), dtype=int32, numpy=array([ 5, 25]...)>
    """
    return map_fn(fn, elems)
