"""The Numba reduction kernels (``backends/numba_cpu/kernels/reduce.py``) against the op table.

For every reduction, arg-reduction and scan op, every dtype in ``OpDef.dtypes`` and every
example ``OpDef.examples`` produces, the kernel path (plan helper + njit kernel, through the
module's ``run_*`` adapters) must give exactly the NumPy reference kernel's dtype and shape,
equal values for ints/bools and values within rtol 1e-6 for floats.  Plus edge cases the
examples do not reach: empty reductions, NaN propagation, integer wrap-around, the plan
helper, and calling the kernels from another njit function (as generated code does).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

from stagecraft.backends.numba_cpu.kernels import reduce as K
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

REDUCE_OPS = tuple(K.REDUCE3)
ARG_OPS = tuple(K.ARG3)
SCAN_OPS = tuple(K.SCAN3)



def _cases():
    # One test per (op, dtype), looping over the examples: xdist then hands each worker
    # whole specializations, so the two workers rarely compile the same kernel twice.
    for name in REDUCE_OPS + ARG_OPS + SCAN_OPS:
        for d in compiled_dtypes(name):
            yield pytest.param(name, d, id=f"{name}-{d.name}")


def _run(name, x, attrs):
    if name in REDUCE_OPS:
        return K.run_reduce(name, x, attrs["axes"], attrs["keepdims"])
    if name in ARG_OPS:
        return K.run_arg(name, x, attrs["axis"], attrs["output_type"])
    return K.run_scan(name, x, attrs["axis"], attrs["exclusive"], attrs["reverse"])



@pytest.mark.parametrize("name,d", list(_cases()))
def test_matches_reference(name, d):
    cases = examples(name, d)
    assert cases
    for i, ex in enumerate(cases):
        (x,) = ex.inputs
        where = f"{name} {d.name} example {i}: shape {np.shape(x)} {ex.attrs}"
        check_same(_run(name, x, ex.attrs), OPS[name].kernel(x, **ex.attrs), where)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axes", [None, (0,), (1,), (0, 1)])
def test_empty(dtype, axes):
    x = np.zeros((0, 3), dtype)
    for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_mean"):
        for keepdims in (False, True):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = OPS[name].kernel(x, axes, keepdims)
            check_same(K.run_reduce(name, x, axes, keepdims), want)


def test_empty_bool_and_arg():
    x = np.zeros((0, 2), bool)
    for name in ("reduce_all", "reduce_any"):
        check_same(K.run_reduce(name, x, (0,), False), OPS[name].kernel(x, (0,), False))
    with pytest.raises(ValueError, match="Reduction axis is empty"):
        K.run_arg("argmax", np.zeros((2, 0)), 1, np.int64)


def test_nan_propagation():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 5.0, -1.0], [0.0, 2.0, 1.0]], np.float32)
    for name in ("reduce_max", "reduce_min", "reduce_sum", "reduce_mean"):
        for axes in ((0,), (1,), None):
            check_same(K.run_reduce(name, x, axes, False), OPS[name].kernel(x, axes, False))
    for name in ARG_OPS:
        for axis in (0, 1):
            check_same(K.run_arg(name, x, axis, np.int64),
                       getattr(np, name)(x, axis=axis).astype(np.int64))


def test_integer_wraparound():
    big = np.full((3, 5), 2**30, np.int32)
    for name in ("reduce_sum", "reduce_prod", "reduce_mean"):
        for axes in ((0,), (1,), None):
            with np.errstate(all="ignore"):
                want = OPS[name].kernel(big, axes, False)
            check_same(K.run_reduce(name, big, axes, False), want)
    for name in SCAN_OPS:
        with np.errstate(all="ignore"):
            want = OPS[name].kernel(big, 1, False, False)
        check_same(K.run_scan(name, big, 1, False, False), want)


def test_reduction_plan():
    assert K.reduction_plan((2, 3, 4), (0, 2)) == ((1, 0, 2), 3, 8, 1, (3,))
    assert K.reduction_plan((2, 3, 4), (0, 1)) == ((0, 1, 2), 1, 6, 4, (4,))
    assert K.reduction_plan((2, 3, 4), (-1,), True) == ((0, 1, 2), 6, 4, 1, (2, 3, 1))
    assert K.reduction_plan((2, 3, 4, 5), (1, 3)) == ((0, 2, 1, 3), 8, 15, 1, (2, 4))
    assert K.reduction_plan((2, 3), ()) == ((0, 1), 6, 1, 1, (2, 3))
    assert K.reduction_plan((), None) == ((), 1, 1, 1, ())
    assert K.scan_plan((2, 3, 4), -2) == (2, 3, 4, (2, 4))


def test_callable_from_njit():
    import numba

    plan = K.reduction_plan((3, 4), (0,), False)

    @numba.njit(error_model="numpy")
    def graph_fn(x):
        x3 = K.to3(x, (0, 1), 1, 3, 4)
        s = K.sum3(x3).reshape((4,))
        a = K.argmax3(np.ascontiguousarray(x).reshape(1, 3, 4), np.int32).reshape((4,))
        c = K.cumsum3(np.ascontiguousarray(x).reshape(1, 3, 4), True, False).reshape((3, 4))
        return s, a, c

    x = np.arange(12.0).reshape(3, 4)
    assert plan == ((0, 1), 1, 3, 4, (4,))
    s, a, c = graph_fn(x)
    check_same(s, x.sum(0))
    check_same(a, np.argmax(x, 0).astype(np.int32))
    check_same(c, OPS["cumsum"].kernel(x, 0, True, False))
