"""The fast launch path's parameter packing (launcher.py), checked against Numba's calling
convention without a GPU; on a GPU every CUDA test launches through it."""
from __future__ import annotations

import ctypes
import types as pytypes

import numpy as np
import pytest
from numba.core import types

from stagecraft.backends.numba_cuda import launcher


def fake_array(shape, dtype=np.float32, pointer=4096, contiguous=True):
    size = int(np.prod(shape))
    itemsize = np.dtype(dtype).itemsize
    strides = tuple(int(np.prod(shape[i + 1:])) * itemsize for i in range(len(shape)))
    return pytypes.SimpleNamespace(
        size=size, ndim=len(shape), shape=shape, dtype=np.dtype(dtype),
        strides=strides if contiguous else tuple(2 * s for s in strides),
        gpu_data=pytypes.SimpleNamespace(device_pointer_value=pointer),
        is_c_contiguous=lambda: contiguous)


def packed(ty, value):
    params: list = []
    launcher._packer(ty)(value, params)
    return [p.value if isinstance(p, ctypes._SimpleCData) else p for p in params]


def test_an_array_is_packed_as_its_flat_view():
    # meminfo, parent, nitems, itemsize, data, shape, strides of the 1-D C-contiguous view
    assert packed(types.Array(types.float32, 1, "C"), fake_array((2, 3))) == \
        [0, 0, 6, 4, 4096, 6, 4]


def test_an_empty_array_passes_a_null_pointer():
    assert packed(types.Array(types.int64, 1, "C"), fake_array((0, 3), np.int64)) == \
        [0, 0, 0, 8, 0, 0, 8]


def test_scalars_and_tuples_follow_numba_types():
    assert packed(types.UniTuple(types.int64, 2), (3, 4)) == [3, 4]
    params: list = []
    launcher._packer(types.float32)(1.5, params)
    assert isinstance(params[0], ctypes.c_float) and params[0].value == 1.5
    launcher._packer(types.int32)(7, params)
    assert isinstance(params[1], ctypes.c_int32)
    assert packed(types.boolean, np.bool_(True)) == [True]


@pytest.mark.parametrize("ty, value, expected", [
    (types.complex64, np.complex64(1.5 - 2j), [1.5, -2.0]),
    (types.complex128, 0.25 + 4j, [0.25, 4.0]),
    (types.float16, np.float16(1.5), [15872])])
def test_complex_and_half_scalars_are_passed_as_numba_passes_them(ty, value, expected):
    params: list = []
    launcher._packer(ty)(value, params)
    assert [p.value for p in params] == expected
    assert [type(p) for p in params] == [{types.complex64: ctypes.c_float,
                                          types.complex128: ctypes.c_double}.get(
                                              ty, ctypes.c_uint16)] * len(expected)


def test_an_arrays_parameters_are_packed_once_and_kept_on_it():
    a, b = fake_array((2, 3)), fake_array((4,), pointer=8192)
    ty = types.Array(types.float32, 1, "C")
    assert packed(ty, a) == [0, 0, 6, 4, 4096, 6, 4]
    a.gpu_data = None   # (never happens: kept parameters are not computed again)
    assert packed(ty, a) == [0, 0, 6, 4, 4096, 6, 4]
    assert packed(ty, b) == [0, 0, 4, 4, 8192, 4, 4]


def test_a_non_contiguous_array_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="the CUDA backend needs C-contiguous device arrays"):
        packed(types.Array(types.float32, 1, "C"), fake_array((2, 3), contiguous=False))


def test_kinds_select_overloads_by_dtype_and_scalar_type():
    assert launcher.kind((1, 2.0, np.int32(3))) == (int, float, np.int32)
    with pytest.raises(TypeError, match="cannot pass a str to a CUDA kernel"):
        launcher.kind("x")
