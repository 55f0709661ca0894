"""Remote device latency on a local Ray cluster: the median round trip of a small eager op run
on a worker and read back (``(x * 2.0).numpy()`` under ``tf.device("/job:worker/task:0")``),
of a staged function call read back, and of a bare Ray actor call for scale. The machine's
load average is printed with the results: the targets (1.5 ms and 2 ms) are for an idle
machine. Needs Ray (``pip install "stagecraft[distributed]"``).

    python examples/benchmarks/remote.py [--number 200] [--json out.json]
        [--transport ray|in_process]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

import stagecraft as tf


@tf.function
def affine(x, w):
    return tf.nn.relu(tf.matmul(x, w) + 1.0)


def median_ms(fn, number: int) -> float:
    """Median wall time of one call of ``fn`` over ``number`` calls (after 10 warm-ups), ms."""
    for _ in range(10):
        fn()
    times = []
    for _ in range(number):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=200, help="calls per measurement")
    parser.add_argument("--transport", default="ray", choices=["ray", "in_process"])
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()

    start = time.perf_counter()
    tf.distribute.connect(num_workers=1, transport=args.transport)
    connect_s = time.perf_counter() - start
    x = tf.constant(np.ones((4, 8), np.float32))
    w = tf.constant(np.full((8, 4), 0.5, np.float32))
    rows = []
    with tf.device("/job:worker/task:0"):
        xr, wr = tf.identity(x), tf.identity(w)  # already on the worker
        rows.append(("remote eager op + read: (x * 2.0).numpy()",
                     median_ms(lambda: (xr * 2.0).numpy(), args.number), 1.5))
        rows.append(("remote staged call + read: f(x, w).numpy()",
                     median_ms(lambda: affine(xr, wr).numpy(), args.number), 2.0))
        rows.append(("remote staged call, local args sent: f(x, w)",
                     median_ms(lambda: affine(x, w).numpy(), args.number), None))
    cluster = tf.distribute.connected()
    rows.append(("bare request round trip (hello)",
                 median_ms(lambda: cluster.wait(0, cluster.submit(0, "hello")), args.number),
                 None))
    rows.append(("local eager op + read (no worker)",
                 median_ms(lambda: (x * 2.0).numpy(), args.number), None))
    tf.distribute.disconnect()

    load = os.getloadavg()[0]
    print(f"transport {args.transport}; connect took {connect_s:.1f} s; "
          f"load average {load:.2f} on {os.cpu_count()} cores")
    for name, ms, target in rows:
        verdict = "" if target is None else \
            f"  (target <= {target} ms: {'met' if ms <= target else 'not met'})"
        print(f"{name:48s} {ms:8.3f} ms{verdict}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"transport": args.transport, "load_average": load,
                       "rows": [{"what": n, "median_ms": ms, "target_ms": t}
                                for n, ms, t in rows]}, fh, indent=2)


if __name__ == "__main__":
    main()
