"""Convolution speed on the CPU: ``tf.nn.conv2d`` eagerly (the op table's NumPy kernel) and
staged on Numba, against a hand-written NumPy im2col + BLAS convolution of the same shapes.

    python examples/benchmarks/conv.py                 # ResNet-50 shapes, batches 1 and 8
    python examples/benchmarks/conv.py --quick         # small shapes, one call each (seconds)

For each shape it times the forward pass and the forward + backward pass (the convolution
and the gradients with respect to input and filters, for a given output gradient) and prints
median milliseconds and staged / NumPy (issue 18's target: at most 1.5). float32, NHWC. Each
variant is timed on its own after a pause (see ``measure``: NumPy and the staged code call two
different OpenBLAS builds whose thread pools would otherwise compete).
"""
from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import time

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import batches, benchmark_parser  # noqa: E402

import stagecraft as tf  # noqa: E402

tf.config.set_compile_mode("sync")  # steady-state timings: compiled before the first timed call

# name: (height = width, in channels, kernel, out channels, stride)
SHAPES = {
    "stem 7x7/2 224x224x3->64": (224, 3, 7, 64, 2),
    "3x3 56x56x64->64": (56, 64, 3, 64, 1),
    "1x1 56x56x64->256": (56, 64, 1, 256, 1),
    "1x1/2 56x56x256->512": (56, 256, 1, 512, 2),
    "3x3/2 56x56x128->128": (56, 128, 3, 128, 2),
}
PAUSE_S = 0.3  # lets the previous variant's BLAS threads go to sleep
QUICK = {"3x3 12x12x8->8": (12, 8, 3, 8, 1), "1x1/2 12x12x8->16": (12, 8, 1, 16, 2)}


# ---------------------------------------------------------------------- hand-written NumPy

def _pads(size: int, k: int, s: int) -> tuple[int, int]:
    total = max((-(-size // s) - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def numpy_forward(x: np.ndarray, w: np.ndarray, s: int):
    """SAME conv2d as im2col + one matmul; returns the output and the backward closure."""
    n, h, wd, c = x.shape
    k, o = w.shape[0], w.shape[-1]
    (pt, pb), (pl, pr) = _pads(h, k, s), _pads(wd, k, s)
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0))) if pt + pb + pl + pr else x
    ho, wo = -(-h // s), -(-wd // s)
    if k == 1:
        cols = np.ascontiguousarray(xp[:, ::s, ::s, :]).reshape(-1, c)
    else:
        win = sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::s, ::s]
        cols = np.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(-1, k * k * c)
    w2 = w.reshape(-1, o)
    y = (cols @ w2).reshape(n, ho, wo, o)

    def backward(dy: np.ndarray):
        d2 = dy.reshape(-1, o)
        dw = (cols.T @ d2).reshape(w.shape)
        dcols = (d2 @ w2.T).reshape(n, ho, wo, k, k, c)
        dxp = np.zeros(xp.shape, x.dtype)
        for i, j in itertools.product(range(k), range(k)):
            dxp[:, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s] += dcols[:, :, :, i, j]
        return dxp[:, pt:pt + h, pl:pl + wd], dw

    return y, backward


def numpy_step(x, w, dy, s):
    y, backward = numpy_forward(x, w, s)
    return y, backward(dy)


# ---------------------------------------------------------------------- stagecraft

def tf_forward(x, w, s):
    return tf.nn.conv2d(x, w, s, "SAME")


def tf_step(x, w, dy, s):
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = tf.nn.conv2d(x, w, s, "SAME")
    return y, tape.gradient(y, [x, w], output_gradients=dy)


def batch_ms(fn, number: int | None, clock) -> float:
    """The mean time of one call over a batch of ``number`` calls (as many as fit in about
    0.1 s when None), in ms on ``clock``."""
    if number is None:
        start = time.perf_counter()
        fn()
        number = max(1, round(0.1 / max(time.perf_counter() - start, 1e-9)))
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number * 1e3


def measure(name: str, shape: tuple, batch: int, repeat, number, clock, pause: float) -> dict:
    size, c, k, o, s = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, size, size, c), np.float32)
    w = rng.standard_normal((k, k, c, o), np.float32) * np.float32(0.1)
    out = -(-size // s)
    dy = rng.standard_normal((batch, out, out, o), np.float32)
    tx, tw, tdy = tf.constant(x), tf.constant(w), tf.constant(dy)
    fwd = tf.function(lambda a, b: tf_forward(a, b, s), backend="numba")
    step = tf.function(lambda a, b, g: tf_step(a, b, g, s), backend="numba")
    # Same results everywhere before timing.
    y_ref, (dx_ref, dw_ref) = numpy_step(x, w, dy, s)
    y_st, (dx_st, dw_st) = step(tx, tw, tdy)
    for got, want in ((fwd(tx, tw), y_ref), (y_st, y_ref), (dx_st, dx_ref), (dw_st, dw_ref)):
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-3, atol=2e-3 * np.abs(want).max())
    row = {"shape": name, "batch": batch}
    runs = {"forward": {"eager": lambda: tf_forward(tx, tw, s), "staged": lambda: fwd(tx, tw),
                        "numpy": lambda: numpy_forward(x, w, s)},
            "fwd+bwd": {"eager": lambda: tf_step(tx, tw, tdy, s),
                        "staged": lambda: step(tx, tw, tdy),
                        "numpy": lambda: numpy_step(x, w, dy, s)}}
    # One variant at a time, after a pause: NumPy's matmuls run on NumPy's OpenBLAS and the
    # staged code's np.dot on SciPy's, two thread pools whose threads spin for a while after
    # each call; alternating them makes each wait for the other's spinning threads (measured:
    # 8 ms staged alone, 54 ms right after a NumPy step, on 2 cores).
    for label, kinds in runs.items():
        for kind, run in kinds.items():
            run()
            time.sleep(pause)
            row[f"{label} {kind}"] = statistics.median(
                batch_ms(run, number, clock) for _ in range(repeat or 5))
    return row


def table(rows: list[dict], clock: str = "wall") -> str:
    head = (f"{'shape':<26} {'N':>2}  {'fwd eager':>9} {'staged':>8} {'numpy':>8} {'st/np':>6}"
            f"  {'f+b eager':>9} {'staged':>8} {'numpy':>8} {'st/np':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = []
        for label in ("forward", "fwd+bwd"):
            e, st, n = (r[f"{label} {k}"] for k in ("eager", "staged", "numpy"))
            cells.append(f"{e:9.2f} {st:8.2f} {n:8.2f} {st / n:6.2f}")
        lines.append(f"{r['shape']:<26} {r['batch']:>2}  " + "  ".join(cells))
    lines.append(f"times: median ms per call ({clock} clock); st/np: staged Numba over "
                 f"hand-written NumPy")
    return "\n".join(lines)


def main() -> None:
    parser = benchmark_parser(__doc__, list(SHAPES) + list(QUICK))
    parser.add_argument("--batches", type=int, nargs="+", help="batch sizes (default: 1 8)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="wall time (default) or the process's CPU time, which load from "
                             "other processes disturbs less (all BLAS threads count)")
    args = parser.parse_args()
    repeat, number = batches(args)
    shapes = QUICK if args.quick else SHAPES
    if args.only:
        shapes = {k: v for k, v in {**SHAPES, **QUICK}.items() if k in args.only}
    sizes = args.batches or ([1] if args.quick else [1, 8])
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    pause = 0.0 if args.quick else PAUSE_S
    rows = [measure(name, shape, b, repeat, number, clock, pause) for b in sizes
            for name, shape in shapes.items()]
    print(table(rows, args.clock))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
