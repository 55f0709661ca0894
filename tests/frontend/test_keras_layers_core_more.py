"""tf.keras layers: Group/Unit/RMS normalization, EinsumDense, Identity, the Convolution*
aliases, InputSpec checks, RandomHeight/Width, layers.serialize/deserialize, and saving a
model of the new layers (issue 18)."""
import numpy as np
import pytest

import stagecraft as tf

layers = tf.keras.layers
RNG = np.random.default_rng(9)


def group_norm_ref(x, groups, eps=1e-3):
    b, *mid, c = x.shape
    g = x.reshape(b, *mid, groups, c // groups)
    axes = tuple(range(1, g.ndim - 2)) + (g.ndim - 1,)
    mean, var = g.mean(axes, keepdims=True), g.var(axes, keepdims=True)
    return ((g - mean) / np.sqrt(var + eps)).reshape(x.shape)


def test_group_normalization_values_weights_and_gradient():
    x = RNG.normal(size=(2, 3, 3, 6)).astype(np.float32)
    layer = layers.GroupNormalization(groups=3, gamma_initializer="ones")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt)
        loss = tf.reduce_sum(out * tf.constant(RNG.normal(size=x.shape).astype(np.float32)))
    np.testing.assert_allclose(out.numpy(), group_norm_ref(x, 3), rtol=1e-4, atol=1e-5)
    assert [w.name.split("/")[-1] for w in layer.weights] == ["gamma:0", "beta:0"]
    grads = tape.gradient(loss, [xt, layer.gamma, layer.beta])
    assert all(g is not None and np.isfinite(g.numpy()).all() for g in grads)
    # the normalization removes a per-group shift: the input gradient sums to 0 per group
    per_group = grads[0].numpy().reshape(2, 9, 3, 2).sum(axis=(1, 3))
    np.testing.assert_allclose(per_group, 0, atol=1e-3)
    first = layers.GroupNormalization(groups=2, axis=1)(x.transpose(0, 3, 1, 2)).numpy()
    np.testing.assert_allclose(first.transpose(0, 2, 3, 1), group_norm_ref(x, 2), rtol=1e-4,
                               atol=1e-5)
    with pytest.raises(ValueError) as e:
        layers.GroupNormalization(groups=4)(x)
    assert "the number of groups (4) must divide the number of channels (6" in str(e.value)


def test_unit_and_rms_normalization():
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(layers.UnitNormalization()(x).numpy(),
                               x / np.linalg.norm(x, axis=-1, keepdims=True), rtol=1e-5)
    rms = layers.RMSNormalization(epsilon=1e-6)
    out = rms(x).numpy()
    np.testing.assert_allclose(out, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6),
                               rtol=1e-5)
    assert rms.scale.shape == [5] and rms.weights[0].name.endswith("scale:0")


def test_einsum_dense_shapes_values_and_config():
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    layer = layers.EinsumDense("abc,cde->abde", output_shape=(4, 2, 5), bias_axes="de",
                               activation="relu")
    out = layer(x).numpy()
    assert layer.kernel.shape == [3, 2, 5] and layer.bias.shape == [2, 5]
    want = np.maximum(np.einsum("abc,cde->abde", x, layer.kernel.numpy()) + layer.bias.numpy(),
                      0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    ell = layers.EinsumDense("...b,bc->...c", output_shape=7, bias_axes="c")
    assert ell(x).shape == [2, 4, 7] and ell.kernel.shape == [3, 7]
    again = layers.EinsumDense.from_config(layer.get_config())
    assert again.get_config() == layer.get_config()
    with pytest.raises(ValueError) as e:
        layers.EinsumDense("ab,bc->ac", output_shape=4, bias_axes="z")(x[:, 0])
    assert str(e.value).startswith("EinsumDense: bias axis 'z' is not an output axis")


def test_identity_aliases_and_input_spec():
    x = tf.ones([2, 3])
    assert layers.Identity()(x) is x
    assert layers.Convolution2D is layers.Conv2D and layers.SeparableConvolution1D is \
        layers.SeparableConv1D and layers.Convolution3DTranspose is layers.Conv3DTranspose

    class NeedsVectors(layers.Layer):
        def __init__(self):
            super().__init__()
            self.input_spec = layers.InputSpec(ndim=2, axes={-1: 3})

    layer = NeedsVectors()
    assert layer(x) is not None
    with pytest.raises(ValueError) as e:
        layer(tf.ones([2, 3, 1]))
    assert str(e.value) == ('Input 0 of layer "needs_vectors" is incompatible with the layer: '
                            'expected ndim=2, found ndim=3. Full shape received: (2, 3, 1)')
    with pytest.raises(ValueError) as e:
        layer(tf.ones([2, 4]))
    assert "expected axis -1 of input shape to have value 3" in str(e.value)


def test_random_height_and_width():
    img = RNG.random((2, 4, 6, 1)).astype(np.float32)
    h = layers.RandomHeight((0.5, 0.5))(img, training=True)
    np.testing.assert_allclose(h.numpy(), tf.image.resize(img, [6, 6]).numpy(), rtol=1e-6)
    w = layers.RandomWidth(0.5, seed=1)(img, training=True)
    assert w.shape[0] == 2 and w.shape[1] == 4 and 3 <= w.shape[2] <= 9
    np.testing.assert_array_equal(layers.RandomWidth(0.5)(img, training=False).numpy(), img)


NEW_LAYERS = [
    layers.ReLU(max_value=6.0), layers.LeakyReLU(0.1), layers.PReLU(shared_axes=[1]),
    layers.ELU(0.5), layers.ThresholdedReLU(0.5), layers.Softmax(axis=1),
    layers.SpatialDropout1D(0.2), layers.GaussianNoise(0.1), layers.GaussianDropout(0.1),
    layers.AlphaDropout(0.1), layers.ActivityRegularization(0.1, 0.2),
    layers.Rescaling(0.5, 1.0), layers.Identity(), layers.UnitNormalization(),
    layers.GroupNormalization(groups=2), layers.RMSNormalization(),
    layers.EinsumDense("abc,cd->abd", output_shape=(None, 3)),
    layers.TimeDistributed(layers.Dense(2)),
]


@pytest.mark.parametrize("layer", NEW_LAYERS, ids=lambda layer: type(layer).__name__)
def test_serialize_deserialize_round_trip(layer):
    again = layers.deserialize(layers.serialize(layer))
    assert type(again) is type(layer)
    assert {k: v for k, v in again.get_config().items() if k != "name"} == \
        {k: v for k, v in layer.get_config().items() if k != "name"}


def test_model_of_new_layers_saves_loads_and_stages(tmp_path):
    inp = tf.keras.Input(shape=(5, 4))
    x = layers.EinsumDense("abc,cd->abd", output_shape=(5, 6), bias_axes="d")(inp)
    x = layers.PReLU(shared_axes=[1])(x)
    x = layers.GroupNormalization(groups=3)(x)
    x = layers.TimeDistributed(layers.Dense(4))(x)
    x = layers.Attention(use_scale=True)([x, x])
    x = layers.RMSNormalization()(x)
    out = layers.Dense(1)(layers.Flatten()(x))
    model = tf.keras.Model(inp, out)
    data = RNG.normal(size=(3, 5, 4)).astype(np.float32)
    want = model(data).numpy()
    path = str(tmp_path / "new_layers.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded(data).numpy(), want, rtol=1e-5, atol=1e-6)
    staged = tf.function(lambda v: model(v))
    np.testing.assert_allclose(staged(tf.constant(data)).numpy(), want, rtol=1e-5, atol=1e-6)
    model.compile(optimizer=tf.keras.optimizers.Lion(1e-3), loss="huber")
    history = model.fit(data, np.ones((3, 1), np.float32), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def adaptive_ref(x, out, reduce):
    """PyTorch's adaptive bins over axes 1..k of a channels-last array, by loops."""
    k = len(out)
    result = np.zeros((x.shape[0], *out, x.shape[-1]))
    for idx in np.ndindex(*out):
        window = x
        for axis, (i, o) in enumerate(zip(idx, out), start=1):
            n = x.shape[axis]
            start, end = (i * n) // o, -(-((i + 1) * n) // o)
            window = np.take(window, range(start, end), axis=axis)
        result[(slice(None), *idx)] = reduce(window, axis=tuple(range(1, k + 1)))
    return result


@pytest.mark.parametrize("cls,reduce,out", [
    (layers.AdaptiveAveragePooling1D, np.mean, (3,)),
    (layers.AdaptiveMaxPooling1D, np.max, (4,)),
    (layers.AdaptiveAveragePooling2D, np.mean, (3, 2)),
    (layers.AdaptiveMaxPooling2D, np.max, (2, 4)),
    (layers.AdaptiveAveragePooling3D, np.mean, (2, 3, 2)),
    (layers.AdaptiveMaxPooling3D, np.max, (3, 2, 2)),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_adaptive_pooling_matches_numpy(cls, reduce, out):
    shape = (2,) + (7, 5, 6)[:len(out)] + (3,)
    x = RNG.normal(size=shape).astype(np.float32)
    layer = cls(out if len(out) > 1 else out[0])
    np.testing.assert_allclose(layer(x).numpy(), adaptive_ref(x, out, reduce), rtol=1e-5,
                               atol=1e-6)
    perm = [0, len(shape) - 1] + list(range(1, len(shape) - 1))
    first = cls(out, data_format="channels_first")(np.transpose(x, perm)).numpy()
    back = [0] + list(range(2, len(shape))) + [1]
    np.testing.assert_allclose(np.transpose(first, back), adaptive_ref(x, out, reduce),
                               rtol=1e-5, atol=1e-6)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        total = tf.reduce_sum(layer(xt))
    grad = tape.gradient(total, xt).numpy()
    assert grad.shape == x.shape and np.isfinite(grad).all() and grad.sum() > 0
    assert cls.from_config(layer.get_config()).get_config() == layer.get_config()


def test_reversible_embedding_tied_untied_and_soft_cap():
    layer = layers.ReversibleEmbedding(7, 3, logit_soft_cap=2.0)
    ids = np.array([[1, 5]])
    hidden = layer(ids)
    np.testing.assert_allclose(hidden.numpy(), layer.embeddings.numpy()[ids], rtol=1e-6)
    h = RNG.normal(size=(2, 3)).astype(np.float32)
    logits = layer(h, reverse=True).numpy()
    np.testing.assert_allclose(logits, np.tanh(h @ layer.embeddings.numpy().T / 2) * 2,
                               rtol=1e-5, atol=1e-6)
    untied = layers.ReversibleEmbedding(7, 3, tie_weights=False)
    untied(ids)
    assert untied.reverse_embeddings.shape == [3, 7]
    np.testing.assert_allclose(untied(h, reverse=True).numpy(),
                               h @ untied.reverse_embeddings.numpy(), rtol=1e-5, atol=1e-6)
    assert layers.ReversibleEmbedding.from_config(layer.get_config()).logit_soft_cap == 2.0


def test_spectral_normalization_drives_the_kernel_norm_to_one():
    layer = layers.SpectralNormalization(layers.Dense(4), power_iterations=3)
    x = RNG.normal(size=(2, 5)).astype(np.float32)
    before = layer(x).numpy()  # inference: the kernel as initialized
    np.testing.assert_allclose(before, x @ layer.layer.kernel.numpy(), rtol=1e-5, atol=1e-6)
    step = tf.function(lambda v: layer(v, training=True))
    for _ in range(5):
        step(x)
    sigma = np.linalg.svd(layer.layer.kernel.numpy(), compute_uv=False)[0]
    np.testing.assert_allclose(sigma, 1.0, rtol=1e-3)
    assert not layer.vector_u.trainable and layer.vector_u.shape == [1, 4]
    assert type(layers.deserialize(layers.serialize(layer)).layer) is layers.Dense


def test_tfsm_layer_calls_an_endpoint_and_trains_its_variables(tmp_path):
    class Affine(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([[2.0], [1.0]])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def serve(self, x):
            return tf.matmul(x, self.w)

    module = Affine()
    path = str(tmp_path / "affine")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    layer = layers.TFSMLayer(path)
    x = np.array([[1.0, 3.0]], np.float32)
    assert layer(x).numpy().tolist() == [[5.0]]
    signature = layers.TFSMLayer(path, call_endpoint="serving_default")
    assert list(signature(x).values())[0].numpy().tolist() == [[5.0]]
    assert len(layer.trainable_weights) == 1
    with tf.GradientTape() as tape:
        out = tf.reduce_sum(layer(x))
    np.testing.assert_allclose(tape.gradient(out, layer.trainable_weights[0]).numpy(),
                               [[1.0], [3.0]])
    with pytest.raises(ValueError) as e:
        layers.TFSMLayer(path, call_endpoint="predict")
    assert str(e.value).startswith("The endpoint 'predict' is neither an attribute")
