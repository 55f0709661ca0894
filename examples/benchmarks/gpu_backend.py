"""Staged vs eager on the GPU: the L2HMC and RNN workloads of cpu_backend.py (imported from it:
the same stagecraft functions and inputs) run three ways, and a square float32 matmul is compared
with the GPU's BLAS. Prints the median time per call, the ratios and the machine; --json writes
the numbers.

    python examples/benchmarks/gpu_backend.py [--only l2hmc matmul] [--repeat 5] [--number 10]
        [--quick] [--json out.json]
    NUMBA_ENABLE_CUDASIM=1 python examples/benchmarks/gpu_backend.py --quick   # no GPU

Variants of l2hmc, rnn_forward and rnn_backward (sizes as in cpu_backend.py):
  eager_gpu   the stagecraft function called eagerly inside ``tf.device("/gpu:0")``, on inputs
              and variables created in that scope (GPU tensors): every op is a GPU launch
  staged_gpu  the same function under ``tf.function``, called in the same scope with the same
              GPU inputs: compiled by the "cuda" backend (fused elementwise kernels)
  staged_cpu  the same function under ``tf.function`` on CPU tensors (stagecraft's default CPU
              backend), for reference
All variants run once and are checked against cpu_backend's NumPy version (its tolerances)
before anything is timed; the GPU variants must return GPU tensors, and soft placement is off,
so an op without a GPU kernel is an error rather than a silent CPU fallback. First calls (trace
and compile) are left out of the medians. --quick shrinks every size (L2HMC: 2 chains, one
leapfrog step, hidden width 4; RNN: 2 steps, batch 2, 4 -> 4) and times one call, for the tests.

matmul: C = A @ B with A, B 4096x4096 float32 (--quick: 8x8) by stagecraft eagerly and staged
on the GPU, and by cupy.matmul and torch.matmul on CUDA when they are installed with a usable GPU
(neither is a dependency; TF32 is off in torch, its default). Reports the time, GFLOP/s and the
ratio to the fastest BLAS (target: within 2x).

Synchronization: every timed GPU call ends with ``numba.cuda.synchronize()`` (the CuPy and
PyTorch calls with their own device synchronize), so a time covers the work, not just the
launches. On Numba's CUDA simulator (kernels run as Python threads; synchronize is a no-op) the
launch sizes of stagecraft.backends.numba_cuda.config are shrunk (as in the CUDA tests) and the
times mean nothing: it only checks that the script runs. Without a GPU or the simulator the script exits with 2.
"""
from __future__ import annotations

import importlib.metadata
import json
import sys
import time
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from cpu_backend import (FULL, QUICK, WORKLOADS, Sizes, Workload, _arrays, _fmt,
                         _warm_up_numba, check, machine)  # sibling script modules
from timing import batches, benchmark_parser, time_ms
import stagecraft as tf
from stagecraft import backends
from stagecraft.devices.device import gpu_kind

GPU_WORKLOADS = ("l2hmc", "rnn_forward", "rnn_backward")
VARIANTS = ("eager_gpu", "staged_gpu", "staged_cpu")
RATIOS = {"eager_gpu/staged_gpu": ("eager_gpu", "staged_gpu"),
          "staged_cpu/staged_gpu": ("staged_cpu", "staged_gpu")}
GPU_FULL = replace(FULL, matmul_n=4096)
GPU_QUICK = replace(QUICK, chains=2, leapfrog_steps=1, mlp_hidden=4, rnn_steps=2, rnn_batch=2,
                    rnn_input=4, rnn_hidden=4, matmul_n=8)
SIMULATOR_LAUNCHES = {"THREADS_PER_BLOCK": 4, "MAX_BLOCKS": 2, "MATMUL_TILE": (4, 4, 4),
                      "MATMUL_WORK": (2, 2)}


def synchronize() -> None:
    from numba import cuda
    cuda.synchronize()


def on_gpu(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` inside the GPU scope, returning once the device is idle."""
    def run() -> Any:
        with tf.device("/gpu:0"):
            out = call()
        synchronize()
        return out
    return run


# NumPy-convertible copies of the BLAS results (stagecraft's convert as they are).
TO_HOST: dict[str, Callable[[Any], Any]] = {"cupy": lambda out: out.get(),
                                            "torch": lambda out: out.cpu().numpy()}


def run_variants(workload: Workload, calls: dict[str, Callable[[], Any]],
                 expected: list[np.ndarray], repeat: int | None, number: int | None) -> dict:
    """First calls (trace and compile; left out of the medians), checked against ``expected``
    with the workload's tolerances, the ``*_gpu`` ones also to return GPU tensors; then the
    timed batches."""
    first, results = {}, {"numpy": expected}
    for variant, call in calls.items():
        start = time.perf_counter()
        out = call()
        first[variant] = (time.perf_counter() - start) * 1e3
        if variant.endswith("_gpu"):
            where = {t.device for t in (out if isinstance(out, (list, tuple)) else [out])}
            assert all(d.endswith("GPU:0") for d in where), \
                f"{workload.name}: {variant} returned tensors on {where}"
        results[variant] = _arrays(TO_HOST.get(variant, lambda out: out)(out))
    check(workload, results)
    return {"workload": workload.name, "variants": {
        variant: {**time_ms(call, repeat or workload.repeat, number),
                  "first_call_ms": first[variant]} for variant, call in calls.items()}}


def measure(name: str, sizes: Sizes, repeat: int | None, number: int | None) -> dict:
    cpu = WORKLOADS[name](sizes, None)
    with tf.device("/gpu:0"):  # the same inputs and variables, created on the GPU
        gpu = WORKLOADS[name](sizes, None)
    calls = {"eager_gpu": on_gpu(gpu.variants["eager"].call),
             "staged_gpu": on_gpu(gpu.variants["staged"].call),
             "staged_cpu": cpu.variants["staged"].call}
    row = run_variants(cpu, calls, _arrays(cpu.variants["numpy"].call()), repeat, number)
    medians = {v: t["median_ms"] for v, t in row["variants"].items()}
    row.update({ratio: medians[a] / medians[b] for ratio, (a, b) in RATIOS.items()})
    return row


def blas_matmuls(a: np.ndarray, b: np.ndarray) -> tuple[dict[str, Callable], dict[str, str]]:
    """The GPU BLAS matmuls that can run here (``{"cupy": call, "torch": call}``), and why the
    others cannot."""
    calls, missing = {}, {}
    try:
        import cupy
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        sync = cupy.cuda.Device().synchronize
        calls["cupy"] = lambda: (cupy.matmul(ca, cb), sync())[0]
    except Exception as e:  # not installed, or no usable GPU (the simulator)
        missing["cupy"] = f"{type(e).__name__}: {e}".splitlines()[0]
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        torch.backends.cuda.matmul.allow_tf32 = False  # full float32, like stagecraft
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        calls["torch"] = lambda: (torch.matmul(ta, tb), torch.cuda.synchronize())[0]
    except Exception as e:
        missing["torch"] = f"{type(e).__name__}: {e}".splitlines()[0]
    return calls, missing


def measure_matmul(sizes: Sizes, repeat: int | None, number: int | None) -> dict:
    n = sizes.matmul_n
    rng = np.random.default_rng(4)
    # Positive entries of mean 1/n, as in cpu_backend's matmul_chain: no cancellation.
    a, b = (rng.random((n, n), dtype=np.float32) * np.float32(2 / n) for _ in range(2))
    with tf.device("/gpu:0"):
        ta, tb = tf.constant(a), tf.constant(b)
    staged = tf.function(lambda x, y: tf.matmul(x, y))
    calls = {"eager_gpu": on_gpu(lambda: tf.matmul(ta, tb)),
             "staged_gpu": on_gpu(lambda: staged(ta, tb))}
    blas, missing = blas_matmuls(a, b)
    calls.update(blas)
    row = run_variants(Workload("matmul", {}, rtol=1e-4, atol=0.0), calls, [a @ b], repeat,
                       number)
    row["n"] = n
    best = min((row["variants"][v]["median_ms"] for v in blas), default=None)
    for timing in row["variants"].values():
        timing["gflop_s"] = 2 * n ** 3 / (timing["median_ms"] * 1e6)
        timing["ratio_to_blas"] = None if best is None else timing["median_ms"] / best
    row["blas_missing"] = missing
    return row


def print_tables(rows: list[dict], matmul: dict | None, info: dict) -> None:
    print(f"GPU: {info['gpu']} ({info['gpu_kind']}), numba-cuda {info['numba_cuda']}, "
          f"{info['cpu_count']} CPUs; staged_cpu on the {info['backend']!r} backend"
          + ("; simulated, so the times mean nothing" if info["gpu_kind"] == "simulator" else ""))
    if rows:
        header = [*VARIANTS, *RATIOS]
        print("median ms per call")
        print(f"{'workload':14s}" + "".join(f"{h:>{len(h) + 2}s}" for h in header))
        for r in rows:
            cells = [_fmt(r["variants"][v]["median_ms"]) for v in VARIANTS]
            cells += [_fmt(r[ratio]) for ratio in RATIOS]
            print(f"{r['workload']:14s}" + "".join(f"{c:>{len(h) + 2}s}"
                                                   for c, h in zip(cells, header)))
        for r in rows:
            if r["workload"] == "l2hmc":
                print(f"first call of the staged GPU l2hmc step (trace + compile): "
                      f"{_fmt(r['variants']['staged_gpu']['first_call_ms'])} ms")
    if matmul is not None:
        title = f"matmul {matmul['n']}x{matmul['n']} float32"
        print(f"{title:28s}{'ms':>10s}{'GFLOP/s':>10s}{'/BLAS':>8s}")
        for variant in ("eager_gpu", "staged_gpu", "cupy", "torch"):
            t = matmul["variants"].get(variant)
            if t is None:
                print(f"  {variant:26s}{'n/a':>10s}{'n/a':>10s}{'n/a':>8s}  "
                      f"({matmul['blas_missing'][variant]})")
                continue
            ratio = "n/a" if t["ratio_to_blas"] is None else _fmt(t["ratio_to_blas"])
            print(f"  {variant:26s}{_fmt(t['median_ms']):>10s}{_fmt(t['gflop_s']):>10s}"
                  f"{ratio:>8s}")


def gpu_machine(kind: str) -> dict:
    from numba import cuda
    info = machine(backends.DEFAULT)
    name = "Numba CUDA simulator"
    if kind == "gpu":
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
        info["compute_capability"] = list(device.compute_capability)
    try:
        version = importlib.metadata.version("numba-cuda")
    except importlib.metadata.PackageNotFoundError:
        version = "not installed (numba's built-in numba.cuda)"
    return {**info, "gpu": name, "gpu_kind": kind, "numba_cuda": version}


def main(argv: list[str] | None = None) -> None:
    names = [*GPU_WORKLOADS, "matmul"]
    parser = benchmark_parser(__doc__, names)
    args = parser.parse_args(argv)
    kind = gpu_kind()
    if kind == "none":
        print("gpu_backend.py: no CUDA GPU here (or numba-cuda is missing); to smoke-test on "
              "Numba's CUDA simulator instead run: NUMBA_ENABLE_CUDASIM=1 python "
              "examples/benchmarks/gpu_backend.py --quick", file=sys.stderr)
        sys.exit(2)
    sizes = GPU_QUICK if args.quick else GPU_FULL
    repeat, number = batches(args)
    if kind == "simulator":
        from stagecraft.backends.numba_cuda import config
        for name, value in SIMULATOR_LAUNCHES.items():
            setattr(config, name, value)
    tf.config.set_soft_device_placement(False)  # an op without a GPU kernel must fail
    _warm_up_numba()
    only = args.only or names
    rows = [measure(name, sizes, repeat, number) for name in GPU_WORKLOADS if name in only]
    matmul = measure_matmul(sizes, repeat, number) if "matmul" in only else None
    info = gpu_machine(kind)
    print_tables(rows, matmul, info)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "sizes": vars(sizes), "rows": rows, "matmul": matmul},
                      fh, indent=2)


if __name__ == "__main__":
    main()
