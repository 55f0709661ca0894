"""ResNet-50's staged forward pass (or training step) on the Numba backend's hybrid plans
against the reference interpreter: first call (trace + compile) and steady-state step time.

    OPENBLAS_NUM_THREADS=1 python examples/benchmarks/resnet50_hybrid.py            # forward, 224
    OPENBLAS_NUM_THREADS=1 python examples/benchmarks/resnet50_hybrid.py --train --size 32

For a cold compile point ``STAGECRAFT_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` at empty folders; run
it again to measure the disk-cache hit. The two variants take turns step by step (``--steps``
each), so a machine whose load changes slows them alike; the compile runs in "sync" mode, so
the first call includes it.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "resnet50_model", os.path.join(os.path.dirname(HERE), "resnet50.py"))
_model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_model)

import stagecraft as tf  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=224, help="image size (default 224)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per variant")
    parser.add_argument("--train", action="store_true",
                        help="the training step (forward, gradients, SGD update)")
    parser.add_argument("--backends", nargs="+", default=["numba", "reference"],
                        choices=["numba", "reference"])
    args = parser.parse_args()
    tf.config.set_compile_mode("sync")
    images, labels = _model.random_batch(args.batch, args.size)
    runs = {}
    for backend in args.backends:
        model, step = _model.make_trainer(True, backend=backend)
        run = (lambda step=step: step(images, labels)) if args.train else \
            (lambda model=model: model(images, training=True))
        start = time.perf_counter()
        run()
        first = time.perf_counter() - start
        exe = model.call.get_concrete_function(images, training=True).executable
        plan = getattr(exe, "plan", None)
        what = (f"hybrid plan, {len(plan.kernels())} kernels" if plan is not None
                else type(exe).__name__)
        print(f"{backend:9s} first call {first:7.2f} s  (forward: {what})", flush=True)
        runs[backend] = run
    times: dict = {name: [] for name in runs}
    for _ in range(args.steps):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    what = "training step" if args.train else "forward pass"
    for name, ts in times.items():
        print(f"{name:9s} {what} {args.size}x{args.size} batch {args.batch}: median "
              f"{statistics.median(ts) * 1e3:8.1f} ms, min {min(ts) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
