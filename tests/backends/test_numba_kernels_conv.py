"""The Numba convolution kernels (``backends/numba_cpu/kernels/conv.py``) against the op
table's NumPy kernels (``ir/ops/conv.py``, themselves checked against a direct loop in
tests/frontend/test_conv_ops.py), through the ``run_*`` adapters that do what generated code
does: every branch of im2col / col2im (padding on every side, dilation, strides larger than the
kernel, groups, the identity im2col of 1x1 stride-1 convolutions, empty outputs, several
im2col chunks), float64 and (on a sample) float32, and adjointness
(``<conv(x, w), dy> = <x, dx> = <w, dw>``)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")
pytest.importorskip("scipy")  # numba's np.dot needs SciPy's BLAS

from stagecraft.backends.numba_cpu.kernels import conv as K  # noqa: E402
from stagecraft.ir.ops import conv as C  # noqa: E402

# (x shape, filter shape, strides, dilations, padding, groups)
CASES = {
    "2d_padded_all_sides": ((2, 6, 5, 3), (3, 2, 3, 4), (1, 1), (1, 1), ((2, 1), (1, 2)), 1),
    "2d_dilated_strided": ((1, 9, 8, 2), (3, 3, 2, 3), (2, 3), (2, 2), ((1, 1), (0, 2)), 1),
    "2d_stride_beyond_kernel": ((1, 7, 7, 2), (2, 2, 2, 2), (3, 3), (1, 1), ((0, 0), (0, 0)), 1),
    "2d_grouped": ((2, 5, 6, 6), (3, 2, 2, 9), (1, 2), (1, 1), ((1, 1), (1, 0)), 3),
    "2d_depthwise": ((1, 5, 5, 4), (3, 3, 1, 8), (1, 1), (2, 1), ((2, 2), (1, 1)), 4),
    "2d_depthwise_strided": ((2, 6, 7, 3), (2, 3, 1, 3), (2, 3), (1, 2), ((1, 0), (2, 2)), 3),
    "2d_pointwise": ((2, 4, 3, 5), (1, 1, 5, 6), (1, 1), (1, 1), ((0, 0), (0, 0)), 1),
    "2d_pointwise_strided": ((2, 5, 4, 5), (1, 1, 5, 6), (2, 2), (1, 1), ((0, 0), (0, 0)), 1),
    "1d": ((3, 10, 2), (4, 2, 3), (3,), (1,), ((2, 1),), 1),
    "3d_grouped": ((1, 4, 3, 5, 4), (2, 2, 3, 2, 4), (1, 1, 2), (1, 2, 1),
                   ((1, 0), (0, 1), (1, 1)), 2),
    "2d_empty_output": ((1, 2, 5, 2), (3, 3, 2, 2), (1, 1), (1, 1), ((0, 0), (0, 0)), 1),
    # Rows of 2304 float64 columns: im2col runs in chunks of 256 rows (of 400, across images).
    "2d_chunked": ((2, 14, 14, 256), (3, 3, 256, 2), (1, 1), (1, 1), ((0, 0), (0, 0)), 1),
    "2d_chunked_grouped": ((1, 20, 20, 512), (3, 3, 256, 4), (1, 1), (1, 1),
                           ((0, 0), (0, 0)), 2),
}


def _draw(case, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(case[0]).astype(dtype)
    w = rng.standard_normal(case[1]).astype(dtype)
    y_shape = C.conv_shapes("conv", case[0], case[1], *case[2:])
    return x, w, rng.standard_normal(y_shape).astype(dtype)


# float64 everywhere; float32 (a second set of compiled specializations) on a sample.
FLOAT32 = ("2d_padded_all_sides", "2d_grouped", "2d_depthwise")


@pytest.mark.parametrize("name, dtype", [(n, np.float64) for n in CASES] +
                         [(n, np.float32) for n in FLOAT32])
def test_kernels_match_the_numpy_kernels(name, dtype):
    case = CASES[name]
    x, w, dy = _draw(case, dtype)
    attrs = case[2:]
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    pairs = [(K.run_conv(x, w, *attrs), C.conv_kernel(x, w, *attrs)),
             (K.run_conv_backprop_input(w, dy, case[0], *attrs),
              C.conv_backprop_input_kernel(w, dy, case[0], *attrs)),
             (K.run_conv_backprop_filter(x, dy, case[1], *attrs),
              C.conv_backprop_filter_kernel(x, dy, case[1], *attrs))]
    for got, want in pairs:
        assert got.dtype == want.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, **tol)


@pytest.mark.parametrize("name", [n for n in CASES if n != "2d_empty_output"])
def test_backprops_are_the_adjoints_of_conv(name):
    case = CASES[name]
    x, w, dy = _draw(case, np.float64, seed=1)
    attrs = case[2:]
    value = np.sum(K.run_conv(x, w, *attrs) * dy)
    assert value != 0
    np.testing.assert_allclose(np.sum(x * K.run_conv_backprop_input(w, dy, case[0], *attrs)),
                               value, rtol=1e-12)
    np.testing.assert_allclose(np.sum(w * K.run_conv_backprop_filter(x, dy, case[1], *attrs)),
                               value, rtol=1e-12)


def test_padding_is_zero_not_stale_memory():
    # im2col allocates its columns uninitialized: every padded tap must be written as 0, so
    # a constant input gives exactly the count of real taps under each output.
    x = np.ones((1, 4, 4, 1))
    w = np.ones((3, 3, 1, 1))
    for _ in range(3):  # reuse freed buffers
        y = K.run_conv(x, w, (1, 1), (1, 1), ((1, 1), (1, 1)), 1)[0, :, :, 0]
        assert y.tolist() == [[4, 6, 6, 4], [6, 9, 9, 6], [6, 9, 9, 6], [4, 6, 6, 4]]


def test_geometry_pads_missing_spatial_dims():
    assert K.geometry((2,), (3,), ((1, 2),), 4) == (1, 1, 2, 1, 1, 3, 0, 0, 1, 4)
