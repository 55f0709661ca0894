"""Complex-number wrappers: ``tf.complex`` and ``tf.math.real/imag/conj/angle``.

As in TensorFlow, ``real``, ``imag``, ``conj`` and ``angle`` also take real tensors (the real
part of a real tensor is itself, its imaginary part zeros), and nothing converts between real
and complex tensors implicitly: ``tf.complex`` or ``tf.cast`` does it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

_O = dict(OPS)


def _tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:  # noqa: A001 (TF's name)
    """The complex tensor ``real + imag * 1j``: float32 parts give complex64, float64 parts
    complex128 (the parts broadcast and must share one dtype).

    >>> import stagecraft as tf
    >>> z = tf.complex(tf.constant([1.0, 2.0]), tf.constant([3.0, -1.0]))
    >>> z.dtype, z.numpy().tolist()
    (stagecraft.complex64, [(1+3j), (2-1j)])
    """
    real, imag = _tensor(real), _tensor(imag)
    if real.dtype != imag.dtype:
        raise InvalidArgumentError(
            f"tf.complex: 'real' is {real.dtype.name} but 'imag' is {imag.dtype.name}; both "
            f"parts must be float32 (for complex64) or both float64 (for complex128). Cast one "
            f"with tf.cast.")
    return bind(_O["complex"], real, imag)


def real(input: Any, name: str | None = None) -> Tensor:  # noqa: A002 (TF's argument name)
    """The real part of a complex tensor as its real dtype (complex64 gives float32); a real
    tensor is returned unchanged.

    >>> import stagecraft as tf
    >>> tf.math.real(tf.constant([1 + 2j, 3 - 4j])).numpy().tolist()
    [1.0, 3.0]
    """
    x = _tensor(input)
    return bind(_O["real"], x) if x.dtype.is_complex else x


def imag(input: Any, name: str | None = None) -> Tensor:  # noqa: A002 (TF's argument name)
    """The imaginary part of a complex tensor as its real dtype; zeros for a real tensor.

    >>> import stagecraft as tf
    >>> tf.math.imag(tf.constant([1 + 2j, 3 - 4j])).numpy().tolist()
    [2.0, -4.0]
    """
    x = _tensor(input)
    return bind(_O["imag"], x) if x.dtype.is_complex else _a.zeros_like(x)


def conj(x: Any, name: str | None = None) -> Tensor:
    """The complex conjugate ``real - imag * 1j``; a real tensor is returned unchanged.

    >>> import stagecraft as tf
    >>> tf.math.conj(tf.constant([1 + 2j])).numpy().tolist()
    [(1-2j)]
    """
    x = _tensor(x)
    return bind(_O["conj"], x) if x.dtype.is_complex else x


def angle(input: Any, name: str | None = None) -> Tensor:  # noqa: A002 (TF's argument name)
    """The argument ``atan2(imag, real)`` of each element, in (-pi, pi], as the real dtype; for
    a real tensor pi where it is negative and 0 elsewhere, as TensorFlow.

    >>> import stagecraft as tf
    >>> tf.math.angle(tf.constant([1j, -1 + 0j])).numpy().round(4).tolist()
    [1.5708, 3.1416]
    """
    x = _tensor(input)
    if x.dtype.is_complex:
        return bind(_O["angle"], x)
    return _m.where(_m.less(x, 0), _m.multiply(_a.ones_like(x), np.pi), _a.zeros_like(x))


__all__ = ["complex", "real", "imag", "conj", "angle"]
