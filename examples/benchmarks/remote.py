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


def medians_ms(fns: list, number: int) -> list[float]:
    """The median wall time of one call of each of ``fns``, in ms, over ``number`` rounds that
    call each once in turn (after 10 warm-up rounds): on a machine whose load drifts, every
    case sees the same load."""
    times: list[list[float]] = [[] for _ in fns]
    for round_ in range(number + 10):
        for fn, out in zip(fns, times):
            start = time.perf_counter()
            fn()
            if round_ >= 10:
                out.append(time.perf_counter() - start)
    return [statistics.median(t) * 1e3 for t in times]


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
    worker = "/job:worker/task:0"
    with tf.device(worker):
        xr, wr = tf.identity(x), tf.identity(w)  # already on the worker

    def on_worker(fn):
        def call():
            with tf.device(worker):
                fn()
        return call

    cluster = tf.distribute.connected()
    cases = [("remote eager op + read: (x * 2.0).numpy()",
              on_worker(lambda: (xr * 2.0).numpy()), 1.5),
             ("remote staged call + read: f(x, w).numpy()",
              on_worker(lambda: affine(xr, wr).numpy()), 2.0),
             ("remote staged call, local args sent: f(x, w)",
              on_worker(lambda: affine(x, w).numpy()), None),
             ("bare request round trip (hello)",
              lambda: cluster.wait(0, cluster.submit(0, "hello")), None),
             ("local eager op + read (no worker)", lambda: (x * 2.0).numpy(), None)]
    times = medians_ms([fn for _, fn, _ in cases], args.number)
    rows = [(name, ms, target) for (name, _, target), ms in zip(cases, times)]
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
