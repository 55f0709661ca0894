"""float16 and bfloat16 on the GPU: device arrays of a half dtype hold the tensor's 16-bit
patterns (NumPy's float16 / ml_dtypes' bfloat16 bytes, copied as they are); ops compute in
float32 device arrays and round once per op, as every backend does (``ir/ops/half.py``).

``widen`` decodes a half array into a new float32 array (exact); ``narrow`` rounds a float32
array to a half dtype (ties to even, overflow to infinity; a uniform draw rounds down to the
format's quantum, ``ir/ops/philox.py``) and encodes it; ``rounded`` rounds it but keeps float32
(the staged code's buffers). The conversions are ``backends/codegen/half.py``'s math-only
functions (no bit casts in device code), compiled as device functions.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from stagecraft.backends.codegen import half
from stagecraft.backends.numba_cuda.kernel_module import library_kernel
from stagecraft.backends.numba_cuda.launch import bind_cuda, grid
from stagecraft.backends.numba_cuda.launcher import launch
from stagecraft.backends.numba_cuda.memory import empty, view_as
from stagecraft.ir.dtypes import DType

# numba.cuda, bound by the kernel factory on first use (see launch.bind_cuda).
cuda: Any = None


@functools.lru_cache(maxsize=None)
def _kernels() -> tuple:
    bind_cuda(globals())
    round_to = cuda.jit(device=True)(half.round_to)
    from_bits = cuda.jit(device=True)(half.from_bits)
    to_bits = cuda.jit(device=True)(half.to_bits)

    @cuda.jit(device=True)
    def rounded_value(v, bits, emin, top, quantum):
        if quantum > 0.0:
            return math.floor(v / quantum) * quantum
        return round_to(v, bits, emin, top)

    @library_kernel
    def decode(out, x, fbits, bias, emax):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = from_bits(x[i], fbits, bias, emax)

    @library_kernel
    def encode(out, x, bits, emin, top, quantum, fbits, bias, emax):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = to_bits(rounded_value(x[i], bits, emin, top, quantum), fbits, bias, emax)

    @library_kernel
    def round_all(out, x, bits, emin, top, quantum):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = rounded_value(x[i], bits, emin, top, quantum)

    return decode, encode, round_all


def _quantum(d: DType, uniform: bool) -> float:
    return half.QUANTUM[d.name] if uniform else 0.0


def widen(x: Any) -> Any:
    """A new float32 device array with the values of the float16/bfloat16 device array ``x``.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(widen(to_device(np.array([1.5, -0.1], np.float16))))
    array([ 1.5       , -0.09997559], dtype=float32)
    """
    out = empty(x.shape, np.float32)
    if out.size:
        launch(_kernels()[0], grid(out.size), out, view_as(x, np.uint16),
               *half.ENCODINGS[np.dtype(x.dtype).name])
    return out


def narrow(x: Any, d: DType, uniform: bool = False) -> Any:
    """A new device array of half dtype ``d``: the float32 device array ``x`` rounded to it
    (``uniform``: rounded down to the format's quantum instead).

    >>> from stagecraft.ir import dtypes as dt
    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(narrow(to_device(np.array([1.00390625, 3.4e38], np.float32)), dt.bfloat16))
    array([1, inf], dtype=bfloat16)
    """
    bits = empty(x.shape, np.uint16)
    if bits.size:
        launch(_kernels()[1], grid(bits.size), bits, x, *half.FORMATS[d.name],
               _quantum(d, uniform), *half.ENCODINGS[d.name])
    return view_as(bits, d.np)


def rounded(x: Any, d: DType, uniform: bool = False) -> Any:
    """A new float32 device array: ``x`` rounded to half dtype ``d`` (see ``narrow``).

    >>> from stagecraft.ir import dtypes as dt
    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> to_host(rounded(to_device(np.array([0.1], np.float32)), dt.float16))
    array([0.09997559], dtype=float32)
    """
    out = empty(x.shape, np.float32)
    if out.size:
        launch(_kernels()[2], grid(out.size), out, x, *half.FORMATS[d.name],
               _quantum(d, uniform))
    return out
