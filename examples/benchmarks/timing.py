"""Timing shared by the benchmark scripts: medians of batches, in one process."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


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
