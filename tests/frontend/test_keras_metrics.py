"""tf.keras.metrics: Mean and the accuracies, eagerly and inside tf.function."""
import numpy as np

import stagecraft as tf

keras = tf.keras


def test_mean_accumulates_and_resets():
    m = keras.metrics.Mean(name="train_loss")
    assert m.name == "train_loss" and float(m.result()) == 0.0
    m.update_state(1.0)
    m.update_state(np.array([2.0, 6.0]))
    assert float(m.result()) == 3.0
    assert float(m([10.0], sample_weight=[3.0])) == (9.0 + 30.0) / 6.0
    assert [v.name.split("/")[-1] for v in m.variables] == ["total:0", "count:0"]
    assert m.trainable_variables == () and vars(m)["total"] is m.total
    m.reset_state()
    assert float(m.result()) == 0.0 and float(m.count) == 0.0


def test_mean_updates_inside_a_function():
    m = keras.metrics.Mean()

    @tf.function
    def step(x):
        m.update_state(x)
    step(tf.constant([1.0, 2.0]))
    step(tf.constant([3.0, 6.0]))
    assert float(m.result()) == 3.0
    assert step.experimental_get_tracing_count() == 1  # the state exists before tracing


def test_accuracies_match_numpy():
    labels = np.array([2, 0, 1, 1])
    probs = np.random.default_rng(0).random((4, 3)).astype(np.float32)
    per = (probs.argmax(-1) == labels).astype(np.float32)
    np.testing.assert_array_equal(
        keras.metrics.sparse_categorical_accuracy(labels, probs).numpy(), per)
    np.testing.assert_array_equal(
        keras.metrics.sparse_categorical_accuracy(labels[:, None], probs).numpy(), per)
    acc = keras.metrics.SparseCategoricalAccuracy()
    assert float(acc(labels, probs)) == per.mean()
    onehot = np.eye(3, dtype=np.float32)[labels]
    np.testing.assert_array_equal(keras.metrics.categorical_accuracy(onehot, probs).numpy(), per)
    assert float(keras.metrics.CategoricalAccuracy()(onehot, probs)) == per.mean()


def test_training_loop_with_metrics_staged():
    model = keras.Sequential([keras.layers.Dense(
        3, kernel_initializer=keras.initializers.GlorotUniform(seed=0))])
    opt = keras.optimizers.SGD(0.5)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    train_loss = keras.metrics.Mean(name="train_loss")
    train_acc = keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
    x = tf.constant(np.eye(3, dtype=np.float32))
    y = tf.constant([0, 1, 2])

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        train_loss(loss)
        train_acc(y, logits)
    for _ in range(20):
        step(x, y)
    assert float(train_acc.result()) > 0.8 and float(train_loss.result()) < 1.0
