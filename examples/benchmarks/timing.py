"""Timing shared by the benchmark scripts: medians of batches, in one process."""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable, Sequence


def time_ms(fn: Callable[[], Any], repeat: int, number: int | None,
            batch_s: float = 0.1) -> dict:
    """Median and minimum over ``repeat`` batches of the mean time of one call, in ms. With
    ``number`` None a batch holds as many calls as fit in about ``batch_s`` (at least one),
    estimated from one untimed call."""
    if number is None:
        start = time.perf_counter()
        fn()
        number = max(1, round(batch_s / max(time.perf_counter() - start, 1e-9)))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number * 1e3)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "repeat": repeat,
            "number": number}


def time_interleaved(calls: dict[str, Callable[[], Any]], repeat: int, number: int | None,
                     batch_s: float = 0.1) -> dict[str, dict]:
    """:func:`time_ms` of every call in ``calls``, their batches taken in turns (round
    ``r`` runs one batch of each, starting from the ``r``-th): a GPU's clocks and a shared
    machine's load drift over a run, and timing one variant after another would give that
    drift to the comparison.

    >>> t = time_interleaved({"a": lambda: None, "b": lambda: sum(range(100))}, 3, 10)
    >>> sorted(t), t["a"]["repeat"], t["b"]["number"]
    (['a', 'b'], 3, 10)
    """
    names = list(calls)
    numbers = {name: number if number is not None else
               time_ms(calls[name], 1, None, batch_s)["number"] for name in names}
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, n = calls[name], numbers[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            times[name].append((time.perf_counter() - start) / n * 1e3)
    return {name: {"median_ms": statistics.median(times[name]), "min_ms": min(times[name]),
                   "repeat": repeat, "number": numbers[name]} for name in names}


def loop_us(call: Callable[[], Any], sync: Callable[[], Any], loop: int, repeat: int) -> dict:
    """Microseconds per call of ``call`` run ``loop`` times back to back with one ``sync``
    after the loop, as PyTorch's benchmarks time small GPU ops: launches queue up as in a
    program and one synchronization closes the batch. The median over ``repeat`` batches,
    after one untimed batch (warm-up)."""
    def batch() -> None:
        for _ in range(loop):
            call()
        sync()

    batch()
    times = time_ms(batch, repeat, 1)
    return {"per_call_us": times["median_ms"] * 1e3 / loop,
            "min_per_call_us": times["min_ms"] * 1e3 / loop, "loop": loop, "repeat": repeat}


def benchmark_parser(doc: str, names: Sequence[str]) -> argparse.ArgumentParser:
    """The options every benchmark script takes: --only NAME.., --repeat, --number, --quick
    and --json (a script adds its own)."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(names), metavar="NAME",
                        help=f"run only these workloads: {', '.join(names)}")
    parser.add_argument("--repeat", type=int, help="timed batches per variant (default: 5-7)")
    parser.add_argument("--number", type=int,
                        help="calls per batch (default: as many as fit in about 0.1 s)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, one batch of one call (for the tests)")
    parser.add_argument("--json", help="write the results to this file")
    return parser


def batches(args: argparse.Namespace) -> tuple[int | None, int | None]:
    """(repeat, number) from the parsed options: --quick means one batch of one call unless
    they are given."""
    repeat = 1 if args.quick and args.repeat is None else args.repeat
    number = 1 if args.quick and args.number is None else args.number
    return repeat, number
