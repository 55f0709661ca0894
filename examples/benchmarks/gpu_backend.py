"""The GPU against the libraries on the same machine (issue 19's targets): every section runs in
one process, checks its results against NumPy before timing, and reports medians; PyTorch and
CuPy are compared when they are installed and see a GPU (neither is a dependency). Ends with a
TARGETS table (each target's value, met or NOT met); --json writes everything, rewritten after
each section, so a run cut short still leaves what it measured.

    python examples/benchmarks/gpu_backend.py [--only add matmul] [--repeat 5] [--number 10]
        [--quick] [--json out.json]
    NUMBA_ENABLE_CUDASIM=1 python examples/benchmarks/gpu_backend.py --quick   # no GPU
    bash examples/benchmarks/device_check.sh   # on a lent GPU: the CUDA tests, then this

Sections (--only names), in the order they run:
  add         eager ``x + y`` of two 1,000-element float32 GPU tensors: us per op for
              stagecraft, torch and cupy (target: <= 1.5x torch)
  expression  a ten-op elementwise expression on the same vectors (gpu_small_ops.expression),
              stagecraft eager and staged (``tf.function``) against torch and cupy eager
              (target: staged <= 0.5x torch eager)
  classifier_loss
              the gradient of a mean sparse softmax cross-entropy in 1024x1000 float32 logits
              (GradientTape; one fused op each way), stagecraft eager and staged against torch's
              cross_entropy and autograd.grad (no target: a measurement)
  mlp_step    one SGD training step: batch 1024, 1024 -> 4096 (relu) -> 1024, float32, mean
              squared error, GradientTape, ``var.assign_sub(lr * grad)``; stagecraft eager and
              staged against the same math in torch eager (target: staged <= 1.15x torch), TF32
              off in both (TFLOP/s count the 5 matmuls: 2 forward, 3 backward)
  matmul      C = A @ B with A, B 4096x4096 float32 by stagecraft (eager and staged) and by
              cuBLAS through torch.matmul and cupy.matmul, with TF32 off, then on (stagecraft and
              torch; CuPy's switch is an import-time environment variable, so it runs off only),
              timed queued (throughput) and synchronized per call (latency); target: eager
              >= 0.95x cuBLAS's throughput
  conv        ResNet-50's convolutions (batch 32, NHWC float32, TF32 off): the forward pass
              eagerly and the forward pass with both gradients staged, against PyTorch's
              cuDNN (gpu_conv.py); no target: where cuDNN beats im2col + cuBLAS
  l2hmc, rnn_forward, rnn_backward
              the workloads of cpu_backend.py (same functions, sizes and inputs) three ways:
              eager_gpu (each op a GPU launch inside ``tf.device("/gpu:0")``), staged_gpu (the
              same function under ``tf.function``, compiled by the "cuda" backend), staged_cpu
              (stagecraft's default CPU backend, for reference); target: eager_gpu/staged_gpu
              >= 10

Timing: add, expression, classifier_loss, mlp_step and conv time a loop of calls (1000 adds,
100 expressions, 100 losses, 10 steps, 10 convolutions)
followed by one synchronize, as PyTorch's benchmarks time small ops (the launches queue up as in
a program), and report the median per call over 7 such loops (--repeat); matmul does both: its
"ms" column (and the target) times batches of 20 queued calls and one synchronize, its
"ms_synced" column calls synchronized one by one; the other sections end
every timed call with a synchronize (numba.cuda.synchronize, which waits for every stream of
the context; torch.cuda.synchronize and CuPy's for theirs) and report the median of batches of
about 0.1 s (--number sets the calls per batch). First calls (trace and compile) are left out.

Checks: every variant runs once before and once after its timing (a staged GPU function
replays a recorded CUDA graph from its second or third call on) against a float64 NumPy
reference (relative norm of the error: 1e-5 for the elementwise ops; 1e-4 for the MLP's loss
and second-layer updates, which also tells that TF32 is off, as TF32 lands near 1e-3; 3e-3 for
its first layer, where relu decisions on pre-activations near 0 may differ) or, for
l2hmc, rnn and matmul, elementwise tolerances (cpu_backend's; the matmul's 1e-4, 2e-3 with TF32);
GPU variants must return GPU tensors and soft placement is off, so an op without a GPU kernel
is an error rather than a silent CPU fallback. A section that fails prints its traceback, its
targets read "not measured", the others still run, and the script exits with 1.

TF32: ``tf.config.experimental.enable_tensor_float_32_execution`` (TensorFlow's switch) and
torch.backends.cuda.matmul.allow_tf32 are set off for everything but the TF32-on matmul; where
stagecraft lacks the switch the script says so and runs its matmuls as they are.

--quick shrinks every size (vectors of 8, an MLP 4 -> 8 -> 4 on a batch of 4, an 8x8 matmul,
L2HMC with 2 chains and one leapfrog step, RNN of 2 steps of 2 x 4 -> 4) and times one loop or
call, for the tests. On Numba's CUDA simulator (kernels run as Python threads; synchronize is a
no-op) the launch sizes of stagecraft.backends.numba_cuda.config shrink (as in the CUDA tests)
and the times mean nothing: it only checks that the script runs. Without a GPU or the simulator
the script exits with 2.
"""
from __future__ import annotations

import importlib.metadata
import json
import sys
import time
import traceback
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from cpu_backend import (FULL, QUICK, WORKLOADS, Sizes, Workload, _arrays, _fmt,
                         _warm_up_numba, check, machine)  # sibling script modules
from gpu_baselines import (LIBRARIES, Baselines, find_baselines, has_tf32_control,
                           in_gpu_scope, set_tf32, synchronize, tf32_note, to_numpy)
from gpu_small_ops import (OPS_FULL, OPS_QUICK, measure_add, measure_classifier_loss,
                           measure_expression, measure_mlp_step, print_small_ops)
from gpu_conv import CONV_FULL, CONV_QUICK, measure_conv, print_conv
from gpu_targets import assess, print_targets
from timing import batches, benchmark_parser, time_interleaved
import stagecraft as tf
from stagecraft import backends
from stagecraft.devices.device import gpu_kind

SMALL_OPS = ("add", "expression", "classifier_loss", "mlp_step")
GPU_WORKLOADS = ("l2hmc", "rnn_forward", "rnn_backward")
SECTIONS = (*SMALL_OPS, "matmul", "conv", *GPU_WORKLOADS)
VARIANTS = ("eager_gpu", "staged_gpu", "staged_cpu")
RATIOS = {"eager_gpu/staged_gpu": ("eager_gpu", "staged_gpu"),
          "staged_cpu/staged_gpu": ("staged_cpu", "staged_gpu")}
GPU_FULL = replace(FULL, matmul_n=4096)
GPU_QUICK = replace(QUICK, chains=2, leapfrog_steps=1, mlp_hidden=4, rnn_steps=2, rnn_batch=2,
                    rnn_input=4, rnn_hidden=4, matmul_n=8)
SIMULATOR_LAUNCHES = {"THREADS_PER_BLOCK": 4, "MAX_BLOCKS": 2, "MATMUL_TILE": (4, 4, 4),
                      "MATMUL_WORK": (2, 2)}
# Elementwise relative tolerance of the matmul check (positive entries: no cancellation); TF32
# rounds the inputs to 10 mantissa bits.
MATMUL_RTOL = {"tf32_off": 1e-4, "tf32_on": 2e-3}
# Matmuls per queued batch (one synchronize after them): the throughput timing.
MATMULS_QUEUED = 20


def on_gpu(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` inside the GPU scope, returning once the device is idle."""
    scoped = in_gpu_scope(call)

    def run() -> Any:
        out = scoped()
        synchronize()
        return out
    return run


def run_variants(workload: Workload, calls: dict[str, Callable[[], Any]],
                 expected: list[np.ndarray], repeat: int | None, number: int | None) -> dict:
    """First calls (trace and compile; left out of the medians), checked against ``expected``
    with the workload's tolerances, the ``*_gpu`` ones also to return GPU tensors; then the
    timed batches, the variants' in turns (``time_interleaved``), and one more call each,
    checked again (a staged GPU function replays a recorded CUDA graph from its second or
    third call on)."""
    first: dict[str, float] = {}
    outputs(workload, calls, expected, first)
    timings = time_interleaved(calls, repeat or workload.repeat, number)
    row = {"workload": workload.name, "variants": {
        variant: {**timings[variant], "first_call_ms": first[variant]} for variant in calls}}
    outputs(workload, calls, expected, {})
    return row


def outputs(workload: Workload, calls: dict[str, Callable[[], Any]], expected: list[np.ndarray],
            times: dict[str, float]) -> dict[str, list[np.ndarray]]:
    """One call of each variant, its time in ``times`` (ms), checked against ``expected``."""
    results = {"numpy": expected}
    for variant, call in calls.items():
        start = time.perf_counter()
        out = call()
        times[variant] = (time.perf_counter() - start) * 1e3
        if variant.endswith("_gpu"):
            where = {t.device for t in (out if isinstance(out, (list, tuple)) else [out])}
            assert all(d.endswith("GPU:0") for d in where), \
                f"{workload.name}: {variant} returned tensors on {where}"
        results[variant] = [to_numpy(out)] if variant in LIBRARIES else _arrays(out)
    check(workload, results)
    return results


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


def blas_matmuls(a: np.ndarray, b: np.ndarray, tf32: bool, baselines: Baselines
                 ) -> tuple[dict[str, tuple[Callable, Callable]], dict[str, str]]:
    """The cuBLAS matmuls that can run here (``{"cupy": (call, synchronize), "torch": ...}``),
    and why the others cannot."""
    calls, missing = {}, dict(baselines.missing)
    if baselines.cupy is not None and tf32:
        missing["cupy"] = "CuPy's TF32 is the CUPY_TF32 variable, read at import: off only"
    elif baselines.cupy is not None:
        cupy = baselines.cupy
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        calls["cupy"] = (lambda: cupy.matmul(ca, cb), baselines.sync("cupy"))
    if baselines.torch is not None:
        torch = baselines.torch
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        calls["torch"] = (lambda: torch.matmul(ta, tb), baselines.sync("torch"))
    return calls, missing


def measure_matmul(sizes: Sizes, tf32: str, baselines: Baselines, repeat: int | None,
                   number: int | None) -> dict:
    """The matmul with TF32 ``tf32`` ("tf32_off" or "tf32_on") in stagecraft and PyTorch,
    timed two ways: ``queued_ms``, a batch of ``MATMULS_QUEUED`` calls then one synchronize
    (throughput: the host's work per call hides behind the device's, as in a program), and
    ``median_ms``, each call synchronized (latency: the host's work adds to it)."""
    n = sizes.matmul_n
    rng = np.random.default_rng(4)
    # Positive entries of mean 1/n, as in cpu_backend's matmul_chain: no cancellation.
    a, b = (rng.random((n, n), dtype=np.float32) * np.float32(2 / n) for _ in range(2))
    with tf.device("/gpu:0"):
        ta, tb = tf.constant(a), tf.constant(b)
    staged = tf.function(lambda x, y: tf.matmul(x, y))  # a new trace under this TF32 setting
    calls = {"eager_gpu": (in_gpu_scope(lambda: tf.matmul(ta, tb)), synchronize),
             "staged_gpu": (in_gpu_scope(lambda: staged(ta, tb)), synchronize)}
    blas, missing = blas_matmuls(a, b, tf32 == "tf32_on", baselines)
    calls.update(blas)
    synced = {v: (lambda c=c, s=s: (c(), s())[0]) for v, (c, s) in calls.items()}
    row = run_variants(Workload("matmul", {}, rtol=MATMUL_RTOL[tf32], atol=0.0), synced,
                       [a @ b], repeat, number)
    queue = 2 if n < 64 else MATMULS_QUEUED   # (--quick: the script's check only)

    def batch(call: Callable[[], Any], sync: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(queue):   # (each result dropped at once, as a loop's would be)
                call()
            sync()
        return run
    queued = time_interleaved({v: batch(c, s) for v, (c, s) in calls.items()},
                              repeat or 7, 1)
    row.update({"n": n, "tf32": tf32 == "tf32_on", "blas_missing": missing, "queued": queue})
    for variant, timing in row["variants"].items():
        timing["queued_ms"] = queued[variant]["median_ms"] / queue
    best = min((row["variants"][v]["queued_ms"] for v in blas), default=None)
    best_synced = min((row["variants"][v]["median_ms"] for v in blas), default=None)
    for timing in row["variants"].values():
        timing["gflop_s"] = 2 * n ** 3 / (timing["queued_ms"] * 1e6)
        timing["ratio_to_blas"] = None if best is None else timing["queued_ms"] / best
        timing["synced_ratio_to_blas"] = (None if best_synced is None
                                          else timing["median_ms"] / best_synced)
    return row


def measure_matmuls(sizes: Sizes, baselines: Baselines, repeat: int | None,
                    number: int | None) -> dict:
    """TF32 off, then on; off again afterwards (the other sections run without it)."""
    rows = {"tf32_off": measure_matmul(sizes, "tf32_off", baselines, repeat, number)}
    print_matmul(rows["tf32_off"])
    set_tf32(True, baselines)
    try:
        rows["tf32_on"] = measure_matmul(sizes, "tf32_on", baselines, repeat, number)
    finally:
        set_tf32(False, baselines)
    print_matmul(rows["tf32_on"])
    return rows


def print_workloads(rows: list[dict]) -> None:
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


def print_matmul(matmul: dict) -> None:
    title = f"matmul {matmul['n']}x{matmul['n']} float32, TF32 {'on' if matmul['tf32'] else 'off'}"
    print(f"{title:36s}{'ms':>10s}{'GFLOP/s':>10s}{'/BLAS':>8s}{'ms_synced':>11s}{'/BLAS':>8s}")
    for variant in ("eager_gpu", "staged_gpu", "cupy", "torch"):
        t = matmul["variants"].get(variant)
        if t is None:
            print(f"  {variant:34s}{'n/a':>10s}{'n/a':>10s}{'n/a':>8s}{'n/a':>11s}{'n/a':>8s}"
                  f"  ({matmul['blas_missing'][variant]})")
            continue
        ratios = ["n/a" if t[k] is None else _fmt(t[k])
                  for k in ("ratio_to_blas", "synced_ratio_to_blas")]
        print(f"  {variant:34s}{_fmt(t['queued_ms']):>10s}{_fmt(t['gflop_s']):>10s}"
              f"{ratios[0]:>8s}{_fmt(t['median_ms']):>11s}{ratios[1]:>8s}")


def gpu_machine(kind: str, baselines: Baselines) -> dict:
    from numba import cuda
    info = machine(backends.DEFAULT)
    name = "Numba CUDA simulator"
    if kind == "gpu":
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
        info["compute_capability"] = list(device.compute_capability)
    versions = {}
    for package in ("numba-cuda", "torch", "cupy-cuda13x", "cupy-cuda12x", "nvmath-python",
                    "cuda-bindings", "cuda-core"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    from stagecraft.backends.numba_cuda import cublas
    info["cublas_float32"] = cublas.available(np.float32)  # False: the Numba matmul kernel
    if hasattr(tf.config, "cuda_graphs_enabled"):
        info["cuda_graphs"] = tf.config.cuda_graphs_enabled()
    return {**info, "gpu": name, "gpu_kind": kind,
            "numba_cuda": versions.get("numba-cuda", "not installed (numba's built-in "
                                                     "numba.cuda)"),
            "versions": versions, "tf32_control": has_tf32_control(),
            "baselines_missing": baselines.missing}


class Report:
    """The results so far, the sections' errors, and the JSON file rewritten after each."""

    def __init__(self, path: str | None, header: dict) -> None:
        self.path, self.header = path, header
        self.results: dict[str, Any] = {"rows": []}
        self.errors: dict[str, str] = {}
        self.targets: list[dict] = []

    def run(self, name: str, measure: Callable[[], Any]) -> Any:
        """``measure()``; on an exception its traceback on stderr and one line in ``errors``."""
        try:
            return measure()
        except Exception as e:
            traceback.print_exc()
            self.errors[name] = f"{type(e).__name__}: {e}".splitlines()[0]
            print(f"{name}: FAILED ({self.errors[name]}); traceback on stderr")
            return None
        finally:
            self.write()

    def write(self) -> None:
        if self.path:
            with open(self.path, "w") as fh:
                json.dump({**self.header, **self.results, "errors": self.errors,
                           "targets": self.targets}, fh, indent=2)


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__, SECTIONS)
    args = parser.parse_args(argv)
    kind = gpu_kind()
    if kind == "none":
        print("gpu_backend.py: no CUDA GPU here (or numba-cuda is missing); to smoke-test on "
              "Numba's CUDA simulator instead run: NUMBA_ENABLE_CUDASIM=1 python "
              "examples/benchmarks/gpu_backend.py --quick", file=sys.stderr)
        sys.exit(2)
    sizes = GPU_QUICK if args.quick else GPU_FULL
    ops = OPS_QUICK if args.quick else OPS_FULL
    if args.repeat is not None:
        ops = replace(ops, repeat=args.repeat)
    repeat, number = batches(args)
    if kind == "simulator":
        from stagecraft.backends.numba_cuda import config
        for name, value in SIMULATOR_LAUNCHES.items():
            setattr(config, name, value)
    tf.config.set_soft_device_placement(False)  # an op without a GPU kernel must fail
    baselines = find_baselines()
    set_tf32(False, baselines)
    _warm_up_numba()
    info = gpu_machine(kind, baselines)
    print(f"GPU: {info['gpu']} ({info['gpu_kind']}), numba-cuda {info['numba_cuda']}, "
          f"{info['cpu_count']} CPUs; staged_cpu on the {info['backend']!r} backend"
          + ("; simulated, so the times mean nothing" if kind == "simulator" else ""))
    graphs = info.get("cuda_graphs")
    matmuls = "cuBLAS" if info["cublas_float32"] else "stagecraft's Numba kernel (no cuBLAS)"
    print(f"{tf32_note()}; float32 matmuls on {matmuls}"
          + ("" if graphs is None else f"; CUDA graphs {'on' if graphs else 'off'}")
          + "; compared with: "
          + (", ".join(f"{n} {info['versions'].get(n, '')}".strip()
                       for n in baselines.available()) or "nothing")
          + "".join(f"; no {n} ({why})" for n, why in baselines.missing.items()))
    report = Report(args.json, {"machine": info, "sizes": vars(sizes), "op_sizes": vars(ops)})
    only = args.only or list(SECTIONS)
    measures = {"add": measure_add, "expression": measure_expression,
                "classifier_loss": measure_classifier_loss, "mlp_step": measure_mlp_step}
    for name in SMALL_OPS:
        if name in only:
            row = report.run(name, lambda: measures[name](ops, baselines))
            if row is not None:
                report.results[name] = row
                print_small_ops(name, row, baselines.missing)
    if "matmul" in only:
        report.results["matmul"] = report.run(
            "matmul", lambda: measure_matmuls(sizes, baselines, repeat, number))
    if "conv" in only:
        conv = report.run("conv", lambda: measure_conv(
            CONV_QUICK if args.quick else CONV_FULL, baselines))
        if conv is not None:
            report.results["conv"] = conv
            print_conv(conv, baselines.missing)
    for name in GPU_WORKLOADS:
        if name in only:
            row = report.run(name, lambda: measure(name, sizes, repeat, number))
            if row is not None:
                report.results["rows"].append(row)
    if report.results["rows"]:
        print_workloads(report.results["rows"])
    report.targets = assess(report.results, report.errors, only)
    report.write()
    print_targets(report.targets, kind == "simulator")
    if report.errors:
        print(f"FAILED sections: {', '.join(report.errors)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
