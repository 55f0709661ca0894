"""Comparisons of results with expected values: same dtype, same shape, equal integers and
booleans, floats within the tolerance of the kind of check (``rtol``/``atol`` per dtype)."""
from __future__ import annotations

from typing import Any, Mapping

import ml_dtypes
import numpy as np

# float16/bfloat16 results are rounded once per op on every backend; a float32 function that
# differs in its last bit between libraries can still round to the neighbouring half value.
_F16, _BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
_HALF_TOL = {_F16: (2e-3, 1e-4), _BF16: (1.6e-2, 1e-3)}

# Another backend against the reference kernels: transcendentals (libm, libdevice) and
# reassociated sums differ in the last bits (README, "How closely eager and staged agree").
BACKEND_TOL: Mapping[np.dtype, tuple[float, float]] = {
    np.dtype(np.float32): (2e-5, 2e-6), np.dtype(np.float64): (1e-11, 1e-12), **_HALF_TOL}
# The same kernels run staged and eager: bit for bit, or nearly.
SAME_KERNELS_TOL: Mapping[np.dtype, tuple[float, float]] = {
    np.dtype(np.float32): (1e-12, 1e-12), np.dtype(np.float64): (1e-12, 1e-12), **_HALF_TOL}
# A Numba kernel against its NumPy reference kernel.
KERNEL_TOL: Mapping[np.dtype, tuple[float, float]] = {
    np.dtype(np.float32): (1e-6, 1e-6), np.dtype(np.float64): (1e-6, 1e-12), **_HALF_TOL}
# Gradients staged against eager: the same rules, possibly reassociated sums.
GRAD_RTOL, GRAD_ATOL = 1e-9, 1e-11


def assert_arrays_match(actual: np.ndarray, expected: Any, where: str = "",
                        tol: Mapping[np.dtype, tuple[float, float]] = BACKEND_TOL) -> None:
    """``actual`` (a NumPy array) has ``expected``'s dtype and shape and its values: equal for
    integers and booleans, within ``tol[dtype]`` (rtol, atol; NaNs equal) for floats.

    >>> assert_arrays_match(np.float32([1, 2]), np.float32([1, 2 + 1e-6]))
    """
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), f"{where}: not an array ({type(actual)})"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind == "c":  # the tolerance of the parts' dtype (complex64: float32)
        rtol, atol = tol[expected.real.dtype]
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=where)
    elif expected.dtype.kind == "f" or expected.dtype == _BF16:
        rtol, atol = tol[expected.dtype]
        if expected.dtype in _HALF_TOL:  # (NumPy's comparisons do not take bfloat16)
            actual, expected = actual.astype(np.float32), expected.astype(np.float32)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=where)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


def assert_tensors_match(actual: Any, expected: Any, where: str = "",
                         tol: Mapping[np.dtype, tuple[float, float]] = BACKEND_TOL,
                         device: str | None = None) -> None:
    """Tensors: ``assert_arrays_match`` on their values, their dtypes equal, and ``actual``
    on ``device`` when given.

    >>> import stagecraft as tf
    >>> assert_tensors_match(tf.constant([1.0]), tf.constant([1.0]), tol=SAME_KERNELS_TOL)
    """
    if device is not None:
        assert actual.device == device, f"{where}: result on {actual.device}"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    assert_arrays_match(np.asarray(actual.numpy()), np.asarray(expected.numpy()), where, tol)


def assert_same_grads(actual: list, expected: list, where: str,
                      rtol: float = GRAD_RTOL, atol: float = GRAD_ATOL) -> None:
    """Two lists of gradients: None in the same places, the same dtypes, values within
    ``rtol``/``atol``.

    >>> import stagecraft as tf
    >>> assert_same_grads([None, tf.constant(1.0)], [None, tf.constant(1.0)], "g")
    """
    assert len(actual) == len(expected), f"{where}: {len(actual)} gradients, {len(expected)}"
    for k, (a, e) in enumerate(zip(actual, expected)):
        if e is None or a is None:
            assert a is None and e is None, f"{where}: gradient {k} is {a} staged, {e} eager"
            continue
        assert a.dtype == e.dtype, f"{where}: gradient {k} dtype"
        np.testing.assert_allclose(np.asarray(a.numpy()), np.asarray(e.numpy()),
                                   rtol=rtol, atol=atol, err_msg=f"{where}: grad {k}")


def assert_tensor_equals_reference(got: Any, want: Any, dtype: str, what: str,
                                   rtol: float | None = None) -> None:
    """A public wrapper's result against an independent reference computed in float64 (or
    exact integers): ``got`` is a tensor of ``dtype`` (a name) and ``want``'s shape; floats
    within ``rtol`` (default 2e-6 for float32, 1e-13 for float64), others equal.

    >>> import stagecraft as tf
    >>> assert_tensor_equals_reference(tf.constant([1.0]) / 3.0, [1 / 3], "float32", "div")
    """
    import stagecraft as tf
    assert isinstance(got, tf.Tensor), what
    assert got.dtype == getattr(tf, dtype), f"{what}: dtype {got.dtype.name}, want {dtype}"
    want = np.asarray(want)
    assert tuple(got.shape.as_list()) == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    value = np.asarray(got.numpy())
    if dtype in ("float32", "float64"):
        tol = rtol if rtol is not None else (2e-6 if dtype == "float32" else 1e-13)
        np.testing.assert_allclose(value, want.astype(np.float64), rtol=tol, atol=tol,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(value, want.astype(dtype), err_msg=what)
