"""Dropout, Embedding, LayerNormalization, Normalization and MultiHeadAttention against NumPy
references of Keras's formulas, using each layer's own weights."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

rng = np.random.default_rng(0)


def test_dropout_only_while_training():
    layer = tf.keras.layers.Dropout(0.25, seed=3)
    x = np.ones((200, 50), np.float32)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    out = layer(x, training=True).numpy()
    assert set(np.unique(out).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert abs((out == 0).mean() - 0.25) < 0.02
    rows = tf.keras.layers.Dropout(0.5, noise_shape=(None, 1), seed=1)(x, training=True).numpy()
    assert all(len(set(r.tolist())) == 1 for r in rows)  # one draw per row


def test_embedding_gathers_rows_and_gets_their_gradients():
    layer = tf.keras.layers.Embedding(6, 3)
    ids = np.array([[0, 5], [5, 2]])
    out = layer(ids).numpy()
    np.testing.assert_array_equal(out, layer.embeddings.numpy()[ids])
    assert np.all(np.abs(layer.embeddings.numpy()) <= 0.05)
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(layer(ids))
    grad = tf.convert_to_tensor(tape.gradient(total, layer.embeddings)).numpy()
    np.testing.assert_array_equal(grad[:, 0], [1, 0, 1, 0, 0, 2])


@pytest.mark.parametrize("axis", [-1, [1, 2]])
def test_layer_normalization_matches_numpy(axis):
    x = rng.normal(size=(2, 3, 4)).astype(np.float64)
    layer = tf.keras.layers.LayerNormalization(axis=axis, dtype="float64")
    layer(x)
    layer.gamma.assign(rng.normal(size=layer.gamma.shape.as_list()))
    layer.beta.assign(rng.normal(size=layer.beta.shape.as_list()))
    axes = (2,) if axis == -1 else (1, 2)
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    g = layer.gamma.numpy().reshape([1] + [x.shape[a] if a in axes else 1 for a in (1, 2)])
    b = layer.beta.numpy().reshape(g.shape)
    np.testing.assert_allclose(layer(x).numpy(), (x - mean) / np.sqrt(var + 1e-3) * g + b,
                               rtol=1e-10)


def test_normalization_adapts_to_data_and_inverts():
    data = rng.normal(3.0, 2.0, size=(100, 4))
    layer = tf.keras.layers.Normalization(dtype="float64")
    layer.adapt(data)
    np.testing.assert_allclose(layer.mean.numpy(), data.mean(0))
    np.testing.assert_allclose(layer(data).numpy(), (data - data.mean(0)) / data.std(0),
                               rtol=1e-10)
    back = tf.keras.layers.Normalization(mean=data.mean(0), variance=data.var(0), invert=True,
                                         dtype="float64")
    np.testing.assert_allclose(back(layer(data)).numpy(), data, rtol=1e-10)
    from_ds = tf.keras.layers.Normalization(axis=None)
    from_ds.adapt(tf.data.Dataset.from_tensor_slices(data.astype(np.float32)).batch(32))
    assert float(from_ds.mean.numpy()) == pytest.approx(data.mean(), rel=1e-5)


def numpy_mha(layer, q, v, mask=None):
    def proj(p, x):
        out = np.tensordot(x, p.kernel.numpy(), axes=len(p.in_dims))
        return out + p.bias.numpy()
    h = proj(layer.query, q) / np.sqrt(layer.key_dim)
    k, val = proj(layer.key, v), proj(layer.value, v)
    scores = np.einsum("bthk,bshk->bhts", h, k)
    if mask is not None:
        scores = np.where(mask[:, None], scores, -1e9)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    heads = np.einsum("bhts,bshv->bthv", w, val)
    return proj(layer.attention_output, heads), w


def test_multi_head_attention_matches_numpy():
    q, v = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 4, 5))
    layer = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=6,
                                               dtype="float64")
    mask = rng.random((2, 3, 4)) > 0.3
    mask[:, :, 0] = True
    out, scores = layer(q, v, attention_mask=mask, return_attention_scores=True)
    ref_out, ref_scores = numpy_mha(layer, q, v, mask)
    np.testing.assert_allclose(scores.numpy(), ref_scores, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-10)
    assert [w.shape.as_list() for w in layer.weights[:2]] == [[8, 2, 3], [2, 3]]
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(q, v))
    assert all(g is not None for g in tape.gradient(loss, layer.trainable_variables))


def test_new_layers_save_and_load(tmp_path):
    inp = tf.keras.Input(shape=(4,), dtype="int64")
    x = tf.keras.layers.Embedding(10, 8)(inp)
    x = tf.keras.layers.LayerNormalization()(x)
    x = tf.keras.layers.MultiHeadAttention(2, 4)(x, x)
    x = tf.keras.layers.Dropout(0.1)(x)
    model = tf.keras.Model(inp, x)
    path = str(tmp_path / "attn.keras")
    model.save(path)
    ids = rng.integers(0, 10, (3, 4))
    np.testing.assert_array_equal(tf.keras.models.load_model(path)(ids).numpy(),
                                  model(ids).numpy())
