"""Keras's convolution layers: values against a NumPy reference, Keras's weight shapes and
output-size rules, configs, training, and the first line of each error."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

L = tf.keras.layers


def reference_conv(x: np.ndarray, w: np.ndarray, stride: int, padding: str,
                   dilation: int = 1) -> np.ndarray:
    """channels_last N-D convolution by its definition (one spatial position at a time)."""
    spatial = x.shape[1:-1]
    ks = w.shape[:-2]
    eff = [(k - 1) * dilation + 1 for k in ks]
    if padding == "same":
        out = [-(-n // stride) for n in spatial]
        pads = [max((o - 1) * stride + e - n, 0) for o, e, n in zip(out, eff, spatial)]
        x = np.pad(x, [(0, 0)] + [(p // 2, p - p // 2) for p in pads] + [(0, 0)])
    else:
        out = [(n - e) // stride + 1 for n, e in zip(spatial, eff)]
    y = np.zeros((x.shape[0], *out, w.shape[-1]))
    for pos in np.ndindex(*out):
        window = tuple(slice(p * stride, p * stride + e, dilation) for p, e in zip(pos, eff))
        patch = x[(slice(None),) + window]
        y[(slice(None),) + pos] = np.tensordot(patch, w, axes=len(ks) + 1)
    return y


def run_layer(layer, x):
    return layer(tf.constant(x)).numpy()


@pytest.mark.parametrize("rank,stride,padding,dilation", [
    (1, 1, "valid", 2), (2, 2, "same", 1), (2, 1, "valid", 1), (3, 1, "same", 1)])
def test_conv_layers_compute_the_convolution(rank, stride, padding, dilation):
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((2,) + (7,) * rank + (3,)).astype(np.float32)
    layer = [L.Conv1D, L.Conv2D, L.Conv3D][rank - 1](
        4, 3, strides=stride, padding=padding, dilation_rate=dilation,
        bias_initializer="ones", activation="relu")
    y = run_layer(layer, x)
    assert layer.kernel.shape == (3,) * rank + (3, 4) and layer.bias.shape == (4,)
    want = np.maximum(reference_conv(x, layer.kernel.numpy(), stride, padding, dilation) + 1, 0)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_channels_first_is_the_transposed_channels_last():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    last = L.Conv2D(5, 3, padding="same")
    y_last = run_layer(last, x)
    first = L.Conv2D(5, 3, padding="same", data_format="channels_first")
    first.build(tf.TensorShape([2, 3, 6, 6]))
    first.set_weights(last.get_weights())
    y_first = run_layer(first, x.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(y_first, y_last.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)


def test_causal_conv1d_does_not_see_the_future():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 8, 2)).astype(np.float32)
    layer = L.Conv1D(3, 3, padding="causal", dilation_rate=2)
    y = run_layer(layer, x)
    assert y.shape == (1, 8, 3)
    x2 = x.copy()
    x2[0, 5:] += 10.0
    np.testing.assert_allclose(run_layer(layer, x2)[0, :5], y[0, :5], rtol=1e-6)


def test_grouped_conv_is_per_group_convolution():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 5, 5, 4)).astype(np.float32)
    layer = L.Conv2D(6, 3, groups=2)
    y = run_layer(layer, x)
    k = layer.kernel.numpy()
    assert k.shape == (3, 3, 2, 6)
    want = np.concatenate([reference_conv(x[..., :2], k[..., :3], 1, "valid"),
                           reference_conv(x[..., 2:], k[..., 3:], 1, "valid")], -1)
    np.testing.assert_allclose(y, want + layer.bias.numpy(), rtol=1e-5, atol=1e-5)


def test_depthwise_and_separable_convs():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    dw = L.DepthwiseConv2D(3, depth_multiplier=2, use_bias=False)
    y = run_layer(dw, x)
    k = dw.depthwise_kernel.numpy()
    assert k.shape == (3, 3, 3, 2) and y.shape == (2, 4, 4, 6)
    for c in range(3):
        for m in range(2):
            want = reference_conv(x[..., c:c + 1], k[:, :, c:c + 1, m:m + 1], 1, "valid")
            np.testing.assert_allclose(y[..., c * 2 + m:c * 2 + m + 1], want, rtol=1e-5,
                                       atol=1e-5)
    sep = L.SeparableConv2D(4, 3, padding="same")
    y = run_layer(sep, x)
    inner = np.concatenate([reference_conv(x[..., c:c + 1], sep.depthwise_kernel.numpy()[
        :, :, c:c + 1, :], 1, "same") for c in range(3)], -1)
    want = reference_conv(inner, sep.pointwise_kernel.numpy(), 1, "valid") + sep.bias.numpy()
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("size,k,stride,padding,output_padding,want", [
    (5, 3, 2, "same", None, 10), (5, 3, 2, "valid", None, 11), (4, 3, 1, "valid", None, 6),
    (5, 3, 2, "same", 1, 10), (5, 4, 3, "valid", 2, 18)])
def test_transposed_conv_output_sizes_follow_keras(size, k, stride, padding, output_padding,
                                                   want):
    layer = L.Conv2DTranspose(2, k, strides=stride, padding=padding,
                              output_padding=output_padding)
    y = layer(tf.ones([1, size, size, 3]))
    assert y.shape == (1, want, want, 2) and layer.kernel.shape == (k, k, 2, 3)


def test_transposed_conv_is_the_gradient_of_the_conv():
    rng = np.random.default_rng(4)
    layer = L.Conv2DTranspose(3, 3, strides=2, padding="same", use_bias=False)
    dy = tf.constant(rng.standard_normal((1, 4, 4, 5)).astype(np.float32))
    y = layer(dy)
    x = tf.zeros([1, 8, 8, 3])
    with tf.GradientTape() as tape:
        tape.watch(x)
        conv = tf.nn.conv2d(x, layer.kernel, strides=2, padding="SAME")
        s = tf.reduce_sum(conv * dy)
    np.testing.assert_allclose(y.numpy(), tape.gradient(s, x).numpy(), rtol=1e-5, atol=1e-5)


def test_configs_round_trip():
    for layer in (L.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu",
                           name="c"), L.Conv1D(2, 3, padding="causal"),
                  L.Conv2DTranspose(3, 3, output_padding=1, strides=2),
                  L.DepthwiseConv2D(3, depth_multiplier=2), L.SeparableConv1D(4, 3)):
        config = layer.get_config()
        again = type(layer).from_config(config)
        assert again.get_config() == config


def test_a_small_cnn_trains_staged():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 8, 8, 1)).astype(np.float32)
    y = (x[:, :4].sum((1, 2, 3)) > x[:, 4:].sum((1, 2, 3))).astype(np.int64)
    model = tf.keras.Sequential([tf.keras.Input(shape=(8, 8, 1)),
                                 L.Conv2D(4, 3, activation="relu", padding="same"),
                                 L.Conv2D(4, 3, strides=2, activation="relu"),
                                 L.Flatten(), L.Dense(2)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=16, epochs=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] * 0.8


@pytest.mark.parametrize("make,x,first_line", [
    (lambda: L.Conv2D(2, 3), tf.ones([5, 5, 3]),
     'Input 0 of layer "{name}" is incompatible with the layer: expected ndim=4, found ndim=3.'),
    (lambda: L.Conv2D(0, 3), None,
     "Conv2D: invalid value for argument `filters`, expected a positive integer."),
    (lambda: L.Conv2D(2, 3, strides=2, dilation_rate=2), None,
     "Conv2D: `strides > 1` not supported in conjunction with `dilation_rate > 1`."),
    (lambda: L.Conv2D(2, 3, padding="causal"), None,
     "Conv2D: the `padding` argument must be one of 'valid', 'same'."),
    (lambda: L.Conv2D(2, (3, 3, 3)), None,
     "Conv2D: the `kernel_size` argument must be a tuple of 2 positive integers"),
    (lambda: L.Conv2D(3, 3, groups=2), None,
     "Conv2D: the number of filters must be evenly divisible by the number of groups."),
    (lambda: L.Conv2D(2, 3, kernel_regularizer="l22"), None,
     "Unknown regularizer: 'l22'. Valid names are"),
])
def test_errors(make, x, first_line):
    with pytest.raises(ValueError) as e:
        layer = make()
        layer(x)
    line = str(e.value).splitlines()[0]
    assert line.startswith(first_line.format(name=getattr(locals().get("layer"), "name", ""))
                           .split(" Received")[0])


def test_a_second_call_with_other_channels_says_which():
    layer = L.Conv2D(2, 3)
    layer(tf.ones([1, 5, 5, 3]))
    with pytest.raises(ValueError, match=r"expected axis -1 of input shape to have value 3"):
        layer(tf.ones([1, 5, 5, 4]))


def test_transposed_conv_takes_a_batch_size_known_only_at_run_time():
    layer = L.Conv2DTranspose(3, 3, strides=2, padding="same", output_padding=1)

    @tf.function(input_signature=[tf.TensorSpec([None, 5, 5, 2])])
    def f(images):
        return layer(images)
    x = np.random.default_rng(6).standard_normal((2, 5, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(f(tf.constant(x)).numpy(), layer(tf.constant(x)).numpy(),
                               rtol=1e-5, atol=1e-6)
    model = tf.keras.Sequential([tf.keras.Input(shape=(5, 5, 2)),
                                 L.Conv2DTranspose(3, 3, strides=2)])
    assert model(tf.ones([4, 5, 5, 2])).shape == (4, 11, 11, 3)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="^conv2d_transpose: output_shape must be known when the function "
                             "is traced, except for its batch size"):
        tf.nn.conv2d_transpose(tf.ones([1, 5, 5, 2]), tf.ones([3, 3, 3, 2]), [1, None, 10, 3], 2)
