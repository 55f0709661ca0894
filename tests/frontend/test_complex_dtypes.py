"""complex64/complex128 as TensorFlow 2 has them: the dtype objects, conversion of Python and
NumPy values, tf.complex and the part functions, casts, Python scalars next to complex
tensors, and the errors for implicit promotion."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ir.errors import InvalidArgumentError


def test_dtype_objects():
    for d, real in ((tf.complex64, tf.float32), (tf.complex128, tf.float64)):
        assert d.is_complex and not d.is_floating and not d.is_integer
        assert d.real_dtype is real and d.size == 2 * real.size
        assert tf.as_dtype(d.name) is d and tf.as_dtype(d.np) is d
    assert tf.as_dtype(complex) is tf.complex128 and tf.as_dtype("c64") is tf.complex64
    assert not tf.float32.is_complex and tf.float32.real_dtype is tf.float32


def test_conversion_follows_tensorflow():
    assert tf.constant(1 + 2j).dtype == tf.complex128
    assert tf.constant([1, 2.5, 3j]).dtype == tf.complex128
    assert tf.constant(np.array([1j], np.complex64)).dtype == tf.complex64
    assert tf.constant(2.0, tf.complex64).numpy() == 2 + 0j
    with pytest.raises(TypeError, match=r"^Cannot convert 1j to EagerTensor of dtype float32: "
                                        r"it is complex"):
        tf.constant(1j, tf.float32)


def test_python_scalars_adopt_the_complex_dtype():
    z = tf.constant([1 + 1j], tf.complex64)
    assert (z * 2.0).dtype == tf.complex64 and (z + 1j).dtype == tf.complex64
    assert (z * 2.0).numpy().tolist() == [2 + 2j]
    with pytest.raises(TypeError, match=r"^multiply: cannot use 1j as 'y' with a float32 tensor"):
        tf.constant([1.0]) * 1j


def test_no_implicit_promotion():
    with pytest.raises(InvalidArgumentError, match=r"^add: 'x' is complex64 but 'y' is "
                                                   r"complex128"):
        tf.add(tf.constant([1j], tf.complex64), tf.constant([1j]))
    with pytest.raises(InvalidArgumentError, match=r"^add: 'x' is complex128 but 'y' is float64"):
        tf.add(tf.constant([1j]), tf.constant([1.0], tf.float64))
    with pytest.raises(InvalidArgumentError, match=r"^tf\.complex: 'real' is float32 but 'imag' "
                                                   r"is float64"):
        tf.complex(tf.constant(1.0), tf.constant(1.0, tf.float64))
    with pytest.raises(InvalidArgumentError, match=r"^complex: 'x' has dtype int32, which "
                                                   r"complex does not support"):
        tf.complex(tf.constant(1), tf.constant(2))
    with pytest.raises(InvalidArgumentError, match=r"^less: 'x' has dtype complex128, which less "
                                                   r"does not support"):
        tf.less(tf.constant([1j]), tf.constant([2j]))


def test_parts_of_complex_and_real_tensors():
    z = tf.complex(tf.constant([3.0, -1.0]), tf.constant([4.0, 0.0]))
    assert z.dtype == tf.complex64
    assert tf.math.real(z).dtype == tf.float32 and tf.math.real(z).numpy().tolist() == [3, -1]
    assert tf.math.imag(z).numpy().tolist() == [4, 0]
    assert tf.abs(z).dtype == tf.float32 and tf.abs(z).numpy().tolist() == [5, 1]
    assert tf.math.conj(z).numpy().tolist() == [3 - 4j, -1 + 0j]
    np.testing.assert_allclose(tf.math.angle(z).numpy(), [np.arctan2(4, 3), np.pi], rtol=1e-6)
    x = tf.constant([-2.0, 3.0])
    assert tf.math.real(x) is x and tf.math.conj(x) is x
    assert tf.math.imag(x).numpy().tolist() == [0, 0]
    np.testing.assert_allclose(tf.math.angle(x).numpy(), [np.pi, 0.0])
    inf = tf.complex(tf.constant([np.inf]), tf.constant([0.0]))
    assert inf.numpy().tolist() == [complex(np.inf, 0.0)]  # not nan: parts set directly


def test_casts():
    z = tf.constant([1.5 + 2j, 0j, 1j])
    assert tf.cast(z, tf.float32).numpy().tolist() == [1.5, 0.0, 0.0]
    assert tf.cast(z, tf.int32).numpy().tolist() == [1, 0, 0]
    assert tf.cast(z, tf.bool).numpy().tolist() == [True, False, True]
    assert tf.cast(z, tf.complex64).dtype == tf.complex64
    assert tf.cast(tf.constant([2.0]), tf.complex128).numpy().tolist() == [2 + 0j]


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_casts_and_parts_staged(backend):
    def f(z):
        return (tf.cast(z, tf.float32), tf.cast(z, tf.bool), tf.cast(z, tf.uint8), tf.abs(z),
                tf.math.real(z), tf.math.imag(z), tf.complex(tf.math.imag(z), tf.math.real(z)))

    z = tf.constant([1.5 + 2j, 0j, 1j, -1.0 + 0.5j])
    for got, want in zip(tf.function(f, backend=backend)(z), f(z)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_complex_reductions_and_math():
    z = np.array([[1 + 1j, 2 - 1j], [0.5j, -1 + 0j]])
    t = tf.constant(z)
    np.testing.assert_allclose(tf.reduce_sum(t, 0).numpy(), z.sum(0))
    np.testing.assert_allclose(tf.reduce_mean(t).numpy(), z.mean())
    np.testing.assert_allclose(tf.reduce_prod(t, 1).numpy(), z.prod(1))
    np.testing.assert_allclose(tf.matmul(t, t).numpy(), z @ z)
    np.testing.assert_allclose((t / (t + 3.0)).numpy(), z / (z + 3))
    np.testing.assert_allclose(tf.pow(t, 2.0 + 0j).numpy(), z ** 2)
    np.testing.assert_allclose(tf.sqrt(t).numpy(), np.sqrt(z))
    assert tf.equal(t, t).numpy().all()
