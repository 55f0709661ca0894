"""TensorFlow 2's top-level initializer classes (``tf.zeros_initializer``,
``tf.ones_initializer``, ``tf.constant_initializer``, ``tf.random_normal_initializer``,
``tf.random_uniform_initializer``): Keras's initializers, which have the same arguments and
defaults, plus a constant initializer that also takes a whole array as TF 2's does. Imported
on first use (it loads Keras's initializers)."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.tensor import Tensor
from stagecraft.keras import initializers as _k
from stagecraft.ops.array_ops import _static_dims, reshape
from stagecraft.eager.conversion import convert_to_tensor

__all__ = ["zeros_initializer", "ones_initializer", "constant_initializer",
           "random_normal_initializer", "random_uniform_initializer"]

zeros_initializer = _k.Zeros
ones_initializer = _k.Ones
random_normal_initializer = _k.RandomNormal
random_uniform_initializer = _k.RandomUniform


class constant_initializer(_k.Constant):  # noqa: N801 (TensorFlow's name)
    """Every element equal to a scalar ``value``, or the elements of an array ``value`` (its
    size must equal the shape's number of elements; it is reshaped to the shape).

    >>> import stagecraft as tf
    >>> tf.constant_initializer([1, 2, 3, 4])([2, 2]).numpy().tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """

    def __init__(self, value: Any = 0, support_partition: bool = False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray, Tensor))):
            raise TypeError(f"tf.constant_initializer: value must be a scalar, a list, a "
                            f"NumPy array or a tensor; got {type(value).__name__}.")
        super().__init__(value)

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        value = self.value.numpy() if isinstance(self.value, Tensor) else np.asarray(self.value)
        if value.ndim == 0:
            return super().__call__(shape, dtype, **kwargs)
        dims = _static_dims(shape, "tf.constant_initializer")
        if value.size != int(np.prod(dims, dtype=np.int64)):
            raise TypeError(f"tf.constant_initializer: value has {value.size} elements but the "
                            f"shape {list(dims)} has {int(np.prod(dims))}; give a scalar or "
                            f"exactly one value per element.")
        d = _k._dtype(dtype, "tf.constant_initializer", False)
        return reshape(convert_to_tensor(value.astype(d.np)), list(dims))
