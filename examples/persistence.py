"""State and persistence, end to end: the paper's Listing 3 model trained for a few steps,
checkpointed, restored into a freshly built object, and exported as a SavedModel that a
separate Python process (which never sees this file's classes) loads and calls.

    python examples/persistence.py [--steps 20] [--dir DIR]

Prints one line per stage; the last line says whether the other process's outputs equal the
trained model's.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import stagecraft as tf


class MNISTModel(tf.keras.Model):
    """Listing 3 of the TensorFlow Eager paper: two dense layers, the second applied twice
    (its variables are reused)."""

    def __init__(self):
        super().__init__()
        self.dense1 = tf.keras.layers.Dense(units=10)
        self.dense2 = tf.keras.layers.Dense(units=10)

    def call(self, inputs):
        result = self.dense1(inputs)
        result = self.dense2(result)
        result = self.dense2(result)  # reuse variables from the dense2 layer
        return result


def make_data(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic "images" (784 features) whose label is the brightest of ten stripes."""
    rng = np.random.default_rng(0)
    images = rng.uniform(0.0, 1.0, (n, 784)).astype(np.float32)
    labels = images[:, :780].reshape(n, 10, 78).sum(axis=2).argmax(axis=1).astype(np.int32)
    return images, labels


def make_train_step(model: MNISTModel, optimizer: tf.keras.optimizers.Adam):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return train_step


# The exported entry point: a traced function with a fixed signature, attached to the model.
SERVE_SIGNATURE = [tf.TensorSpec([None, 784], tf.float32)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="stagecraft_persistence_")
    images, labels = make_data()

    # 1. Train.
    model, optimizer = MNISTModel(), tf.keras.optimizers.Adam(learning_rate=0.001)
    train_step = make_train_step(model, optimizer)
    first = last = float(train_step(images, labels))
    for _ in range(args.steps - 1):
        last = float(train_step(images, labels))
    print(f"trained {args.steps} steps: loss {first:.4f} -> {last:.4f}")

    # 2. Checkpoint the model and the optimizer (its Adam slots included).
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).save(
        os.path.join(work, "ckpt", "step"))
    print(f"checkpoint: {os.path.relpath(path, work)} "
          f"({len(tf.train.list_variables(path))} keys)")

    # 3. Restore into fresh objects whose layers do not exist yet: the values are assigned
    #    when the first call creates the variables (deferred restoration).
    fresh, fresh_opt = MNISTModel(), tf.keras.optimizers.Adam(learning_rate=0.001)
    status = tf.train.Checkpoint(model=fresh, optimizer=fresh_opt).restore(path)
    same = np.array_equal(fresh(images).numpy(), model(images).numpy())
    fresh_step = make_train_step(fresh, fresh_opt)
    next_loss = float(fresh_step(images, labels))  # creates Adam's slots: restored too
    status.assert_consumed()
    expected_next = float(train_step(images, labels))
    print(f"restored into a fresh model: outputs equal {same}, "
          f"next step's loss equal {np.isclose(next_loss, expected_next, rtol=1e-5)}")

    # 4. Export a SavedModel and call it from another process that has no MNISTModel class.
    model.serve = tf.function(lambda x: tf.nn.softmax(model(x)), input_signature=SERVE_SIGNATURE)
    export = os.path.join(work, "export")
    tf.saved_model.save(model, export)
    probe = images[:4]
    np.save(os.path.join(work, "probe.npy"), probe)
    script = ("import json, sys, numpy as np, stagecraft as tf\n"
              "m = tf.saved_model.load(sys.argv[1])\n"
              "x = tf.constant(np.load(sys.argv[2]))\n"
              "print(json.dumps(m.serve(x).numpy().tolist()))\n")
    out = subprocess.run([sys.executable, "-c", script, export,
                          os.path.join(work, "probe.npy")],
                         capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    theirs = np.array(json.loads(out.stdout), np.float32)
    ours = model.serve(tf.constant(probe)).numpy()
    print(f"SavedModel loaded in a separate process: outputs equal "
          f"{bool(np.allclose(theirs, ours, rtol=1e-6, atol=1e-7))}")


if __name__ == "__main__":
    main()
