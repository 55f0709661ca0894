"""Keras objects in tf.train.Checkpoint: TensorFlow 2 Keras's keys (Dense kernel/bias,
optimizer iter/hyperparameters, .OPTIMIZER_SLOT slots) and restore-on-create of weights and
slots built inside a traced training step."""
import os

import numpy as np
import pytest

import stagecraft as tf

keras = tf.keras


class MLP(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(4, activation="relu")
        self.out = keras.layers.Dense(2)

    def call(self, x):
        return self.out(self.hidden(x))


X = tf.constant(np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32))
Y = tf.constant([0, 1] * 4)


def make(optimizer):
    model = MLP()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return model, optimizer, step


def keys(path):
    return [k for k, _ in tf.train.list_variables(path)]


def test_adam_checkpoint_keys_and_deferred_restore(tmp_path):
    model, opt, step = make(keras.optimizers.Adam(0.01))
    for _ in range(3):
        step(X, Y)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(os.path.join(tmp_path, "ckpt"))
    slot = "model/{layer}/{w}/.OPTIMIZER_SLOT/optimizer/{s}/.ATTRIBUTES/VARIABLE_VALUE"
    expected = ["_CHECKPOINTABLE_OBJECT_GRAPH"]
    for layer in ("hidden", "out"):
        for w in ("bias", "kernel"):
            expected.append(f"model/{layer}/{w}/.ATTRIBUTES/VARIABLE_VALUE")
            expected += [slot.format(layer=layer, w=w, s=s) for s in ("m", "v")]
    expected += [f"optimizer/{h}/.ATTRIBUTES/VARIABLE_VALUE"
                 for h in ("beta_1", "beta_2", "iter", "learning_rate")]
    expected.append("save_counter/.ATTRIBUTES/VARIABLE_VALUE")
    assert sorted(keys(path)) == sorted(expected)
    continued = [float(step(X, Y)) for _ in range(2)]

    # Fresh objects: nothing is built yet, so the weights and slots are restored when the
    # first (traced) step creates them.
    model2, opt2, step2 = make(keras.optimizers.Adam(0.01))
    status = tf.train.Checkpoint(model=model2, optimizer=opt2).restore(path)
    assert not model2.built and opt2._checkpoint_slots() == []
    assert int(opt2.iterations) == 3  # existing variables are restored at once
    restored = [float(step2(X, Y)) for _ in range(2)]
    np.testing.assert_allclose(restored, continued, rtol=1e-6)
    status.assert_consumed()
    assert int(opt2.iterations) == 5


def test_sgd_momentum_and_sequential_keys(tmp_path):
    model = keras.Sequential([keras.layers.Dense(3), keras.layers.Dense(1)])
    opt = keras.optimizers.SGD(0.1, momentum=0.9)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(tf.ones([2, 2])))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    path = tf.train.Checkpoint(model=model, optimizer=opt).write(os.path.join(tmp_path, "w"))
    found = keys(path)
    assert "model/layer-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in found
    assert ("model/layer-1/bias/.OPTIMIZER_SLOT/optimizer/momentum/.ATTRIBUTES/VARIABLE_VALUE"
            in found)
    assert {k.split("/")[1] for k in found if k.startswith("optimizer/")} == \
        {"iter", "learning_rate", "momentum"}
    assert len([k for k in found if ".OPTIMIZER_SLOT" in k]) == 4


class MNISTModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense1 = keras.layers.Dense(units=10)
        self.dense2 = keras.layers.Dense(units=10)

    def call(self, input):
        return self.dense2(self.dense2(self.dense1(input)))


def test_save_weights_and_load_weights_into_an_unbuilt_model(tmp_path):
    model = MNISTModel()
    x = tf.ones([2, 784])
    expected = model(x).numpy()
    path = model.save_weights(os.path.join(tmp_path, "weights"))
    assert sorted(keys(path)) == ["_CHECKPOINTABLE_OBJECT_GRAPH"] + [
        f"{layer}/{w}/.ATTRIBUTES/VARIABLE_VALUE"
        for layer in ("dense1", "dense2") for w in ("bias", "kernel")]
    clone = MNISTModel()
    status = clone.load_weights(path)
    np.testing.assert_array_equal(clone(x).numpy(), expected)  # restored when built
    status.assert_consumed()


def test_save_weights_refuses_hdf5_and_existing_files(tmp_path):
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    with pytest.raises(ValueError) as e:
        model.save_weights(os.path.join(tmp_path, "w.h5"))
    assert str(e.value).startswith("save_weights: ")
    path = model.save_weights(os.path.join(tmp_path, "w"))
    with pytest.raises(FileExistsError) as e:
        model.save_weights(path, overwrite=False)
    assert "exists and overwrite=False" in str(e.value).splitlines()[0]
