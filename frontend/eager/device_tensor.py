"""``DeviceTensor``: an eager tensor whose buffer lives on the GPU (a Numba device array).

CPU tensors are exactly ``Tensor`` and hold NumPy values; a GPU tensor is this subclass, so the
``type(x) is Tensor`` tests on ``bind``'s hot path already send GPU tensors to the slow path
(``stagecraft.eager.placement``) at no cost to CPU code.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.devices.device import GPU_DEVICE
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.shapes import TensorShape
from stagecraft.eager.tensor import Tensor, _constant_from_numpy, _numpy_text

_memory: Any = None  # stagecraft.backends.numba_cuda.memory, imported on first use


def memory() -> Any:
    """The Numba-CUDA memory module (imported lazily: importing it loads numba.cuda)."""
    global _memory
    if _memory is None:
        # lazy import: the backends (numba, numba-cuda) load on first use, not with stagecraft
        from stagecraft.backends.numba_cuda import memory as m
        _memory = m
    return _memory


class OffHostTensor(Tensor):
    """An eager tensor whose buffer is not a NumPy array in this process: a GPU tensor
    (``DeviceTensor``) or a tensor on a remote worker (``stagecraft.eager.remote``). Its
    ``_value`` has ``shape`` and ``dtype``; reading the value (``.numpy()``, printing,
    ``float()``, ``bool()``) copies it here through ``_host``, which subclasses define.
    """

    __slots__ = ()

    @property
    def dtype(self) -> _dt.DType:
        return _dt.from_numpy(self._value.dtype)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(tuple(self._value.shape))

    @property
    def ndim(self) -> int:
        return len(self._value.shape)

    def numpy(self) -> Any:
        """The value copied to the host (a NumPy scalar for 0-d tensors)."""
        v = self._host()
        return v[()] if v.ndim == 0 else v

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self._host()
        return a if dtype is None else a.astype(dtype)

    def __len__(self) -> int:
        shape = tuple(self._value.shape)
        if not shape:
            raise TypeError("Scalar tensor has no `len()`.")
        return shape[0]

    def __iter__(self):
        shape = tuple(self._value.shape)
        if not shape:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return (self[i] for i in range(shape[0]))

    def __format__(self, spec: str) -> str:
        if self.ndim == 0 and spec:
            return format(self._host()[()], spec)
        return format(str(self), spec)

    def __reduce__(self):
        return (_constant_from_numpy, (self._host(),))

    def __str__(self) -> str:
        return (f"stagecraft.Tensor({_numpy_text(self._host())}, shape={self.shape}, "
                f"dtype={self.dtype.name})")

    def __repr__(self) -> str:
        return (f"<stagecraft.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={_numpy_text(self._host(), is_repr=True)}>")


class DeviceTensor(OffHostTensor):
    """A tensor on GPU:0. It behaves like any eager tensor; reading its value (``.numpy()``,
    printing, ``float()``, ``bool()``) copies it to the host, and ``.cpu()`` makes a CPU copy.
    Ops on it run on the GPU (see ``stagecraft.device``).
    """

    __slots__ = ()

    @property
    def device(self) -> str:
        return GPU_DEVICE

    def _host(self) -> np.ndarray:
        return memory().to_host(self._value)


_new = object.__new__


def wrap_device(value: Any) -> DeviceTensor:
    """A GPU tensor around a device array (no copy, no checks)."""
    t = _new(DeviceTensor)
    t._value = value
    return t
