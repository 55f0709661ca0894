"""``tf.summary`` and Keras's ``TensorBoard`` callback write event files that TensorBoard's
own reader loads back with the right tags, steps and values (eagerly and from staged
functions, where each call writes)."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

pytest.importorskip("tensorboard", reason="tf.summary needs the tensorboard extra (the test "
                                          "extra installs it)")
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402


def read(logdir):
    """{tag: [(step, value array)]}, as TensorBoard's own reader loads them."""
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return {tag: [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]
            for tag in acc.Tags()["tensors"]}


def test_scalars_eagerly_and_from_a_staged_function(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    step = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def train_step(x):
        with tf.name_scope("train"):
            tf.summary.scalar("loss", x * 2.0, step=step)
        step.assign_add(1)

    with writer.as_default():
        tf.summary.scalar("lr", 0.1, step=7)
        for value in (1.0, 2.0, 3.0):
            train_step(tf.constant(value))
        tf.summary.histogram("weights", np.arange(10.0), step=1)
    events = read(tmp_path)
    assert [(s, float(v)) for s, v in events["train/loss"]] == [(0, 2.0), (1, 4.0), (2, 6.0)]
    assert [(s, pytest.approx(float(v))) for s, v in events["lr"]] == [(7, pytest.approx(0.1))]
    (hist_step, hist), = events["weights"]
    assert hist_step == 1 and hist[:, 2].sum() == 10  # bucket counts


def test_no_writer_no_step_and_record_if():
    assert not bool(tf.summary.scalar("x", 1.0, step=0))  # no default writer: not written
    with tf.summary.create_noop_writer().as_default():
        with pytest.raises(ValueError, match="no step set"):
            tf.summary.scalar("x", 1.0)
        with tf.summary.record_if(False):
            assert not bool(tf.summary.scalar("x", 1.0, step=0))


def test_keras_tensorboard_callback(tmp_path):
    x = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, x.sum(1, keepdims=True), epochs=3, validation_split=0.25, verbose=0,
              callbacks=[tf.keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1)])
    train, val = read(tmp_path / "train"), read(tmp_path / "validation")
    assert [s for s, _ in train["epoch_loss"]] == [0, 1, 2]
    assert [s for s, _ in val["epoch_loss"]] == [0, 1, 2]
    assert any(tag.endswith("kernel") for tag in train)
