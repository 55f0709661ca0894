"""Staging costs on the reference backend: the call overhead of a one-op graph function (against
the same op run eagerly) and the time to trace a 100-op function. Speed comes with the Numba
backend; the reference backend is the oracle.

    python examples/benchmarks/staging_overhead.py [--json out.json] [--repeat 15]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
import timeit

import numpy as np

import stagecraft as tf


def median_us(fn, number: int, repeat: int) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def chain(x):
    for i in range(100):
        x = x * 1.01 + 0.5 if i % 2 else tf.tanh(x)
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    x = tf.constant(np.arange(4, dtype=np.float32))
    one_op = tf.function(lambda x: x + 1.0, backend="reference")
    one_op(x)
    rows = [("eager x + 1.0", median_us(lambda: x + 1.0, args.number, args.repeat)),
            ("staged (reference) one-op call", median_us(lambda: one_op(x), args.number,
                                                         args.repeat))]
    traces = []
    for _ in range(max(args.repeat // 3, 3)):
        f = tf.function(chain, backend="reference")
        t0 = time.perf_counter()
        f.get_concrete_function(tf.TensorSpec([4], tf.float32))
        traces.append((time.perf_counter() - t0) * 1e6)
    rows.append(("trace a 100-op function", statistics.median(traces)))
    staged = tf.function(chain, backend="reference")
    staged(x)
    rows.append(("eager 100-op function", median_us(lambda: chain(x), 200, args.repeat)))
    rows.append(("staged (reference) 100-op call", median_us(lambda: staged(x), 200,
                                                             args.repeat)))
    print(f"{'what':34s} {'median µs':>12s}")
    for name, us in rows:
        print(f"{name:34s} {us:12.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "rows": [
                {"what": n, "median_us": us} for n, us in rows]}, fh, indent=2)


if __name__ == "__main__":
    main()
