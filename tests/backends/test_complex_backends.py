"""Complex tensors on the Numba backend beyond the generated tests' sample: the program of
``support.complex_program`` (complex linear algebra, eig, elementwise math, reductions, casts,
an FFT) staged against eager results; cuda/test_cuda_complex.py runs it on the CUDA backend."""
from __future__ import annotations

import numpy as np
import pytest

from support.complex_program import check_staged


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_program_on_numba_equals_eager(dtype):
    check_staged("numba", dtype)
