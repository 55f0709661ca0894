"""tf.keras layers, models, initializers, activations and losses (issue 6, item 3)."""
import numpy as np
import pytest

import stagecraft as tf

keras = tf.keras


def first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


# ------------------------------------------------------------------------- activations

def test_activations_match_numpy():
    x = np.array([[-3.0, -0.5, 0.0, 0.5, 7.0]], np.float32)
    a = keras.activations
    np.testing.assert_allclose(a.relu(x).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(a.relu(x, alpha=0.1, max_value=6.0, threshold=0.0).numpy(),
                               np.minimum(np.where(x > 0, x, 0.1 * x), 6.0), rtol=1e-6)
    np.testing.assert_allclose(a.relu(x, threshold=1.0).numpy(), np.where(x > 1, x, 0))
    np.testing.assert_allclose(a.tanh(x).numpy(), np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(a.sigmoid(x).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(a.softplus(x).numpy(), np.log1p(np.exp(x)), rtol=1e-6)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(a.softmax(x).numpy(), e / e.sum(), rtol=1e-6)
    assert a.linear(x) is x


def test_activation_get():
    a = keras.activations
    assert a.get("relu") is a.relu and a.get("softmax") is a.softmax
    assert a.get(None) is a.linear
    assert a.get(tf.nn.relu6) is tf.nn.relu6
    assert a.serialize(a.tanh) == "tanh"


def test_unknown_activation_names_the_valid_ones():
    with pytest.raises(ValueError) as e:
        keras.activations.get("swishy")
    assert first_line(e).startswith(
        "Unknown activation function: 'swishy'. Valid names are 'celu', 'elu', 'exponential', ")
    assert first_line(e).endswith("; or pass a callable (e.g. activation=tf.nn.relu6).")
    with pytest.raises(ValueError) as e:
        keras.layers.Dense(2, activation="swishy")
    assert first_line(e).startswith("Unknown activation function: 'swishy'.")
    with pytest.raises(TypeError):
        keras.activations.get(3)


def test_softmax_activation_needs_a_batch():
    with pytest.raises(ValueError) as e:
        keras.activations.softmax([1.0, 2.0])
    assert first_line(e).startswith("keras.activations.softmax: cannot apply softmax to a "
                                    "tensor of rank 1")


# ------------------------------------------------------------------------ initializers

SEEDED = [keras.initializers.GlorotUniform, keras.initializers.GlorotNormal,
          keras.initializers.HeNormal, keras.initializers.HeUniform,
          keras.initializers.LecunNormal, keras.initializers.RandomNormal,
          keras.initializers.RandomUniform, keras.initializers.TruncatedNormal]


@pytest.mark.parametrize("cls", SEEDED, ids=lambda c: c.__name__)
def test_seeded_initializers_are_reproducible(cls):
    a = cls(seed=7)([5, 4]).numpy()
    b = cls(seed=7)([5, 4]).numpy()
    again = cls(seed=7)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again([5, 4]).numpy(), again([5, 4]).numpy())
    assert not np.array_equal(a, cls(seed=8)([5, 4]).numpy())
    assert a.dtype == np.float32
    assert cls(seed=7)([5, 4], dtype=tf.float64).numpy().dtype == np.float64


def test_unseeded_initializers_follow_the_global_seed():
    tf.random.set_seed(5)
    a = keras.initializers.GlorotUniform()([3, 3]).numpy()
    b = keras.initializers.GlorotUniform()([3, 3]).numpy()
    tf.random.set_seed(5)
    c = keras.initializers.GlorotUniform()([3, 3]).numpy()
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_glorot_statistics():
    fan_in, fan_out = 300, 200
    w = keras.initializers.GlorotUniform(seed=0)([fan_in, fan_out]).numpy()
    limit = np.sqrt(6 / (fan_in + fan_out))
    assert np.abs(w).max() <= limit
    assert abs(w.std() - limit / np.sqrt(3)) < 0.02 * limit
    n = keras.initializers.GlorotNormal(seed=0)([fan_in, fan_out]).numpy()
    stddev = np.sqrt(2 / (fan_in + fan_out))
    assert np.abs(n).max() <= 2 * stddev / 0.87962566103423978 + 1e-6  # truncated at 2 sigma
    assert abs(n.std() - stddev) < 0.03 * stddev


def test_random_normal_and_uniform_statistics():
    n = keras.initializers.RandomNormal(mean=1.0, stddev=2.0, seed=1)([200, 100]).numpy()
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05
    u = keras.initializers.RandomUniform(minval=2.0, maxval=3.0, seed=1)([1000]).numpy()
    assert u.min() >= 2.0 and u.max() < 3.0


def test_constant_initializers():
    np.testing.assert_array_equal(keras.initializers.Zeros()([2, 2]).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(keras.initializers.Ones()([3], dtype="int32").numpy(),
                                  [1, 1, 1])
    np.testing.assert_array_equal(keras.initializers.Constant(2.5)([2]).numpy(), [2.5, 2.5])
    with pytest.raises(TypeError):
        keras.initializers.Constant([1.0, 2.0])([2])


def test_fans_of_a_convolution_kernel():
    w = keras.initializers.VarianceScaling(1.0, "fan_in", "uniform", seed=0)([3, 3, 4, 8])
    limit = np.sqrt(3.0 / (3 * 3 * 4))
    assert np.abs(w.numpy()).max() <= limit


def test_initializer_get():
    get = keras.initializers.get
    assert isinstance(get("glorot_uniform"), keras.initializers.GlorotUniform)
    assert isinstance(get("GlorotNormal"), keras.initializers.GlorotNormal)
    assert isinstance(get("zeros"), keras.initializers.Zeros)
    init = keras.initializers.RandomNormal(seed=1)
    assert get(init) is init and get(None) is None


def test_unknown_initializer_names_the_valid_ones():
    with pytest.raises(ValueError) as e:
        keras.initializers.get("glorot_uniformm")
    assert first_line(e).startswith("Unknown initializer: 'glorot_uniformm'. Valid names are "
                                    "'constant', 'glorot_normal', 'glorot_uniform',")
    with pytest.raises(ValueError) as e:
        keras.layers.Dense(2, kernel_initializer="nope")
    assert first_line(e).startswith("Unknown initializer: 'nope'.")


def test_random_initializer_rejects_integer_dtype():
    with pytest.raises(ValueError) as e:
        keras.initializers.GlorotUniform(seed=1)([2, 2], dtype=tf.int32)
    assert first_line(e).startswith("GlorotUniform: expected a floating point dtype, got int32.")


# ------------------------------------------------------------------------------ Dense

def test_dense_is_built_lazily_with_keras_shapes_and_names():
    layer = keras.layers.Dense(3)
    assert not layer.built and layer.weights == [] and layer.variables == ()
    y = layer(tf.ones([2, 5]))
    assert layer.built and y.shape == (2, 3) and y.dtype == tf.float32
    assert layer.kernel.shape == (5, 3) and layer.bias.shape == (3,)
    assert layer.kernel.dtype == tf.float32 and layer.dtype == "float32"
    assert [v is w for v, w in zip(layer.trainable_variables, (layer.kernel, layer.bias))] == \
        [True, True]
    assert layer.kernel.name.endswith("kernel:0") and layer.bias.name.endswith("bias:0")
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(3))
    # checkpoint edges: the weights are the attributes `kernel` and `bias`
    assert vars(layer)["kernel"] is layer.kernel and vars(layer)["bias"] is layer.bias


def test_dense_values_match_numpy():
    layer = keras.layers.Dense(4, activation="tanh",
                               kernel_initializer=keras.initializers.RandomNormal(seed=3),
                               bias_initializer=keras.initializers.RandomUniform(seed=4))
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    y = layer(x).numpy()
    np.testing.assert_allclose(y, np.tanh(x @ layer.kernel.numpy() + layer.bias.numpy()),
                               rtol=1e-5, atol=1e-6)
    x3 = np.ones((2, 5, 3), np.float32)
    assert layer(x3).shape == (2, 5, 4)


def test_dense_seeded_kernels_are_equal():
    a = keras.layers.Dense(4, kernel_initializer=keras.initializers.GlorotUniform(seed=11))
    b = keras.layers.Dense(4, kernel_initializer=keras.initializers.GlorotUniform(seed=11))
    a(tf.ones([1, 3]))
    b(tf.ones([1, 3]))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())


def test_dense_without_bias_and_float64():
    layer = keras.layers.Dense(2, use_bias=False, dtype="float64")
    y = layer(np.ones((1, 3)))
    assert layer.bias is None and len(layer.weights) == 1
    assert y.dtype == tf.float64 and layer.kernel.dtype == tf.float64


def test_dense_autocasts_inputs_to_its_dtype():
    layer = keras.layers.Dense(2)
    assert layer(np.ones((1, 3), np.float64)).dtype == tf.float32


def test_dense_rank1_input_is_a_clear_error():
    layer = keras.layers.Dense(2)
    with pytest.raises(ValueError) as e:
        layer(tf.ones([3]))
    assert first_line(e) == (
        'Input 0 of layer "%s" is incompatible with the layer: expected min_ndim=2, found '
        'ndim=1. Full shape received: (3,). Dense layers take a batch of vectors; add a batch '
        'dimension, e.g. x[None, :] or tf.expand_dims(x, 0).' % layer.name)
    assert not layer.built


def test_dense_wrong_feature_count_after_build():
    layer = keras.layers.Dense(2)
    layer(tf.ones([1, 3]))
    with pytest.raises(ValueError) as e:
        layer(tf.ones([1, 4]))
    assert "expected axis -1 of input shape to have value 3" in first_line(e)


def test_dense_bad_units():
    with pytest.raises(ValueError) as e:
        keras.layers.Dense(0)
    assert first_line(e) == ("Dense: received an invalid value for `units`, expected a "
                             "positive integer. Received: units=0.")


def test_dense_gradient_matches_numpy():
    layer = keras.layers.Dense(2, kernel_initializer=keras.initializers.RandomNormal(seed=1))
    x = tf.constant([[1.0, 2.0, 3.0]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x))
    gk, gb = tape.gradient(loss, [layer.kernel, layer.bias])
    np.testing.assert_allclose(gk.numpy(), np.repeat(x.numpy().T, 2, axis=1))
    np.testing.assert_allclose(gb.numpy(), [1.0, 1.0])


def test_layer_default_names_are_unique():
    keras.backend.clear_session()
    assert [keras.layers.Dense(1).name for _ in range(3)] == ["dense", "dense_1", "dense_2"]
    assert keras.layers.Dense(1, name="head").name == "head"


def test_frozen_layer_lists_weights_as_non_trainable():
    layer = keras.layers.Dense(2)
    layer(tf.ones([1, 2]))
    layer.trainable = False
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 2
    layer.trainable = True
    assert len(layer.trainable_weights) == 2


def test_module_reflection_finds_each_weight_once():
    layer = keras.layers.Dense(2)
    layer(tf.ones([1, 2]))
    found = tf.Module.variables.fget(layer)  # the plain tf.Module walk (sorted attributes)
    assert len(found) == 2 and found[0] is layer.bias and found[1] is layer.kernel


def test_flatten_and_activation_layers():
    x = tf.reshape(tf.range(24, dtype=tf.float32), [2, 3, 4])
    assert keras.layers.Flatten()(x).shape == (2, 12)
    assert keras.layers.Flatten()(tf.ones([5])).shape == (5, 1)
    y = keras.layers.Activation("relu")(tf.constant([[-1.0, 2.0]]))
    np.testing.assert_array_equal(y.numpy(), [[0.0, 2.0]])

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 4], tf.float32)])
    def f(x):
        return keras.layers.Flatten()(x)
    assert f(x).shape == (2, 12)


class Scale(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = 0

    def build(self, input_shape):
        self.builds = getattr(self, "builds", 0) + 1
        self.w = self.add_weight("w", shape=[input_shape[-1]], initializer="ones")
        self.count = self.add_weight("count", shape=(), dtype=tf.int32, trainable=False)

    def call(self, inputs):
        self.calls += 1
        return inputs * self.w


def test_custom_layer_build_once_and_weight_lists():
    layer = Scale()
    layer(tf.ones([2, 3]))
    layer(tf.ones([2, 3]))
    assert layer.builds == 1 and layer.calls == 2
    assert [v.name.split("/")[-1] for v in layer.weights] == ["w:0", "count:0"]
    assert layer.trainable_weights == [layer.w]
    assert layer.non_trainable_weights == [layer.count]
    assert layer.count.dtype == tf.int32
    layer.set_weights([np.full(3, 2.0), np.array(4, np.int32)])
    np.testing.assert_array_equal(layer.get_weights()[0], [2.0, 2.0, 2.0])
    with pytest.raises(ValueError):
        layer.set_weights([np.zeros(3)])


def test_forgetting_super_init_is_a_clear_error():
    class Broken(keras.layers.Layer):
        def __init__(self):
            pass

    with pytest.raises(RuntimeError) as e:
        Broken()(tf.ones([1, 1]))
    assert first_line(e) == ("It looks like you are subclassing `Broken` and you forgot to "
                             "call `super().__init__()`. Always start your `__init__` with "
                             "this line.")


def test_unknown_layer_keyword():
    with pytest.raises(TypeError) as e:
        keras.layers.Dense(2, kernel_regulariser="l2")
    assert first_line(e).startswith("Dense: unexpected keyword argument(s) kernel_regulariser.")


# ----------------------------------------------------------------------------- models

class MNISTModel(keras.Model):
    """The TF Eager paper's Listing 3."""

    def __init__(self):
        super().__init__()
        self.dense1 = keras.layers.Dense(units=10)
        self.dense2 = keras.layers.Dense(units=10)

    def call(self, input):
        result = self.dense1(input)
        result = self.dense2(result)
        result = self.dense2(result)  # reuse variables from dense2 layer
        return result


def test_listing3_model():
    model = MNISTModel()
    out = model(tf.zeros([3, 784]))
    assert out.shape == (3, 10) and model.built
    vs = model.trainable_variables
    assert [tuple(v.shape.as_list()) for v in vs] == [(784, 10), (10,), (10, 10), (10,)]
    assert vs[0] is model.dense1.kernel and vs[3] is model.dense2.bias
    assert model.variables == vs and model.non_trainable_variables == ()
    assert model.layers == [model.dense1, model.dense2]
    assert set(map(id, model.submodules)) == {id(model.dense1), id(model.dense2)}


def test_model_build_creates_weights():
    model = MNISTModel()
    model.build((None, 20))
    assert model.built and model.dense1.kernel.shape == (20, 10)


def test_bad_functional_inputs_and_missing_call_are_clear_errors():
    with pytest.raises(ValueError) as e:
        keras.Model(inputs=1, outputs=2)
    assert first_line(e).startswith("Model(inputs, outputs): every input must be a tensor made "
                                    "by keras.Input(); got 1.")

    class NoCall(keras.Model):
        pass
    with pytest.raises(NotImplementedError) as e:
        NoCall()(tf.ones([1, 1]))
    assert first_line(e).startswith("Unimplemented `tf.keras.Model.call()`: NoCall must "
                                    "override")


def test_sequential():
    model = keras.Sequential([keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
    assert len(model.layers) == 2 and not model.built and model.weights == []
    y = model(tf.ones([3, 5]))
    assert y.shape == (3, 2) and len(model.trainable_variables) == 4
    first = model.layers[0]
    assert vars(model)["layer-0"] is first  # TensorFlow's checkpoint edge for layer 0
    assert model.trainable_variables[0] is first.kernel
    model.add(keras.layers.Dense(1))
    assert model(tf.ones([3, 5])).shape == (3, 1) and len(model.weights) == 6
    popped = model.pop()
    assert isinstance(popped, keras.layers.Dense) and len(model.layers) == 2
    with pytest.raises(TypeError) as e:
        model.add(lambda x: x)
    assert first_line(e).startswith("Sequential.add: the added layer must be an instance of "
                                    "class Layer.")


def test_sequential_with_input_shape_is_built_at_once():
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,)), keras.layers.Dense(1)])
    assert model.built and [tuple(w.shape.as_list()) for w in model.weights] == \
        [(4, 3), (3,), (3, 1), (1,)]


def test_sequential_passes_training():
    class Noisy(keras.layers.Layer):
        def call(self, inputs, training=None):
            self.seen = training
            return inputs
    noisy = Noisy()
    keras.Sequential([noisy])(tf.ones([1, 1]), training=True)
    assert noisy.seen is True


# -------------------------------------------------------- layers inside tf.function

def test_variables_created_on_first_trace_only():
    model = MNISTModel()

    @tf.function
    def f(x):
        return model(x)
    y = f(tf.ones([2, 5]))
    assert f.experimental_get_tracing_count() == 2  # the creating trace, then the real one
    weights = list(model.weights)
    assert len(weights) == 4
    np.testing.assert_allclose(y.numpy(), model(tf.ones([2, 5])).numpy(), rtol=1e-6)
    f(tf.ones([2, 5]))
    assert f.experimental_get_tracing_count() == 2
    f(tf.ones([7, 5]))  # a new shape retraces; the built model creates nothing
    assert f.experimental_get_tracing_count() == 3
    assert all(a is b for a, b in zip(model.weights, weights)) and len(model.weights) == 4


def test_building_a_layer_on_a_later_trace_is_an_error():
    model = MNISTModel()
    model(tf.ones([1, 3]))  # built eagerly: the function's first call creates nothing
    extra = keras.layers.Dense(2)

    @tf.function
    def f(x, use_extra):
        y = model(x)
        return extra(y) if use_extra else y
    f(tf.ones([1, 3]), False)
    with pytest.raises(ValueError) as e:
        f(tf.ones([1, 3]), True)
    assert first_line(e).startswith("Creating variables on a non-first call to a function "
                                    "decorated with tf.function is not allowed")


class Gated(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1, kernel_initializer="ones")

    def call(self, x):
        y = self.dense(x)
        if tf.reduce_sum(y) > 0:  # a tensor condition: staged by AutoGraph while tracing
            y = y * 2.0
        else:
            y = -y
        return y


def test_model_call_is_converted_by_autograph():
    model = Gated()
    f = tf.function(lambda x: model(x))
    np.testing.assert_allclose(f(tf.constant([[1.0, 2.0]])).numpy(), [[6.0]])
    np.testing.assert_allclose(f(tf.constant([[-1.0, -2.0]])).numpy(), [[3.0]])
    assert f.experimental_get_tracing_count() == 2


# ---------------------------------------------------------------------------- losses

RNG = np.random.default_rng(42)


def test_mean_squared_error():
    yt = RNG.normal(size=(4, 3)).astype(np.float32)
    yp = RNG.normal(size=(4, 3)).astype(np.float32)
    per = ((yt - yp) ** 2).mean(-1)
    np.testing.assert_allclose(keras.losses.mean_squared_error(yt, yp).numpy(), per, rtol=1e-6)
    assert keras.losses.mse is keras.losses.mean_squared_error
    np.testing.assert_allclose(float(keras.losses.MeanSquaredError()(yt, yp)), per.mean(),
                               rtol=1e-6)
    w = np.array([1.0, 0.0, 2.0, 0.5], np.float32)
    np.testing.assert_allclose(float(keras.losses.MeanSquaredError()(yt, yp, sample_weight=w)),
                               (per * w).sum() / 4, rtol=1e-6)
    np.testing.assert_allclose(
        float(keras.losses.MeanSquaredError(reduction="sum")(yt, yp)), per.sum(), rtol=1e-6)
    np.testing.assert_allclose(
        keras.losses.MeanSquaredError(reduction="none")(yt, yp).numpy(), per, rtol=1e-6)
    with pytest.raises(ValueError):
        keras.losses.MeanSquaredError(reduction="mean")


def _clip(p):
    return np.clip(p, 1e-7, 1 - 1e-7)


def test_categorical_crossentropy_from_probabilities_clips_like_keras():
    yt = np.eye(3, dtype=np.float32)[[0, 2, 1]]
    yp = np.array([[0.0, 0.5, 0.5], [0.2, 0.2, 0.6], [0.1, 0.8, 0.1]], np.float32)
    p = _clip(yp / yp.sum(-1, keepdims=True))
    per = -(yt * np.log(p)).sum(-1)
    got = keras.losses.categorical_crossentropy(yt, yp).numpy()
    np.testing.assert_allclose(got, per, rtol=1e-6)
    assert np.isfinite(got).all() and abs(got[0] - -np.log(np.float32(1e-7))) < 1e-3
    np.testing.assert_allclose(float(keras.losses.CategoricalCrossentropy()(yt, yp)),
                               per.mean(), rtol=1e-6)


def test_categorical_crossentropy_from_logits_and_smoothing():
    yt = np.eye(4, dtype=np.float32)[[3, 0]]
    logits = RNG.normal(size=(2, 4)).astype(np.float32)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(
        keras.losses.categorical_crossentropy(yt, logits, from_logits=True).numpy(),
        -(yt * logp).sum(-1), rtol=1e-5)
    smooth = yt * 0.9 + 0.1 / 4
    loss = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    np.testing.assert_allclose(float(loss(yt, logits)), (-(smooth * logp).sum(-1)).mean(),
                               rtol=1e-5)


def test_sparse_categorical_crossentropy():
    labels = np.array([2, 0, 1], np.int32)
    probs = np.array([[0.1, 0.1, 0.8], [0.0, 0.3, 0.7], [0.25, 0.5, 0.25]], np.float32)
    c = _clip(probs)
    per = -(np.log(c[np.arange(3), labels]) - np.log(c.sum(-1)))
    got = keras.losses.sparse_categorical_crossentropy(labels, probs).numpy()
    np.testing.assert_allclose(got, per, rtol=1e-5)
    # labels of shape (batch, 1) and float labels are accepted, as in Keras
    np.testing.assert_allclose(
        keras.losses.sparse_categorical_crossentropy(labels[:, None].astype(np.float32),
                                                     probs).numpy(), per, rtol=1e-5)
    logits = RNG.normal(size=(3, 3)).astype(np.float32)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(loss(labels, logits)),
                               -logp[np.arange(3), labels].mean(), rtol=1e-5)


def test_loss_gradient_flows_to_logits_and_stages():
    labels = tf.constant([1, 0])
    logits = tf.constant([[0.5, -1.0], [2.0, 0.0]])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = loss_fn(labels, logits)
    g = tape.gradient(loss, logits).numpy()
    sm = np.exp(logits.numpy()) / np.exp(logits.numpy()).sum(-1, keepdims=True)
    np.testing.assert_allclose(g, (sm - np.eye(2)[[1, 0]]) / 2, rtol=1e-5)
    staged = tf.function(lambda y, p: loss_fn(y, p))
    np.testing.assert_allclose(float(staged(labels, logits)), float(loss), rtol=1e-6)
    mse = tf.function(lambda y, p: keras.losses.MeanSquaredError()(y, p))
    np.testing.assert_allclose(float(mse(logits, logits * 2.0)),
                               float(keras.losses.MeanSquaredError()(logits, logits * 2.0)))


def test_loss_get():
    assert keras.losses.get("mse") is keras.losses.mean_squared_error
    assert isinstance(keras.losses.get("MeanSquaredError"), keras.losses.MeanSquaredError)
    with pytest.raises(ValueError) as e:
        keras.losses.get("hinged")
    assert first_line(e).startswith("Unknown loss function: 'hinged'.")


def test_dense_accepts_python_lists_and_integer_inputs():
    layer = keras.layers.Dense(1, kernel_initializer="ones")
    np.testing.assert_array_equal(layer([[1.0, 2.0]]).numpy(), [[3.0]])
    y = layer(np.array([[1, 2]], np.int32))
    assert y.dtype == tf.float32 and y.numpy().tolist() == [[3.0]]


class StagedCall(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(2, kernel_initializer="ones")

    @tf.function
    def call(self, x):
        return self.dense(x) + 1.0


def test_model_with_a_staged_call_method():
    model = StagedCall()
    np.testing.assert_array_equal(model(tf.ones([1, 3])).numpy(), [[4.0, 4.0]])
    np.testing.assert_array_equal(model(tf.ones([1, 3])).numpy(), [[4.0, 4.0]])
    assert len(model.trainable_variables) == 2


def test_training_and_mask_go_only_to_a_call_that_takes_them():
    model = MNISTModel()  # call(self, input): no training argument
    assert model(tf.ones([1, 2]), training=True).shape == (1, 10)
    assert keras.layers.Dense(1)(tf.ones([1, 2]), training=False, mask=None).shape == (1, 1)


class DoubledDense(keras.layers.Dense):
    def call(self, x):
        y = super().call(x)
        if tf.reduce_sum(y) > 0:
            y = y * 2.0
        return y


def test_subclassed_dense_with_super_call_stages():
    layer = DoubledDense(2, kernel_initializer="ones")
    f = tf.function(lambda x: layer(x))
    np.testing.assert_array_equal(f(tf.ones([1, 3])).numpy(), [[6.0, 6.0]])
    np.testing.assert_array_equal(f(-tf.ones([1, 3])).numpy(), [[-3.0, -3.0]])
    np.testing.assert_array_equal(layer(tf.ones([1, 3])).numpy(), [[6.0, 6.0]])


def test_layers_held_in_a_list_are_tracked_in_order():
    class Stack(keras.Model):
        def __init__(self):
            super().__init__()
            self.blocks = [keras.layers.Dense(3), keras.layers.Dense(2)]

        def call(self, x):
            for block in self.blocks:
                x = block(x)
            return x
    model = Stack()
    model(tf.ones([1, 4]))
    assert [tuple(v.shape.as_list()) for v in model.trainable_variables] == \
        [(4, 3), (3,), (3, 2), (2,)]
    assert model.layers == list(model.blocks)


def test_freezing_a_model_or_one_of_its_layers():
    model = MNISTModel()
    model(tf.ones([1, 3]))
    model.dense1.trainable = False
    assert model.trainable_variables == (model.dense2.kernel, model.dense2.bias)
    assert model.non_trainable_variables == (model.dense1.kernel, model.dense1.bias)
    model.dense1.trainable = True
    model.trainable = False
    assert model.trainable_variables == () and len(model.non_trainable_variables) == 4
    assert model.variables == model.non_trainable_variables
