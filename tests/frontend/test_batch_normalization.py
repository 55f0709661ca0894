"""tf.nn.batch_normalization, tf.nn.fused_batch_norm (both modes, TF 2's outputs: the batch
variance returned with Bessel's correction, exponential averaging), tf.nn.lrn, and
keras.layers.BatchNormalization: training vs inference outputs, the moving statistics after a
few steps (computed by hand), trainable=False, the call context, model.fit, checkpoint names,
configs and error messages."""
from __future__ import annotations

import os

import numpy as np
import pytest

import stagecraft as tf
from stagecraft import keras

rng = np.random.default_rng(3)


def test_batch_normalization_formula():
    x, m, v = rng.normal(size=(4, 3)), rng.normal(size=3), rng.uniform(0.5, 2, 3)
    off, sc = rng.normal(size=3), rng.normal(size=3)
    got = tf.nn.batch_normalization(x, m, v, off, sc, 1e-3).numpy()
    np.testing.assert_allclose(got, sc * (x - m) / np.sqrt(v + 1e-3) + off, rtol=1e-12)
    got = tf.nn.batch_normalization(x, m, v, None, None, 0.0).numpy()
    np.testing.assert_allclose(got, (x - m) / np.sqrt(v), rtol=1e-12)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fused_batch_norm_training_returns_the_unbiased_variance(data_format):
    x = rng.normal(size=(3, 4, 5, 2))
    scale, offset = np.array([1.5, 0.5]), np.array([0.1, -0.2])
    xin = x if data_format == "NHWC" else np.transpose(x, (0, 3, 1, 2))
    y, mean, var = tf.nn.fused_batch_norm(xin, scale, offset, epsilon=1e-3,
                                          data_format=data_format)
    y = y.numpy() if data_format == "NHWC" else np.transpose(y.numpy(), (0, 2, 3, 1))
    mu, biased = x.mean((0, 1, 2)), x.var((0, 1, 2))
    np.testing.assert_allclose(y, (x - mu) / np.sqrt(biased + 1e-3) * scale + offset,
                               rtol=1e-10)
    np.testing.assert_allclose(mean.numpy(), mu, rtol=1e-12)
    n = 3 * 4 * 5
    np.testing.assert_allclose(var.numpy(), biased * n / (n - 1), rtol=1e-12)


def test_fused_batch_norm_exponential_average_and_inference():
    x = rng.normal(size=(2, 3, 3, 2))
    old_m, old_v = np.array([0.5, -0.5]), np.array([2.0, 3.0])
    _, m, v = tf.nn.fused_batch_norm(x, [1.0, 1.0], [0.0, 0.0], old_m, old_v,
                                     exponential_avg_factor=0.25)
    np.testing.assert_allclose(m.numpy(), 0.75 * old_m + 0.25 * x.mean((0, 1, 2)), rtol=1e-12)
    np.testing.assert_allclose(v.numpy(), 0.75 * old_v + 0.25 * x.var((0, 1, 2), ddof=1),
                               rtol=1e-12)
    y, m, v = tf.nn.fused_batch_norm(x, [2.0, 1.0], [0.0, 1.0], old_m, old_v, epsilon=0.01,
                                     is_training=False)
    np.testing.assert_allclose(y.numpy(), (x - old_m) / np.sqrt(old_v + 0.01) * [2, 1] + [0, 1],
                               rtol=1e-12)
    np.testing.assert_array_equal(m.numpy(), old_m)
    np.testing.assert_array_equal(v.numpy(), old_v)
    with pytest.raises(ValueError, match="^fused_batch_norm: with is_training=False, pass"):
        tf.nn.fused_batch_norm(x, [1.0, 1.0], [0.0, 0.0], is_training=False)
    with pytest.raises(ValueError, match="^fused_batch_norm: x must have rank 4 or 5"):
        tf.nn.fused_batch_norm(np.zeros((2, 3)), [1.0] * 3, [0.0] * 3)


def test_local_response_normalization():
    x = rng.normal(size=(2, 3, 2, 7))
    got = tf.nn.lrn(x, depth_radius=2, bias=1.5, alpha=0.3, beta=0.7).numpy()
    sqr = np.stack([(x[..., max(0, d - 2):d + 3] ** 2).sum(-1) for d in range(7)], -1)
    np.testing.assert_allclose(got, x / (1.5 + 0.3 * sqr) ** 0.7, rtol=1e-10)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        total = tf.reduce_sum(tf.nn.local_response_normalization(xt, 1) * x)
    g = tape.gradient(total, xt).numpy()
    eps, idx = 1e-6, (1, 2, 1, 3)
    up, down = x.copy(), x.copy()
    up[idx] += eps
    down[idx] -= eps
    numeric = (np.sum(tf.nn.lrn(up, 1).numpy() * x) - np.sum(tf.nn.lrn(down, 1).numpy() * x))
    assert g[idx] == pytest.approx(numeric / (2 * eps), rel=1e-6)


def _bn(**kwargs):
    return keras.layers.BatchNormalization(**kwargs)


def test_layer_weights_and_modes():
    layer = _bn(momentum=0.9, epsilon=1e-3)
    x = rng.normal(size=(6, 3)).astype(np.float32)
    inference = layer(x).numpy()  # builds; moving stats are 0 and 1
    np.testing.assert_allclose(inference, x / np.sqrt(1 + 1e-3), rtol=1e-6)
    assert [w.name for w in layer.weights] == [
        f"{layer.name}/{n}:0" for n in ("gamma", "beta", "moving_mean", "moving_variance")]
    assert [w.name.split("/")[-1] for w in layer.trainable_weights] == ["gamma:0", "beta:0"]
    training = layer(x, training=True).numpy()
    np.testing.assert_allclose(training, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3),
                               rtol=1e-4, atol=1e-5)


def test_moving_statistics_after_a_few_steps_eager_and_staged():
    batches = [rng.normal(loc=i, size=(4, 2, 2, 3)).astype(np.float32) for i in range(3)]
    eager, staged = _bn(momentum=0.8), _bn(momentum=0.8)
    step = tf.function(lambda x: staged(x, training=True))
    mean, var = np.zeros(3), np.ones(3)
    for b in batches:
        eager(b, training=True)
        step(tf.constant(b))
        n = 4 * 2 * 2  # rank 4: Keras's fused rule, the unbiased batch variance
        mean = mean * 0.8 + b.mean((0, 1, 2)) * 0.2
        var = var * 0.8 + b.var((0, 1, 2)) * n / (n - 1) * 0.2
    for layer in (eager, staged):
        np.testing.assert_allclose(layer.moving_mean.numpy(), mean, rtol=1e-5)
        np.testing.assert_allclose(layer.moving_variance.numpy(), var, rtol=1e-5)


def test_rank_2_uses_the_biased_variance_and_axis_1_on_images():
    x = rng.normal(size=(5, 2)).astype(np.float32)
    layer = _bn(momentum=0.0)
    layer(x, training=True)
    np.testing.assert_allclose(layer.moving_variance.numpy(), x.var(0), rtol=1e-5)
    images = rng.normal(size=(2, 3, 4, 4)).astype(np.float32)
    first = _bn(axis=1, momentum=0.0, center=False, scale=False)
    y = first(images, training=True).numpy()
    assert first.moving_mean.shape == (3,) and first.weights[0].name.endswith("moving_mean:0")
    mu, v = images.mean((0, 2, 3), keepdims=True), images.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, (images - mu) / np.sqrt(v + 1e-3), rtol=1e-4, atol=1e-5)


def test_trainable_false_runs_in_inference_mode():
    layer = _bn()
    x = rng.normal(size=(4, 3)).astype(np.float32)
    layer(x)
    layer.trainable = False
    y = layer(x, training=True).numpy()
    np.testing.assert_allclose(y, x / np.sqrt(1 + 1e-3), rtol=1e-6)
    np.testing.assert_array_equal(layer.moving_mean.numpy(), np.zeros(3))
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 4


class _Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.bn = keras.layers.BatchNormalization(momentum=0.0)
        self.out = keras.layers.Dense(1)

    def call(self, x):  # does not pass `training` on: the call context does
        return self.out(self.bn(x))


def test_fit_trains_in_training_mode_through_the_call_context():
    x = rng.normal(size=(8, 2)).astype(np.float32) + 3.0
    y = np.zeros((8, 1), np.float32)
    net = _Net()
    net.compile(keras.optimizers.SGD(0.01), "mse")
    net.fit(x, y, batch_size=8, epochs=1, verbose=0)
    np.testing.assert_allclose(net.bn.moving_mean.numpy(), x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(net.bn.moving_variance.numpy(), x.var(0), rtol=1e-4)
    before = net.bn.moving_mean.numpy()
    net.predict(x + 10.0, verbose=0)  # inference: no update
    np.testing.assert_array_equal(net.bn.moving_mean.numpy(), before)


def test_checkpoint_names_and_round_trip(tmp_path):
    model = keras.Sequential([keras.layers.Dense(2), keras.layers.BatchNormalization()])
    x = rng.normal(size=(4, 3)).astype(np.float32)
    model(x, training=True)
    path = tf.train.Checkpoint(model=model).save(os.path.join(tmp_path, "ckpt"))
    found = [k for k, _ in tf.train.list_variables(path)]
    assert sorted(k for k in found if k.startswith("model/layer-1/")) == [
        f"model/layer-1/{w}/.ATTRIBUTES/VARIABLE_VALUE"
        for w in ("beta", "gamma", "moving_mean", "moving_variance")]
    clone = keras.Sequential([keras.layers.Dense(2), keras.layers.BatchNormalization()])
    status = tf.train.Checkpoint(model=clone).restore(path)
    np.testing.assert_array_equal(clone(x).numpy(), model(x).numpy())
    status.assert_consumed()


def test_config_round_trip_and_errors():
    layer = _bn(axis=[1, 2], momentum=0.5, epsilon=1e-5, center=False,
                gamma_initializer="zeros", name="bn")
    config = layer.get_config()
    assert config["axis"] == [1, 2] and config["momentum"] == 0.5 and not config["center"]
    clone = keras.layers.BatchNormalization.from_config(config)
    assert clone.get_config() == config
    y = clone(np.ones((2, 3, 4, 5), np.float32))
    assert clone.gamma.shape == (1, 3, 4, 1) and clone.beta is None
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 3, 4, 5)))
    with pytest.raises(ValueError, match="^Unknown regularizer: 'l3'"):
        _bn(beta_regularizer="l3")
    with pytest.raises(ValueError, match="^Invalid axis: 3 for layer"):
        _bn(axis=3)(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="should have a defined dimension"):
        tf.function(lambda t: _bn()(t), input_signature=[tf.TensorSpec([2, None])])(
            tf.ones([2, 3]))


def test_learning_phase_decides_when_no_call_does():
    layer = _bn(momentum=0.0)
    x = rng.normal(size=(4, 2)).astype(np.float32) + 5.0
    keras.backend.set_learning_phase(1)
    try:
        assert keras.backend.learning_phase() == 1
        layer(x)  # no training argument: the learning phase trains
        layer(x * 0, training=False)  # an explicit argument wins
    finally:
        keras.backend.set_learning_phase(0)
    np.testing.assert_allclose(layer.moving_mean.numpy(), x.mean(0), rtol=1e-6)
    assert keras.backend.learning_phase() == 0
    with pytest.raises(ValueError, match="^set_learning_phase: the learning phase must be 0 or 1"):
        keras.backend.set_learning_phase(2)


def test_fused_argument_chooses_the_moving_variance_rule():
    x = rng.normal(size=(2, 2, 2, 3)).astype(np.float32)
    unfused = _bn(momentum=0.0, fused=False)
    unfused(x, training=True)
    np.testing.assert_allclose(unfused.moving_variance.numpy(), x.var((0, 1, 2)), rtol=1e-5)
    assert unfused.get_config()["fused"] is False
    with pytest.raises(ValueError, match="^Layer 'f' \\(BatchNormalization\\): fused=True needs"):
        _bn(fused=True, name="f")(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="^BatchNormalization: synchronized=True"):
        _bn(synchronized=True)


def test_unknown_batch_size_counts_the_values_when_the_function_runs():
    layer = _bn(momentum=0.0)
    step = tf.function(lambda t: layer(t, training=True),
                       input_signature=[tf.TensorSpec([None, 2, 2, 3])])
    x = rng.normal(size=(5, 2, 2, 3)).astype(np.float32)
    step(x)
    n = 5 * 2 * 2
    np.testing.assert_allclose(layer.moving_variance.numpy(), x.var((0, 1, 2)) * n / (n - 1),
                               rtol=1e-5)
    _, _, var = tf.function(lambda t: tf.nn.fused_batch_norm(t, tf.ones([3]), tf.zeros([3])),
                            input_signature=[tf.TensorSpec([None, 2, 2, 3])])(x)
    np.testing.assert_allclose(var.numpy(), x.var((0, 1, 2), ddof=1), rtol=1e-5)


def test_freezing_a_model_freezes_its_batch_normalization():
    base = keras.Sequential([keras.layers.Dense(3, input_shape=(2,)),
                             keras.layers.BatchNormalization(momentum=0.0)])
    inputs = keras.Input((2,))
    model = keras.Model(inputs, keras.layers.Dense(1)(base(inputs)))
    base.trainable = False  # as in TF 2: every sub-layer's trainable becomes False
    assert [layer.trainable for layer in base.layers] == [False, False]
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x = rng.normal(size=(8, 2)).astype(np.float32) + 4.0
    model.fit(x, np.zeros((8, 1), np.float32), verbose=0)
    np.testing.assert_array_equal(base.layers[1].moving_mean.numpy(), np.zeros(3))
    base.trainable = True
    assert [layer.trainable for layer in base.layers] == [True, True]
    assert len(model.trainable_weights) == 6
