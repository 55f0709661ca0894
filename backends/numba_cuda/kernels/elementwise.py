"""Elementwise ops as generated kernels: one per (op, dtypes, broadcast pattern), built from the
shared scalar expressions (``codegen.scalar_ops``) in a grid-stride loop.

Each input is read as ``same`` (the output's shape: the flat index), ``scalar`` (one element)
or ``strided`` (broadcast: the offset from the output's coordinates and the input's strides,
0 along broadcast dimensions), or is a ``value``: a host NumPy scalar passed as a kernel
argument (``x * 2.0``: no upload). Integer checks (division by zero, negative integer powers)
set an error flag instead of raising, which the host reads after the launch.

A :class:`Call` is one op for one signature (input shapes, dtypes and modes) made ready once:
kernel, broadcast strides, grid and output layout; calling it only allocates the output and
launches (the eager library keeps one per signature, ``numba_cuda.eager``).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.codegen import scalar_ops
from stagecraft.backends.numba_cuda import config, layout
from stagecraft.backends.numba_cuda.kernel_module import jit_kernel
from stagecraft.backends.numba_cuda.kernels.index import grid_stride_loop
from stagecraft.backends.numba_cuda.launch import grid, simulated
from stagecraft.backends.numba_cuda.launcher import Bound
from stagecraft.backends.numba_cuda.memory import allocator, scalar, to_device
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
    """The Python source of the kernel ``kernel(out, x0.., shape, strides0.., err)`` (``err``,
    the error flag, only for ops with a check: a parameter less for the others to pass).

    The loop is ``index.grid_stride_loop``'s; its body, for an add of an array and a
    one-element array, and for a product with a host scalar:

    >>> print("\\n".join(source("add", [dt.float32, dt.float32], dt.float32,
    ...                         ["same", "scalar"]).splitlines()[7:]))
            a0 = x0[u]
            a1 = x1[0]
            out[u] = np.float32((a0 + a1))
    >>> print(source("multiply", [dt.int32, dt.int32], dt.int32, ["same", "value"]).splitlines()[8])
            a1 = x1
    """
    in_d = in_dtypes[-1] if in_dtypes else out_dtype
    names = [f"x{k}" for k in range(len(in_dtypes))]
    strided = [k for k, m in enumerate(modes) if m == "strided"]
    params = ["out", *names] + (["shape"] + [f"s{k}" for k in strided] if strided else [])
    args = [f"a{k}" for k in range(len(modes))]
    checked = scalar_ops.check(op, args, in_d)
    lines = [f"def kernel({', '.join(params + (['err'] if checked is not None else []))}):",
             *grid_stride_loop("out.size")]
    for k, mode in enumerate(modes):
        index = {"same": "[u]", "scalar": "[0]", "value": ""}.get(mode,
                                                                   f"[offset(i, shape, s{k})]")
        lines.append(f"        a{k} = x{k}{index}")
    if checked is not None:
        lines += [f"        if {checked[0]}:", "            err[0] = 1", "            continue"]
    expr = scalar_ops.SCALAR[op](args, in_d)
    lines.append(f"        out[u] = {scalar_ops.convert(expr, in_d, out_dtype)}")
    return "\n".join(lines)


@functools.lru_cache(maxsize=None)
def _kernel(op: str, in_dtypes: tuple, out_dtype: DType, modes: tuple, device_np: bool) -> Callable:
    name = f"{op}_{'_'.join(d.short for d in in_dtypes)}_{'_'.join(m[:2] for m in modes)}"
    text = source(op, in_dtypes, out_dtype, modes).replace("def kernel", f"def {name}", 1)
    return jit_kernel(name, text, device_numpy=device_np)


def _mode(shape: tuple | None, out: tuple) -> str:
    if shape is None:
        return "value"
    if shape == out:
        return "same"
    return "scalar" if int(np.prod(shape)) == 1 else "strided"


def signature(x: Any, by_value: bool = False) -> tuple:
    """What a :class:`Call` is specialized on for input ``x``: ``(shape, dtype)``, with shape
    None for a host scalar passed by value (``by_value``: a NumPy scalar, see :func:`by_value`).

    >>> from stagecraft.backends.numba_cuda.memory import to_device
    >>> signature(to_device(np.zeros((2, 3), np.float32))), signature(np.int32(2), True)
    (((2, 3), dtype('float32')), (None, dtype('int32')))
    """
    return (None if by_value else tuple(x.shape), x.dtype)


def by_value(x: Any) -> bool:
    """Whether host value ``x`` can be a kernel argument of an elementwise kernel: a NumPy
    integer or float32/float64 scalar (half and complex scalars go to the device as arrays:
    their kernels widen arrays, and Numba passes no complex arguments here).

    >>> by_value(np.float32(2)), by_value(np.float16(2)), by_value(np.complex64(1)), by_value(2.0)
    (True, False, False, False)
    """
    return isinstance(x, np.generic) and (x.dtype.kind in "iu" or
                                          x.dtype.kind == "f" and x.dtype.itemsize in (4, 8))


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
    return prepared(op, tuple(signature(x) for x in inputs), out_dtype, tuple(out_shape))(inputs)


@functools.lru_cache(maxsize=4096)
def prepared(op: str, inputs: tuple, out_dtype: DType, out_shape: tuple) -> "Call":
    """The :class:`Call` of ``op`` for input signatures ``inputs`` (:func:`signature`) and the
    output's dtype and shape, made once per signature."""
    return Call(op, inputs, out_dtype, out_shape)


class Call:
    """Elementwise ``op`` made ready for one signature: ``call(inputs)`` allocates the output
    and launches on inputs of that signature (device arrays; host scalars where the signature
    says value), raising the reference kernel's error when the op's check fails. What depends
    on the launch parameters (grid, and the kernel's NumPy spelling: ``FORCE_DEVICE_NUMPY``)
    is made again when they change.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x = to_device(np.array([1, 2, 3], np.int32))
    >>> times = Call("multiply", (signature(x), signature(np.int32(2), True)), dt.int32, (3,))
    >>> to_host(times([x, np.int32(2)])), to_host(times([x, np.int32(-1)]))
    (array([2, 4, 6], dtype=int32), array([-1, -2, -3], dtype=int32))
    """

    __slots__ = ("op", "inputs", "dtype", "shape", "size", "setting", "launch", "extra", "checked",
                 "allocate")

    def __init__(self, op: str, inputs: tuple, out_dtype: DType, out_shape: tuple):
        self.op, self.inputs, self.shape = op, inputs, out_shape
        self.dtype = out_dtype.np
        self.size = int(np.prod(out_shape, dtype=np.int64))
        self.setting: tuple = ()   # (stays so for an empty output: nothing to launch)
        self.allocate = allocator(out_shape, self.dtype)

    def _ready(self) -> None:
        """Kernel, arguments and grid for the current launch parameters."""
        setting = _setting()
        force_device_np = setting[2]
        shapes = [s for s, _ in self.inputs]
        modes = tuple(_mode(s, self.shape) for s in shapes)
        in_dtypes = tuple(dt.from_numpy(d) for _, d in self.inputs)
        out_dtype = dt.from_numpy(self.dtype)
        kernel = _kernel(self.op, in_dtypes, out_dtype, modes, force_device_np or not simulated())
        extra: list = []
        if "strided" in modes:
            rank = max(len(self.shape), 1)
            extra.append(self.shape or (1,))
            extra += [layout.broadcast_strides(s, self.shape) or (0,) * rank
                      for s, m in zip(shapes, modes) if m == "strided"]
        self.extra = tuple(extra)
        self.checked = scalar_ops.check(self.op, ["a0", "a1"], in_dtypes[-1])
        self.launch = Bound(kernel, grid(self.size))
        self.setting = setting

    def __call__(self, inputs: Sequence[Any]) -> Any:
        out = self.allocate()
        if self.setting != (config.THREADS_PER_BLOCK, config.MAX_BLOCKS, FORCE_DEVICE_NUMPY):
            if not self.size:
                return out
            self._ready()
        if self.checked is None:   # (a kernel without a check has no error flag)
            self.launch(out, *inputs, *self.extra)
            return out
        # A fresh flag, and a read-back (an upload a recorded call records: a replay must
        # clear the flag again).
        err = to_device(np.zeros(1, np.int8))
        self.launch(out, *inputs, *self.extra, err)
        if scalar(err):
            raise _ERRORS[self.op](self.checked[1])
        return out


def _setting() -> tuple:
    return config.THREADS_PER_BLOCK, config.MAX_BLOCKS, FORCE_DEVICE_NUMPY

