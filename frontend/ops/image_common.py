"""What every ``tf.image`` op shares: checking an image's rank, reading sizes that must be
known when the op is traced, the 3-D (one image) / 4-D (a batch) round trip, and applying a
fixed linear map along one axis (the resize kernels, Gaussian windows)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m


def as_image(image: Any, api: str, ranks: Sequence[int] = (3, 4), what: str = "image") -> Tensor:
    """``image`` as a tensor whose rank is one of ``ranks``."""
    x = convert_to_tensor(image)
    r = x.shape.rank
    if r is None:
        raise ValueError(f"{api}: '{what}' has unknown rank; give it a static shape "
                         f"(an input_signature with the rank of the images).")
    if r not in ranks:
        want = {(3, 4): "either 3 (HWC) or 4 (NHWC) dimensions", (3,): "3 (HWC) dimensions",
                (4,): "4 (NHWC) dimensions"}.get(tuple(ranks), f"rank in {tuple(ranks)}")
        raise ValueError(f"{api}: '{what}' (shape {tuple(x.shape.as_list())}) must have {want}; "
                         f"pass one image [height, width, channels] or a batch "
                         f"[batch, height, width, channels].")
    return x


def at_least_3d(image: Any, api: str, what: str = "image") -> Tensor:
    """``image`` as a tensor of rank >= 3 (the last three axes are height, width, channels)."""
    x = convert_to_tensor(image)
    if x.shape.rank is None or x.shape.rank < 3:
        raise ValueError(f"{api}: '{what}' (shape {x.shape}) must be at least three-dimensional "
                         f"([..., height, width, channels]).")
    return x


def rgb(image: Any, api: str, what: str = "image") -> Tensor:
    """``image`` as a tensor whose last axis holds 3 channels (R, G, B)."""
    x = convert_to_tensor(image)
    if x.shape.rank is None or x.shape.rank < 1 or x.shape.as_list()[-1] != 3:
        raise ValueError(f"{api}: the last dimension of '{what}' must be 3 (R, G, B), got shape "
                         f"{x.shape}.")
    return x


def static_int(value: Any, api: str, what: str) -> int:
    """The Python int value of a size argument that must be known when the op is traced."""
    known = _a.get_static_value(value) if isinstance(value, Tensor) else value
    if known is None:
        raise ValueError(f"{api}: {what} must be known when the function is traced (a Python "
                         f"int or a tensor computed from constants); it depends on the "
                         f"function's inputs.")
    if np.ndim(known) != 0:
        raise ValueError(f"{api}: {what} must be a scalar, got {np.asarray(known).tolist()}.")
    return int(known)


def static_float(value: Any, api: str, what: str) -> float | None:
    """The Python float value of a scalar argument, or None when it is a run-time tensor."""
    known = _a.get_static_value(value) if isinstance(value, Tensor) else value
    return None if known is None else float(np.asarray(known))


def dims(x: Tensor) -> list:
    """The static dimensions of ``x`` (None where unknown)."""
    return x.shape.as_list()


def static_hw(x: Tensor, api: str) -> tuple[int, int]:
    """The height and width (axes -3 and -2) of ``x``, which must be known."""
    h, w = dims(x)[-3], dims(x)[-2]
    if h is None or w is None:
        raise ValueError(f"{api}: the image's height and width must be known when the function "
                         f"is traced, got shape {x.shape}; give them in the input_signature "
                         f"(only the batch size may be None).")
    return int(h), int(w)


def batched(x: Tensor) -> tuple[Tensor, bool]:
    """A 4-D view of a 3-D or 4-D image, and whether it was 3-D."""
    if x.shape.rank == 3:
        return _a.expand_dims(x, 0), True
    return x, False


def unbatched(y: Tensor, was_3d: bool) -> Tensor:
    """Undoes ``batched``."""
    return _a.squeeze(y, [0]) if was_3d else y


def reshape_keeping(x: Tensor, new: Sequence[int], like: Tensor) -> Tensor:
    """``x`` reshaped to ``new`` followed by the dims of ``like`` after its first (read at run
    time when more than one of them is unknown)."""
    rest = dims(like)[1:]
    if sum(d is None for d in rest) <= 1:
        return _a.reshape(x, list(new) + [-1 if d is None else int(d) for d in rest])
    lead = convert_to_tensor(np.asarray(new, np.int32))
    return _a.reshape(x, _a.concat([lead, _a.shape(like)[1:]], 0))


def linear_map(x: Tensor, matrix: np.ndarray, axis: int) -> Tensor:
    """``y[..., i, ...] = sum_j matrix[i, j] * x[..., j, ...]`` along ``axis`` of a float
    tensor: one 2-D matmul between two transposes (differentiable, any backend).

    >>> import stagecraft as tf
    >>> x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> linear_map(x, np.array([[1.0, 1.0]]), 1).numpy().tolist()
    [[3.0], [7.0]]
    """
    r = x.shape.rank
    axis %= r
    perm = [axis] + [i for i in range(r) if i != axis]
    xt = _a.transpose(x, perm) if axis else x
    flat = _a.reshape(xt, [matrix.shape[1], -1])
    y = _m.matmul(convert_to_tensor(matrix.astype(x.dtype.np)), flat)
    y = reshape_keeping(y, [matrix.shape[0]], xt)
    return _a.transpose(y, [int(i) for i in np.argsort(perm)]) if axis else y


def const(value: Any, dtype: Any) -> Tensor:
    """``value`` in ``dtype``: a tensor is cast, a Python or NumPy number is converted exactly
    (not through float32, as casting a Python float would).

    >>> float(const(1 / 3, "float64")) == 1 / 3
    True
    """
    d = _dt.as_dtype(dtype)
    if isinstance(value, Tensor):
        return _m.cast(value, d)
    return convert_to_tensor(np.asarray(value, d.np))
