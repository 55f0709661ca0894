"""AutoGraph conversion cost: how long ``stagecraft.function`` spends converting a realistic
20-line function (if/while/for/break/return) the first time, and what a cache hit costs, measured
in one process. Prints a table of medians; --json writes the numbers.

    python examples/benchmarks/autograph_conversion.py [--json out.json] [--repeat 30]

Each "fresh" repeat clears the conversion caches of ``stagecraft.converters.api`` first, so it
parses, runs every pass, renders and compiles again; the first conversion in the process (which
also imports the conversion machinery) is left out of the medians and reported on its own.
"""
from __future__ import annotations

import argparse
import json
import logging
import platform
import time
from typing import Callable

from timing import time_ms  # noqa: E402 (a sibling script module)
import stagecraft as tf

tf.config.set_compile_mode("sync")  # steady-state timings: compiled before the first timed call
from stagecraft.converters import api


def clipped_scan(x, n, limit):
    """The measured function: 20 lines with if/elif/while/for/break/return."""
    total = tf.zeros_like(x)
    steps = tf.constant(0)
    for i in tf.range(n):
        y = x * tf.cast(i, x.dtype)
        if tf.reduce_any(y < 0):
            y = -y / 2
        while tf.reduce_sum(y) > limit:
            y = y / 2
            steps += 1
        if tf.reduce_max(y) > limit:
            total = total + limit
        elif tf.reduce_min(y) < 0:
            total = total - y
        else:
            total = total + y
        if steps > 10:
            break
    if tf.reduce_sum(total) < 0:
        return -total
    return total




def _clear_caches() -> None:
    with api._lock:
        api._by_code.clear()
        api._by_function.clear()


def fresh_conversion() -> Callable:
    """One conversion from scratch (caches cleared first)."""
    _clear_caches()
    return api.convert(clipped_scan)


def measure(repeat: int, number: int) -> list[dict]:
    """The rows of the table: what was timed and its median in milliseconds."""
    start = time.perf_counter()
    fresh_conversion()
    first_ms = (time.perf_counter() - start) * 1e3
    rows = [{"what": "first conversion in the process", "median_ms": first_ms,
             "min_ms": first_ms, "repeats": 1}]
    rows.append({"what": "convert (fresh, caches cleared)",
                 **time_ms(fresh_conversion, repeat, 1)})

    def transform_only() -> None:
        api.transform(clipped_scan)
    rows.append({"what": "  of which parse + passes + render",
                 **time_ms(transform_only, repeat, 1)})
    api.convert(clipped_scan)

    def hit() -> None:
        api.convert(clipped_scan)
    rows.append({"what": "convert (cache hit)", **time_ms(hit, repeat, number)})

    def staged_call() -> None:
        _clear_caches()
        f = tf.function(clipped_scan)
        f(tf.constant([1.0, -2.0, 3.0]), 5, tf.constant(4.0))
    quiet = logging.getLogger("stagecraft")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # a new tf.function per repeat is the point: no retrace warning
    try:
        rows.append({"what": "tf.function: convert + trace + first call",
                     **time_ms(staged_call, repeat, 1)})
    finally:
        quiet.setLevel(level)
    return rows


def _fmt(ms: float) -> str:
    return f"{ms:10.3f}" if ms >= 0.01 else f"{ms * 1e3:8.2f}µs"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--repeat", type=int, default=30, help="timed repeats per row")
    parser.add_argument("--number", type=int, default=2000,
                        help="calls per repeat for the cache-hit row")
    args = parser.parse_args(argv)
    rows = measure(args.repeat, args.number)
    print(f"{'what':44s} {'median ms':>10s} {'min ms':>10s}")
    for r in rows:
        print(f"{r['what']:44s} {_fmt(r['median_ms'])} {_fmt(r['min_ms'])}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "python": platform.python_version(),
                       "function_lines": 20, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
