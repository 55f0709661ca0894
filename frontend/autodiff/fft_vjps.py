"""VJP rules of the FFT ops (``ir/ops/fft.py``), in TensorFlow's complex convention (the
gradient of a real loss is dL/dx + i dL/dy; see ``complex_vjps``).

With F the unnormalized DFT over the transformed axes (n points in all), ``fft`` is F, whose
adjoint is F^H = n * ifft, and ``ifft`` is F^H / n, whose adjoint is fft / n. ``rfft`` keeps
the first n_last // 2 + 1 rows of F applied to a real input: its adjoint zero-pads the
gradient to n_last, applies n * ifft and keeps the real part. ``irfft`` builds a Hermitian
spectrum from the half spectrum: its adjoint is rfft(g) / n with the non-zero, non-Nyquist
frequencies counted twice. Crops and zero-pads to ``fft_length`` are undone by padding and
cropping the gradient. ``RULES`` is merged into the VJP table by
:mod:`stagecraft.autodiff.vjps`.
"""
from __future__ import annotations

import numpy as np

from stagecraft.autodiff.rule_table import RuleTable
from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import constant
from stagecraft.ir import OPS
from stagecraft.ops import array_ops as a
from stagecraft.ops import manip_ops
from stagecraft.ops import math_ops as m

RULES = RuleTable()
_O = dict(OPS)


def fit(x, sizes):
    """``x`` with its innermost ``len(sizes)`` axes cropped or zero-padded (at the end) to
    ``sizes`` (static shapes)."""
    dims = x.shape.as_list()
    lead = len(dims) - len(sizes)
    crop = tuple(slice(None, n) if d > n else slice(None) for d, n in zip(dims[lead:], sizes))
    if any(s.stop is not None for s in crop):
        x = x[(Ellipsis,) + crop]
    pads = [max(n - min(d, n), 0) for d, n in zip(dims[lead:], sizes)]
    if any(pads):
        x = manip_ops.pad(x, [[0, 0]] * lead + [[0, p] for p in pads])
    return x


def _points(x, rank):
    """The number of points of the transform over the innermost ``rank`` axes of ``x``."""
    dims = x.shape.as_list()[-rank:]
    if any(d is None for d in dims):
        raise NotImplementedError(
            "The gradient of an FFT needs the transformed dimensions known when tracing; give "
            "the tf.function an input_signature with those dimensions.")
    return int(np.prod(dims))


@RULES.rule("fft")
def _fft(g, out, x, rank, inverse):
    n = _points(x, rank)
    back = bind(_O["fft"], g, rank=rank, inverse=not inverse)
    return (m.multiply(back, 1.0 / n if inverse else float(n)),)


@RULES.rule("rfft")
def _rfft(g, out, x, rank, fft_length):
    length = tuple(fft_length)
    full = fit(g, length)  # the last axis zero-padded to the whole spectrum
    back = bind(_O["fft"], full, rank=rank, inverse=True)
    grad = m.multiply(bind(_O["real"], back), float(np.prod(length)))
    return (fit(grad, x.shape.as_list()[-rank:]),)


@RULES.rule("irfft")
def _irfft(g, out, x, rank, fft_length):
    length = tuple(fft_length)
    half = length[-1] // 2 + 1
    spectrum = bind(_O["rfft"], g, rank=rank, fft_length=length)
    # the frequencies whose conjugates the Hermitian spectrum also holds count twice
    twice = np.full(half, 2.0)
    twice[0] = 1.0
    if length[-1] % 2 == 0:
        twice[-1] = 1.0
    weights = constant((twice / np.prod(length)).astype(g.dtype.np))
    grad = m.multiply(spectrum, bind(_O["complex"], weights, a.zeros_like(weights)))
    return (fit(grad, x.shape.as_list()[-rank:]),)
