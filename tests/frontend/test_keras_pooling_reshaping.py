"""Keras pooling layers (windowed and global) and reshaping layers (ZeroPadding, Cropping,
UpSampling, Reshape, Permute, RepeatVector): output shapes and values against NumPy, both data
formats, configs that round-trip (through JSON too), error messages, and a small CNN trained
with fit."""
from __future__ import annotations

import json

import numpy as np
import pytest

import stagecraft as tf
from stagecraft import keras

L = keras.layers
rng = np.random.default_rng(5)
X = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)


def _np_pool(x, k, s, kind):
    """VALID pooling of NHWC ``x`` by NumPy windows."""
    oh, ow = (x.shape[1] - k[0]) // s[0] + 1, (x.shape[2] - k[1]) // s[1] + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    for i in range(oh):
        for j in range(ow):
            win = x[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
            out[:, i, j] = win.max((1, 2)) if kind == "max" else win.mean((1, 2))
    return out


@pytest.mark.parametrize("cls, kind", [(L.MaxPooling2D, "max"), (L.AveragePooling2D, "avg")])
def test_windowed_pooling_values_and_channels_first(cls, kind):
    np.testing.assert_allclose(cls()(X).numpy(), _np_pool(X, (2, 2), (2, 2), kind), rtol=1e-6)
    np.testing.assert_allclose(cls((3, 2), strides=1)(X).numpy(),
                               _np_pool(X, (3, 2), (1, 1), kind), rtol=1e-6)
    first = cls(data_format="channels_first")(np.transpose(X, (0, 3, 1, 2))).numpy()
    np.testing.assert_allclose(np.transpose(first, (0, 2, 3, 1)), cls()(X).numpy(), rtol=1e-6)
    assert cls(3, strides=2, padding="same")(X).shape == (2, 3, 3, 3)


def test_one_and_three_dimensional_pooling_shapes():
    seq = rng.normal(size=(2, 7, 4)).astype(np.float32)
    assert L.MaxPooling1D()(seq).shape == (2, 3, 4)
    assert L.AveragePooling1D(3, strides=1, padding="same")(seq).shape == (2, 7, 4)
    vol = tf.ones([1, 4, 5, 6, 2])
    assert L.MaxPooling3D()(vol).shape == (1, 2, 2, 3, 2)
    assert L.AveragePooling3D((2, 2, 3), padding="same")(vol).shape == (1, 2, 3, 2, 2)
    assert L.MaxPool2D is L.MaxPooling2D and L.GlobalAvgPool2D is L.GlobalAveragePooling2D


@pytest.mark.parametrize("cls, fn", [(L.GlobalAveragePooling2D, np.mean),
                                     (L.GlobalMaxPooling2D, np.max)])
def test_global_pooling(cls, fn):
    np.testing.assert_allclose(cls()(X).numpy(), fn(X, axis=(1, 2)), rtol=1e-6)
    assert cls(keepdims=True)(X).shape == (2, 1, 1, 3)
    np.testing.assert_allclose(cls(data_format="channels_first")(X).numpy(), fn(X, axis=(2, 3)),
                               rtol=1e-6)
    assert L.GlobalMaxPooling1D()(X[:, 0]).shape == (2, 3)
    assert L.GlobalAveragePooling3D()(tf.ones([2, 2, 2, 2, 5])).shape == (2, 5)


def test_masked_global_average_pooling_1d():
    x = np.array([[[1.0], [3.0], [100.0]]], np.float32)
    got = L.GlobalAveragePooling1D()(x, mask=np.array([[True, True, False]]))
    assert got.numpy().tolist() == [[2.0]]


def test_zero_padding_and_cropping_values():
    padded = L.ZeroPadding2D(((1, 0), (2, 1)))(X).numpy()
    np.testing.assert_array_equal(padded, np.pad(X, [(0, 0), (1, 0), (2, 1), (0, 0)]))
    np.testing.assert_array_equal(L.Cropping2D(((1, 0), (2, 1)))(padded).numpy(), X)
    np.testing.assert_array_equal(L.ZeroPadding1D(2)(X[:, 0]).numpy(),
                                  np.pad(X[:, 0], [(0, 0), (2, 2), (0, 0)]))
    np.testing.assert_array_equal(L.Cropping1D((1, 2))(X[:, 0]).numpy(), X[:, 0, 1:4])
    first = L.ZeroPadding2D(1, data_format="channels_first")(X).numpy()
    np.testing.assert_array_equal(first, np.pad(X, [(0, 0), (0, 0), (1, 1), (1, 1)]))
    vol = rng.normal(size=(1, 4, 4, 4, 2)).astype(np.float32)
    np.testing.assert_array_equal(L.Cropping3D(((1, 1), (0, 2), (1, 0)))(vol).numpy(),
                                  vol[:, 1:3, 0:2, 1:])
    assert L.ZeroPadding3D((1, 0, 2))(vol).shape == (1, 6, 4, 8, 2)


def test_upsampling_repeats_nearest():
    np.testing.assert_array_equal(L.UpSampling2D((2, 3))(X).numpy(),
                                  X.repeat(2, axis=1).repeat(3, axis=2))
    np.testing.assert_array_equal(L.UpSampling1D(3)(X[:, 0]).numpy(), X[:, 0].repeat(3, axis=1))
    assert L.UpSampling3D((1, 2, 1))(tf.ones([1, 2, 2, 2, 1])).shape == (1, 2, 4, 2, 1)


def test_reshape_permute_repeat_vector():
    np.testing.assert_array_equal(L.Reshape((6, -1))(X).numpy(), X.reshape(2, 6, 15))
    np.testing.assert_array_equal(L.Permute((3, 1, 2))(X).numpy(), X.transpose(0, 3, 1, 2))
    v = X[:, 0, 0]
    np.testing.assert_array_equal(L.RepeatVector(4)(v).numpy(), np.repeat(v[:, None], 4, 1))
    staged = tf.function(lambda t: L.Reshape((-1,))(t),
                         input_signature=[tf.TensorSpec([None, None, 6, 3])])
    assert staged(tf.constant(X)).shape == (2, 90)


LAYERS = [
    L.MaxPooling2D(3, strides=(2, 1), padding="same", name="a"),
    L.AveragePooling1D(2, name="b"),
    L.GlobalMaxPooling3D(keepdims=True, name="c"),
    L.ZeroPadding2D(((1, 2), (3, 4)), name="d"),
    L.Cropping1D((1, 2), name="e"),
    L.UpSampling2D((2, 1), data_format="channels_first", name="f"),
    L.Reshape((2, -1), name="g"),
    L.Permute((2, 1), name="h"),
    L.RepeatVector(3, name="i"),
    L.UpSampling1D(3, name="j"),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: type(layer).__name__)
def test_configs_round_trip_through_json(layer):
    config = layer.get_config()
    again = type(layer).from_config(json.loads(json.dumps(config))).get_config()
    assert json.loads(json.dumps(again)) == json.loads(json.dumps(config))


def test_error_messages():
    with pytest.raises(ValueError, match="^MaxPooling2D: the `pool_size` argument must be"):
        L.MaxPooling2D((2, 2, 2))
    with pytest.raises(ValueError, match="^AveragePooling2D: the `padding` argument must be"):
        L.AveragePooling2D(padding="full")
    with pytest.raises(ValueError, match='^Input 0 of layer "p" is incompatible with the layer: '
                                         'expected ndim=4, found ndim=3'):
        L.MaxPooling2D(name="p")(tf.ones([2, 3, 4]))
    with pytest.raises(ValueError, match="^ZeroPadding2D: `padding` should be a non-negative"):
        L.ZeroPadding2D((1, -1))
    with pytest.raises(ValueError, match='^Layer "c" \\(Cropping2D\\) cannot crop 3 \\+ 2'):
        L.Cropping2D(((3, 2), (0, 0)), name="c")(X)
    with pytest.raises(ValueError, match='^Layer "r" \\(Reshape\\): the total size of the new '
                                         'array must be unchanged'):
        L.Reshape((7,), name="r")(X)
    with pytest.raises(ValueError, match="^Invalid permutation argument `dims`"):
        L.Permute((1, 3))
    with pytest.raises(ValueError, match="^UpSampling2D: interpolation='bilinear' is not"):
        L.UpSampling2D(interpolation="bilinear")


def test_small_cnn_trains_with_fit():
    x = rng.normal(size=(16, 8, 8, 1)).astype(np.float32)
    y = (x.mean((1, 2, 3)) > 0).astype(np.int32)
    model = keras.Sequential([
        L.Conv2D(4, 3, padding="same", input_shape=(8, 8, 1)), L.BatchNormalization(),
        L.Activation("relu"), L.MaxPooling2D(), L.ZeroPadding2D(1), L.AveragePooling2D(),
        L.GlobalAveragePooling2D(), L.Dense(2)])
    model.compile(keras.optimizers.SGD(0.1),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    bn = model.layers[1]
    assert not np.allclose(bn.moving_mean.numpy(), 0.0)  # fit updated the moving statistics
    assert model.predict(x, verbose=0).shape == (16, 2)
