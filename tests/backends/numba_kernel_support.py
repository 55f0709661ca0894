"""Shared by the Numba kernel tests: op-table examples with a stable seed per (op, dtype) and
the exact comparison with the NumPy reference kernel."""
from __future__ import annotations

import zlib

import numpy as np

from stagecraft.ir import OPS


def examples(name: str, d) -> list:
    """The op's examples for dtype ``d``, drawn with a seed fixed by (op, dtype)."""
    seed = zlib.crc32(f"numba/{name}/{d.name}".encode())
    return list(OPS[name].examples(np.random.default_rng(seed), d))


def check_same(got, want, where: str = "") -> None:
    """Same dtype and shape; equal values for ints and bools, within rtol 1e-6 for floats."""
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), where
    assert got.dtype == want.dtype, (where, got.dtype, want.dtype)
    assert got.shape == want.shape, (where, got.shape, want.shape)
    if want.dtype.kind == "f":
        atol = 1e-6 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)
