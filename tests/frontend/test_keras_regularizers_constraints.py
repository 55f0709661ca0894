"""tf.keras regularizers and constraints: values vs NumPy, layers' weight and activity
penalties in `losses` and `fit`, constraints applied after optimizer updates (eager and
staged), configs (issue 18)."""
import numpy as np
import pytest

import stagecraft as tf

keras = tf.keras
RNG = np.random.default_rng(2)
W = RNG.normal(size=(4, 3))


@pytest.mark.parametrize("reg,ref", [
    (keras.regularizers.L1(0.3), lambda w: 0.3 * np.abs(w).sum()),
    (keras.regularizers.L2(0.2), lambda w: 0.2 * (w * w).sum()),
    (keras.regularizers.l1_l2(0.1, 0.05), lambda w: 0.1 * np.abs(w).sum() + 0.05 * (w * w).sum()),
    (keras.regularizers.OrthogonalRegularizer(0.5, "rows"), lambda w: 0.5 * 0.5 * np.abs(
        (lambda n: n @ n.T - np.diag(np.diag(n @ n.T)))(
            w / np.linalg.norm(w, axis=1, keepdims=True))).sum() / 6),
    (keras.regularizers.OrthogonalRegularizer(0.5, "columns"), lambda w: 0.5 * 0.5 * np.abs(
        (lambda n: n.T @ n - np.diag(np.diag(n.T @ n)))(
            w / np.linalg.norm(w, axis=0, keepdims=True))).sum() / 3),
], ids=["l1", "l2", "l1_l2", "orth_rows", "orth_cols"])
def test_regularizers_match_numpy_and_round_trip(reg, ref):
    np.testing.assert_allclose(float(reg(tf.constant(W))), ref(W), rtol=1e-10)
    again = keras.regularizers.deserialize(keras.regularizers.serialize(reg))
    assert type(again) is type(reg) and again.get_config() == reg.get_config()


@pytest.mark.parametrize("con,ref", [
    (keras.constraints.MaxNorm(1.5), lambda w: w * np.clip(n0(w), 0, 1.5) / (1e-7 + n0(w))),
    (keras.constraints.MinMaxNorm(1.0, 1.2, rate=0.5), lambda w: w * (
        0.5 * np.clip(n0(w), 1.0, 1.2) + 0.5 * n0(w)) / (1e-7 + n0(w))),
    (keras.constraints.NonNeg(), lambda w: np.maximum(w, 0)),
    (keras.constraints.UnitNorm(), lambda w: w / (1e-7 + n0(w))),
], ids=["max_norm", "min_max_norm", "non_neg", "unit_norm"])
def test_constraints_match_numpy_and_round_trip(con, ref):
    np.testing.assert_allclose(con(tf.constant(W)).numpy(), ref(W), rtol=1e-10)
    again = keras.constraints.get(keras.constraints.serialize(con))
    assert type(again) is type(con) and again.get_config() == con.get_config()


def n0(w):
    return np.sqrt((w * w).sum(0, keepdims=True))


def test_layer_penalties_join_losses_and_fit():
    model = keras.Sequential([
        keras.layers.Dense(3, kernel_regularizer=keras.regularizers.L2(0.1),
                           bias_regularizer="l1", activity_regularizer=keras.regularizers.L1(0.01),
                           kernel_initializer="ones", bias_initializer="ones"),
        keras.layers.Dense(1, kernel_regularizer="l1_l2")])
    x = np.array([[1.0, -2.0], [0.5, 0.25]], np.float32)
    out = model(x)
    first, second = model.layers
    h = x @ np.ones((2, 3)) + 1
    want = [0.01 * np.abs(h).sum(), 0.1 * 6.0, 0.01 * 3.0,
            0.01 * np.abs(second.kernel.numpy()).sum() + 0.01 * (second.kernel.numpy() ** 2).sum()]
    np.testing.assert_allclose(sorted(float(v) for v in model.losses), sorted(want), rtol=1e-5)
    with tf.GradientTape() as tape:
        total = tf.add_n(model.losses)
    grad = tape.gradient(total, first.kernel).numpy()
    np.testing.assert_allclose(grad, 0.2 * np.ones((2, 3)), rtol=1e-5)  # from L2 only
    model.compile(optimizer="sgd", loss="mse")
    result = model.evaluate(x, np.zeros((2, 1), np.float32), verbose=0)
    np.testing.assert_allclose(result, float(np.mean(out.numpy() ** 2)) + sum(want), rtol=1e-5)
    config = first.get_config()
    assert config["kernel_regularizer"] == {"class_name": "L2", "config": {"l2": 0.1}}
    assert config["activity_regularizer"] == {"class_name": "L1", "config": {"l1": 0.01}}
    clone = keras.layers.Dense.from_config(config)
    assert clone.get_config() == config


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "staged"])
def test_constraints_apply_after_each_update(staged):
    layer = keras.layers.Dense(2, kernel_constraint=keras.constraints.NonNeg(),
                               bias_constraint=keras.constraints.MaxNorm(0.5),
                               kernel_initializer="ones")
    conv = keras.layers.Conv1D(2, 2, kernel_constraint="unit_norm")
    opt = keras.optimizers.SGD(1.0)
    x = tf.constant([[1.0, 2.0]])
    seq = tf.constant(RNG.normal(size=(1, 4, 3)).astype(np.float32))

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x)) * 10.0 + tf.reduce_sum(conv(seq))
        variables = layer.trainable_variables + conv.trainable_variables
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    if staged:
        step = tf.function(step)
    step()
    assert np.all(layer.kernel.numpy() == 0)  # 1 - 10 * x < 0, projected to 0
    np.testing.assert_allclose(np.linalg.norm(layer.bias.numpy()), 0.5, rtol=1e-5)
    norms = np.sqrt((conv.kernel.numpy() ** 2).sum(axis=0))  # UnitNorm's default axis=0
    np.testing.assert_allclose(norms, np.ones((3, 2)), rtol=1e-5)


def test_regularized_layers_of_every_family_save_and_load(tmp_path):
    inp = keras.Input(shape=(6, 3))
    x = keras.layers.Conv1D(4, 3, kernel_regularizer="l2", bias_constraint="non_neg")(inp)
    x = keras.layers.BatchNormalization(gamma_regularizer=keras.regularizers.L1(0.1))(x)
    x = keras.layers.LSTM(3, recurrent_regularizer="l2", kernel_constraint="max_norm")(x)
    out = keras.layers.Dense(1, kernel_regularizer="l1")(x)
    model = keras.Model(inp, out)
    data = RNG.normal(size=(2, 6, 3)).astype(np.float32)
    model(data)
    assert len(model.losses) == 4
    path = str(tmp_path / "regularized.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded(data).numpy(), model(data).numpy(), rtol=1e-5, atol=1e-6)
    loaded(data)
    np.testing.assert_allclose(sorted(float(v) for v in loaded.losses),
                               sorted(float(v) for v in model.losses), rtol=1e-5)


def test_errors_name_the_problem():
    with pytest.raises(ValueError) as e:
        keras.regularizers.get("l3")
    assert str(e.value).startswith("Unknown regularizer: 'l3'. Valid names are")
    with pytest.raises(ValueError) as e:
        keras.constraints.get({"class_name": "Clip", "config": {}})
    assert str(e.value).startswith("Unknown constraint: 'Clip'. Valid names are")
    with pytest.raises(ValueError) as e:
        keras.regularizers.L2(-1.0)
    assert str(e.value) == "L1L2: l2 must be a non-negative number; got -1.0."
