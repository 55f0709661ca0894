"""tf.keras RNN pieces (custom cells, StackedRNNCells, TimeDistributed) and dense attention
layers (Attention, AdditiveAttention): values vs NumPy, gradients, configs, staged
(issue 18)."""
import numpy as np
import pytest
from scipy import special

import stagecraft as tf

layers = tf.keras.layers
RNG = np.random.default_rng(5)


class MinimalRNNCell(layers.Layer):
    """Keras's documented custom cell: one state, returned as a bare tensor."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", shape=(input_shape[-1], self.units))
        self.recurrent_kernel = self.add_weight("recurrent_kernel", shape=(self.units,
                                                                           self.units))
        self.built = True

    def call(self, inputs, states):
        output = tf.matmul(inputs, self.kernel) + tf.matmul(states[0], self.recurrent_kernel)
        if tf.reduce_sum(output) > 1e6:  # Python control flow on a tensor: AutoGraph stages it
            output = output * 0.0
        return output, output


def test_custom_cell_eager_staged_and_gradients():
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    rnn = layers.RNN(MinimalRNNCell(2), return_sequences=True)
    got = rnn(x).numpy()
    k, r = rnn.cell.kernel.numpy(), rnn.cell.recurrent_kernel.numpy()
    h, want = np.zeros((2, 2)), []
    for t in range(4):
        h = x[:, t] @ k + h @ r
        want.append(h)
    np.testing.assert_allclose(got, np.stack(want, 1), rtol=1e-5, atol=1e-6)
    staged = tf.function(lambda v: rnn(v))(tf.constant(x)).numpy()
    np.testing.assert_allclose(staged, got, rtol=1e-6)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(rnn(x) ** 2)
    grads = tape.gradient(loss, rnn.trainable_variables)
    assert [g.shape for g in grads] == [[3, 2], [2, 2]]
    assert all(np.isfinite(g.numpy()).all() and np.abs(g.numpy()).sum() > 0 for g in grads)


def test_stacked_cells_equal_stacked_layers():
    x = RNG.normal(size=(2, 5, 3)).astype(np.float32)
    cells = [layers.SimpleRNNCell(4), layers.LSTMCell(2)]
    stacked = layers.RNN(layers.StackedRNNCells(cells), return_sequences=True,
                         return_state=True)
    out, h1, h2, c2 = stacked(x)
    first = layers.SimpleRNN(4, return_sequences=True)
    second = layers.LSTM(2, return_sequences=True, return_state=True)
    first(x), second(np.zeros((2, 5, 4), np.float32))
    first.set_weights(cells[0].get_weights())
    second.set_weights(cells[1].get_weights())
    seq = first(x)
    want, want_h, want_c = second(seq)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h1.numpy(), seq.numpy()[:, -1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c2.numpy(), want_c.numpy(), rtol=1e-5, atol=1e-6)
    config = stacked.get_config()
    again = layers.RNN.from_config(config)
    assert [type(c).__name__ for c in again.cell.cells] == ["SimpleRNNCell", "LSTMCell"]
    assert again.cell.state_size == [4, 2, 2]


def test_time_distributed_applies_one_layer_per_step():
    x = RNG.normal(size=(2, 3, 4, 5)).astype(np.float32)
    td = layers.TimeDistributed(layers.Dense(6))
    got = td(x).numpy()
    k, b = td.layer.kernel.numpy(), td.layer.bias.numpy()
    np.testing.assert_allclose(got, x @ k + b, rtol=1e-5, atol=1e-6)
    assert [w.name for w in td.weights] == [td.layer.kernel.name, td.layer.bias.name]
    inp = tf.keras.Input(shape=(None, 4, 5))
    model = tf.keras.Model(inp, layers.TimeDistributed(layers.Flatten())(inp))
    assert model(x).shape == [2, 3, 20]
    staged = tf.function(lambda v: td(v), input_signature=[tf.TensorSpec([None, None, 4, 5])])
    np.testing.assert_allclose(staged(tf.constant(x)).numpy(), got, rtol=1e-6)
    again = layers.TimeDistributed.from_config(td.get_config())
    assert type(again.layer) is layers.Dense and again.layer.units == 6
    with pytest.raises(ValueError) as e:
        td(np.ones((2, 5), np.float32))
    assert str(e.value).startswith("TimeDistributed expects inputs of rank >= 3")


def np_attention(scores, v, v_mask=None, causal=False):
    keep = np.ones(scores.shape, bool)
    if v_mask is not None:
        keep &= v_mask[:, None, :]
    if causal:
        keep &= np.tril(np.ones(scores.shape[-2:], bool))[None]
    weights = special.softmax(scores - 1e9 * (~keep), -1)
    return weights @ v, weights


def test_attention_dot_and_concat_with_masks():
    q = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    v = RNG.normal(size=(2, 5, 4)).astype(np.float32)
    k = RNG.normal(size=(2, 5, 4)).astype(np.float32)
    v_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    q_mask = np.array([[1, 1, 0], [1, 1, 1]], bool)
    layer = layers.Attention(use_scale=True)
    out, w = layer([q, v, k], mask=[q_mask, v_mask], return_attention_scores=True)
    assert layer.scale.shape == [] and float(layer.scale) == 1.0
    want, want_w = np_attention(q @ k.transpose(0, 2, 1), v, v_mask)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), want * q_mask[..., None], rtol=1e-5, atol=1e-6)
    concat = layers.Attention(score_mode="concat")
    got = concat([q, v], use_causal_mask=True).numpy()
    scores = np.tanh(q[:, :, None, :] + v[:, None, :, :]).sum(-1)
    np.testing.assert_allclose(got, np_attention(scores, v, causal=True)[0], rtol=1e-5,
                               atol=1e-6)


def test_additive_attention_values_gradient_and_staged():
    q = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    v = RNG.normal(size=(2, 5, 4)).astype(np.float32)
    layer = layers.AdditiveAttention()
    with tf.GradientTape() as tape:
        out = layer([q, v])
        loss = tf.reduce_sum(out ** 2)
    scale = layer.scale.numpy()
    scores = (scale * np.tanh(q[:, :, None, :] + v[:, None, :, :])).sum(-1)
    np.testing.assert_allclose(out.numpy(), np_attention(scores, v)[0], rtol=1e-5, atol=1e-6)
    grad = tape.gradient(loss, layer.scale).numpy()
    eps = 1e-3

    def f(s):
        sc = (s * np.tanh(q[:, :, None, :] + v[:, None, :, :])).sum(-1)
        return (np_attention(sc.astype(np.float64), v)[0] ** 2).sum()
    numeric = [(f(scale + eps * e) - f(scale - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(grad, numeric, rtol=2e-2, atol=1e-3)
    staged = tf.function(lambda a, b: layer([a, b]))
    np.testing.assert_allclose(staged(q, v).numpy(), out.numpy(), rtol=1e-6)
    again = layers.AdditiveAttention.from_config(layer.get_config())
    assert again.get_config() == layer.get_config()


def conv2d_ref(x, k, same):
    if same:
        ph, pw = (k.shape[0] - 1) // 2, (k.shape[1] - 1) // 2
        x = np.pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))
    oh, ow = x.shape[1] - k.shape[0] + 1, x.shape[2] - k.shape[1] + 1
    out = np.zeros((x.shape[0], oh, ow, k.shape[-1]))
    for i in range(k.shape[0]):
        for j in range(k.shape[1]):
            out += x[:, i:i + oh, j:j + ow, :] @ k[i, j]
    return out


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_conv_lstm2d_matches_numpy(padding):
    x = RNG.normal(size=(2, 3, 5, 5, 2)).astype(np.float32)
    layer = layers.ConvLSTM2D(3, 3, padding=padding, return_sequences=True, return_state=True,
                              bias_initializer="glorot_uniform")
    seq, h_last, c_last = layer(x)
    k, rk, b = (w.numpy().astype(np.float64) for w in (layer.cell.kernel,
                                                      layer.cell.recurrent_kernel,
                                                      layer.cell.bias))
    np.testing.assert_allclose(b[3:6], np.ones(3))  # unit_forget_bias: the f gate starts at 1
    size = 5 if padding == "same" else 3
    h = c = np.zeros((2, size, size, 3))
    outs = []
    for t in range(3):
        z = conv2d_ref(x[:, t], k, padding == "same") + conv2d_ref(h, rk, True) + b
        i, f, g, o = np.split(z, 4, axis=-1)
        c = special.expit(f) * c + special.expit(i) * np.tanh(g)
        h = special.expit(o) * np.tanh(c)
        outs.append(h)
    np.testing.assert_allclose(seq.numpy(), np.stack(outs, 1), rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(c_last.numpy(), c, rtol=2e-4, atol=2e-5)
    staged = tf.function(lambda v: layer(v)[0])(tf.constant(x))
    np.testing.assert_allclose(staged.numpy(), seq.numpy(), rtol=1e-5, atol=1e-6)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x)[1] ** 2)
    grads = tape.gradient(loss, layer.trainable_variables)
    assert len(grads) == 3 and all(np.isfinite(g.numpy()).all() for g in grads)
    again = layers.ConvLSTM2D.from_config(layer.get_config())
    assert again.get_config() == layer.get_config()


def test_rnn_dropout_masks_are_fixed_per_sequence_and_training_only():
    layer = layers.SimpleRNN(6, activation="linear", use_bias=False, dropout=0.5,
                             recurrent_dropout=0.5, return_sequences=True, seed=3)
    x = np.ones((4, 3, 6), np.float32)
    layer(x)
    layer.set_weights([np.eye(6), np.eye(6)])  # h_t = x_t * m + h_(t-1) * r
    np.testing.assert_allclose(layer(x).numpy()[:, -1], np.full((4, 6), 3.0))  # inference
    h = layer(x, training=True).numpy()
    m = h[:, 0]  # h1 = x * m
    assert set(np.unique(m)) <= {0.0, 2.0} and 0 < m.mean() < 2
    kept = m > 0
    r = np.where(kept, (h[:, 1] - m) / np.where(kept, m, 1), 0)  # h2 = m + r * h1
    assert set(np.unique(r[kept])) <= {0.0, 2.0}
    np.testing.assert_allclose(h[:, 2], m + r * h[:, 1], rtol=1e-6)  # the same r at step 3
    lstm = layers.LSTM(4, dropout=0.2, recurrent_dropout=0.3)
    config = lstm.get_config()
    assert config["dropout"] == 0.2 and config["recurrent_dropout"] == 0.3
    assert layers.LSTM.from_config(config).cell.recurrent_dropout == 0.3
    model = tf.keras.Sequential([layers.GRU(4, dropout=0.3, recurrent_dropout=0.3,
                                            input_shape=(5, 2)), layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    data = RNG.normal(size=(8, 5, 2)).astype(np.float32)
    loss = model.fit(data, np.ones((8, 1), np.float32), epochs=2, verbose=0).history["loss"]
    assert np.isfinite(loss).all()
    with pytest.raises(ValueError) as e:
        layers.LSTMCell(3, dropout=1.0)
    assert str(e.value) == "LSTMCell: dropout must be in [0, 1); got 1.0."


def test_bidirectional_conv_lstm():
    x = RNG.normal(size=(2, 4, 5, 5, 2)).astype(np.float32)
    layer = layers.Bidirectional(layers.ConvLSTM2D(3, 3, return_sequences=True), merge_mode="sum")
    out = layer(x).numpy()
    forward = layer.forward_layer(x).numpy()
    backward = layer.backward_layer(x).numpy()[:, ::-1]
    np.testing.assert_allclose(out, forward + backward, rtol=1e-5, atol=1e-6)
    assert layer.backward_layer.go_backwards and out.shape == (2, 4, 3, 3, 3)


def test_grouped_query_attention_matches_numpy_with_causal_mask():
    q_in = RNG.normal(size=(2, 4, 6)).astype(np.float32)
    v_in = RNG.normal(size=(2, 4, 5)).astype(np.float32)
    layer = layers.GroupedQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2,
                                         bias_initializer="glorot_uniform")
    pad = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)[:, None, :].repeat(4, 1)
    out, weights = layer(q_in, v_in, attention_mask=pad, use_causal_mask=True,
                         return_attention_scores=True)

    def dense(x, d):
        return np.einsum("bsm,m...->bs...", x, d.kernel.numpy()) + d.bias.numpy()
    q = dense(q_in, layer.query) / np.sqrt(3)
    k = np.repeat(dense(v_in, layer.key), 2, axis=2)
    v = np.repeat(dense(v_in, layer.value), 2, axis=2)
    scores = np.einsum("bquh,bkuh->buqk", q, k)
    keep = (pad & np.tril(np.ones((4, 4), bool))[None])[:, None]
    w = special.softmax(scores - 1e9 * ~keep, -1) * keep
    heads = np.einsum("buqk,bkuh->bquh", w, v)
    want = np.einsum("bquh,uhm->bqm", heads, layer.attention_output.kernel.numpy()) + \
        layer.attention_output.bias.numpy()
    np.testing.assert_allclose(weights.numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    assert [w.name.split("/")[-2] for w in layer.weights][::2] == [
        "query", "key", "value", "attention_output"]
    staged = tf.function(lambda a, b: layer(a, b, use_causal_mask=True))(q_in, v_in)
    eager = layer(q_in, v_in, use_causal_mask=True)
    np.testing.assert_allclose(staged.numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)
    mha = layers.MultiHeadAttention(2, 3)
    _, mha_scores = mha(q_in, v_in, use_causal_mask=True, return_attention_scores=True)
    assert np.all(mha_scores.numpy()[:, :, np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]]
                  < 1e-6)
    with pytest.raises(ValueError) as e:
        layers.GroupQueryAttention(4, 3, 2)
    assert "num_query_heads (3) must be a multiple of num_key_value_heads (2)" in str(e.value)
