"""``tf.signal``: the FFTs against NumPy's, the shifts, windows, framing and the (inverse)
short-time Fourier transform, eagerly and staged, their errors, and a composite gradient
against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ir.errors import InvalidArgumentError

RNG = np.random.default_rng(3)


def _complex(shape, dtype=np.complex128):
    return (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)).astype(dtype)


@pytest.mark.parametrize("name,rank,inverse", [
    ("fft", 1, False), ("ifft", 1, True), ("fft2d", 2, False), ("ifft2d", 2, True),
    ("fft3d", 3, False), ("ifft3d", 3, True)])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_transforms_equal_numpy(name, rank, inverse, dtype):
    x = _complex((2, 3, 5, 6), dtype)
    got = getattr(tf.signal, name)(tf.constant(x))
    want = (np.fft.ifftn if inverse else np.fft.fftn)(x, axes=tuple(range(-rank, 0)))
    assert got.dtype.np == dtype
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("length", [None, "crop", "pad"])
def test_real_transforms_equal_numpy(rank, length):
    x = RNG.normal(size=(2, 4, 6, 7))
    axes = tuple(range(-rank, 0))
    dims = list(x.shape[-rank:])
    n = None if length is None else [d - 1 if length == "crop" else d + 2 for d in dims]
    forward = {1: tf.signal.rfft, 2: tf.signal.rfft2d, 3: tf.signal.rfft3d}[rank]
    inverse = {1: tf.signal.irfft, 2: tf.signal.irfft2d, 3: tf.signal.irfft3d}[rank]
    spectrum = forward(tf.constant(x), n)
    np.testing.assert_allclose(spectrum.numpy(), np.fft.rfftn(x, s=n, axes=axes), atol=1e-12)
    back = inverse(spectrum, n or dims)
    np.testing.assert_allclose(back.numpy(), np.fft.irfftn(np.fft.rfftn(x, s=n, axes=axes),
                                                           s=n or dims, axes=axes), atol=1e-12)
    # irfft's default length: 2 * (n - 1) on the last axis
    np.testing.assert_allclose(inverse(spectrum).numpy(),
                               np.fft.irfftn(spectrum.numpy(), axes=axes), atol=1e-12)


@pytest.mark.parametrize("axes", [None, 0, [1], (0, 1)])
def test_shifts_equal_numpy(axes):
    x = np.arange(35).reshape(5, 7)
    np.testing.assert_array_equal(tf.signal.fftshift(x, axes).numpy(),
                                  np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(tf.signal.ifftshift(x, axes).numpy(),
                                  np.fft.ifftshift(x, axes))


def test_windows():
    np.testing.assert_allclose(tf.signal.hann_window(8, periodic=False).numpy(),
                               np.hanning(8), atol=1e-7)
    np.testing.assert_allclose(tf.signal.hamming_window(8, periodic=False).numpy(),
                               np.hamming(8), atol=1e-7)
    np.testing.assert_allclose(tf.signal.hann_window(8).numpy(), np.hanning(9)[:8], atol=1e-7)
    assert tf.signal.hann_window(1).numpy().tolist() == [1.0]
    assert tf.signal.hann_window(5, dtype=tf.float64).dtype == tf.float64


def test_frame_and_overlap_and_add():
    x = np.arange(10.0)
    framed = tf.signal.frame(x, 4, 3)
    np.testing.assert_array_equal(framed.numpy(), [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]])
    padded = tf.signal.frame(x, 4, 3, pad_end=True, pad_value=-1.0)
    assert padded.numpy()[-1].tolist() == [9.0, -1.0, -1.0, -1.0]
    batch = tf.signal.frame(np.arange(12.0).reshape(2, 6), 2, 2)
    assert batch.shape == tf.TensorShape([2, 3, 2])
    np.testing.assert_array_equal(tf.signal.overlap_and_add(framed, 3).numpy(),
                                  x + np.isin(np.arange(10), [3, 6]) * x)


def test_stft_and_its_inverse():
    x = RNG.normal(size=(2, 100))
    s = tf.signal.stft(x, frame_length=16, frame_step=4, fft_length=32)
    frames = np.stack([x[:, i:i + 16] for i in range(0, 100 - 16 + 1, 4)], axis=1)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)
    np.testing.assert_allclose(s.numpy(), np.fft.rfft(frames * window, 32), atol=1e-6)
    y = tf.signal.inverse_stft(s, 16, 4, 32, window_fn=tf.signal.inverse_stft_window_fn(4))
    np.testing.assert_allclose(y.numpy()[:, 12:88], x[:, 12:88], atol=1e-5)


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_staged_signal_code_equals_eager(backend):
    def spectral(x):
        s = tf.signal.stft(x, 8, 2)
        z = tf.signal.fftshift(tf.signal.fft2d(s), axes=-1)
        return tf.signal.irfft(tf.signal.rfft(x, [12]), [12]), tf.abs(z), tf.signal.ifft(z)

    x = tf.constant(RNG.normal(size=(3, 20)).astype(np.float32))
    for got, want in zip(tf.function(spectral, backend=backend)(x), spectral(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-5)


def test_stft_gradient_matches_finite_differences():
    x0 = RNG.normal(size=(24,))
    w = RNG.normal(size=(5, 9))

    def loss(x):
        return tf.reduce_sum(tf.abs(tf.signal.stft(x, 8, 4, 16)) * w)

    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loss(x)
    got = tape.gradient(y, x).numpy()
    eps = 1e-6
    want = [(float(loss(tf.constant(x0 + eps * e))) - float(loss(tf.constant(x0 - eps * e))))
            / (2 * eps) for e in np.eye(24)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_errors_say_what_to_do():
    with pytest.raises(InvalidArgumentError, match=r"^tf\.signal\.fft: the input is float32, "
                                                   r"but fft takes complex64 or complex128"):
        tf.signal.fft(tf.ones([4]))
    with pytest.raises(InvalidArgumentError, match=r"^tf\.signal\.rfft: the input is "
                                                   r"complex128, but rfft takes float32"):
        tf.signal.rfft(tf.constant([1j]))
    with pytest.raises(InvalidArgumentError, match=r"^tf\.signal\.rfft2d: fft_length must "
                                                   r"hold 2 length"):
        tf.signal.rfft2d(tf.ones([4, 4]), [4])
    with pytest.raises(InvalidArgumentError, match=r"^fft: the input must have rank >= 2 for "
                                                   r"a 2-D transform"):
        tf.signal.fft2d(tf.constant([1j]))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def unknown(x):
        return tf.signal.rfft(x)

    with pytest.raises(InvalidArgumentError, match=r"^tf\.signal\.rfft: fft_length is needed"):
        unknown(tf.ones([4]))
