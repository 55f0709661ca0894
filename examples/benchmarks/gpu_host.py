"""The HOST cost of eager GPU ops, on any machine: the Python work from an op call to its
kernel launch (dispatch, plans, output allocation from the caching pool, packing the launch's
parameters, the cuBLAS wrapper), run on Numba's real device-array classes with a stand-in for
the GPU, so no device work is done or timed. Prints a table of medians; --json writes it.

    python examples/benchmarks/gpu_host.py [--json out.json] [--repeat 7] [--number 2000]

The stand-in (:func:`stand_in_gpu`): device memory is a caching pool of fake addresses,
uploads copy nothing, kernels are typed but not compiled, and the
driver's launch (``cuLaunchKernel``, and ``cuda.core.launch`` for launches not bound to a
plan) and cuBLAS's calls do nothing. What a GPU adds is the driver's launch itself (a few us,
PyTorch pays it too) and cuBLAS's own host work; ops that
read a value back (error checks) cannot run here. ``gpu_backend.py`` times ops end to end on a
real GPU, and ``gpu_profile.py`` splits an add's cost there.
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import itertools
import json
import os
import platform
import statistics
import sys
import timeit
import types
from typing import Any, Callable

import numpy as np

# Numba's real classes, not the simulator's (which wrap NumPy arrays and read slower): the
# simulator is chosen when numba is imported, so this must come first.
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)

import stagecraft as tf  # noqa: E402


def stand_in_gpu() -> None:
    """Lets eager GPU ops run their host code with no GPU (see the module docstring); for
    this benchmark's process only: nothing it makes holds data."""
    from numba import cuda
    from stagecraft.backends.numba_cuda import cublas, detect, launch, launcher, memory, pool
    detect._probe = lambda: ("gpu", "stand-in (no device work)")
    places = itertools.count(1 << 40, 1 << 32)   # (a fake address per block, none overlapping)
    blocks = pool.BlockPool(lambda nbytes: types.SimpleNamespace(device_pointer=next(places)),
                            functools.partial(pool.leases, None))
    memory.device_pool = lambda: blocks

    # Uploads: memory.to_device's own code, with the driver's copy doing nothing, and Numba's
    # upload (which it calls while a recording is in progress) an array over the pool.
    memory._UPLOAD[:] = [lambda *args: (0,), lambda *args: (0,), lambda pointer: 1, 0]  # (see there)

    def numba_to_device(value: Any, stream: int = 0) -> Any:
        host = np.asarray(value)
        return memory.pooled_array(host.shape, host.strides, host.dtype,
                                   blocks.take(max(host.nbytes, 1)))
    cuda.to_device = numba_to_device
    launch._THREAD.has_context = True   # (this thread's context: none to make)
    launcher._STREAM[:] = [None]
    import cuda.core
    cuda.core.launch = lambda *args: None
    launcher._DRIVER[:] = [lambda *args: (0,), 0]   # cuLaunchKernel, CUDA_SUCCESS
    launcher._driver_function = lambda function: function

    def typed_only(self: Any, args: Any) -> tuple:   # (_Launcher._compile without NVVM)
        views = [memory.flat(a) if memory.is_device_array(a) else a for a in args]
        kinds = tuple(self.kernel.typeof_pyval(v) for v in views)
        packers = [launcher._packer(t) for t in kinds]
        params: list = []
        for pack, a in zip(packers, args):
            pack(a, params)
        # (the function: the ctypes of its parameters, which a driver reads from the image)
        return types.SimpleNamespace(param_types=[
            ctypes.c_bool if isinstance(p, bool) else ctypes.c_uint64 if isinstance(p, int)
            else type(p) for p in params]), packers
    launcher._Launcher._compile = typed_only

    class Names(dict):   # (every enum name of the bindings resolves, to 0)
        def __missing__(self, key: str) -> int:
            return 0
    nothing = lambda *args: None  # noqa: E731
    bindings = types.SimpleNamespace(
        Operation=Names(), ComputeType=Names(), GemmAlgo=types.SimpleNamespace(DEFAULT=-1),
        create=lambda: 1, set_stream=nothing, set_workspace=nothing, gemm_ex=nothing,
        gemm_strided_batched_ex=nothing)
    handle = cublas._Handle(bindings, Names(), memory.to_device(np.zeros(256, np.uint8)))
    cublas._handle = lambda: handle


def expression(x: Any, y: Any) -> Any:
    """gpu_small_ops.py's ten-op expression (*, +, *, -, tanh, *, +, *, +, /), three of its
    operands Python numbers."""
    return (tf.tanh((x * y + x) * 0.5 - y) * x + 1.0) / (y * y + 1.0)


def cases() -> list[tuple[str, int, Callable[[], Any]]]:
    """(name, ops per call, zero-argument callable) for every measured call: small tensors,
    since the host cost does not depend on sizes."""
    a = np.linspace(-1.0, 1.0, 1000, dtype=np.float32)
    x_cpu, y_cpu = tf.constant(a), tf.constant(a[::-1].copy())
    with tf.device("/gpu:0"):
        x, y = tf.constant(a), tf.constant(a[::-1].copy())
        m = tf.constant(np.ones((4, 1000), np.float32))
        sq = tf.constant(np.ones((64, 64), np.float32))
        params = [tf.Variable(np.full(s, 0.01 if len(s) == 2 else 0.0, np.float32))
                  for s in [(64, 128), (128,), (128, 64), (64,)]]
        xb, yb = (tf.constant(np.ones((32, 64), np.float32)) for _ in range(2))
        img = tf.constant(np.ones((8, 16, 16, 8), np.float32))
        kernel = tf.constant(np.ones((3, 3, 8, 16), np.float32))
        logits = tf.constant(np.ones((32, 10), np.float32))
        labels = tf.constant(np.arange(32, dtype=np.int32) % 10)
    w1, b1, w2, b2 = params

    def in_scope() -> Any:
        with tf.device("/gpu:0"):
            for _ in range(10):
                out = x + y
        return out

    def upload() -> Any:
        with tf.device("/gpu:0"):
            return tf.constant(a)

    def mlp_step() -> Any:   # 64 -> 128 -> 64, batch 32: gpu_backend.py's MLP step, small
        with tf.device("/gpu:0"):
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.matmul(xb, w1) + b1)
                loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) + b2 - yb))
            for v, g in zip(params, tape.gradient(loss, params)):
                v.assign_sub(0.01 * g)
        return loss

    def classifier_loss() -> Any:   # a Keras classifier's loss and its gradient
        with tf.device("/gpu:0"):
            with tf.GradientTape() as tape:
                tape.watch(logits)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels,
                                                                                     logits))
            return tape.gradient(loss, logits)
    return [
        ("cpu    tf.add(x, y)  (for scale)", 1, lambda: tf.add(x_cpu, y_cpu)),
        ("gpu    tf.add(x, y)", 1, lambda: tf.add(x, y)),
        ("gpu    x + y", 1, lambda: x + y),
        ("gpu    x + 1.0", 1, lambda: x + 1.0),
        ("gpu    x + y in a tf.device scope", 10, in_scope),
        ("gpu    tf.exp(x)", 1, lambda: tf.exp(x)),
        ("gpu    m + y  (4x1000 + 1000)", 1, lambda: m + y),
        ("gpu    10-op expression", 10, lambda: expression(x, y)),
        ("gpu    reduce_sum(64x64, axis=0)", 1, lambda: tf.reduce_sum(sq, axis=0)),
        ("gpu    transpose 64x64", 1, lambda: tf.transpose(sq)),
        ("gpu    slice m[1:, :500]", 1, lambda: m[1:, :500]),
        ("gpu    softmax 64x64 (whole call)", 1, lambda: tf.nn.softmax(sq)),
        ("gpu    matmul 64x64 (cuBLAS)", 1, lambda: tf.matmul(sq, sq)),
        ("gpu    conv2d 8x16x16x8, 3x3x8x16", 1, lambda: tf.nn.conv2d(img, kernel, 1, "SAME")),
        ("gpu    upload 1000 float32 (tf.constant)", 1, upload),
        ("gpu    MLP training step (whole step)", 1, mlp_step),
        ("gpu    sparse cross-entropy + gradient", 1, classifier_loss),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    stand_in_gpu()
    rows = []
    print("HOST cost of eager GPU ops: Numba's real array classes, a stand-in GPU (no device "
          "work)")
    print(f"{'call':40s} {'host µs/op':>10s}")
    for name, ops, fn in cases():
        fn()   # (the first call makes the plans)
        number = max(args.number // ops // (50 if "MLP" in name or "entropy" in name else 1),
                     20)
        us = statistics.median(timeit.repeat(fn, number=number, repeat=args.repeat)) \
            / number * 1e6 / ops
        rows.append({"call": name, "ops_per_call": ops, "host_us": us})
        print(f"{name:40s} {us:10.2f}")
    print("Not in these figures: the driver's launch (a few µs per kernel on a GPU) and "
          "cuBLAS's own host work.")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "python": platform.python_version(),
                       "mode": "host only (real array classes, stand-in GPU)", "rows": rows},
                      fh, indent=2)


if __name__ == "__main__":
    sys.exit(main())
