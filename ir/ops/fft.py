"""Discrete Fourier transforms over the innermost 1, 2 or 3 axes (TensorFlow's ``tf.signal``
FFT kernels): ``fft`` (complex to complex, ``inverse`` for ifft), ``rfft`` (real to the
non-negative frequencies, ``fft_length // 2 + 1`` of them on the last axis) and ``irfft`` (its
inverse, real results of ``fft_length``). Unnormalized forward, 1/n inverse, as TensorFlow's
and NumPy's. ``rfft`` crops or zero-pads its input to ``fft_length``; ``irfft`` crops or pads
its spectrum to ``fft_length[:-1] + (fft_length[-1] // 2 + 1,)`` and, like NumPy's and
TensorFlow's, ignores the imaginary parts of the zero- and Nyquist-frequency terms.

The reference kernels are NumPy's (pocketfft)."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.sampling import values
from stagecraft.ir.shapes import format_dims
from stagecraft.ir.types import TensorType

REAL = (dt.float32, dt.float64)
_TO_COMPLEX = {dt.float32: dt.complex64, dt.float64: dt.complex128}


def _check_rank(op: str, t: TensorType, rank: int) -> None:
    if rank not in (1, 2, 3):
        raise fail(op, f"rank must be 1, 2 or 3 (fft, fft2d, fft3d), got {rank}.")
    if t.shape is not None and len(t.shape) < rank:
        raise fail(op, f"the input must have rank >= {rank} for a {rank}-D transform, got "
                       f"shape {format_dims(t.shape)}.")


def _check_length(op: str, fft_length, rank: int) -> tuple:
    length = tuple(int(n) for n in fft_length)
    if len(length) != rank or any(n < 1 for n in length):
        raise fail(op, f"fft_length must hold {rank} positive lengths (one per transformed "
                       f"axis), got {list(fft_length)}.")
    return length


def _axes(rank: int) -> tuple:
    return tuple(range(-rank, 0))


def _fft_infer(types, rank, inverse):
    d = check_unified("fft", ("input",), types, (0,), dt.COMPLEX)
    _check_rank("fft", types[0], rank)
    return [TensorType(d, types[0].shape)]


def _fft_kernel(x, rank, inverse):
    x = np.asarray(x)
    if x.size == 0:
        return np.zeros(x.shape, x.dtype)
    fn = np.fft.ifftn if inverse else np.fft.fftn
    return fn(x, axes=_axes(rank)).astype(x.dtype, copy=False)


def _fft_examples(rng, d):
    cases = [((8,), 1), ((3, 5), 1), ((4, 6), 2), ((2, 3, 4), 2), ((2, 3, 4), 3), ((0, 4), 1)]
    return [Example((values(rng, d, s),), {"rank": r, "inverse": inv})
            for s, r in cases for inv in (False, True)]


fft_op = OpDef(
    name="fft", kind=Kind.LINALG, inputs=("input",), attrs=("rank", "inverse"),
    infer=_fft_infer, kernel=_fft_kernel, dtypes=dt.COMPLEX, unify=(0,),
    examples=_fft_examples, copying=True, test_dtypes=dt.COMPLEX,  # (none of them is classic)
    doc="The discrete Fourier transform over the innermost `rank` axes (`inverse`: the "
        "inverse transform, scaled by 1/n).")


def _rfft_infer(types, rank, fft_length):
    d = check_unified("rfft", ("input",), types, (0,), REAL)
    _check_rank("rfft", types[0], rank)
    length = _check_length("rfft", fft_length, rank)
    s = types[0].shape
    out = None if s is None else s[:-rank] + length[:-1] + (length[-1] // 2 + 1,)
    return [TensorType(_TO_COMPLEX[d], out)]


def _rfft_kernel(x, rank, fft_length):
    x = np.asarray(x)
    out_dtype = np.complex64 if x.dtype == np.float32 else np.complex128
    return np.fft.rfftn(x, s=tuple(fft_length), axes=_axes(rank)).astype(out_dtype, copy=False)


def _length_examples(cases):
    """Examples of an op with ``rank`` and ``fft_length``: (input shape, fft_length) pairs,
    with lengths that crop, pad and keep the input's."""
    def examples(rng, d):
        return [Example((values(rng, d, s),), {"rank": len(n), "fft_length": n})
                for s, n in cases]
    return examples


_rfft_examples = _length_examples([((8,), (8,)), ((7,), (7,)), ((2, 6), (4,)), ((5,), (8,)),
                                   ((4, 6), (4, 6)), ((2, 3, 5), (4, 4)),
                                   ((2, 3, 4), (2, 3, 4))])


rfft_op = OpDef(
    name="rfft", kind=Kind.LINALG, inputs=("input",), attrs=("rank", "fft_length"),
    infer=_rfft_infer, kernel=_rfft_kernel, dtypes=REAL, unify=(0,),
    examples=_rfft_examples, copying=True,
    doc="The DFT of a real tensor over the innermost `rank` axes, cropped or zero-padded to "
        "`fft_length` first; the last axis keeps the fft_length[-1] // 2 + 1 non-negative "
        "frequencies. float32 gives complex64, float64 complex128.")


def _irfft_infer(types, rank, fft_length):
    d = check_unified("irfft", ("input",), types, (0,), dt.COMPLEX)
    _check_rank("irfft", types[0], rank)
    length = _check_length("irfft", fft_length, rank)
    s = types[0].shape
    return [TensorType(d.real_dtype, None if s is None else s[:-rank] + length)]


def _irfft_kernel(x, rank, fft_length):
    x = np.asarray(x)
    out = np.fft.irfftn(x, s=tuple(fft_length), axes=_axes(rank))
    return out.astype(x.real.dtype, copy=False)


_irfft_examples = _length_examples([((5,), (8,)), ((4,), (7,)), ((2, 3), (4,)), ((3,), (8,)),
                                    ((4, 4), (4, 6)), ((2, 3, 3), (3, 4)),
                                    ((2, 3, 3), (2, 3, 5))])


irfft_op = OpDef(
    name="irfft", kind=Kind.LINALG, inputs=("input",), attrs=("rank", "fft_length"),
    infer=_irfft_infer, kernel=_irfft_kernel, dtypes=dt.COMPLEX, unify=(0,),
    examples=_irfft_examples, copying=True, test_dtypes=dt.COMPLEX,
    doc="The inverse of rfft: a real tensor whose innermost `rank` axes have `fft_length`, "
        "from the non-negative frequencies (cropped or zero-padded to fft_length[:-1] + "
        "(fft_length[-1] // 2 + 1,)).")
