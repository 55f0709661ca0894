"""tf.keras.activations: values against NumPy references written from Keras's definitions,
gradients against central differences, and one staged (tf.function) check (issue 18)."""
import numpy as np
import pytest
from scipy import special

import stagecraft as tf

act = tf.keras.activations
X = np.array([[-3.5, -1.2, -0.4, 0.3, 0.9, 2.7]])
SELU_A, SELU_S = 1.6732632423543772, 1.0507009873554805


def relu6(x):
    return np.clip(x, 0, 6)


def sparsemax_ref(row):
    z = np.sort(row)[::-1]
    k = np.arange(1, len(z) + 1)
    support = 1 + k * z > np.cumsum(z)
    tau = (z[support].sum() - 1) / support.sum()
    return np.maximum(row - tau, 0)


REFERENCES = {
    "elu": (lambda x: act.elu(x, alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    "selu": (act.selu, lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x))),
    "gelu": (act.gelu, lambda x: 0.5 * x * (1 + special.erf(x / np.sqrt(2)))),
    "gelu_tanh": (lambda x: act.gelu(x, approximate=True), lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "celu": (lambda x: act.celu(x, alpha=2.0), lambda x: np.where(x >= 0, x, 2 * np.expm1(x / 2))),
    "leaky_relu": (act.leaky_relu, lambda x: np.where(x >= 0, x, 0.2 * x)),
    "relu_keras3": (lambda x: act.relu(x, negative_slope=0.1, max_value=2.0, threshold=0.5),
                    lambda x: np.minimum(np.where(x > 0.5, x, 0.1 * (x - 0.5)), 2.0)),
    "relu6": (act.relu6, relu6),
    "softsign": (act.softsign, lambda x: x / (1 + np.abs(x))),
    "silu": (act.silu, lambda x: x * special.expit(x)),
    "swish": (act.swish, lambda x: x * special.expit(x)),
    "exponential": (act.exponential, np.exp),
    "hard_sigmoid": (act.hard_sigmoid, lambda x: relu6(x + 3) / 6),
    "hard_silu": (act.hard_swish, lambda x: x * relu6(x + 3) / 6),
    "hard_tanh": (act.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "hard_shrink": (act.hard_shrink, lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    "soft_shrink": (act.soft_shrink, lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.5, 0)),
    "tanh_shrink": (act.tanh_shrink, lambda x: x - np.tanh(x)),
    "sparse_plus": (act.sparse_plus, lambda x: np.where(x <= -1, 0, np.where(
        x >= 1, x, (x + 1) ** 2 / 4))),
    "sparse_sigmoid": (act.sparse_sigmoid, lambda x: np.clip((x + 1) / 2, 0, 1)),
    "squareplus": (act.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    "log_sigmoid": (act.log_sigmoid, lambda x: np.log(special.expit(x))),
    "mish": (act.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "log_softmax": (act.log_softmax, lambda x: x - special.logsumexp(x, -1, keepdims=True)),
    "glu": (act.glu, lambda x: x[:, :3] * special.expit(x[:, 3:])),
    "sparsemax": (act.sparsemax, lambda x: np.stack([sparsemax_ref(r) for r in x])),
    "threshold": (lambda x: act.threshold(x, 0.0, -1.0), lambda x: np.where(x > 0.0, x, -1.0)),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_values_and_gradients(name):
    fn, ref = REFERENCES[name]
    x64 = tf.constant(X)
    np.testing.assert_allclose(fn(x64).numpy(), ref(X), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fn(tf.constant(X.astype(np.float32))).numpy(), ref(X),
                               rtol=2e-6, atol=2e-6)
    # Gradient of sum(w * f(x)) against central differences (X avoids the kinks).
    out_shape = ref(X).shape
    w = np.linspace(0.5, 1.5, int(np.prod(out_shape))).reshape(out_shape)
    with tf.GradientTape() as tape:
        tape.watch(x64)
        loss = tf.reduce_sum(fn(x64) * w)
    got = tape.gradient(loss, x64).numpy()
    eps, want = 1e-6, np.zeros_like(X)
    for i in range(X.size):
        d = np.zeros(X.size)
        d[i] = eps
        d = d.reshape(X.shape)
        want.flat[i] = ((ref(X + d) - ref(X - d)) * w).sum() / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_sparsemax_on_another_axis_and_sums_to_one():
    x = np.array([[0.1, 2.0], [1.5, -1.0], [1.2, 0.3]])
    got = act.sparsemax(tf.constant(x), axis=0).numpy()
    np.testing.assert_allclose(got, np.stack([sparsemax_ref(c) for c in x.T], 1), atol=1e-12)
    np.testing.assert_allclose(got.sum(0), [1.0, 1.0])


def test_celu_gradient_stays_finite_for_large_inputs():
    x = tf.constant([500.0, -500.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(act.celu(x, alpha=0.5))
    assert np.isfinite(tape.gradient(y, x).numpy()).all()


def test_staged_matches_eager():
    names = ["gelu", "mish", "hard_silu", "sparsemax", "glu", "log_softmax", "celu"]

    @tf.function
    def f(x):
        return [act.get(n)(x) for n in names]
    x = tf.constant(X.astype(np.float32))
    for n, got in zip(names, f(x)):
        np.testing.assert_allclose(got.numpy(), act.get(n)(x).numpy(), rtol=1e-6, atol=1e-7)


def test_get_serialize_deserialize_round_trip():
    for name in ["elu", "selu", "gelu", "hard_sigmoid", "hard_silu", "leaky_relu", "mish",
                 "relu6", "silu", "softplus", "softsign", "exponential", "linear",
                 "log_softmax", "sparsemax"]:
        fn = act.get(name)
        assert act.deserialize(act.serialize(fn)) is fn
    assert act.serialize(act.swish) == "silu" and act.get("hard_swish") is act.hard_silu
    assert act.deserialize({"class_name": "function", "config": "elu"}) is act.elu
    custom = lambda x: x  # noqa: E731
    assert act.deserialize("mine", custom_objects={"mine": custom}) is custom


def test_errors_name_the_problem():
    with pytest.raises(ValueError) as e:
        act.get("swishy")
    assert str(e.value).splitlines()[0].startswith("Unknown activation function: 'swishy'")
    with pytest.raises(ValueError) as e:
        act.glu(tf.ones([2, 3]))
    assert "must be known and even" in str(e.value).splitlines()[0]
    with pytest.raises(ValueError) as e:
        act.deserialize(3)
    assert str(e.value).splitlines()[0].startswith("keras.activations.deserialize: expected")
