"""The module generated CUDA kernels see as ``K``: the scalar special functions of
``backends/codegen/special.py`` (``K.digamma(x)`` in an elementwise expression), as device
functions on a GPU and as the plain Python functions under the simulator (where kernels run
as Python)."""
from __future__ import annotations

import functools
import types

from stagecraft.backends.codegen import special
from stagecraft.backends.numba_cpu.kernels.rejection import compiled_with
from stagecraft.backends.numba_cuda.launch import cuda_module, simulated

NAMES = ("lgamma", "digamma", "erf", "erfc", "erfinv", "zeta", "random_gamma_grad",
         "round_to")   # (round_to: float16/bfloat16 results, codegen/half.py)
CALLERS = {"random_gamma_grad": ("digamma",)}   # functions of NAMES that call others


@functools.lru_cache(maxsize=None)
def module() -> types.ModuleType:
    """``K`` for generated kernels.

    >>> module().erfinv(0.0)
    0.0
    """
    if simulated():
        return special
    m = types.ModuleType("stagecraft_cuda_special")
    device = cuda_module().jit(device=True)
    for name in NAMES:
        if name in CALLERS:
            continue
        setattr(m, name, device(getattr(special, name)))
    for name, callees in CALLERS.items():   # their callees bound to the device functions
        setattr(m, name, compiled_with(device, getattr(special, name),
                                       **{c: getattr(m, c) for c in callees}))
    return m
