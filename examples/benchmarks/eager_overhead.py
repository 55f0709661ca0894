"""Eager dispatch overhead: a small op through stagecraft against raw NumPy (and PyTorch when it
is installed), measured in one process. Prints a table of medians; --json writes the numbers.

    python examples/benchmarks/eager_overhead.py [--json out.json] [--repeat 15]

gpu_host.py measures the host cost of eager GPU ops the same way, on any machine.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import timeit

import numpy as np

import stagecraft as tf


def median_us(fn, number: int, repeat: int) -> float:
    """Median over ``repeat`` runs of the mean time of one call, in microseconds."""
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def cases() -> list[tuple[str, str, object]]:
    """(name, group, zero-argument callable) for every measured call."""
    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    x, y = tf.constant(a), tf.constant(b)
    m = tf.constant(np.ones((4, 4), np.float32))
    out = [
        ("numpy  np.add(a, b)", "add", lambda: np.add(a, b)),
        ("stagecraft tf.add(x, y)", "add", lambda: tf.add(x, y)),
        ("stagecraft x + y", "add", lambda: x + y),
        ("stagecraft x + 1.0", "add", lambda: x + 1.0),
        ("numpy  np.sum(a)", "sum", lambda: np.sum(a)),
        ("stagecraft tf.reduce_sum(x)", "sum", lambda: tf.reduce_sum(x)),
        ("numpy  a4x4 @ a4x4", "matmul", lambda: np.matmul(m.numpy(), m.numpy())),
        ("stagecraft tf.matmul(m, m)", "matmul", lambda: tf.matmul(m, m)),
    ]

    def taped():
        with tf.GradientTape() as t:
            t.watch(x)
            z = x * y
        return t.gradient(z, x)

    out.append(("stagecraft tape: x*y + gradient", "tape", taped))
    try:
        import torch
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        out.insert(3, ("torch  torch.add(ta, tb)", "add", lambda: torch.add(ta, tb)))
    except ImportError:
        pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    args = parser.parse_args()
    rows = []
    baseline = {}
    for name, group, fn in cases():
        n = args.number if group != "tape" else max(args.number // 20, 100)
        us = median_us(fn, n, args.repeat)
        baseline.setdefault(group, us)
        rows.append({"call": name, "group": group, "median_us": us,
                     "vs_numpy": us / baseline[group]})
    print(f"{'call':36s} {'median µs':>10s} {'× numpy':>8s}")
    for r in rows:
        print(f"{r['call']:36s} {r['median_us']:10.3f} {r['vs_numpy']:8.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "python": platform.python_version(),
                       "numpy": np.__version__, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
