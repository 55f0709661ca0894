"""The paper's Figure 3: ResNet-50 training throughput, eager against staged, per batch size.

    python examples/benchmarks/resnet50.py                      # 224x224, batches 1..32
    python examples/benchmarks/resnet50.py --batches 1 8 --plot fig3.png
    python examples/benchmarks/resnet50.py --quick              # 32x32 images, batches 1 and 2

For each batch size it trains ``examples/resnet50.py``'s model eagerly and staged (its
``call`` and the gradient application decorated with ``tf.function``) and the hand-written
NumPy model of ``resnet50_numpy.py`` (im2col + BLAS), all on the same random batch in one
process, and prints examples/sec (from the median step time), the improvement of staged over
eager, and the staged step's time relative to NumPy's (issue 18's target: at most 1.5).
``--plot`` draws the paper's two panels with matplotlib (the optional ``plots`` extra).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import resnet50_numpy  # noqa: E402

# The model is examples/resnet50.py, which has this script's name: load it by path.
_spec = importlib.util.spec_from_file_location(
    "resnet50_model", os.path.join(os.path.dirname(HERE), "resnet50.py"))
_model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_model)
make_trainer, random_batch = _model.make_trainer, _model.random_batch

import stagecraft as tf  # noqa: E402


def measure(batch: int, size: int, steps: int, numpy_too: bool, backend: str) -> dict:
    """Median step times (s) of each variant; the variants take turns step by step, so a
    machine whose load changes slows them alike."""
    images, labels = random_batch(batch, size)
    variants = {}
    for staged in (False, True):
        _, step = make_trainer(staged, backend=backend)
        variants["staged" if staged else "eager"] = \
            lambda step=step: float(step(images, labels))
    if numpy_too:
        params = resnet50_numpy.Params()
        x, onehot = images.numpy(), labels.numpy()
        variants["numpy"] = lambda: resnet50_numpy.train_step(params, x, onehot)
    times: dict[str, list] = {name: [] for name in variants}
    for name, run in variants.items():
        run()  # the first step builds the model (and traces and compiles when staged)
    for _ in range(steps):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {"batch": batch, **{name: statistics.median(t) for name, t in times.items()}}


def table(rows: list[dict]) -> str:
    lines = [f"{'batch':>5} {'eager ex/s':>11} {'staged ex/s':>12} {'improvement':>12} "
             f"{'numpy ex/s':>11} {'staged/numpy':>13}"]
    for r in rows:
        b = r["batch"]
        numpy_cols = (f"{b / r['numpy']:>11.2f} {r['staged'] / r['numpy']:>13.2f}"
                      if "numpy" in r else f"{'-':>11} {'-':>13}")
        lines.append(f"{b:>5} {b / r['eager']:>11.2f} {b / r['staged']:>12.2f} "
                     f"{(r['eager'] / r['staged'] - 1) * 100:>11.0f}% {numpy_cols}")
    return "\n".join(lines)


def plot(rows: list[dict], path: str, title: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise SystemExit(f"--plot needs matplotlib: pip install -e \".[plots]\" ({e})") from e
    at = list(range(len(rows)))  # batch sizes evenly spaced, as in the paper
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(5, 5),
                                      gridspec_kw={"height_ratios": [2, 1]})
    top.plot(at, [r["batch"] / r["eager"] for r in rows], "o-", label="eager")
    top.plot(at, [r["batch"] / r["staged"] for r in rows], "s-", label="staged")
    top.set_ylabel("examples/sec")
    top.set_title(title)
    top.legend()
    bottom.bar(at, [(r["eager"] / r["staged"] - 1) * 100 for r in rows])
    bottom.set_xticks(at, [str(r["batch"]) for r in rows])
    bottom.set_ylabel("% improvement")
    bottom.set_xlabel("batch size")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+",
                        help="batch sizes (default 1 2 4 8 16 32; --quick: 1 2)")
    parser.add_argument("--size", type=int, default=224, help="image size (the paper: 224)")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per variant")
    parser.add_argument("--no-numpy", action="store_true", help="skip the NumPy baseline")
    parser.add_argument("--backend", default="numba", choices=["reference", "numba"],
                        help="the staged variant's backend (default: numba, whose hybrid "
                             "plans compile a ResNet-50 step in 15-100 s the first time, see "
                             "the README; reference: no compile)")
    parser.add_argument("--quick", action="store_true", help="32x32 images, batches 1 and 2")
    parser.add_argument("--plot", help="write the figure to this file (needs matplotlib)")
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args()
    if args.quick:
        args.size, args.steps = 32, 1
    if args.batches is None:
        args.batches = [1, 2] if args.quick else [1, 2, 4, 8, 16, 32]
    tf.config.set_compile_mode("sync")  # steady state: compiled before the timed steps
    rows = []
    for batch in args.batches:
        rows.append(measure(batch, args.size, args.steps, not args.no_numpy, args.backend))
        print(table(rows).splitlines()[-1] if len(rows) > 1 else table(rows), flush=True)
    print(f"\nResNet-50 training step, {args.size}x{args.size}, median of {args.steps} steps "
          f"(after one warm-up step), staged on the {args.backend} backend, "
          f"{os.cpu_count()} CPUs:\n{table(rows)}")
    if args.plot:
        plot(rows, args.plot, f"ResNet-50, {args.size}x{args.size}, CPU")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
