"""tf.keras activation, merging and regularization layers: values vs NumPy, weights and
their names, gradients, configs, a staged check, and training-only behaviour (issue 18)."""
import numpy as np
import pytest

import stagecraft as tf

layers = tf.keras.layers
X = np.array([[[-2.0, 0.5, 3.0], [7.0, -0.25, 1.0]]])


@pytest.mark.parametrize("layer,ref", [
    (layers.ReLU(), lambda x: np.maximum(x, 0)),
    (layers.ReLU(max_value=2.0, negative_slope=0.1, threshold=0.5),
     lambda x: np.minimum(np.where(x > 0.5, x, 0.1 * (x - 0.5)), 2.0)),
    (layers.LeakyReLU(), lambda x: np.where(x >= 0, x, 0.3 * x)),
    (layers.LeakyReLU(alpha=0.1), lambda x: np.where(x >= 0, x, 0.1 * x)),
    (layers.ELU(alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    (layers.ThresholdedReLU(theta=0.75), lambda x: np.where(x > 0.75, x, 0)),
    (layers.Softmax(axis=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    (layers.Softmax(axis=[1, 2]), lambda x: np.exp(x) / np.exp(x).sum((1, 2), keepdims=True)),
], ids=lambda v: getattr(v, "name", ""))
def test_activation_layers_match_numpy_and_round_trip(layer, ref):
    np.testing.assert_allclose(layer(tf.constant(X)).numpy(), ref(X), rtol=1e-6)
    again = type(layer).from_config(layer.get_config())
    np.testing.assert_allclose(again(tf.constant(X)).numpy(), ref(X), rtol=1e-6)


def test_softmax_mask_zeroes_masked_entries():
    mask = np.array([[[1, 1, 0], [0, 1, 1]]], bool)
    got = layers.Softmax()(tf.constant(X), mask=tf.constant(mask)).numpy()
    e = np.where(mask, np.exp(X), 0)
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-6)


def test_prelu_weight_shape_name_values_and_gradient():
    layer = layers.PReLU(alpha_initializer=tf.keras.initializers.Constant(0.2),
                         shared_axes=[1])
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        y = layer(x)
        loss = tf.reduce_sum(y * y)
    assert [w.name for w in layer.weights] == [f"{layer.name}/alpha:0"]
    assert layer.alpha.shape == [1, 3]
    np.testing.assert_allclose(y.numpy(), np.where(X >= 0, X, 0.2 * X), rtol=1e-6)
    # d/d alpha of sum(y^2) = sum over shared axis of 2 * y * min(x, 0)
    want = (2 * np.where(X >= 0, X, 0.2 * X) * np.minimum(X, 0)).sum(1)
    np.testing.assert_allclose(tape.gradient(loss, layer.alpha).numpy(), want, rtol=1e-5)
    with pytest.raises(ValueError) as e:
        layers.PReLU(shared_axes=[3])(tf.constant(X))
    assert "shared_axes entry 3 is not an axis" in str(e.value).splitlines()[0]


def test_dot_layer_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    got = layers.Dot(axes=2)([tf.constant(a), tf.constant(b)]).numpy()
    np.testing.assert_allclose(got, np.einsum("bik,bjk->bij", a, b), rtol=1e-5, atol=1e-6)
    got = layers.Dot(axes=(1, 2))([tf.constant(a.transpose(0, 2, 1)), tf.constant(b)]).numpy()
    np.testing.assert_allclose(got, np.einsum("bki,bjk->bij", a.transpose(0, 2, 1), b),
                               rtol=1e-5, atol=1e-6)
    u, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    cos = layers.dot([tf.constant(u), tf.constant(v)], axes=1, normalize=True).numpy()
    want = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(cos, want[:, None], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError) as e:
        layers.Dot(axes=1)([tf.constant(a), tf.constant(b)])
    assert str(e.value).startswith("Dot: the contracted dimensions differ: 3")


def test_functional_merge_forms():
    a, b = tf.constant([[1.0, 5.0]]), tf.constant([[3.0, 2.0]])
    assert layers.add([a, b]).numpy().tolist() == [[4.0, 7.0]]
    assert layers.subtract([a, b]).numpy().tolist() == [[-2.0, 3.0]]
    assert layers.multiply([a, b]).numpy().tolist() == [[3.0, 10.0]]
    assert layers.average([a, b]).numpy().tolist() == [[2.0, 3.5]]
    assert layers.maximum([a, b]).numpy().tolist() == [[3.0, 5.0]]
    assert layers.minimum([a, b]).numpy().tolist() == [[1.0, 2.0]]
    assert layers.concatenate([a, b], axis=0).shape == [2, 2]
    inp = tf.keras.Input(shape=(2,))
    model = tf.keras.Model(inp, layers.dot([inp, layers.add([inp, inp])], axes=1))
    assert model(a).numpy().tolist() == [[52.0]]


def test_regularization_layers_are_identity_at_inference_and_noisy_in_training():
    x = tf.ones([64, 4, 8])
    for layer in [layers.SpatialDropout1D(0.5), layers.GaussianNoise(0.5),
                  layers.GaussianDropout(0.5), layers.AlphaDropout(0.5)]:
        np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
        assert not np.allclose(layer(x, training=True).numpy(), x.numpy())
        assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()


def test_spatial_dropout_drops_whole_channels():
    y = layers.SpatialDropout2D(0.5, seed=4)(tf.ones([8, 3, 3, 6]), training=True).numpy()
    per_map = y.reshape(8, 9, 6)
    assert np.all(per_map.min(1) == per_map.max(1)) and set(np.unique(y)) == {0.0, 2.0}
    y = layers.SpatialDropout2D(0.5, data_format="channels_first")(
        tf.ones([8, 6, 3, 3]), training=True).numpy().reshape(8, 6, 9)
    assert np.all(y.min(2) == y.max(2))


def test_alpha_dropout_keeps_mean_and_variance_of_standard_inputs():
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(200000,)).astype(np.float32))
    y = layers.AlphaDropout(0.2, seed=5)(x, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.var() - 1) < 0.03
    noise = layers.GaussianDropout(0.2, seed=5)(tf.ones([200000]), training=True).numpy()
    assert abs(noise.mean() - 1) < 0.01 and abs(noise.std() - 0.5) < 0.01


def test_activity_regularization_adds_to_model_losses_and_fit():
    inp = tf.keras.Input(shape=(2,))
    hidden = layers.Dense(2, kernel_initializer="ones")(inp)
    out = layers.ActivityRegularization(l1=0.1, l2=0.01)(hidden)
    model = tf.keras.Model(inp, out)
    x = np.array([[1.0, -2.0], [0.5, 0.5]], np.float32)
    model(x)
    h = x @ np.ones((2, 2))
    want = 0.1 * np.abs(h).sum() + 0.01 * (h * h).sum()
    assert len(model.losses) == 1
    np.testing.assert_allclose(float(model.losses[0]), want, rtol=1e-6)
    model(x)  # a new outermost call replaces the losses
    assert len(model.losses) == 1
    model.compile(optimizer="sgd", loss="mse")
    result = model.evaluate(x, np.zeros((2, 2), np.float32), verbose=0)
    np.testing.assert_allclose(result, (h * h).mean() + want, rtol=1e-5)


def test_staged_layers_match_eager():
    stack = [layers.PReLU(), layers.ReLU(max_value=1.0), layers.ELU(), layers.Softmax()]

    @tf.function
    def f(x, y):
        out = x
        for layer in stack:
            out = layer(out)
        return out, layers.Dot(axes=-1)([x, y])
    x, y = tf.constant(X.astype(np.float32)), tf.constant(X.astype(np.float32) * 2)
    got, dotted = f(x, y)
    want = x
    for layer in stack:
        want = layer(want)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(dotted.numpy(), np.einsum("bik,bjk->bij", X, 2 * X), rtol=1e-5)
