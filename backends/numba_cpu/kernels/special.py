"""The scalar special functions of ``backends/codegen/special.py`` compiled with Numba, for
the fused loops of generated code (``K.digamma(x)``)."""
from __future__ import annotations

import numba

from stagecraft.backends.codegen import special as _special
from stagecraft.backends.numba_cpu.kernels.rejection import compiled_with

_JIT = dict(cache=True, error_model="numpy", nogil=True)

lgamma = numba.njit(**_JIT)(_special.lgamma)
digamma = numba.njit(**_JIT)(_special.digamma)
erf = numba.njit(**_JIT)(_special.erf)
erfc = numba.njit(**_JIT)(_special.erfc)
erfinv = numba.njit(**_JIT)(_special.erfinv)
zeta = numba.njit(**_JIT)(_special.zeta)
# calls digamma: Numba needs the compiled one bound in its globals
random_gamma_grad = compiled_with(numba.njit(**_JIT), _special.random_gamma_grad, digamma=digamma)
