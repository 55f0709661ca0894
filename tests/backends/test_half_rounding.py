"""``backends/codegen/half.py`` (rounding to float16 / bfloat16 in compiled code) against
NumPy's float16 conversion and a bit-level bfloat16 reference (round to nearest even on the
top 16 bits of a float32), as plain Python and compiled by ``numba.njit``."""
from __future__ import annotations

import numpy as np
import pytest

from stagecraft.backends.codegen import half


def _float32_samples() -> np.ndarray:
    """Random bit patterns (every exponent), the half formats' edges and ties."""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    edges = [0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 6.1035156e-05, 5.9604645e-08,
             2.9802322e-08, 2.9802326e-08, 1.0 + 2**-11, 1.0 + 3 * 2**-11, 1.0 + 2**-8,
             1.0 + 3 * 2**-8, 3.3895314e38, 3.3961e38, 3.4e38, 1e-40, np.inf, -np.inf, np.nan]
    return np.concatenate([bits.view(np.float32), np.array(edges, np.float32)])


def _bf16_reference(x: np.ndarray) -> np.ndarray:
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, out)


def _check(fn, xs: np.ndarray, expected: np.ndarray) -> None:
    got = np.array([fn(float(x)) for x in xs], np.float64)
    with np.errstate(invalid="ignore"):  # (widening signaling NaNs)
        np.testing.assert_array_equal(got, expected.astype(np.float64))  # NaNs compare equal
    assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_round_f16_equals_numpys_float16():
    xs = _float32_samples()
    with np.errstate(over="ignore"):
        _check(half.round_f16, xs, xs.astype(np.float16).astype(np.float32))


def test_round_bf16_equals_round_to_nearest_even_on_the_top_bits():
    xs = _float32_samples()
    _check(half.round_bf16, xs, _bf16_reference(xs))


def test_every_float16_value_is_a_fixed_point():
    values = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    values = values[np.isfinite(values)].astype(np.float64)
    assert all(half.round_f16(v) == v for v in values)


def test_compiled_by_numba_gives_the_same():
    numba = pytest.importorskip("numba")
    compiled = numba.njit(half.round_to)
    xs = _float32_samples()[::20]
    for x in xs:
        for fmt in (half.F16, half.BF16):
            a, b = compiled(np.float32(x), *fmt), half.round_to(float(x), *fmt)
            assert a == b or (np.isnan(a) and np.isnan(b)), (x, a, b)



def _all_patterns(np_dtype) -> tuple[np.ndarray, np.ndarray]:
    bits = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    with np.errstate(invalid="ignore"):
        return bits, bits.view(np_dtype).astype(np.float64)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_bit_patterns_decode_and_encode_like_numpy(name):
    """``from_bits``/``to_bits`` (the CUDA kernels' conversions) over all 65536 patterns."""
    import ml_dtypes
    np_dtype = np.float16 if name == "float16" else ml_dtypes.bfloat16
    enc = half.ENCODINGS[name]
    bits, values = _all_patterns(np_dtype)
    decoded = np.array([half.from_bits(b, *enc) for b in bits])
    np.testing.assert_array_equal(decoded, values)   # NaNs compare equal
    assert np.array_equal(np.signbit(decoded), np.signbit(values))
    finite = ~np.isnan(values)
    encoded = np.array([half.to_bits(v, *enc) for v in values[finite]])
    np.testing.assert_array_equal(encoded, bits[finite])
    nan = np.array([half.to_bits(v, *enc) for v in (np.nan, -np.nan)], np.uint16)
    assert np.isnan(nan.view(np_dtype).astype(np.float32)).all()
    assert [bool(b >> 15) for b in nan] == [False, True]
