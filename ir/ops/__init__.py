"""The op table: every primitive's ``OpDef``, collected into the frozen ``OPS`` mapping.

Adding an op means one record in a family module (listed in ``_FAMILIES``) plus one frontend
wrapper; the generated tests, the gradient table check and each backend's lowering table check
all read ``OPS``.
"""
from __future__ import annotations

import types
import warnings

from stagecraft.ir.ops import creation, elementwise, linalg, random, reduce, shape, slicing
from stagecraft.ir.ops import conv
from stagecraft.ir.ops import logsumexp, rejection, search, segment, special
from stagecraft.ir.ops import bitwise
from stagecraft.ir.ops import pooling
from stagecraft.ir.ops import decompositions
from stagecraft.ir.ops import complex_numbers
from stagecraft.ir.ops import fft
from stagecraft.ir.ops import eig
from stagecraft.ir.ops import softmax
from stagecraft.ir.ops.opdef import Example, Kind, OpDef

_FAMILIES = (elementwise, reduce, shape, slicing, linalg, creation, random, conv, pooling,
             segment, search, special, rejection, logsumexp, decompositions, bitwise,
             complex_numbers, fft, eig, softmax)

OPS: types.MappingProxyType = types.MappingProxyType(
    {v.name: v for m in _FAMILIES for v in vars(m).values() if isinstance(v, OpDef)})

# NumPy reports 1/0, log(0), sqrt(-1) as RuntimeWarnings; TensorFlow returns inf/nan silently,
# and so do our kernels (the filter covers only warnings raised from stagecraft's own modules,
# where kernels run, and its generated ones, ``stagecraft_gen_*``: simulated CUDA kernels).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"stagecraft(\.|_gen_)")

__all__ = ["OPS", "OpDef", "Kind", "Example"]
