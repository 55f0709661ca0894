"""``stagecraft.signal``: TensorFlow's ``tf.signal`` — the FFT family (``fft``/``ifft`` in 1, 2
and 3 dimensions, ``rfft``/``irfft``), ``fftshift``/``ifftshift``, the Hann and Hamming
windows, ``frame`` and ``stft``.

The transforms act on the innermost axes, unnormalized forward and scaled by 1/n inverse, as
TensorFlow's; they are differentiable (TensorFlow's complex gradient convention). Eagerly and on
the reference backend they run NumPy's pocketfft; compiled code has its own FFT kernels.

>>> import stagecraft as tf
>>> x = tf.constant([1.0, 2.0, 3.0, 4.0])
>>> tf.signal.rfft(x).numpy().tolist()
[(10+0j), (-2+2j), (-2+0j)]
>>> tf.signal.irfft(tf.signal.rfft(x)).numpy().tolist()
[1.0, 2.0, 3.0, 4.0]
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from stagecraft.autodiff.fft_vjps import fit
from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import manip_ops as _manip
from stagecraft.ops import math_ops as _m
from stagecraft.ops.segment_ops import unsorted_segment_sum as _segment_sum

_O = dict(OPS)


def _tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _complex_input(name: str, x: Any) -> Tensor:
    x = _tensor(x)
    if not x.dtype.is_complex:
        raise InvalidArgumentError(
            f"tf.signal.{name}: the input is {x.dtype.name}, but {name} takes complex64 or "
            f"complex128 tensors. Use tf.signal.rfft for real signals, or make one with "
            f"tf.complex(x, tf.zeros_like(x)) / tf.cast(x, tf.complex64).")
    return x


def _transform(name: str, x: Any, rank: int, inverse: bool) -> Tensor:
    return bind(_O["fft"], _complex_input(name, x), rank=rank, inverse=inverse)


def fft(input: Any, name: str | None = None) -> Tensor:  # noqa: A002 (TF's argument name)
    """The discrete Fourier transform over the innermost axis of a complex tensor.

    >>> import stagecraft as tf
    >>> tf.signal.fft(tf.constant([1 + 0j, 0j, 0j, 0j])).numpy().tolist()
    [(1+0j), (1+0j), (1+0j), (1+0j)]
    """
    return _transform("fft", input, 1, False)


def ifft(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse DFT (scaled by 1/n) over the innermost axis.

    >>> import stagecraft as tf
    >>> tf.signal.ifft(tf.constant([4 + 0j, 0j, 0j, 0j])).numpy().tolist()
    [(1+0j), (1+0j), (1+0j), (1+0j)]
    """
    return _transform("ifft", input, 1, True)


def fft2d(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The 2-D DFT over the innermost two axes.

    >>> import stagecraft as tf
    >>> tf.signal.fft2d(tf.ones([2, 2], tf.complex64)).numpy().tolist()
    [[(4+0j), 0j], [0j, 0j]]
    """
    return _transform("fft2d", input, 2, False)


def ifft2d(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse 2-D DFT over the innermost two axes.

    >>> import stagecraft as tf
    >>> x = tf.complex(tf.random.normal([3, 4]), tf.random.normal([3, 4]))
    >>> bool(tf.reduce_all(tf.abs(tf.signal.ifft2d(tf.signal.fft2d(x)) - x) < 1e-5))
    True
    """
    return _transform("ifft2d", input, 2, True)


def fft3d(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The 3-D DFT over the innermost three axes.

    >>> import stagecraft as tf
    >>> tf.signal.fft3d(tf.ones([2, 2, 2], tf.complex128)).numpy()[0, 0, 0]
    np.complex128(8+0j)
    """
    return _transform("fft3d", input, 3, False)


def ifft3d(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse 3-D DFT over the innermost three axes.

    >>> import stagecraft as tf
    >>> tf.signal.ifft3d(tf.ones([2, 2, 2], tf.complex128)).numpy()[0, 0, 0]
    np.complex128(1+0j)
    """
    return _transform("ifft3d", input, 3, True)


def _lengths(name: str, x: Tensor, rank: int, fft_length: Any, default: Callable) -> tuple:
    if fft_length is None:
        dims = x.shape.as_list()[-rank:] if x.shape.rank is not None else None
        if dims is None or len(dims) < rank or any(d is None for d in dims):
            raise InvalidArgumentError(
                f"tf.signal.{name}: fft_length is needed when the innermost {rank} "
                f"dimension(s) are unknown when tracing (shape {x.shape}); pass fft_length=.")
        return default(dims)
    if isinstance(fft_length, Tensor):
        if fft_length._value is None:
            raise InvalidArgumentError(
                f"tf.signal.{name}: fft_length must be known when tracing (a Python list or "
                f"a constant), not a value computed inside the function.")
        fft_length = fft_length.numpy()
    length = tuple(int(n) for n in np.reshape(np.asarray(fft_length), -1))
    if len(length) != rank:
        raise InvalidArgumentError(f"tf.signal.{name}: fft_length must hold {rank} "
                                   f"length(s), got {list(length)}.")
    return length


def _real_input(name: str, x: Any) -> Tensor:
    x = _tensor(x)
    if x.dtype not in (_dt.float32, _dt.float64):
        raise InvalidArgumentError(
            f"tf.signal.{name}: the input is {x.dtype.name}, but {name} takes float32 or "
            f"float64 tensors (use tf.signal.fft for complex ones, tf.cast for integers).")
    return x


def _rfft(name: str, x: Any, rank: int, fft_length: Any) -> Tensor:
    x = _real_input(name, x)
    length = _lengths(name, x, rank, fft_length, tuple)
    return bind(_O["rfft"], x, rank=rank, fft_length=length)


def _irfft(name: str, x: Any, rank: int, fft_length: Any) -> Tensor:
    x = _complex_input(name, x)
    length = _lengths(name, x, rank, fft_length,
                      lambda dims: tuple(dims[:-1]) + (max(2 * (dims[-1] - 1), 1),))
    return bind(_O["irfft"], x, rank=rank, fft_length=length)


def rfft(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The DFT of a real signal over its innermost axis: the ``fft_length // 2 + 1``
    non-negative frequencies (the signal cropped or zero-padded to ``fft_length``, by default
    its length). float32 gives complex64, float64 complex128.

    >>> import stagecraft as tf
    >>> tf.signal.rfft(tf.constant([1.0, 1.0]), fft_length=[4]).numpy().tolist()
    [(2+0j), (1-1j), 0j]
    """
    return _rfft("rfft", input_tensor, 1, fft_length)


def irfft(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The real signal of length ``fft_length`` (by default ``2 * (n - 1)`` for ``n``
    frequencies) whose rfft is the input; the imaginary parts of the zero and Nyquist
    frequencies are ignored, as in TensorFlow.

    >>> import stagecraft as tf
    >>> tf.signal.irfft(tf.constant([2 + 0j, 1 - 1j, 0j])).numpy().tolist()
    [1.0, 1.0, 0.0, 0.0]
    """
    return _irfft("irfft", input_tensor, 1, fft_length)


def rfft2d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """``rfft`` over the innermost two axes (the full transform on the outer one).

    >>> import stagecraft as tf
    >>> tf.signal.rfft2d(tf.ones([2, 4])).shape
    TensorShape([2, 3])
    """
    return _rfft("rfft2d", input_tensor, 2, fft_length)


def irfft2d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The inverse of ``rfft2d``.

    >>> import stagecraft as tf
    >>> tf.signal.irfft2d(tf.signal.rfft2d(tf.ones([2, 4]))).numpy().tolist()
    [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    return _irfft("irfft2d", input_tensor, 2, fft_length)


def rfft3d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """``rfft`` over the innermost three axes.

    >>> import stagecraft as tf
    >>> tf.signal.rfft3d(tf.ones([2, 2, 4], tf.float64)).shape
    TensorShape([2, 2, 3])
    """
    return _rfft("rfft3d", input_tensor, 3, fft_length)


def irfft3d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Tensor:
    """The inverse of ``rfft3d``.

    >>> import stagecraft as tf
    >>> tf.signal.irfft3d(tf.signal.rfft3d(tf.ones([2, 2, 4]))).shape
    TensorShape([2, 2, 4])
    """
    return _irfft("irfft3d", input_tensor, 3, fft_length)


def _shift(x: Any, axes: Any, sign: int) -> Tensor:
    x = _tensor(x)
    rank = x.shape.rank
    if axes is None:
        axes = list(range(rank))
    elif isinstance(axes, int):
        axes = [axes]
    axes = [int(a) for a in axes]
    dims = x.shape.as_list()
    shifts = []
    for ax in axes:
        n = dims[ax]
        shifts.append(sign * (n // 2) if n is not None else
                      _m.floordiv(_a.shape(x)[ax], 2) * sign)
    if not axes:
        return x
    return _manip.roll(x, shifts, axes)


def fftshift(x: Any, axes: Any = None, name: str | None = None) -> Tensor:
    """Moves the zero frequency to the center: rolls each of ``axes`` (all by default) by
    half its length.

    >>> import stagecraft as tf
    >>> tf.signal.fftshift(tf.constant([0, 1, 2, 3, -4, -3, -2, -1])).numpy().tolist()
    [-4, -3, -2, -1, 0, 1, 2, 3]
    """
    return _shift(x, axes, 1)


def ifftshift(x: Any, axes: Any = None, name: str | None = None) -> Tensor:
    """The inverse of ``fftshift`` (they differ for odd lengths).

    >>> import stagecraft as tf
    >>> tf.signal.ifftshift(tf.constant([-2, -1, 0, 1, 2])).numpy().tolist()
    [0, 1, 2, -2, -1]
    """
    return _shift(x, axes, -1)


def _window(name: str, window_length: Any, periodic: Any, dtype: Any, a: float) -> Tensor:
    n = int(window_length.numpy() if isinstance(window_length, Tensor) else window_length)
    d = _dt.as_dtype(dtype)
    if not d.is_floating:
        raise InvalidArgumentError(f"tf.signal.{name}: dtype must be a floating dtype, got "
                                   f"{d.name}.")
    if n < 0:
        raise InvalidArgumentError(f"tf.signal.{name}: window_length must be >= 0, got {n}.")
    if n == 1:
        return _a.ones([1], d)
    denom = n if bool(periodic) else n - 1
    k = np.arange(n, dtype=np.float64)
    w = a - (1.0 - a) * np.cos(2.0 * math.pi * k / max(denom, 1))
    return convert_to_tensor(w.astype(d.np))


def hann_window(window_length: Any, periodic: bool = True, dtype: Any = _dt.float32,
                name: str | None = None) -> Tensor:
    """The Hann window 0.5 - 0.5 cos(2 pi k / N), N = length (periodic) or length - 1.

    >>> import stagecraft as tf
    >>> tf.signal.hann_window(4).numpy().tolist()
    [0.0, 0.5, 1.0, 0.5]
    """
    return _window("hann_window", window_length, periodic, dtype, 0.5)


def hamming_window(window_length: Any, periodic: bool = True, dtype: Any = _dt.float32,
                   name: str | None = None) -> Tensor:
    """The Hamming window 0.54 - 0.46 cos(2 pi k / N), N = length (periodic) or length - 1.

    >>> import stagecraft as tf
    >>> [round(v, 2) for v in tf.signal.hamming_window(4).numpy().tolist()]
    [0.08, 0.54, 1.0, 0.54]
    """
    return _window("hamming_window", window_length, periodic, dtype, 0.54)


def frame(signal: Any, frame_length: int, frame_step: int, pad_end: bool = False,
          pad_value: Any = 0, axis: int = -1, name: str | None = None) -> Tensor:
    """Slides a window of ``frame_length`` samples with hop ``frame_step`` along ``axis``:
    that axis becomes (frames, frame_length). With ``pad_end`` the signal is padded with
    ``pad_value`` so every sample starts a frame's worth of hops.

    >>> import stagecraft as tf
    >>> tf.signal.frame(tf.range(6), 3, 2).numpy().tolist()
    [[0, 1, 2], [2, 3, 4]]
    """
    x = _tensor(signal)
    rank = x.shape.rank
    ax = axis % rank
    n = x.shape.as_list()[ax]
    if n is None:
        raise InvalidArgumentError("tf.signal.frame: the framed axis must have a length known "
                                   "when tracing.")
    frame_length, frame_step = int(frame_length), int(frame_step)
    if frame_length < 1 or frame_step < 1:
        raise InvalidArgumentError(f"tf.signal.frame: frame_length and frame_step must be "
                                   f">= 1, got {frame_length} and {frame_step}.")
    if pad_end:
        frames = -(-n // frame_step)
        extra = max((frames - 1) * frame_step + frame_length - n, 0)
        if extra:
            pads = [[0, 0]] * rank
            pads[ax] = [0, extra]
            x = _manip.pad(x, pads, constant_values=pad_value)
    else:
        frames = max(1 + (n - frame_length) // frame_step, 0) if n >= frame_length else 0
    starts = np.arange(frames, dtype=np.int64)[:, None] * frame_step
    index = (starts + np.arange(frame_length, dtype=np.int64)[None, :]).astype(np.int32)
    return _a.gather(x, convert_to_tensor(index.reshape(frames, frame_length)), axis=ax)


def stft(signals: Any, frame_length: int, frame_step: int, fft_length: int | None = None,
         window_fn: Callable | None = hann_window, pad_end: bool = False,
         name: str | None = None) -> Tensor:
    """The short-time Fourier transform: ``rfft`` of each windowed frame of the innermost
    axis, ``fft_length`` (by default the smallest power of 2 >= frame_length) points each.

    >>> import stagecraft as tf
    >>> tf.signal.stft(tf.zeros([16]), frame_length=8, frame_step=4).shape
    TensorShape([3, 5])
    """
    x = _real_input("stft", signals)
    frame_length, frame_step = int(frame_length), int(frame_step)
    if fft_length is None:
        fft_length = 1 << max(frame_length - 1, 0).bit_length()
    framed = frame(x, frame_length, frame_step, pad_end=pad_end)
    if window_fn is not None:
        framed = _m.multiply(framed, window_fn(frame_length, dtype=x.dtype))
    return rfft(framed, [int(fft_length)])


def overlap_and_add(signal: Any, frame_step: int, name: str | None = None) -> Tensor:
    """Sums frames ``[..., frames, frame_length]`` placed ``frame_step`` apart: the inverse of
    ``frame`` up to the overlaps' sum, of length ``(frames - 1) * frame_step + frame_length``.

    >>> import stagecraft as tf
    >>> tf.signal.overlap_and_add(tf.ones([3, 4]), 2).numpy().tolist()
    [1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0]
    """
    x = _tensor(signal)
    dims = x.shape.as_list()
    if x.shape.rank is None or len(dims) < 2 or dims[-1] is None or dims[-2] is None:
        raise InvalidArgumentError("tf.signal.overlap_and_add: the signal needs rank >= 2 and "
                                   "its frame count and frame length known when tracing.")
    frames, length, step = dims[-2], dims[-1], int(frame_step)
    if step < 1:
        raise InvalidArgumentError(f"tf.signal.overlap_and_add: frame_step must be >= 1, got "
                                   f"{step}.")
    total = (frames - 1) * step + length if frames else 0
    # every sample's position in the output, summed per position (the adjoint of a gather)
    ids = (np.arange(frames)[:, None] * step + np.arange(length)[None, :]).reshape(-1)
    lead = x.shape.rank - 2
    flat = _a.reshape(x, [-1, frames * length])  # [batch, samples]
    summed = _segment_sum(_a.transpose(flat, [1, 0]), convert_to_tensor(ids.astype(np.int32)),
                          total)
    out = _a.transpose(summed, [1, 0])
    return _a.reshape(out, dims[:lead] + [total]) if lead else _a.reshape(out, [total])


def inverse_stft_window_fn(frame_step: int, forward_window_fn: Callable = hann_window,
                           name: str | None = None) -> Callable:
    """The window that makes ``inverse_stft`` invert ``stft`` with ``forward_window_fn``:
    the forward window divided by the overlapping sum of its squares.

    >>> import stagecraft as tf
    >>> x = tf.random.normal([64], seed=1)
    >>> s = tf.signal.stft(x, 16, 4)
    >>> y = tf.signal.inverse_stft(s, 16, 4, window_fn=tf.signal.inverse_stft_window_fn(4))
    >>> bool(tf.reduce_max(tf.abs(y[12:52] - x[12:52])) < 1e-4)
    True
    """
    def window(frame_length: int, dtype: Any = _dt.float32) -> Tensor:
        w = forward_window_fn(frame_length, dtype=dtype).numpy().astype(np.float64)
        step = int(frame_step)
        squares = np.zeros(frame_length + (-frame_length) % step)
        squares[:frame_length] = w * w
        denom = squares.reshape(-1, step).sum(axis=0)
        denom = np.tile(denom, len(squares) // step)[:frame_length]
        return convert_to_tensor((w / denom).astype(_dt.as_dtype(dtype).np))
    return window


def inverse_stft(stfts: Any, frame_length: int, frame_step: int, fft_length: int | None = None,
                 window_fn: Callable | None = hann_window, name: str | None = None) -> Tensor:
    """The signal of ``stft``'s frames: ``irfft`` of each frame, windowed, overlapped and
    added. With ``window_fn=inverse_stft_window_fn(frame_step)`` it inverts ``stft`` (where
    the frames overlap enough).

    >>> import stagecraft as tf
    >>> tf.signal.inverse_stft(tf.signal.stft(tf.ones([30]), 8, 4), 8, 4).shape
    TensorShape([28])
    """
    s = _complex_input("inverse_stft", stfts)
    frame_length, frame_step = int(frame_length), int(frame_step)
    if fft_length is None:
        fft_length = 1 << max(frame_length - 1, 0).bit_length()
    frames = irfft(s, [int(fft_length)])
    frames = fit(frames, [frame_length])
    if window_fn is not None:
        frames = _m.multiply(frames, window_fn(frame_length, dtype=frames.dtype))
    return overlap_and_add(frames, frame_step)


__all__ = ["fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d", "rfft", "irfft", "rfft2d",
           "irfft2d", "rfft3d", "irfft3d", "fftshift", "ifftshift", "hann_window",
           "hamming_window", "frame", "stft", "overlap_and_add", "inverse_stft",
           "inverse_stft_window_fn"]
