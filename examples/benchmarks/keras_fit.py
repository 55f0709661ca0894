"""What Keras's machinery costs: one epoch of ``model.fit`` on the digits MLP against the same
epoch written by hand (a staged training step over the same batches, no callbacks or
metrics objects), and against that hand-written loop with the batches from ``tf.data``.

    python examples/benchmarks/keras_fit.py

Prints a table of medians (ms per epoch) and the ratio fit / hand-written (the target is at
most 1.5). Both variants are warmed up first (compiled, caches loaded), in one process.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import time_ms  # noqa: E402

import stagecraft as tf  # noqa: E402

tf.config.set_compile_mode("sync")  # steady-state timings: compiled before the first timed call


def digits(n: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        from sklearn.datasets import load_digits
        data = load_digits()
        x, y = data.data.astype(np.float32) / 16.0, data.target.astype(np.int64)
    except ImportError:  # the same shapes without scikit-learn
        rng = np.random.default_rng(0)
        x, y = rng.random((1797, 64), np.float32), rng.integers(0, 10, 1797)
    return x[:n], y[:n]


def model() -> tf.keras.Model:
    m = tf.keras.Sequential([tf.keras.Input(shape=(64,)),
                             tf.keras.layers.Dense(128, activation="relu"),
                             tf.keras.layers.Dense(10)])
    m.compile(optimizer=tf.keras.optimizers.SGD(0.01),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def main() -> None:
    parser_args = sys.argv[1:]
    quick = "--quick" in parser_args
    out = parser_args[parser_args.index("--json") + 1] if "--json" in parser_args else None
    x, y = digits(256 if quick else 1437)
    batch = 32
    repeat = 1 if quick else 7

    fit_model = model()
    fit_model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)  # warm up
    fit = time_ms(lambda: fit_model.fit(x, y, batch_size=batch, epochs=1, shuffle=False,
                                        verbose=0), repeat, 1)

    hand_model = model()
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = hand_model.optimizer

    @tf.function(reduce_retracing=True)
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, hand_model(xb, training=True))
        grads = tape.gradient(loss, hand_model.trainable_variables)
        optimizer.apply_gradients(zip(grads, hand_model.trainable_variables))
        return loss

    batches = [(tf.constant(x[i:i + batch]), tf.constant(y[i:i + batch]))
               for i in range(0, len(x), batch)]

    def hand_epoch() -> None:
        for xb, yb in batches:
            step(xb, yb)

    hand_epoch()
    hand = time_ms(hand_epoch, repeat, 1)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)

    def data_epoch() -> None:
        for xb, yb in ds:
            step(xb, yb)

    data_epoch()
    data = time_ms(data_epoch, repeat, 1)

    rows = [("model.fit (arrays)", fit["median_ms"]),
            ("hand-written staged loop", hand["median_ms"]),
            ("hand-written loop over tf.data", data["median_ms"])]
    print(f"one epoch of the digits MLP 64-128-10, batch {batch}, {len(x)} examples "
          f"(medians of {repeat}, ms)")
    for name, ms in rows:
        print(f"  {name:34s} {ms:9.2f}")
    ratio = fit["median_ms"] / hand["median_ms"]
    print(f"  fit / hand-written: {ratio:.2f} (target <= 1.5)")
    if out:
        with open(out, "w") as f:
            json.dump({"rows": [{"what": n, "median_ms": ms} for n, ms in rows],
                       "fit_over_hand": ratio}, f, indent=1)


if __name__ == "__main__":
    main()
