"""The complex program of ``support.complex_program`` staged on the CUDA backend
(complex elementwise kernels through cmath; complex linear algebra, eig and FFTs through the
host) against eager results."""
from __future__ import annotations

import numpy as np

from support.complex_program import check_staged


def test_complex_program_on_cuda_equals_eager():
    check_staged("cuda", np.complex128)
