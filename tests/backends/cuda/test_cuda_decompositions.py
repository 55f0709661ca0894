"""The CUDA decomposition kernels on the values the op examples avoid: singular and
non-positive-definite matrices raise the reference kernels' messages, determinants of
singular matrices are exactly 0 (log: sign 0, -inf), and triangular solves broadcast their
batch dimensions."""
from __future__ import annotations

import numpy as np
import pytest

from stagecraft.backends.numba_cuda import eager
from stagecraft.backends.numba_cuda.memory import to_device, to_host
from stagecraft.ir.ops import decompositions as ref

SINGULAR = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])


@pytest.mark.parametrize("op,inputs,attrs,message", [
    ("matrix_inverse", [SINGULAR], {"adjoint": False}, ref.NOT_INVERTIBLE),
    ("matrix_solve", [SINGULAR, np.ones((2, 2, 1))], {"adjoint": True},
     ref.SOLVE_NOT_INVERTIBLE),
    ("cholesky", [np.array([[1.0, 2.0], [2.0, 1.0]])], {}, ref.CHOLESKY_FAILED),
])
def test_value_errors_are_the_reference_messages(op, inputs, attrs, message):
    with pytest.raises(ValueError) as info:
        eager.run(op, [to_device(x) for x in inputs], attrs)
    assert str(info.value) == message


def test_singular_determinants():
    x = to_device(SINGULAR)
    assert to_host(eager.run("matrix_determinant", [x], {})).tolist() == [0.0, 1.0]
    sign, logdet = eager.run("log_matrix_determinant", [x], {})
    assert to_host(sign).tolist() == [0.0, 1.0] and to_host(logdet).tolist() == [-np.inf, 0.0]


def test_triangular_solve_broadcasts_batches():
    a = np.tril(np.arange(1.0, 19.0).reshape(2, 1, 3, 3))
    b = np.arange(12.0).reshape(2, 3, 2)
    got = eager.run("triangular_solve", [to_device(a), to_device(b)],
                    {"lower": True, "adjoint": False})
    np.testing.assert_allclose(to_host(got), ref.triangular_solve_kernel(a, b, True, False))
