"""Keras's Functional API: ``keras.Input``, ``keras.Model(inputs, outputs)`` with shared
layers, several inputs and outputs, merge layers and ``Lambda``; outputs checked against
NumPy, gradients against the same computation written by hand."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf


def ones_dense(units, **kwargs):
    return tf.keras.layers.Dense(units, kernel_initializer="ones", bias_initializer="zeros",
                                 **kwargs)


def test_a_functional_model_builds_at_construction_and_computes_like_numpy():
    x = tf.keras.Input(shape=(3,), name="features")
    h = ones_dense(4, activation="relu")(x)
    y = ones_dense(2)(h)
    model = tf.keras.Model(inputs=x, outputs=y)
    assert type(model).__name__ == "FunctionalModel" and isinstance(model, tf.keras.Model)
    assert x.shape.as_list() == [None, 3] and y.shape.as_list() == [None, 2]
    assert [type(l).__name__ for l in model.layers] == ["InputLayer", "Dense", "Dense"]
    assert len(model.weights) == 4  # built from the Input's shape, before any call
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    expected = np.maximum(data @ np.ones((3, 4)), 0) @ np.ones((4, 2))
    np.testing.assert_allclose(model(data).numpy(), expected)


def test_shared_layers_multiple_inputs_and_outputs():
    a, b = tf.keras.Input(shape=(2,)), tf.keras.Input(shape=(2,))
    shared = ones_dense(3)
    merged = tf.keras.layers.Add()([shared(a), shared(b)])
    both = tf.keras.layers.Concatenate()([merged, tf.keras.layers.Lambda(lambda t: t * 2.0)(a)])
    model = tf.keras.Model(inputs=[a, b], outputs={"sum": merged, "both": both})
    assert len(model.trainable_variables) == 2  # one kernel and bias for the shared layer
    xa, xb = np.ones((4, 2), np.float32), np.full((4, 2), 2.0, np.float32)
    out = model([xa, xb])
    np.testing.assert_allclose(out["sum"].numpy(), np.full((4, 3), 6.0))
    np.testing.assert_allclose(out["both"].numpy(), np.concatenate(
        [np.full((4, 3), 6.0), np.full((4, 2), 2.0)], axis=1))


def test_unknown_dims_stay_unknown_and_the_batch_may_vary():
    x = tf.keras.Input(shape=(None, 4))
    y = tf.keras.layers.Dense(2)(x)
    assert y.shape.as_list() == [None, None, 2]
    model = tf.keras.Model(x, y)
    assert model(np.zeros((3, 5, 4), np.float32)).shape == tf.TensorShape([3, 5, 2])


def test_gradients_and_training_through_a_functional_model():
    x = tf.keras.Input(shape=(2,))
    d1, d2 = ones_dense(2), ones_dense(1)
    model = tf.keras.Model(x, d2(tf.keras.layers.Multiply()([d1(x), d1(x)])))
    data = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        out = tf.reduce_sum(model(data))
    g_kernel = tape.gradient(out, d1.kernel).numpy()
    # out = sum_j (x @ K)_j^2 (second layer all ones): d/dK_ij = 2 * x_i * (x @ K)_j
    h = data.numpy() @ np.ones((2, 2))
    np.testing.assert_allclose(g_kernel, 2 * data.numpy().T @ h)
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    history = model.fit(np.ones((8, 2), np.float32), np.zeros((8, 1), np.float32), epochs=3,
                        verbose=0)
    assert history.history["loss"][2] < history.history["loss"][0]


def test_checkpoint_keys_follow_tensorflows_functional_tracking(tmp_path):
    x = tf.keras.Input(shape=(2,))
    model = tf.keras.Model(x, ones_dense(1)(tf.keras.layers.Lambda(lambda t: t)(x)))
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ck"))
    names = {n for n, _ in tf.train.list_variables(path)}
    assert "model/layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in names


def test_functional_api_errors_are_clear():
    x = tf.keras.Input(shape=(2,))
    with pytest.raises(TypeError, match="Tensor operations on a KerasTensor"):
        _ = x + 1.0
    other = tf.keras.Input(shape=(2,))
    y = tf.keras.layers.Add()([x, other])
    with pytest.raises(ValueError, match="not among the model's inputs"):
        tf.keras.Model(x, y)
    model = tf.keras.Model([x, other], y)
    with pytest.raises(ValueError, match=r"expects 2 input\(s\)"):
        model(np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match="made by keras.Input"):
        tf.keras.Model(tf.ones([1, 2]), y)


def test_sequential_may_start_with_an_input():
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(2)])
    assert len(model.weights) == 2
    assert model(np.ones((1, 3), np.float32)).shape == tf.TensorShape([1, 2])
