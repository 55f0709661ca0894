"""Eager dispatch overhead: a small op through stagecraft against raw NumPy (and PyTorch when it
is installed), measured in one process. Prints a table of medians; --json writes the numbers.

    python examples/benchmarks/eager_overhead.py [--json out.json] [--repeat 15]
    python examples/benchmarks/eager_overhead.py --gpu-host [--json out.json]

--gpu-host measures the HOST cost of eager GPU ops only: the Python work from the op call to the
kernel launch (dispatch, typing, launch plans, output allocation), on Numba's CUDA simulator
with every kernel launch replaced by a no-op, so no device work is timed. On a GPU the same
path also packs the launch's parameters and calls the driver, and allocates from the caching
pool rather than the simulator's NumPy buffers; examples/benchmarks/gpu_backend.py times ops
end to end on a real GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import timeit

import numpy as np

if "--gpu-host" in sys.argv:  # the simulator must be chosen before numba is imported
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import stagecraft as tf  # noqa: E402


def median_us(fn, number: int, repeat: int) -> float:
    """Median over ``repeat`` runs of the mean time of one call, in microseconds."""
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def cases() -> list[tuple[str, str, object]]:
    """(name, group, zero-argument callable) for every measured call."""
    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    x, y = tf.constant(a), tf.constant(b)
    m = tf.constant(np.ones((4, 4), np.float32))
    out = [
        ("numpy  np.add(a, b)", "add", lambda: np.add(a, b)),
        ("stagecraft tf.add(x, y)", "add", lambda: tf.add(x, y)),
        ("stagecraft x + y", "add", lambda: x + y),
        ("stagecraft x + 1.0", "add", lambda: x + 1.0),
        ("numpy  np.sum(a)", "sum", lambda: np.sum(a)),
        ("stagecraft tf.reduce_sum(x)", "sum", lambda: tf.reduce_sum(x)),
        ("numpy  a4x4 @ a4x4", "matmul", lambda: np.matmul(m.numpy(), m.numpy())),
        ("stagecraft tf.matmul(m, m)", "matmul", lambda: tf.matmul(m, m)),
    ]

    def taped():
        with tf.GradientTape() as t:
            t.watch(x)
            z = x * y
        return t.gradient(z, x)

    out.append(("stagecraft tape: x*y + gradient", "tape", taped))
    try:
        import torch
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        out.insert(3, ("torch  torch.add(ta, tb)", "add", lambda: torch.add(ta, tb)))
    except ImportError:
        pass
    return out


def expression(x, y):
    """gpu_small_ops.py's ten-op expression (*, +, *, -, tanh, *, +, *, +, /), three of its
    operands Python numbers."""
    return (tf.tanh((x * y + x) * 0.5 - y) * x + 1.0) / (y * y + 1.0)


def stub_gpu_launches() -> None:
    """Replaces every kernel launch of the CUDA backend with a no-op (the simulator would run
    each kernel as Python threads): what is left of an eager GPU op is its host work."""
    from stagecraft.backends.numba_cuda import launcher

    def no_launch(kernel, dims, *args) -> None:
        return None
    real = launcher.launch
    for name, module in list(sys.modules.items()):
        if name.startswith("stagecraft.backends.numba_cuda") and \
                getattr(module, "launch", None) is real:
            module.launch = no_launch


def gpu_host_cases() -> list[tuple[str, str, object]]:
    """(name, group, callable) for eager GPU ops on 1,000-element float32 tensors; the
    expression's and the scope's calls are ten ops each (their times are per op)."""
    import stagecraft.backends.numba_cuda.kernels  # noqa: F401  (every kernel module loaded)
    from stagecraft.backends.numba_cuda import eager  # noqa: F401
    stub_gpu_launches()
    a = np.linspace(-1.0, 1.0, 1000, dtype=np.float32)
    x_cpu, y_cpu = tf.constant(a), tf.constant(a[::-1].copy())
    with tf.device("/gpu:0"):
        x, y = tf.constant(a), tf.constant(a[::-1].copy())
        m = tf.constant(np.ones((4, 1000), np.float32))

    def in_scope():
        with tf.device("/gpu:0"):
            for _ in range(10):
                out = x + y
        return out
    return [
        ("cpu    tf.add(x, y)", "add", lambda: tf.add(x_cpu, y_cpu)),
        ("gpu    tf.add(x, y)", "add", lambda: tf.add(x, y)),
        ("gpu    x + y", "add", lambda: x + y),
        ("gpu    x + 1.0", "add", lambda: x + 1.0),
        ("gpu    x + y in a tf.device scope, per op", "scope", in_scope),
        ("gpu    tf.exp(x)", "unary", lambda: tf.exp(x)),
        ("gpu    m + y  (4x1000 + 1000)", "broadcast", lambda: m + y),
        ("gpu    10-op expression, per op", "expression", lambda: expression(x, y)),
    ]


# Host work a GPU adds to an eager add that the simulator skips, timed on Numba's real classes
# in a child process without the simulator (building pointers and arrays over given addresses
# needs no driver): the output from the caching pool, packing the launch's four arrays (out,
# x, y, error flag) as launcher.Bound does, and an eager matmul's cuBLAS wrapper (cublas.py)
# with the library's calls replaced by no-ops.
GPU_ONLY = """
import json, statistics, sys, timeit, types as pytypes
import numpy as np
from numba.core import types
from stagecraft.backends.numba_cuda import launcher, memory, pool
blocks = pool.BlockPool(lambda n: pytypes.SimpleNamespace(device_pointer=1 << 20),
                        lambda block, size, back: pool.lease_class()(
                            None, block.device_pointer, size, back))
f32 = np.dtype(np.float32)
def output():
    return memory.pooled_array((1000,), (4,), f32, blocks.take(4000))
arrays = [output() for _ in range(3)] + [memory.pooled_array((1,), (1,), np.dtype(np.int8),
                                                             blocks.take(1))]
packers = [launcher._packer(types.Array(types.float32, 1, "C"))] * 3 + [
    launcher._packer(types.Array(types.int8, 1, "C"))]
def pack():
    # (the output is a new array every op: its parameters are packed afresh; the inputs' and
    # the error flag's are kept on them)
    arrays[0].__dict__.pop("_stagecraft_params", None)
    params = []
    for p, a in zip(packers, arrays):
        p(a, params)
# cuBLAS's host side: matmul_into on 64x64 arrays, through bindings that do nothing
from stagecraft.backends.numba_cuda import cublas
class Names(dict):
    def __missing__(self, key): return 0
lib = pytypes.SimpleNamespace(Operation=Names(), ComputeType=Names(), create=lambda: 1,
                              GemmAlgo=pytypes.SimpleNamespace(DEFAULT=-1),
                              set_stream=lambda *a: None, set_workspace=lambda *a: None,
                              gemm_ex=lambda *a: None, gemm_strided_batched_ex=lambda *a: None)
handle = cublas._Handle(lib, Names(), arrays[1])
cublas._handle = lambda: handle
square = [memory.pooled_array((64, 64), (256, 4), f32, blocks.take(1 << 14)) for _ in range(2)]
number, repeat = int(sys.argv[1]), int(sys.argv[2])
x = arrays[0]
print(json.dumps({name: statistics.median(timeit.repeat(fn, number=number, repeat=repeat))
                  / number * 1e6 for name, fn in [
                      ("output", output), ("pack", pack), ("read", lambda: x.dtype),
                      ("blas", lambda: cublas.matmul_into(square[0], square[1], square[1],
                                                          False, False))]}))
"""


def gpu_only_parts(number: int, repeat: int) -> list[dict]:
    """The GPU-only host work of GPU_ONLY, in microseconds per op."""
    import subprocess
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", GPU_ONLY, str(number), str(repeat)], env=env,
                         capture_output=True, text=True, check=True)
    times = json.loads(out.stdout)
    return [{"call": "gpu-only  pooled output array", "group": "gpu-only",
             "host_us": times["output"]},
            {"call": "gpu-only  pack an add's 4 arrays", "group": "gpu-only",
             "host_us": times["pack"]},
            {"call": "gpu-only  cuBLAS wrapper of a matmul", "group": "gpu-only",
             "host_us": times["blas"]},
            {"call": "gpu-only  array.dtype, one read", "group": "attribute",
             "host_us": times["read"]}]


def gpu_host(args: argparse.Namespace) -> list[dict]:
    """Host microseconds per eager GPU op (launches stubbed out, on the simulator), and the
    GPU-only parts the simulator skips."""
    rows = []
    for name, group, fn in gpu_host_cases():
        fn()  # first call: kernels compile (simulated), plans are made
        per_op = 10 if group in ("expression", "scope") else 1
        us = median_us(fn, max(args.number // 10 // per_op, 50), args.repeat) / per_op
        rows.append({"call": name, "group": group, "host_us": us})
    with tf.device("/gpu:0"):
        simulated = tf.constant([1.0])._value
    rows.append({"call": "simulator array.dtype, one read", "group": "attribute",
                 "host_us": median_us(lambda: simulated.dtype, args.number, args.repeat)})
    extra = gpu_only_parts(max(args.number // 10, 50), args.repeat)
    print("HOST cost only: Numba's CUDA simulator, kernel launches stubbed out (no device work)")
    print(f"{'call':40s} {'host µs/op':>10s}")
    for r in rows:
        print(f"{r['call']:40s} {r['host_us']:10.2f}")
    print("On a GPU an op also does (Numba's real classes, no driver; the first replaces the "
          "simulator's NumPy output):")
    for r in extra:
        print(f"{r['call']:40s} {r['host_us']:10.2f}")
    print("Not measured without a GPU: cuda.core's launch call (the driver enqueue).\n"
          "The simulator's arrays are slower to read than Numba's (the array.dtype rows): the "
          "gpu rows\noverstate a GPU's Python work by about six such reads per op.")
    return rows + extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--gpu-host", action="store_true",
                        help="host cost of eager GPU ops (simulator, launches stubbed out)")
    args = parser.parse_args()
    if args.gpu_host:
        rows = gpu_host(args)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"machine": platform.platform(), "python": platform.python_version(),
                           "mode": "gpu-host (simulator, launches stubbed)", "rows": rows},
                          fh, indent=2)
        return
    rows = []
    baseline = {}
    for name, group, fn in cases():
        n = args.number if group != "tape" else max(args.number // 20, 100)
        us = median_us(fn, n, args.repeat)
        baseline.setdefault(group, us)
        rows.append({"call": name, "group": group, "median_us": us,
                     "vs_numpy": us / baseline[group]})
    print(f"{'call':36s} {'median µs':>10s} {'× numpy':>8s}")
    for r in rows:
        print(f"{r['call']:36s} {r['median_us']:10.3f} {r['vs_numpy']:8.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "python": platform.python_version(),
                       "numpy": np.__version__, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
