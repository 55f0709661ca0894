"""The Numba linalg kernels (``backends/numba_cpu/kernels/linalg.py``) against the op table.

For matmul, diag and diag_part, every dtype in ``OpDef.dtypes`` and every example, the kernel
path (``run_*`` adapters: plan helper + njit kernels) must give exactly the NumPy reference
kernel's dtype and shape, equal values for ints and values within rtol 1e-6 for floats; plus
broadcast batch shapes the examples do not cover, integer wrap-around and the plan helper.
"""
from __future__ import annotations


import numpy as np
import pytest

pytest.importorskip("numba")
pytest.importorskip("scipy")  # numba's np.dot (the float matmul path) needs SciPy's BLAS

from stagecraft.backends.numba_cpu.kernels import linalg as K
from stagecraft.ir import OPS

from support.compare import KERNEL_TOL, assert_arrays_match  # noqa: E402
from support.op_examples import examples as _examples  # noqa: E402
from support.op_examples import compiled_dtypes  # noqa: E402


def examples(name: str, d) -> list:
    """The op's examples, seeded apart from the staged tests' (the kernels' own draw)."""
    return _examples(name, d, key=("numba", name, d.name))


def check_same(got, want, where: str = "") -> None:
    """Exactly the reference kernel's dtype, shape and integers; floats within rtol 1e-6."""
    assert_arrays_match(got, want, where, KERNEL_TOL)

RUN = {"matmul": K.run_matmul, "diag": K.run_diag, "diag_part": K.run_diag_part}




@pytest.mark.parametrize("name,d", [pytest.param(n, d, id=f"{n}-{d.name}")
                                    for n in RUN for d in compiled_dtypes(n)])
def test_matches_reference(name, d):
    cases = examples(name, d)
    assert cases
    for i, ex in enumerate(cases):
        where = f"{name} {d.name} example {i}: {[np.shape(x) for x in ex.inputs]} {ex.attrs}"
        check_same(RUN[name](*ex.inputs, **ex.attrs), OPS[name].kernel(*ex.inputs, **ex.attrs),
                   where)


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_matmul_broadcast_batches(dtype):
    rng = np.random.default_rng(1)
    cases = [((3, 1, 4, 3), (2, 4, 2), True, False), ((4, 3), (2, 2, 4), True, True),
             ((2, 1, 3, 4), (1, 5, 2, 4), False, True), ((5, 3, 4), (5, 4, 2), False, False),
             ((0, 3, 4), (4, 2), False, False), ((3, 0), (0, 2), False, False)]
    for sa, sb, ta, tb in cases:
        a = rng.integers(-3, 4, sa).astype(dtype)
        b = rng.integers(-3, 4, sb).astype(dtype)
        check_same(K.run_matmul(a, b, ta, tb), OPS["matmul"].kernel(a, b, ta, tb),
                   f"{sa} {sb} {ta} {tb}")


def test_integer_matmul_wraps():
    a = np.full((2, 3), 2**20, np.int32)
    b = np.full((3, 2), 2**15, np.int32)
    check_same(K.run_matmul(a, b, False, False), np.matmul(a, b))


def test_matmul_plan_and_batch_index():
    ab, bb, a3, b3, o3, out = K.matmul_plan((3, 1, 4, 3), (2, 4, 2), True, False)
    assert (ab, bb, a3, b3, o3, out) == ((3, 1), (1, 2), (3, 4, 3), (2, 4, 2), (6, 3, 2),
                                         (3, 2, 3, 2))
    ia, ib = K.batch_index(ab, bb)
    np.testing.assert_array_equal(ia, [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(ib, [0, 1, 0, 1, 0, 1])
    assert K.matmul_plan((3, 4), (4, 2), False, False)[4:] == ((1, 3, 2), (3, 2))
    with pytest.raises(ValueError, match="do not broadcast"):
        K.matmul_plan((2, 3, 4), (3, 4, 2), False, False)
