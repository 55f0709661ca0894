"""Where the GPU time of gpu_backend.py's slow sections goes: the eager MLP training step op by
op (each op synchronized before and after, so its time is its own but includes a synchronize),
the kernels of PyTorch's step, of stagecraft's staged and eager steps and of an eager matmul
(torch.profiler, which sees every kernel of the process), an eager add's host cost layer by
layer (operator, op library, allocation, the driver launch alone) beside PyTorch's add, the
host time of an upload issued behind queued GPU work (Numba's, stagecraft's, PyTorch's), and
the 4096^2 float32 matmul (TF32 off, then on) of stagecraft (eager, staged, cuBLAS called
directly) and PyTorch timed in alternation (ABAB...), so that clock or thermal drift cannot
favour either.

    python examples/benchmarks/gpu_profile.py [--quick] [--steps 5]
    PARTS="bench" BENCH_ARGS=... bash examples/benchmarks/device_check.sh   # (the device run)

Prints its tables; the MLP sizes are gpu_small_ops.OPS_FULL's (OPS_QUICK with --quick). On
Numba's CUDA simulator it runs (NUMBA_ENABLE_CUDASIM=1 ... --quick), without PyTorch, but its
times mean nothing.
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import statistics
import time
from typing import Any, Callable

import numpy as np

import stagecraft as tf
from gpu_baselines import find_baselines, set_tf32, synchronize  # sibling script modules
from gpu_small_ops import OPS_FULL, OPS_QUICK, mlp_init, mlp_step_tf
from stagecraft.backends.numba_cuda import cublas, eager, launcher, memory
from stagecraft.backends.numba_cuda.launch import simulated
from stagecraft.backends.numba_cuda.recording import Launch, recording


def _shape_key(values: list) -> str:
    return " ".join("x".join(map(str, getattr(v, "shape", ()))) or "()" for v in values)


def profile_eager_ops(step: Callable[[], Any], steps: int) -> list[tuple]:
    """(op, input shapes, calls per step, median us per call, us per step) of ``step``'s GPU
    ops, largest share first, with each op synchronized on both sides."""
    times: dict[tuple, list[float]] = collections.defaultdict(list)
    original = eager.run

    def timed(name: str, values: list, attrs: dict) -> Any:
        synchronize()
        start = time.perf_counter()
        out = original(name, values, attrs)
        synchronize()
        times[name, _shape_key(values)].append((time.perf_counter() - start) * 1e6)
        return out
    step()   # (compiles first)
    eager.run = timed
    try:
        for _ in range(steps):
            step()
    finally:
        eager.run = original
    rows = [(op, shapes, len(t) / steps, statistics.median(t), sum(t) / steps)
            for (op, shapes), t in times.items()]
    return sorted(rows, key=lambda r: -r[4])


def step_us(step: Callable[[], Any], steps: int) -> float:
    """Median us of one step, synchronized after each."""
    step()
    synchronize()
    samples = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        synchronize()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def kernels(torch: Any, step: Callable[[], Any], steps: int) -> list[tuple]:
    """(kernel, calls per step, us per step) of ``step``'s device work, by GPU time, from
    torch.profiler (CUPTI traces the whole process's kernels: stagecraft's Numba kernels,
    cuBLAS calls and CUDA-graph replays too, not only PyTorch's)."""
    from torch.profiler import ProfilerActivity, profile
    step()
    synchronize()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        synchronize()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        total = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if total:
            rows.append((e.key[:60], e.count / steps, total / steps))
    return sorted(rows, key=lambda r: -r[2])[:15]


def interleaved_matmul(n: int, rounds: int, torch: Any) -> dict[str, tuple[float, float]]:
    """Median ms of an n x n float32 matmul (under the TF32 setting in force), stagecraft
    eager and staged and torch, one call of each per round, synchronized after each; and the
    median ms until the call returned, before the synchronize (the host's part: a call that
    waits for the device inside shows it here)."""
    rng = np.random.default_rng(4)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    with tf.device("/gpu:0"):
        ta, tb = tf.constant(a), tf.constant(b)
    staged = tf.function(lambda x, y: tf.matmul(x, y))
    calls: dict[str, tuple[Callable, Callable]] = {
        "stagecraft_eager": (lambda: tf.matmul(ta, tb), synchronize),
        "stagecraft_staged": (lambda: staged(ta, tb), synchronize)}
    if cublas.available(np.float32):   # (cuBLAS alone: no op dispatch, no allocation)
        out, av, bv = memory.empty((n, n), np.float32), ta._value, tb._value
        calls["cublas_direct"] = (lambda: cublas.matmul_into(out, av, bv, False, False),
                                  synchronize)
    if torch is not None:
        la, lb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        calls["torch"] = (lambda: la @ lb, torch.cuda.synchronize)
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in calls}
    for round_ in range(rounds + 3):
        for name, (call, sync) in calls.items():
            with tf.device("/gpu:0"):
                sync()
                start = time.perf_counter()
                call()
                returned = time.perf_counter()
                sync()
            if round_ >= 3:   # (three rounds of warm-up: trace, compile, graph capture)
                samples[name].append(((time.perf_counter() - start) * 1e3,
                                      (returned - start) * 1e3))
    return {k: (statistics.median(t for t, _ in v), statistics.median(h for _, h in v))
            for k, v in samples.items()}


def add_layers(torch: Any, n: int, loop: int) -> list[tuple[str, float, float]]:
    """(layer, host us, total us) per call of an eager add of two ``n``-element float32 GPU
    tensors, layer by layer (a loop of calls, then one synchronize, as gpu_backend.py times
    the add): the operator, the GPU op library (``eager.run``), the output allocation, the
    launch of the recorded kernel alone, through cuda.core (``launcher.enqueue``) and straight
    to the driver as eager ops launch (``launcher.Bound``; neither on the simulator), and
    PyTorch's add. Host us ends when the loop has issued its calls: where it is the total,
    the host is the bound (below the driver's queue depth, so ``loop`` stays under 1000)."""
    a = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    with tf.device("/gpu:0"):
        x, y = tf.constant(a), tf.constant(a[::-1].copy())
    xv, yv = x._value, y._value
    with recording() as rec:
        eager.run("add", [xv, yv], {})
    launches = [i for i in rec.items if isinstance(i, Launch) and i.prepared is not None]
    calls: list[tuple[str, Callable, Callable]] = [
        ("x + y", lambda: x + y, synchronize),
        ("eager.run('add')", lambda: eager.run("add", [xv, yv], {}), synchronize),
        ("memory.empty", lambda: memory.empty((n,), np.float32), synchronize)]
    if launches:
        first = launches[0]
        bound = launcher.Bound(first.kernel, first.dims)
        calls += [("launcher.enqueue", lambda: launcher.enqueue(first.prepared), synchronize),
                  ("launcher.Bound", lambda: bound(*first.args), synchronize)]
        bound(*first.args)
        if bound._ready:   # (the driver's call alone, through cuda.bindings and ctypes)
            driver_call, driver_args = bound._ready.call, bound._ready.driver_args
            calls.append(("cuLaunchKernel", lambda: driver_call(*driver_args), synchronize))
            raw = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
            raw.restype = ctypes.c_int
            raw.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
            raw_args = (int(driver_args[0]), *driver_args[1:8], None, driver_args[9], None)
            calls.append(("cuLaunchKernel, ctypes", lambda: raw(*raw_args), synchronize))
    if torch is not None:
        la, lb = torch.from_numpy(a).cuda(), torch.from_numpy(a).cuda()
        calls.append(("torch x + y", lambda: la + lb, torch.cuda.synchronize))
    rows = []
    for name, call, sync in calls:
        host, total = [], []
        for _ in range(5):
            call()
            sync()
            start = time.perf_counter()
            for _ in range(loop):
                call()
            issued = time.perf_counter()
            sync()
            host.append((issued - start) / loop * 1e6)
            total.append((time.perf_counter() - start) / loop * 1e6)
        rows.append((name, statistics.median(host), statistics.median(total)))
    return rows


def upload_while_busy(torch: Any, n: int, quick: bool) -> list[tuple[str, float]]:
    """(way, median host us) of one upload of ``n`` float32 issued behind queued GPU work (ten
    matmuls, a few ms on an H100), per way to upload: a copy that first waits for the device
    (Numba's ``cuda.to_device``: the synchronous ``cuMemcpyHtoD``) costs the whole queue, one
    enqueued behind it (``memory.to_device``) only its own host work."""
    from numba import cuda
    host = np.ones(n, np.float32)
    with tf.device("/gpu:0"):
        a = tf.constant(np.ones((8, 8) if quick else (4096, 4096), np.float32))
    ways: list[tuple[str, Callable[[], Any]]] = [
        ("numba cuda.to_device", lambda: cuda.to_device(host)),
        ("memory.to_device", lambda: memory.to_device(host))]
    if torch is not None:
        ways.append(("torch .cuda()", lambda: torch.from_numpy(host).cuda()))
    rows = []
    for name, upload in ways:
        samples = []
        for _ in range(5):
            synchronize()
            for _ in range(10):
                tf.matmul(a, a)
            start = time.perf_counter()
            upload()
            samples.append((time.perf_counter() - start) * 1e6)
            synchronize()
        rows.append((name, statistics.median(samples)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    sizes = OPS_QUICK if args.quick else OPS_FULL
    baselines = find_baselines()
    # (not beside the simulator: a real GPU's library times nothing there, and its profiler
    # over the simulator's kernel threads takes minutes)
    torch = None if simulated() else baselines.torch
    set_tf32(False, baselines)
    x, target, init = mlp_init(sizes.mlp)
    with tf.device("/gpu:0"):
        tx, tt, lr = tf.constant(x), tf.constant(target), tf.constant(np.float32(1e-3))
        params = [tf.Variable(p) for p in init]

        def step() -> Any:
            return mlp_step_tf(params, tx, tt, lr)
        whole = step_us(step, args.steps)
        rows = profile_eager_ops(step, args.steps)
    print(f"eager MLP step {sizes.mlp}: {whole:.0f} us per step (synchronized once); by op, "
          f"each synchronized:")
    print(f"  {'op':22s}{'input shapes':34s}{'calls':>6s}{'us/call':>10s}{'us/step':>10s}")
    for op, shapes, calls, per_call, per_step in rows:
        print(f"  {op:22s}{shapes[:33]:34s}{calls:6.0f}{per_call:10.1f}{per_step:10.1f}")
    print(f"  {'sum of ops':62s}{sum(r[4] for r in rows):10.1f}")
    n = 8 if args.quick else 1000   # (before torch.profiler: its hooks slow launches)
    print(f"eager add of {n} float32, us per call by layer (loop of calls, one synchronize):")
    print(f"  {'layer':22s}{'host':>10s}{'total':>10s}")
    for name, host, total in add_layers(torch, n, 2 if args.quick else 500):
        print(f"  {name:22s}{host:10.2f}{total:10.2f}")
    print(f"upload of {n} float32 behind ten queued matmuls, host us (median of 5):")
    for name, host in upload_while_busy(torch, n, args.quick):
        print(f"  {name:22s}{host:10.1f}")
    if torch is not None:
        from gpu_small_ops import _mlp_step_torch
        lx, lt = (torch.from_numpy(v).cuda() for v in (x, target))
        tparams = [torch.from_numpy(p).cuda().requires_grad_() for p in init]
        tstep = _mlp_step_torch(torch)
        staged = tf.function(mlp_step_tf)
        with tf.device("/gpu:0"):
            a = tf.constant(np.ones((8, 8) if args.quick else (4096, 4096), np.float32))

            def staged_step() -> Any:
                return staged(params, tx, tt, lr)
            for name, step_fn in [("torch MLP step", lambda: tstep(tparams, lx, lt, 1e-3)),
                                  ("stagecraft staged MLP step", staged_step),
                                  ("stagecraft eager MLP step", step),
                                  ("stagecraft eager matmul", lambda: tf.matmul(a, a)),
                                  ("stagecraft eager add x100", lambda: [tx + tx for _ in
                                                                         range(100)]),
                                  ("torch add x100", lambda: [lx + lx for _ in range(100)])]:
                for _ in range(3):   # (a staged step replays its CUDA graph from call 4)
                    step_fn()
                rows = kernels(torch, step_fn, args.steps)
                print(f"{name}, GPU time by kernel (torch.profiler), us per step: "
                      f"{sum(r[2] for r in rows):.1f} in the {len(rows)} largest")
                for kernel, calls, per_step in rows:
                    print(f"  {kernel:62s}{calls:6.0f}{per_step:10.1f}")
    n = 8 if args.quick else 4096
    for tf32 in (False, True):
        set_tf32(tf32, baselines)
        print(f"matmul {n}x{n} float32, TF32 {'on' if tf32 else 'off'}, interleaved rounds, "
              f"median ms (synchronized; until the call returned):")
        for name, (ms, host) in interleaved_matmul(n, 3 if args.quick else 15, torch).items():
            print(f"  {name:22s}{ms:10.3f}{host:10.3f}")
    set_tf32(False, baselines)


if __name__ == "__main__":
    main()
