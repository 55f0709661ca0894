"""Keras training: ``compile``/``fit``/``evaluate``/``predict``, the ``*_on_batch`` methods and
callbacks, checked against hand-written NumPy references (the expected values are what
TF 2 Keras gives)."""
from __future__ import annotations

import csv
import io
import os

import numpy as np
import pytest

import stagecraft as tf


def linear_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25
    return x, y


def dense_model(units=1, activation=None, seed_kernel=None):
    init = "zeros" if seed_kernel is None else tf.keras.initializers.Constant(seed_kernel)
    return tf.keras.Sequential([tf.keras.layers.Dense(units, activation=activation,
                                                      kernel_initializer=init)])


def test_fit_trains_and_reports_the_epoch_mean_loss():
    x, y = linear_data()
    model = dense_model()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert sorted(history.history) == ["loss"] and history.epoch == list(range(30))
    assert history.history["loss"][-1] < 1e-3 < history.history["loss"][0]
    kernel = model.layers[0].kernel.numpy().ravel()
    np.testing.assert_allclose(kernel, [1.0, -2.0, 0.5], atol=0.02)
    assert model.evaluate(x, y, verbose=0) < 1e-3


def test_the_epoch_loss_is_the_batch_losses_weighted_by_batch_size():
    x, y = linear_data(10)
    model = dense_model()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse")  # no training
    loss = model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    per_example = ((x @ np.zeros((3, 1), np.float32) - y) ** 2).mean(axis=1)
    assert loss == pytest.approx(per_example.mean(), rel=1e-6)  # batches 4, 4, 2


def test_staged_and_eager_training_agree():
    x, y = linear_data(32)
    weights = []
    for run_eagerly in (False, True):
        model = dense_model(seed_kernel=0.1)
        model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse",
                      run_eagerly=run_eagerly)
        model.fit(x, y, epochs=3, batch_size=8, shuffle=False, verbose=0)
        weights.append([w.copy() for w in model.get_weights()])
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss,labels,units,expected", [
    ("sparse_categorical_crossentropy", [0, 1, 1, 0], 2, "sparse_categorical_accuracy"),
    ("categorical_crossentropy", [[1, 0], [0, 1], [0, 1], [1, 0]], 2, "categorical_accuracy"),
    ("binary_crossentropy", [[0.0], [1.0], [1.0], [0.0]], 1, "binary_accuracy"),
])
def test_accuracy_means_what_the_targets_say(loss, labels, units, expected):
    model = dense_model(units, "softmax" if units > 1 else "sigmoid")
    model.compile(optimizer="sgd", loss=loss, metrics=["accuracy"])
    logs = model.evaluate(np.ones((4, 2), np.float32), np.asarray(labels, np.float32),
                          verbose=0, return_dict=True)
    assert sorted(logs) == ["accuracy", "loss"]
    assert type(model.metrics[1]).__name__ == \
        "".join(p.title() for p in expected.split("_"))
    assert logs["accuracy"] == 0.5  # constant predictions: right on half the labels


def test_validation_split_takes_the_last_samples_and_reports_val_logs():
    x, y = linear_data(20)
    model = dense_model()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse", metrics=["mae"])
    h = model.fit(x, y, epochs=2, validation_split=0.25, verbose=0)
    assert sorted(h.history) == ["loss", "mae", "val_loss", "val_mae"]
    expected = float(np.mean(y[15:] ** 2))
    assert h.history["val_loss"][0] == pytest.approx(expected, rel=1e-6)
    assert h.history["loss"][0] == pytest.approx(float(np.mean(y[:15] ** 2)), rel=1e-6)


def test_sample_and_class_weights_weight_the_loss():
    x = np.ones((4, 1), np.float32)
    y = np.array([0, 1, 1, 1])
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, kernel_initializer="zeros")])
    model.compile(optimizer="sgd",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ln2 = float(np.log(2.0))
    assert model.test_on_batch(x, y) == pytest.approx(ln2)
    weighted = model.test_on_batch(x, y, sample_weight=np.array([2.0, 0.0, 0.0, 0.0]))
    assert weighted == pytest.approx(2 * ln2 / 4)  # SUM_OVER_BATCH_SIZE: divided by 4
    loss = model.fit(x, y, class_weight={0: 4.0, 1: 0.0}, epochs=1, verbose=0,
                     shuffle=False).history["loss"][0]
    assert loss == pytest.approx(ln2)  # (4 ln2 + 0) / 4


def test_fit_on_a_dataset_and_steps_per_epoch_continue_one_iterator():
    x, y = linear_data(12)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    model = dense_model()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    seen = []
    cb = tf.keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b))
    model.fit(ds, epochs=2, verbose=0, callbacks=[cb])
    assert seen == [0, 1, 2, 0, 1, 2]
    seen.clear()
    model.fit(ds.repeat(), epochs=3, steps_per_epoch=2, verbose=0, callbacks=[cb])
    assert seen == [0, 1] * 3
    with pytest.raises(ValueError, match="infinite"):
        model.fit(ds.repeat(), epochs=1, verbose=0)


def test_predict_concatenates_batches_and_on_batch_methods():
    model = dense_model(2, seed_kernel=1.0)
    model.compile(optimizer="sgd", loss="mse")
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    out = model.predict(x, batch_size=2, verbose=0)
    np.testing.assert_allclose(out, np.repeat(x.sum(1, keepdims=True), 2, axis=1))
    np.testing.assert_allclose(model.predict_on_batch(x), out)
    np.testing.assert_allclose(model.predict(tf.data.Dataset.from_tensor_slices(x).batch(3),
                                             verbose=0), out)
    before = model.get_weights()[0].copy()
    loss = model.train_on_batch(x, np.zeros((5, 2), np.float32))
    assert loss == pytest.approx(float(np.mean(out ** 2)))
    assert not np.allclose(model.get_weights()[0], before)


def test_compile_errors_are_clear():
    model = dense_model()
    with pytest.raises(RuntimeError) as e:
        model.fit(np.ones((2, 1)), np.ones((2, 1)), verbose=0)
    assert str(e.value).startswith("You must compile your model before training/testing.")
    with pytest.raises(ValueError, match="Unknown optimizer: 'adamm'"):
        model.compile(optimizer="adamm", loss="mse")
    with pytest.raises(ValueError, match="Unknown metric: 'acuracy'"):
        model.compile(optimizer="sgd", loss="mse", metrics=["acuracy"])
        model.fit(np.ones((2, 1)), np.ones((2, 1)), verbose=0)


def test_the_optimizer_is_checkpointed_but_its_variables_are_not_weights(tmp_path):
    x, y = linear_data(8)
    model = dense_model()
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, epochs=1, verbose=0)
    assert len(model.variables) == 2 and len(model.non_trainable_variables) == 0
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ck"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert any(n.startswith("model/optimizer/") for n in names)


# ------------------------------------------------------------------ callbacks

def _constant_model(lr=0.0):
    model = dense_model()
    model.compile(optimizer=tf.keras.optimizers.SGD(lr), loss="mse")
    return model


def test_early_stopping_stops_after_patience_and_restores_the_best_weights():
    x, y = linear_data(8)
    model = _constant_model()
    h = model.fit(x, y, epochs=10, verbose=0, shuffle=False, callbacks=[  # the same batches:
        tf.keras.callbacks.EarlyStopping(monitor="loss", patience=2)])    # bit-equal losses
    assert len(h.history["loss"]) == 3
    model = dense_model()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.3), loss="mse")  # diverges
    stop = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=1,
                                            restore_best_weights=True)
    ends = []
    record = tf.keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: ends.append(model.get_weights()))
    h = model.fit(x * 4, y * 4, epochs=8, verbose=0, shuffle=False, batch_size=8,
                  callbacks=[record, stop])
    assert stop.stopped_epoch > 0 and len(h.history["loss"]) == stop.stopped_epoch + 1
    assert stop.best_epoch == int(np.argmin(h.history["loss"])) < stop.stopped_epoch
    for restored, best in zip(model.get_weights(), ends[stop.best_epoch]):
        np.testing.assert_array_equal(restored, best)


def test_learning_rate_scheduler_and_reduce_on_plateau():
    x, y = linear_data(8)
    model = _constant_model(0.1)
    h = model.fit(x, y, epochs=3, verbose=0, callbacks=[
        tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))])
    assert h.history["lr"] == pytest.approx([0.1, 0.05, 0.1 / 3])
    model = _constant_model(0.4)
    reduce = tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)
    zeros = np.zeros((4, 3), np.float32)
    h = model.fit(zeros, np.zeros((4, 1)), epochs=4, verbose=0, callbacks=[reduce])  # a plateau
    assert h.history["lr"] == pytest.approx([0.4, 0.4, 0.2, 0.1])
    assert float(model.optimizer.learning_rate) == pytest.approx(0.05)


def test_model_checkpoint_csv_logger_terminate_on_nan(tmp_path):
    x, y = linear_data(8)
    model = dense_model()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    pattern = str(tmp_path / "w-{epoch:02d}")
    log = str(tmp_path / "log.csv")
    model.fit(x, y, epochs=2, verbose=0, callbacks=[
        tf.keras.callbacks.ModelCheckpoint(pattern, save_weights_only=True),
        tf.keras.callbacks.CSVLogger(log)])
    assert os.path.exists(str(tmp_path / "w-01.index"))
    assert os.path.exists(str(tmp_path / "w-02.index"))
    rows = list(csv.DictReader(open(log)))
    assert [r["epoch"] for r in rows] == ["0", "1"] and "loss" in rows[0]
    clone = dense_model()
    clone.build((None, 3))
    clone.load_weights(str(tmp_path / "w-02"))
    np.testing.assert_allclose(clone.get_weights()[0], model.get_weights()[0])
    bad = dense_model()
    bad.compile(optimizer="sgd", loss="mse")
    h = bad.fit(np.full((4, 3), np.nan, np.float32), np.zeros((4, 1)), epochs=5, verbose=0,
                batch_size=2, callbacks=[tf.keras.callbacks.TerminateOnNaN()])
    assert len(h.history["loss"]) == 1


def test_progress_output(capsys):
    x, y = linear_data(8)
    model = _constant_model()
    model.fit(x, y, epochs=2, batch_size=4, verbose=1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2" and out[2] == "Epoch 2/2"
    assert out[1].startswith("2/2 [==============================] - ") and " - loss: " in out[1]
    model.fit(x, y, epochs=2, batch_size=4, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("Epoch 1/2 - ") and "loss: " in lines[0]


# ------------------------------------------------------------------ optimizers and losses

def _numpy_steps(kind, grads, **hp):
    var, state = 1.0, {}
    for t, g in enumerate(grads, 1):
        if kind == "rmsprop":
            rho, lr, eps, mom = hp["rho"], hp["lr"], 1e-7, hp.get("momentum", 0.0)
            state["rms"] = rho * state.get("rms", 0.0) + (1 - rho) * g * g
            denom = state["rms"]
            if hp.get("centered"):
                state["mg"] = rho * state.get("mg", 0.0) + (1 - rho) * g
                denom = denom - state["mg"] ** 2
            if mom:
                state["m"] = mom * state.get("m", 0.0) + lr * g / np.sqrt(denom + eps)
                var -= state["m"]
            else:
                var -= lr * g / (np.sqrt(denom) + eps)
        elif kind == "adagrad":
            state["acc"] = state.get("acc", hp["init"]) + g * g
            var -= hp["lr"] * g / (np.sqrt(state["acc"]) + 1e-7)
        elif kind in ("adam", "adamw"):
            b1, b2, lr = 0.9, 0.999, hp["lr"]
            var -= lr * hp.get("wd", 0.0) * var
            state["m"] = state.get("m", 0.0) + (g - state.get("m", 0.0)) * (1 - b1)
            state["v"] = state.get("v", 0.0) + (g * g - state.get("v", 0.0)) * (1 - b2)
            alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            var -= alpha * state["m"] / (np.sqrt(state["v"]) + 1e-7)
        elif kind == "adamax":
            b1, b2, lr = 0.9, 0.999, hp["lr"]
            state["m"] = state.get("m", 0.0) + (g - state.get("m", 0.0)) * (1 - b1)
            state["u"] = max(b2 * state.get("u", 0.0), abs(g))
            var -= lr / (1 - b1 ** t) * state["m"] / (state["u"] + 1e-7)
        else:  # nadam (Keras's momentum schedule)
            b1, b2, lr = 0.9, 0.999, hp["lr"]
            mu = lambda s: b1 * (1 - 0.5 * 0.96 ** (0.004 * s))  # noqa: E731
            prod = state.get("prod", 1.0) * mu(t)
            prod_next = prod * mu(t + 1)
            state["prod"] = prod
            state["m"] = state.get("m", 0.0) + (g - state.get("m", 0.0)) * (1 - b1)
            state["v"] = state.get("v", 0.0) + (g * g - state.get("v", 0.0)) * (1 - b2)
            m_hat = mu(t + 1) * state["m"] / (1 - prod_next) + (1 - mu(t)) * g / (1 - prod)
            var -= lr * m_hat / (np.sqrt(state["v"] / (1 - b2 ** t)) + 1e-7)
    return var


@pytest.mark.parametrize("make,kind,hp", [
    (lambda: tf.keras.optimizers.RMSprop(0.1, rho=0.8), "rmsprop", {"lr": 0.1, "rho": 0.8}),
    (lambda: tf.keras.optimizers.RMSprop(0.1, rho=0.8, momentum=0.5), "rmsprop",
     {"lr": 0.1, "rho": 0.8, "momentum": 0.5}),
    (lambda: tf.keras.optimizers.RMSprop(0.1, rho=0.8, centered=True), "rmsprop",
     {"lr": 0.1, "rho": 0.8, "centered": True}),
    (lambda: tf.keras.optimizers.Adagrad(0.2), "adagrad", {"lr": 0.2, "init": 0.1}),
    (lambda: tf.keras.optimizers.AdamW(0.1, weight_decay=0.3), "adamw", {"lr": 0.1, "wd": 0.3}),
    (lambda: tf.keras.optimizers.Adamax(0.1), "adamax", {"lr": 0.1}),
    (lambda: tf.keras.optimizers.Nadam(0.1), "nadam", {"lr": 0.1}),
])
def test_optimizers_follow_the_keras_formulas(make, kind, hp):
    grads = [0.5, -1.0, 2.0]
    v = tf.Variable(1.0, dtype=tf.float64)
    opt = make()
    for g in grads:
        opt.apply_gradients([(tf.constant(g, tf.float64), v)])
    # hyperparameters are float32 variables (as in TF): rho and lr carry float32 rounding
    assert float(v) == pytest.approx(_numpy_steps(kind, grads, **hp), rel=1e-6)


def test_binary_crossentropy_and_mae_match_numpy():
    y = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    p = np.array([[0.9, 0.2], [0.4, 1.0]], np.float32)
    pc = np.clip(p, 1e-7, 1 - 1e-7)
    ref = -(y * np.log(pc + 1e-7) + (1 - y) * np.log(1 - pc + 1e-7)).mean(-1)
    np.testing.assert_allclose(tf.keras.losses.binary_crossentropy(y, p).numpy(), ref,
                               rtol=1e-5)
    logits = np.array([[2.0, -1.0], [0.5, 30.0]], np.float32)
    ref_l = (np.maximum(logits, 0) - logits * y + np.log1p(np.exp(-np.abs(logits)))).mean(-1)
    np.testing.assert_allclose(
        tf.keras.losses.binary_crossentropy(y, logits, from_logits=True).numpy(), ref_l,
        rtol=1e-5)
    np.testing.assert_allclose(tf.keras.losses.mean_absolute_error(y, p).numpy(),
                               np.abs(y - p).mean(-1), rtol=1e-6)


def test_gradient_clipping_follows_keras():
    v, w = tf.Variable([3.0, 4.0]), tf.Variable([0.0])
    grads = [tf.constant([3.0, 4.0]), tf.constant([12.0])]
    tf.keras.optimizers.SGD(1.0, clipnorm=1.0).apply_gradients(zip(grads, [v, w]))
    np.testing.assert_allclose(v.numpy(), [2.4, 3.2], rtol=1e-6)  # each norm clipped to 1
    np.testing.assert_allclose(w.numpy(), [-1.0], rtol=1e-6)
    v.assign([3.0, 4.0]), w.assign([0.0])
    tf.keras.optimizers.SGD(1.0, global_clipnorm=2.6).apply_gradients(zip(grads, [v, w]))
    np.testing.assert_allclose(v.numpy(), [2.4, 3.2], rtol=1e-6)  # global norm 13 -> 2.6
    np.testing.assert_allclose(w.numpy(), [-2.4], rtol=1e-6)
    v.assign([3.0, 4.0])
    tf.keras.optimizers.SGD(1.0, clipvalue=0.5).apply_gradients([(grads[0], v)])
    np.testing.assert_allclose(v.numpy(), [2.5, 3.5])
    with pytest.raises(ValueError, match="at most one of clipnorm and global_clipnorm"):
        tf.keras.optimizers.Adam(clipnorm=1.0, global_clipnorm=1.0)


def test_a_schedule_sets_the_rate_of_each_staged_step():
    schedule = tf.keras.optimizers.schedules.PiecewiseConstantDecay([1], [1.0, 0.1])
    opt = tf.keras.optimizers.SGD(schedule)
    v = tf.Variable(0.0)

    @tf.function
    def step():
        opt.apply_gradients([(tf.constant(-1.0), v)])

    for _ in range(3):
        step()
    assert float(v) == pytest.approx(1.0 + 1.0 + 0.1)  # steps 0 and 1 at 1.0, step 2 at 0.1


def test_base_classes_need_their_methods():
    class NoCall(tf.keras.optimizers.schedules.LearningRateSchedule):
        pass
    with pytest.raises(TypeError, match="abstract method"):
        NoCall()

    class NoElements(tf.data.Dataset):
        pass
    with pytest.raises(TypeError, match="abstract method"):
        NoElements(None)
