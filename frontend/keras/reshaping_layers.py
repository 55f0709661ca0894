"""Keras's reshaping layers: ``ZeroPadding1D/2D/3D``, ``Cropping1D/2D/3D``,
``UpSampling1D/2D/3D`` (nearest neighbour), ``Reshape``, ``Permute`` and ``RepeatVector``,
with Keras's arguments, defaults and configs (``Flatten`` is in ``core_layers``)."""
from __future__ import annotations

import math
from typing import Any

from stagecraft.eager.tensor import Tensor
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.conv_layers import normalize_data_format, normalize_tuple
from stagecraft.ops import array_ops as _a
from stagecraft.ops import manip_ops as _manip

__all__ = ["ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "Cropping1D", "Cropping2D",
           "Cropping3D", "UpSampling1D", "UpSampling2D", "UpSampling3D", "Reshape", "Permute",
           "RepeatVector"]


def _pairs(value: Any, rank: int, what: str, layer: str) -> tuple:
    """Keras's padding/cropping argument: an int (every side), ``rank`` ints (both sides of
    each dim) or ``rank`` (before, after) pairs -> ``rank`` pairs of non-negative ints. For
    one dim, Keras's form is one (before, after) pair."""
    def bad() -> ValueError:
        form = "a tuple of 2 ints (before, after)" if rank == 1 else \
            f"a tuple of {rank} ints or a tuple of {rank} tuples of 2 ints"
        return ValueError(f"{layer}: `{what}` should be a non-negative int or {form}. "
                          f"Received: {what}={value!r}.")
    if rank == 1 and isinstance(value, (list, tuple)) and len(value) == 2:
        value = (tuple(value),)
    if isinstance(value, int) and not isinstance(value, bool):
        pairs = ((value, value),) * rank
    elif isinstance(value, (list, tuple)) and len(value) == rank:
        pairs = tuple((v, v) if isinstance(v, int) else tuple(v) if isinstance(v, (list, tuple))
                      else (None, None) for v in value)
    else:
        raise bad()
    if any(len(p) != 2 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in p)
           for p in pairs):
        raise bad()
    return tuple((int(a), int(b)) for a, b in pairs)


def _check_rank(layer: Layer, inputs: Tensor, ndim: int) -> None:
    if inputs.shape.rank != ndim:
        raise ValueError(f'Input 0 of layer "{layer.name}" is incompatible with the layer: '
                         f'expected ndim={ndim}, found ndim={inputs.shape.rank}. Full shape '
                         f'received: {inputs.shape}.')


class _Spatial(Layer):
    """A layer over the ``rank`` spatial dims of ``(batch, *spatial, channels)`` inputs (or
    channels first)."""

    rank = 2

    def __init__(self, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format, type(self).__name__)

    def _spatial_axes(self, inputs: Tensor) -> list[int]:
        _check_rank(self, inputs, self.rank + 2)
        start = 1 if self.data_format == "channels_last" else 2
        return list(range(start, start + self.rank))

    def get_config(self) -> dict:
        config = super().get_config()
        if self.rank > 1:  # the 1-D layers have no data_format argument in Keras
            config["data_format"] = self.data_format
        return config


class _ZeroPadding(_Spatial):
    def __init__(self, padding: Any, data_format: str | None = None, **kwargs: Any):
        super().__init__(data_format, **kwargs)
        self.padding = _pairs(padding, self.rank, "padding", type(self).__name__)

    def call(self, inputs: Tensor) -> Tensor:
        """Pads the spatial dims with zeros."""
        axes = self._spatial_axes(inputs)
        widths = [[0, 0] for _ in range(self.rank + 2)]
        for a, p in zip(axes, self.padding):
            widths[a] = list(p)
        return _manip.pad(inputs, widths)

    def get_config(self) -> dict:
        return {**super().get_config(),
                "padding": self.padding[0] if self.rank == 1 else self.padding}


@serialization.register
class ZeroPadding1D(_ZeroPadding):
    """Zeros before and after the steps of ``(batch, steps, features)``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.ZeroPadding1D((1, 2))(tf.ones([1, 2, 1])).numpy().ravel().tolist()
    [0.0, 1.0, 1.0, 0.0, 0.0]
    """

    rank = 1

    def __init__(self, padding: Any = 1, **kwargs: Any):
        super().__init__(padding, **kwargs)


@serialization.register
class ZeroPadding2D(_ZeroPadding):
    """Rows and columns of zeros around images: ``padding`` an int, ``(rows, cols)`` or
    ``((top, bottom), (left, right))``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.ZeroPadding2D(((1, 0), (2, 3)))(tf.ones([1, 2, 2, 1])).shape
    TensorShape([1, 3, 7, 1])
    """

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any):
        super().__init__(padding, data_format, **kwargs)


@serialization.register
class ZeroPadding3D(_ZeroPadding):
    """Zeros around the three spatial dims of volumes.

    >>> import stagecraft as tf
    >>> tf.keras.layers.ZeroPadding3D()(tf.ones([1, 2, 2, 2, 1])).shape
    TensorShape([1, 4, 4, 4, 1])
    """

    rank = 3

    def __init__(self, padding: Any = (1, 1, 1), data_format: str | None = None,
                 **kwargs: Any):
        super().__init__(padding, data_format, **kwargs)


class _Cropping(_Spatial):
    def __init__(self, cropping: Any, data_format: str | None = None, **kwargs: Any):
        super().__init__(data_format, **kwargs)
        self.cropping = _pairs(cropping, self.rank, "cropping", type(self).__name__)

    def call(self, inputs: Tensor) -> Tensor:
        """Removes ``cropping`` elements from each end of the spatial dims."""
        index: list[Any] = [slice(None)] * (self.rank + 2)
        for a, (lo, hi) in zip(self._spatial_axes(inputs), self.cropping):
            size = inputs.shape[a]
            if size is not None and lo + hi >= size:
                raise ValueError(f'Layer "{self.name}" ({type(self).__name__}) cannot crop '
                                 f'{lo} + {hi} elements from dimension {a} of size {size} '
                                 f'(input shape {inputs.shape}): at least one must remain.')
            index[a] = slice(lo, -hi if hi else None)
        return inputs[tuple(index)]

    def get_config(self) -> dict:
        return {**super().get_config(),
                "cropping": self.cropping[0] if self.rank == 1 else self.cropping}


@serialization.register
class Cropping1D(_Cropping):
    """Crops steps from the start and end of ``(batch, steps, features)``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Cropping1D((1, 0))(tf.constant([[[1.0], [2.0], [3.0]]])).numpy().ravel()
    array([2., 3.], dtype=float32)
    """

    rank = 1

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any):
        super().__init__(cropping, **kwargs)


@serialization.register
class Cropping2D(_Cropping):
    """Crops rows and columns of images: ``cropping`` an int, ``(rows, cols)`` or ``((top,
    bottom), (left, right))``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Cropping2D(((1, 0), (1, 2)))(tf.ones([1, 4, 5, 3])).shape
    TensorShape([1, 3, 2, 3])
    """

    def __init__(self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None,
                 **kwargs: Any):
        super().__init__(cropping, data_format, **kwargs)


@serialization.register
class Cropping3D(_Cropping):
    """Crops the three spatial dims of volumes.

    >>> import stagecraft as tf
    >>> tf.keras.layers.Cropping3D()(tf.ones([1, 4, 4, 4, 1])).shape
    TensorShape([1, 2, 2, 2, 1])
    """

    rank = 3

    def __init__(self, cropping: Any = ((1, 1), (1, 1), (1, 1)), data_format: str | None = None,
                 **kwargs: Any):
        super().__init__(cropping, data_format, **kwargs)


class _UpSampling(_Spatial):
    def __init__(self, size: Any, data_format: str | None = None, **kwargs: Any):
        super().__init__(data_format, **kwargs)
        self.size = normalize_tuple(size, self.rank, "size", type(self).__name__)

    def call(self, inputs: Tensor) -> Tensor:
        """Repeats every element ``size`` times along each spatial dim (nearest)."""
        out = inputs
        for a, n in zip(self._spatial_axes(inputs), self.size):
            if n != 1:
                out = _manip.repeat(out, n, axis=a)
        return out

    def get_config(self) -> dict:
        config = {**super().get_config(), "size": self.size}
        return config if self.rank > 1 else {**config, "size": self.size[0]}


@serialization.register
class UpSampling1D(_UpSampling):
    """Repeats each step ``size`` times.

    >>> import stagecraft as tf
    >>> tf.keras.layers.UpSampling1D(2)(tf.constant([[[1.0], [2.0]]])).numpy().ravel().tolist()
    [1.0, 1.0, 2.0, 2.0]
    """

    rank = 1

    def __init__(self, size: int = 2, **kwargs: Any):
        super().__init__(size, **kwargs)


@serialization.register
class UpSampling2D(_UpSampling):
    """Repeats the rows and columns of images ``size`` times (nearest-neighbour
    interpolation, Keras's default; ``"bilinear"`` is not supported).

    >>> import stagecraft as tf
    >>> tf.keras.layers.UpSampling2D((2, 3))(tf.ones([1, 2, 2, 1])).shape
    TensorShape([1, 4, 6, 1])
    """

    def __init__(self, size: Any = (2, 2), data_format: str | None = None,
                 interpolation: str = "nearest", **kwargs: Any):
        super().__init__(size, data_format, **kwargs)
        if interpolation != "nearest":
            raise ValueError(f"UpSampling2D: interpolation={interpolation!r} is not supported "
                             f"by stagecraft; only 'nearest' is.")
        self.interpolation = interpolation

    def get_config(self) -> dict:
        return {**super().get_config(), "interpolation": self.interpolation}


@serialization.register
class UpSampling3D(_UpSampling):
    """Repeats the three spatial dims of volumes ``size`` times.

    >>> import stagecraft as tf
    >>> tf.keras.layers.UpSampling3D()(tf.ones([1, 1, 2, 1, 1])).shape
    TensorShape([1, 2, 4, 2, 1])
    """

    rank = 3

    def __init__(self, size: Any = (2, 2, 2), data_format: str | None = None, **kwargs: Any):
        super().__init__(size, data_format, **kwargs)


@serialization.register
class Reshape(Layer):
    """Reshapes each example to ``target_shape`` (the batch dim is kept; one entry may be -1).

    >>> import stagecraft as tf
    >>> tf.keras.layers.Reshape((3, -1))(tf.zeros([2, 12])).shape
    TensorShape([2, 3, 4])
    """

    def __init__(self, target_shape: Any, **kwargs: Any):
        super().__init__(**kwargs)
        shape = tuple(target_shape) if isinstance(target_shape, (list, tuple)) else None
        if shape is None or any(isinstance(d, bool) or not isinstance(d, int) or
                                (d < 1 and d != -1) for d in shape) or list(shape).count(-1) > 1:
            raise ValueError(f"Reshape: target_shape must be a tuple of positive ints, with at "
                             f"most one -1 for a dimension to infer. Received: "
                             f"target_shape={target_shape!r}.")
        self.target_shape = shape

    def call(self, inputs: Tensor) -> Tensor:
        """``reshape(inputs, (batch,) + target_shape)``."""
        dims = inputs.shape.as_list() if inputs.shape.rank is not None else None
        target = list(self.target_shape)
        if dims is None or None in dims[1:]:  # the -1 is resolved when the function runs
            return _a.reshape(inputs, [_a.shape(inputs)[0], *target])
        size, known = math.prod(dims[1:]), math.prod(d for d in target if d != -1)
        if (size % known if -1 in target else size != known):
            raise ValueError(f'Layer "{self.name}" (Reshape): the total size of the new array '
                             f'must be unchanged, input_shape = {dims[1:]}, output_shape = '
                             f'{target}.')
        return _a.reshape(inputs, [-1, *[size // known if d == -1 else d for d in target]])

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": self.target_shape}


@serialization.register
class Permute(Layer):
    """Permutes the non-batch dims: ``dims`` is a permutation of ``1..rank-1`` (the batch
    dim, 0, stays first).

    >>> import stagecraft as tf
    >>> tf.keras.layers.Permute((2, 1))(tf.zeros([4, 10, 64])).shape
    TensorShape([4, 64, 10])
    """

    def __init__(self, dims: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation argument `dims` for Permute Layer. The set "
                             f"of indices in `dims` must be consecutive and start from 1. "
                             f"Received dims={dims!r}.")

    def call(self, inputs: Tensor) -> Tensor:
        """Transposes by ``(0,) + dims``."""
        _check_rank(self, inputs, len(self.dims) + 1)
        return _a.transpose(inputs, [0, *self.dims])

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": self.dims}


@serialization.register
class RepeatVector(Layer):
    """Repeats each example's vector ``n`` times: ``(batch, features)`` becomes ``(batch, n,
    features)``.

    >>> import stagecraft as tf
    >>> tf.keras.layers.RepeatVector(3)(tf.constant([[1.0, 2.0]])).numpy().tolist()
    [[[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]]
    """

    def __init__(self, n: int, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"RepeatVector: n must be a positive integer. Received: n={n!r}.")
        self.n = int(n)

    def call(self, inputs: Tensor) -> Tensor:
        """``tile(expand_dims(inputs, 1), [1, n, 1])``."""
        _check_rank(self, inputs, 2)
        return _a.tile(_a.expand_dims(inputs, 1), [1, self.n, 1])

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}
