"""Data-parallel training on remote workers (the paper's distribution model, on Ray).

The main program owns the model (local variables) and splits each batch across N workers
(``/job:worker/task:i``). Each worker computes the gradients of its shard with one staged
function; the calls are dispatched without waiting, so the workers compute at the same time;
the main program averages the gradients and updates the model. The shards are placed on the
workers once, before training: a step sends only the current weights.

It trains a two-layer classifier on synthetic data on 1 worker and on N, in alternating steps
(so that both see the same load on a shared machine), and prints the losses, the median time
per step of each and the speed-up. It checks first that the averaged shard gradients equal
the full-batch gradient computed locally.

    python examples/distributed_training.py [--workers 2] [--steps 8] [--batch 4096]
        [--transport ray|in_process]

Each worker gets one CPU from Ray (which limits its BLAS and Numba threads to one), so N
workers can use N cores. On a shared or loaded machine the speed-up is lower: the load
average is printed with the result.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import stagecraft as tf

FEATURES, HIDDEN, CLASSES = 256, 1024, 10


def make_data(batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A synthetic classification problem: labels from a fixed random linear teacher."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, FEATURES)).astype(np.float32)
    teacher = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)
    return x, np.argmax(x @ teacher, axis=1).astype(np.int32)


def make_model(seed: int = 1) -> list[tf.Variable]:
    rng = np.random.default_rng(seed)
    return [tf.Variable(rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32) * 0.05),
            tf.Variable(np.zeros(HIDDEN, np.float32)),
            tf.Variable(rng.standard_normal((HIDDEN, CLASSES)).astype(np.float32) * 0.05),
            tf.Variable(np.zeros(CLASSES, np.float32))]


# backend="reference": the worker runs the graph on NumPy, whose matmuls are BLAS calls (one
# thread per worker under Ray); the default Numba backend compiles its own loops instead.
# The signature leaves the batch size open: one trace serves the whole batch and the shards.
@tf.function(backend="reference", input_signature=[
    tf.TensorSpec([FEATURES, HIDDEN], tf.float32), tf.TensorSpec([HIDDEN], tf.float32),
    tf.TensorSpec([HIDDEN, CLASSES], tf.float32), tf.TensorSpec([CLASSES], tf.float32),
    tf.TensorSpec([None, FEATURES], tf.float32), tf.TensorSpec([None], tf.int32)])
def loss_and_gradients(w1, b1, w2, b2, x, y):
    """The mean cross-entropy of a shard and its gradients (one staged call per worker)."""
    with tf.GradientTape() as tape:
        tape.watch([w1, b1, w2, b2])
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(hidden, w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return loss, tape.gradient(loss, [w1, b1, w2, b2])


def place_shards(x: np.ndarray, y: np.ndarray, workers: list[str]) -> list[tuple]:
    """Splits the batch evenly and puts each shard on its worker (once)."""
    shards = []
    for device, xs, ys in zip(workers, np.array_split(x, len(workers)),
                              np.array_split(y, len(workers))):
        with tf.device(device):
            shards.append((tf.identity(tf.constant(xs)), tf.identity(tf.constant(ys))))
    return shards


def step(model: list[tf.Variable], shards: list[tuple], workers: list[str],
         learning_rate: float) -> float:
    """One data-parallel step: gradients on every worker at once, averaged here."""
    weights = [v.read_value() for v in model]
    results = []
    for device, (xs, ys) in zip(workers, shards):
        with tf.device(device):
            results.append(loss_and_gradients(*weights, xs, ys))  # dispatched, not awaited
    with tf.device("/cpu:0"):  # fetches each worker's results
        loss = tf.add_n([r[0] for r in results]) / len(results)
        for i, v in enumerate(model):
            grad = tf.add_n([r[1][i] for r in results]) / len(results)
            v.assign_sub(learning_rate * grad)
    return float(loss)


def check_gradients(x: np.ndarray, y: np.ndarray, workers: list[str]) -> float:
    """The largest difference between the averaged shard gradients and the local full-batch
    gradient (equal shards: the mean of shard means is the full mean)."""
    model = make_model()
    weights = [v.read_value() for v in model]
    _, expected = loss_and_gradients(*weights, tf.constant(x), tf.constant(y))
    results = []
    for device, (xs, ys) in zip(workers, place_shards(x, y, workers)):
        with tf.device(device):
            results.append(loss_and_gradients(*weights, xs, ys)[1])
    worst = 0.0
    for i, e in enumerate(expected):
        avg = np.mean([r[i].numpy() for r in results], axis=0)
        worst = max(worst, float(np.max(np.abs(avg - e.numpy())) / (np.max(np.abs(e)) + 1e-12)))
    return worst


def train(workers: int, x: np.ndarray, y: np.ndarray, steps: int, transport: str,
          learning_rate: float = 0.1) -> dict:
    """Connects ``workers`` workers and trains two models in alternating steps: one on task 0
    alone (the whole batch), one data-parallel on every task (a shard each), so that both
    see the same machine load. Per layout: the losses, step times and gradient check."""
    tf.distribute.connect(num_workers=workers, transport=transport, worker_cpus=1)
    try:
        layouts = {1: ["/job:worker/task:0"]}
        layouts[workers] = [f"/job:worker/task:{i}" for i in range(workers)]
        runs = {}
        for n, devices in layouts.items():
            shards = place_shards(x, y, devices)
            for _ in range(2):  # warm-up: each worker compiles the function once
                step(make_model(), shards, devices, learning_rate)
            runs[n] = {"devices": devices, "shards": shards, "model": make_model(),
                       "losses": [], "times": [],
                       "error": check_gradients(x[:512], y[:512], devices)}
        for _ in range(steps):
            for run in runs.values():
                start = time.perf_counter()
                run["losses"].append(step(run["model"], run["shards"], run["devices"],
                                          learning_rate))
                run["times"].append(time.perf_counter() - start)
        return runs
    finally:
        tf.distribute.disconnect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--transport", default="ray", choices=["ray", "in_process"])
    args = parser.parse_args()
    tf.config.set_compile_mode("sync")  # workers compile before their first call returns
    x, y = make_data(args.batch)
    flops = 3 * 2 * args.batch * (FEATURES * HIDDEN + HIDDEN * CLASSES)  # forward + backward
    print(f"batch {args.batch}, model {FEATURES}-{HIDDEN}-{CLASSES}: about "
          f"{flops / 1e9:.1f} GFLOP per step; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.2f} before")
    runs = train(args.workers, x, y, args.steps, args.transport)
    measured = {}
    for n, run in runs.items():
        measured[n] = statistics.median(run["times"])
        print(f"{n} worker(s): gradient check (max relative difference from local) "
              f"{run['error']:.1e}; loss {run['losses'][0]:.4f} -> {run['losses'][-1]:.4f}; "
              f"median step {measured[n] * 1e3:.1f} ms ({args.batch / measured[n]:.0f} "
              f"examples/s)")
    print(f"load average {os.getloadavg()[0]:.2f} after")
    if args.workers > 1:
        print(f"speed-up of {args.workers} workers over 1: "
              f"{measured[1] / measured[args.workers]:.2f}x per step (target >= 1.6x for 2)")


if __name__ == "__main__":
    main()
