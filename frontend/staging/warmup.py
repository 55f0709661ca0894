"""``python -m stagecraft warmup``: compiles the kernel library and the code of common staged
programs ahead of time into the disk caches, so that the first real programs load machine code
instead of compiling it (the caches are shared by every later process of this user and
installation)."""
from __future__ import annotations

import time
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["warmup", "workloads"]


def workloads() -> Iterator[tuple[str, Callable[[], Any]]]:
    """(name, run once) for each warm-up program: an MLP training step, reductions along each
    axis, elementwise math in float32 and float64, and shape ops."""
    import stagecraft as tf
    rng = np.random.default_rng(0)
    w1 = tf.Variable(rng.normal(size=(784, 128)).astype(np.float32) * 0.05)
    w2 = tf.Variable(rng.normal(size=(128, 10)).astype(np.float32) * 0.05)
    x = tf.constant(rng.random((32, 784), np.float32))
    y = tf.constant(rng.integers(0, 10, 32))

    @tf.function(jit_compile=True)
    def mlp_step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        for v, g in zip((w1, w2), tape.gradient(loss, [w1, w2])):
            v.assign_sub(0.1 * g)
        return loss

    yield "MLP training step (matmul, relu, softmax cross-entropy, gradients)", \
        lambda: mlp_step(x, y)

    @tf.function(jit_compile=True)
    def reductions(a):
        return (tf.reduce_sum(a), tf.reduce_sum(a, 0), tf.reduce_sum(a, 1),
                tf.reduce_max(a, 1), tf.reduce_mean(a, 0), tf.argmax(a, 1))

    for dtype in (np.float32, np.float64):
        a = tf.constant(rng.random((16, 8)).astype(dtype))
        yield f"reductions ({np.dtype(dtype).name})", lambda a=a: reductions(a)

    @tf.function(jit_compile=True)
    def shapes(a):
        b = tf.concat([a, a], 0)
        return tf.transpose(b)[:, 1:3], tf.reshape(b, [-1]), tf.gather(b, [0, 2])

    yield "shape ops (concat, transpose, slices, gather)", \
        lambda: shapes(tf.constant(rng.random((4, 6), np.float32)))


def warmup(say: Callable[[str], Any] = print) -> float:
    """Runs every warm-up program once, compiled before it returns; the seconds it took."""
    start = time.perf_counter()
    for name, run in workloads():
        t = time.perf_counter()
        run()
        say(f"  {name}: {time.perf_counter() - t:.1f} s")
    return time.perf_counter() - start
