"""The paper's Listing 3 model with a Keras optimizer: checkpointed, restored into a freshly
built object before its layers exist (deferred restoration of weights and Adam slots)."""
import numpy as np
import pytest

import stagecraft as tf


class MNISTModel(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense1 = tf.keras.layers.Dense(units=4)
        self.dense2 = tf.keras.layers.Dense(units=2)

    def call(self, x):
        return self.dense2(tf.nn.relu(self.dense1(x)))


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 6.0


def make_step(model, opt, staged):
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return tf.function(step) if staged else step


@pytest.mark.parametrize("staged", [False, True])
def test_listing3_restored_into_fresh_objects(tmp_path, staged):
    model, opt = MNISTModel(), tf.keras.optimizers.Adam(0.1)
    step = make_step(model, opt, staged)
    for _ in range(3):
        step(tf.constant(X))
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "ckpt"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    assert "model/dense1/kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "model/dense1/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE" in keys

    fresh, fresh_opt = MNISTModel(), tf.keras.optimizers.Adam(0.1)  # no weights, no slots yet
    status = tf.train.Checkpoint(model=fresh, optimizer=fresh_opt).restore(path)
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError):
        status.assert_consumed()  # the layers' weights and the slots do not exist yet
    fresh_step = make_step(fresh, fresh_opt, staged)
    loss_a = step(tf.constant(X))
    loss_b = fresh_step(tf.constant(X))  # builds the layers and slots: restored on creation
    np.testing.assert_allclose(loss_b.numpy(), loss_a.numpy(), rtol=1e-5)
    for a, b in zip(model.variables, fresh.variables):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5)
    status.assert_consumed()
