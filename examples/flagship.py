"""stagecraft in one page: a Python function with data-dependent control flow on tensors, run
eagerly, then staged with ``@tf.function``: AutoGraph rewrites its ``while``/``if``/``break``
into graph loops and conditionals (the converted code is printed), the first staged call
answers at once from the reference interpreter while a worker process compiles the graph
with Numba, and later calls run the machine code.

    pip install -e . && python examples/flagship.py
"""
from __future__ import annotations

import statistics
import time
import timeit

import numpy as np

import stagecraft as tf


def newton_sqrt(x, tolerance=1e-6, max_steps=50):
    """Square roots of the positive entries of ``x`` by Newton's method, stopping when every
    entry has converged: a loop whose trip count depends on the data."""
    guess = tf.ones_like(x)
    steps = tf.constant(0)
    while steps < max_steps:
        better = 0.5 * (guess + x / guess)
        if tf.reduce_max(tf.abs(better - guess)) < tolerance:
            break
        guess = better
        steps += 1
    return guess, steps


def median_ms(fn, repeat=7, number=20):
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main() -> None:
    x = tf.constant(np.linspace(1.0, 1e4, 256, dtype=np.float32))

    eager_root, eager_steps = newton_sqrt(x)  # plain Python: one op at a time
    print(f"eager:  {int(eager_steps)} Newton steps, max error "
          f"{float(tf.reduce_max(tf.abs(eager_root - tf.sqrt(x)))):.2e}")

    staged = tf.function(newton_sqrt)
    print("\nAutoGraph's rewrite of the while/if/break (tf.autograph.to_code):\n")
    print(tf.autograph.to_code(newton_sqrt))

    start = time.perf_counter()
    root, steps = staged(x)
    first = time.perf_counter() - start
    print(f"staged: {int(steps)} Newton steps, first call {first * 1e3:.0f} ms "
          f"(the interpreter answers while Numba compiles in the background)")

    executable = staged.get_concrete_function(x).executable
    waiting = getattr(executable, "wait", None)
    if waiting is not None:
        waiting(timeout=300)  # the compiled tier takes over
    staged(x)
    eager_ms = median_ms(lambda: newton_sqrt(x), number=3)
    staged_ms = median_ms(lambda: staged(x))
    assert np.allclose(root.numpy(), eager_root.numpy(), rtol=1e-6)
    print(f"steady state: eager {eager_ms:.2f} ms per call, staged {staged_ms:.2f} ms "
          f"({eager_ms / staged_ms:.1f}x faster)")


if __name__ == "__main__":
    main()
