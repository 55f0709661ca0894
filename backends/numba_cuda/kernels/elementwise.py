"""Elementwise ops as generated kernels: one per (op, dtypes, broadcast pattern), built from the
shared scalar expressions (``codegen.scalar_ops``) in a grid-stride loop.

Each input is read as ``same`` (the output's shape: the flat index), ``scalar`` (one element)
or ``strided`` (broadcast: the offset from the output's coordinates and the input's strides,
0 along broadcast dimensions). Integer checks (division by zero, negative integer powers) set
an error flag instead of raising, which the host reads after the launch.
"""
from __future__ import annotations

import cmath
import functools
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.codegen import scalar_ops
from stagecraft.backends.numba_cuda import layout
from stagecraft.backends.numba_cuda.kernels.index import offset_function
from stagecraft.backends.numba_cuda.launch import cuda_module, grid, jit_source, simulated
from stagecraft.backends.numba_cuda.launcher import launch
from stagecraft.backends.numba_cuda.memory import empty, scalar
from stagecraft.ir import dtypes as dt
from stagecraft.ir.dtypes import DType

# The exception each op's reference kernel raises for the condition scalar_ops.check names.
_ERRORS: dict[str, type] = {"floordiv": ZeroDivisionError, "floormod": ZeroDivisionError,
                            "pow": ValueError}
# Ops whose reference kernel returns its input itself: no kernel, no copy.
PASS_THROUGH = ("identity", "stop_gradient")

# Tests set this to True to run the GPU spelling (kernels.device_numpy) under the simulator.
FORCE_DEVICE_NUMPY = False


def source(op: str, in_dtypes: Sequence[DType], out_dtype: DType, modes: Sequence[str]) -> str:
    """The Python source of the kernel ``kernel(out, x0.., shape, strides0.., err)``.

    >>> print(source("add", [dt.float32, dt.float32], dt.float32, ["same", "scalar"]))
    def kernel(out, x0, x1, err):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            a0 = x0[i]
            a1 = x1[0]
            out[i] = np.float32((a0 + a1))
    """
    in_d = in_dtypes[-1] if in_dtypes else out_dtype
    names = [f"x{k}" for k in range(len(in_dtypes))]
    strided = [k for k, m in enumerate(modes) if m == "strided"]
    params = ["out", *names] + (["shape"] + [f"s{k}" for k in strided] if strided else [])
    lines = [f"def kernel({', '.join(params + ['err'])}):",
             "    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):"]
    args = []
    for k, mode in enumerate(modes):
        index = {"same": "i", "scalar": "0"}.get(mode, f"offset(i, shape, s{k})")
        lines.append(f"        a{k} = x{k}[{index}]")
        args.append(f"a{k}")
    checked = scalar_ops.check(op, args, in_d)
    if checked is not None:
        lines += [f"        if {checked[0]}:", "            err[0] = 1", "            continue"]
    expr = scalar_ops.SCALAR[op](args, in_d)
    lines.append(f"        out[i] = {scalar_ops.convert(expr, in_d, out_dtype)}")
    return "\n".join(lines)


@functools.lru_cache(maxsize=None)
def _kernel(op: str, in_dtypes: tuple, out_dtype: DType, modes: tuple, device_np: bool) -> Callable:
    if device_np:
        from stagecraft.backends.numba_cuda.kernels.device_numpy import module
        np_module = module()
    else:
        np_module = np
    name = f"{op}_{'_'.join(d.short for d in in_dtypes)}_{'_'.join(m[:2] for m in modes)}"
    text = source(op, in_dtypes, out_dtype, modes).replace("def kernel", f"def {name}", 1)
    from stagecraft.backends.numba_cuda.kernels.device_special import module as special
    return jit_source(name, text, {"np": np_module, "cmath": cmath, "cuda": cuda_module(),
                                   "offset": offset_function(), "K": special()})


def _mode(shape: tuple, out: tuple) -> str:
    if shape == out:
        return "same"
    return "scalar" if int(np.prod(shape)) == 1 else "strided"


def run(op: str, inputs: Sequence[Any], out_dtype: DType, out_shape: tuple) -> Any:
    """Applies elementwise ``op`` to device arrays (NumPy broadcasting) into a new device
    array of ``out_dtype`` and ``out_shape`` (both from the op table's inference).

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_device(np.array([[1.0], [2.0]], np.float32))
    >>> to_host(run("greater", [x, to_device(np.float32([0.5, 1.5, 2.5]))], dt.bool_, (2, 3)))
    array([[ True, False, False],
           [ True,  True, False]])
    """
    if op in PASS_THROUGH:
        return inputs[0]
    out = empty(out_shape, out_dtype.np)
    if out.size == 0:
        return out
    kernel, extra, checked = _plan(op, tuple((tuple(x.shape), x.dtype) for x in inputs),
                                   out_dtype, tuple(out_shape), FORCE_DEVICE_NUMPY)
    # Only kernels with a check get a fresh flag, and only they cost a read-back.
    err = cuda_module().to_device(np.zeros(1, np.int8)) if checked else _no_error()
    launch(kernel, grid(out.size), out, *inputs, *extra, err)
    if checked and scalar(err):
        raise _ERRORS[op](checked[1])
    return out


@functools.lru_cache(maxsize=4096)
def _plan(op: str, inputs: tuple, out_dtype: DType, out_shape: tuple,
          force_device_np: bool) -> tuple[Callable, tuple, tuple | None]:
    """What a call of :func:`run` needs beyond its arrays, computed once per signature: the
    kernel, the broadcast shape and strides it takes, and the op's integer check."""
    shapes = [s for s, _ in inputs]
    modes = tuple(_mode(s, out_shape) for s in shapes)
    in_dtypes = tuple(dt.from_numpy(d) for _, d in inputs)
    kernel = _kernel(op, in_dtypes, out_dtype, modes, force_device_np or not simulated())
    extra: list = []
    if "strided" in modes:
        rank = max(len(out_shape), 1)
        extra.append(out_shape or (1,))
        extra += [layout.broadcast_strides(s, out_shape) or (0,) * rank
                  for s, m in zip(shapes, modes) if m == "strided"]
    return kernel, tuple(extra), scalar_ops.check(op, ["a0", "a1"], in_dtypes[-1])


@functools.lru_cache(maxsize=None)
def _no_error() -> Any:
    # A shared flag for kernels that never set it (a kernel argument must exist either way).
    return cuda_module().to_device(np.zeros(1, np.int8))
