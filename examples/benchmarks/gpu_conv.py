"""gpu_backend.py's "conv" section: ResNet-50's convolutions on the GPU, stagecraft's
(im2col + cuBLAS GEMMs, ``backends/numba_cuda``) against PyTorch's, which run NVIDIA's cuDNN
(channels_last, ``cudnn.benchmark`` on: the algorithm each shape runs fastest with, as
TensorFlow's autotuning picks one). No target: the figures say where cuDNN beats im2col +
cuBLAS and by how much (issue 19: cuDNN "where it beats im2col+cuBLAS").

Each shape runs the forward convolution eagerly, and the forward pass with both gradients (of
the input and of the filter, for a given output gradient) staged (``tf.function``, replayed as
a CUDA graph), against the same two in PyTorch (``F.conv2d``, ``autograd.grad``); float32 with
TF32 off, NHWC, padding k // 2 on each side (ResNet's, the same in both libraries; TensorFlow's
"SAME" pads strided shapes unevenly, which PyTorch's conv2d cannot). Results are checked
against stagecraft's CPU kernels in float64 before timing, which times loops of calls with one
synchronize, as the small ops are.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cpu_backend import _fmt  # sibling script modules
from gpu_baselines import Baselines, check_close, in_gpu_scope, synchronize
from timing import loop_us
import stagecraft as tf

# name: (height = width, in channels, kernel, out channels, stride), as conv.py's
SHAPES = {
    "stem 7x7/2 224x224x3->64": (224, 3, 7, 64, 2),
    "3x3 56x56x64->64": (56, 64, 3, 64, 1),
    "1x1 56x56x64->256": (56, 64, 1, 256, 1),
    "3x3/2 56x56x128->128": (56, 128, 3, 128, 2),
}
QUICK_SHAPES = {"3x3 6x6x2->3": (6, 2, 3, 3, 1), "1x1/2 6x6x2->4": (6, 2, 1, 4, 2)}
# Relative-norm limit against float64 (exact float32 sums of up to 1,152 terms land near 1e-6;
# TF32 near 1e-3, so this also tells that TF32 is off).
CONV_LIMIT = 1e-4


@dataclass(frozen=True)
class ConvSizes:
    shapes: dict
    batch: int = 32
    loop: int = 10
    repeat: int = 5


CONV_FULL = ConvSizes(SHAPES)
CONV_QUICK = ConvSizes(QUICK_SHAPES, batch=2, loop=1, repeat=1)


def _padding(k: int) -> list:
    return [[0, 0], [k // 2, k // 2], [k // 2, k // 2], [0, 0]]


def conv_tf(x: Any, w: Any, s: int) -> Any:
    return tf.nn.conv2d(x, w, s, _padding(int(w.shape[0])))


def conv_step_tf(x: Any, w: Any, dy: Any, s: int) -> tuple:
    """The convolution and the gradients of its input and filter for output gradient ``dy``."""
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = conv_tf(x, w, s)
    dx, dw = tape.gradient(y, [x, w], output_gradients=dy)
    return y, dx, dw


def _torch_calls(torch: Any, x: np.ndarray, w: np.ndarray, dy: np.ndarray, s: int) -> dict:
    """PyTorch's forward and forward + backward, each with its output converted back to
    NHWC / HWIO for the check (outside the timed calls)."""
    f = torch.nn.functional
    last = torch.channels_last

    def nchw(a: np.ndarray) -> Any:   # NHWC memory seen as NCHW: channels_last
        return torch.from_numpy(a).cuda().permute(0, 3, 1, 2)
    lx, ldy = nchw(x).requires_grad_(), nchw(dy)
    lw = torch.from_numpy(w.transpose(3, 2, 0, 1).copy()).cuda().contiguous(
        memory_format=last).requires_grad_()
    p = w.shape[0] // 2

    def forward() -> Any:   # (inference, as stagecraft's eager forward outside a tape)
        with torch.no_grad():
            return f.conv2d(lx, lw, stride=s, padding=p)

    def step() -> tuple:
        y = f.conv2d(lx, lw, stride=s, padding=p)
        return (y, *torch.autograd.grad(y, (lx, lw), grad_outputs=ldy))

    def hwc(t: Any) -> Any:
        return t.permute(0, 2, 3, 1)
    return {"forward": (forward, lambda y: hwc(y)),
            "fwd+bwd": (step, lambda out: (hwc(out[0]), hwc(out[1]),
                                           out[2].permute(2, 3, 1, 0)))}


def measure_shape(name: str, shape: tuple, sizes: ConvSizes, baselines: Baselines) -> dict:
    size, c, k, o, s = shape
    rng = np.random.default_rng(3)
    x = rng.standard_normal((sizes.batch, size, size, c)).astype(np.float32)
    w = (rng.standard_normal((k, k, c, o)) / np.sqrt(k * k * c)).astype(np.float32)
    out = (size + 2 * (k // 2) - k) // s + 1
    dy = rng.standard_normal((sizes.batch, out, out, o)).astype(np.float32)
    with tf.device("/cpu:0"):   # the reference: the CPU kernels, in float64
        expected = [t.numpy() for t in conv_step_tf(
            *(tf.constant(a.astype(np.float64)) for a in (x, w, dy)), s)]
    with tf.device("/gpu:0"):
        tx, tw, tdy = tf.constant(x), tf.constant(w), tf.constant(dy)
    staged = tf.function(lambda a, b, g: conv_step_tf(a, b, g, s))
    calls = {"forward": {"stagecraft_eager": (in_gpu_scope(lambda: conv_tf(tx, tw, s)),
                                              synchronize, lambda y: y)},
             "fwd+bwd": {"stagecraft_staged": (in_gpu_scope(lambda: staged(tx, tw, tdy)),
                                               synchronize, lambda out: out)}}
    if baselines.torch is not None:
        for part, (call, host) in _torch_calls(baselines.torch, x, w, dy, s).items():
            calls[part]["torch"] = (call, baselines.sync("torch"), host)
    row: dict[str, Any] = {"shape": name, "batch": sizes.batch}
    for part, variants in calls.items():
        want = expected[:1] if part == "forward" else expected
        for variant, (call, sync, host) in variants.items():
            for when in ("first", "after timing"):
                got = host(call())
                got = [got] if part == "forward" else list(got)
                for what, g, e in zip(("output", "input gradient", "filter gradient"), got,
                                      want):
                    check_close(f"conv {name}", f"{variant} {part}", f"{what} ({when})", g, e,
                                CONV_LIMIT)
                if when == "first":
                    timing = loop_us(call, sync, sizes.loop, sizes.repeat)
            row[f"{part} {variant}"] = timing["per_call_us"] / 1e3
    for part, variant in (("forward", "stagecraft_eager"), ("fwd+bwd", "stagecraft_staged")):
        torch_ms = row.get(f"{part} torch")
        row[f"{part} /torch"] = None if torch_ms is None else row[f"{part} {variant}"] / torch_ms
    return row


def measure_conv(sizes: ConvSizes, baselines: Baselines) -> dict:
    """Every shape of ``sizes`` (PyTorch's cuDNN in benchmark mode where PyTorch runs)."""
    if baselines.torch is not None:
        baselines.torch.backends.cudnn.benchmark = True
    return {"rows": [measure_shape(name, shape, sizes, baselines)
                     for name, shape in sizes.shapes.items()]}


def print_conv(result: dict, missing: dict[str, str]) -> None:
    rows = result["rows"]
    print(f"convolutions, batch {rows[0]['batch'] if rows else '-'}, NHWC float32, TF32 off, "
          f"ms per call (loop of calls, one synchronize); PyTorch: cuDNN, channels_last"
          + (f"; no torch ({missing['torch']})" if "torch" in missing else ""))
    columns = [("forward stagecraft_eager", "fwd_eager"), ("forward torch", "fwd_torch"),
               ("forward /torch", "/torch"), ("fwd+bwd stagecraft_staged", "f+b_staged"),
               ("fwd+bwd torch", "f+b_torch"), ("fwd+bwd /torch", "/torch")]
    print(f"  {'shape':28s}" + "".join(f"{label:>12s}" for _, label in columns))
    for r in rows:
        cells = ["n/a" if r.get(key) is None else _fmt(r[key]) for key, _ in columns]
        print(f"  {r['shape']:28s}" + "".join(f"{c:>12s}" for c in cells))
