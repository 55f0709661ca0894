"""Recurrent layers against NumPy references of TF 2 Keras's formulas: forward values (eager,
staged on the reference interpreter and on Numba), final states, ``go_backwards``,
``Bidirectional``, gradients against finite differences, and a save/load round trip."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_rnn(kind, layer, x):
    """Runs the layer's own weights through Keras's formulas in NumPy: (outputs, states)."""
    cell = layer.cell
    k, rk = cell.kernel.numpy(), cell.recurrent_kernel.numpy()
    b = cell.bias.numpy()
    u = cell.units
    h = np.zeros((x.shape[0], u))
    c = np.zeros_like(h)
    outs = []
    steps = range(x.shape[1])[::-1] if layer.go_backwards else range(x.shape[1])
    for t in steps:
        xt = x[:, t]
        if kind == "simple":
            h = np.tanh(xt @ k + h @ rk + b)
        elif kind == "lstm":
            z = xt @ k + h @ rk + b
            i, f, g, o = (z[:, j * u:(j + 1) * u] for j in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
        else:  # gru, reset_after
            xz = xt @ k + b[0]
            inner = h @ rk + b[1]
            z = sigmoid(xz[:, :u] + inner[:, :u])
            r = sigmoid(xz[:, u:2 * u] + inner[:, u:2 * u])
            hh = np.tanh(xz[:, 2 * u:] + r * inner[:, 2 * u:])
            h = z * h + (1 - z) * hh
        outs.append(h)
    states = [h, c] if kind == "lstm" else [h]
    return np.stack(outs, axis=1), states


LAYERS = {"simple": tf.keras.layers.SimpleRNN, "lstm": tf.keras.layers.LSTM,
          "gru": tf.keras.layers.GRU}
X = np.random.default_rng(0).normal(size=(3, 5, 4))


@pytest.mark.parametrize("kind", list(LAYERS))
@pytest.mark.parametrize("backwards", [False, True])
def test_forward_matches_numpy(kind, backwards):
    layer = LAYERS[kind](6, return_sequences=True, return_state=True, go_backwards=backwards,
                         dtype="float64")
    out, *states = layer(X)
    ref_out, ref_states = numpy_rnn(kind, layer, X)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-10, atol=1e-12)
    for got, ref in zip(states, ref_states):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)
    last = LAYERS[kind](6, go_backwards=backwards, dtype="float64")
    last(X)
    last.set_weights(layer.get_weights())
    np.testing.assert_allclose(last(X).numpy(), ref_out[:, -1], rtol=1e-10)


def test_lstm_weights_are_keras_shaped_with_a_forget_bias_of_one():
    layer = tf.keras.layers.LSTM(3)
    layer(np.zeros((1, 2, 4), np.float32))
    assert [w.shape.as_list() for w in layer.weights] == [[4, 12], [3, 12], [12]]
    np.testing.assert_array_equal(layer.cell.bias.numpy(), [0] * 3 + [1] * 3 + [0] * 6)
    gru = tf.keras.layers.GRU(3)
    gru(np.zeros((1, 2, 4), np.float32))
    assert [w.shape.as_list() for w in gru.weights] == [[4, 9], [3, 9], [2, 9]]
    rk = layer.cell.recurrent_kernel.numpy()  # (3, 12): orthonormal rows (Orthogonal init)
    np.testing.assert_allclose(rk @ rk.T, np.eye(3), atol=1e-5)


@pytest.mark.parametrize("backend", ["reference", "numba"])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_staged_equals_eager(kind, backend):
    layer = LAYERS[kind](5, return_sequences=True)
    x = tf.constant(X.astype(np.float32))
    eager = layer(x).numpy()
    staged = tf.function(lambda v: layer(v), backend=backend)
    np.testing.assert_allclose(staged(x).numpy(), eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", list(LAYERS))
def test_gradients_match_finite_differences(kind):
    layer = LAYERS[kind](3, dtype="float64")
    x = tf.constant(X[:, :3, :2])
    layer(x)
    target = layer.cell.kernel
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(layer(x)))
    grad = tape.gradient(loss, target).numpy()
    base = target.numpy().copy()
    numeric = np.zeros_like(base)
    eps = 1e-6
    for idx in np.ndindex(base.shape):
        for sign in (1, -1):
            w = base.copy()
            w[idx] += sign * eps
            target.assign(w)
            numeric[idx] += sign * float(tf.reduce_sum(tf.square(layer(x))))
        numeric[idx] /= 2 * eps
    target.assign(base)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


def test_bidirectional_merges_forward_and_time_ordered_backward_outputs():
    forward = tf.keras.layers.GRU(3, return_sequences=True, dtype="float64")
    bi = tf.keras.layers.Bidirectional(forward)
    out = bi(X).numpy()
    f_ref, _ = numpy_rnn("gru", bi.forward_layer, X)
    b_ref, _ = numpy_rnn("gru", bi.backward_layer, X)
    np.testing.assert_allclose(out, np.concatenate([f_ref, b_ref[:, ::-1]], -1), rtol=1e-10)
    assert bi.backward_layer.go_backwards and len(bi.trainable_variables) == 6
    summed = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(3, dtype="float64"),
                                           merge_mode="sum")
    assert summed(X).shape == tf.TensorShape([3, 3])


def test_a_recurrent_model_trains_and_round_trips(tmp_path):
    model = tf.keras.Sequential([tf.keras.Input(shape=(5, 4)),
                                 tf.keras.layers.LSTM(8, return_sequences=True),
                                 tf.keras.layers.GRU(4),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = X.astype(np.float32)
    history = model.fit(x, x.sum(axis=(1, 2))[:, None], epochs=5, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    path = str(tmp_path / "rnn.keras")
    model.save(path)
    again = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
