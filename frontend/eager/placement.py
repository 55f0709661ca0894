"""Placement of eager ops: choosing the device an op runs on, copying inputs that live
elsewhere (recorded on tapes, so gradients flow through copies), running GPU kernels, and the
host round trip of graph functions that run on the CPU with GPU values (a CPU trace given GPU
tensors or GPU variables, a SavedModel function, ``backend="reference"`` under a GPU scope);
GPU traces otherwise run staged GPU code (``backends.numba_cuda.staged``).

``bind`` comes here only when a ``device`` scope asks for a device other than the CPU, or when
an input is a GPU tensor; plain CPU code never does.
"""
from __future__ import annotations

import functools
import logging
from typing import Any, Sequence

import numpy as np

from stagecraft.devices import device as _device
from stagecraft.eager.context import STATE
from stagecraft.devices.device import CPU_DEVICE, GPU_DEVICE, full_name
from stagecraft.devices.device_spec import DeviceSpec
from stagecraft.eager.device_tensor import DeviceTensor, memory, wrap_device
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.ops.opdef import OpDef
from stagecraft.eager.tensor import Tensor, wrap

logger = logging.getLogger("stagecraft")

_cuda_eager: Any = None  # stagecraft.backends.numba_cuda.eager, imported on first GPU op


def _kernels() -> Any:
    global _cuda_eager
    if _cuda_eager is None:
        from stagecraft.backends.numba_cuda import eager
        _cuda_eager = eager
    return _cuda_eager


# ------------------------------------------------------------------ resolving names

def _unsatisfiable(spec: DeviceSpec, why: str, what: str) -> InvalidArgumentError:
    from stagecraft.eager.bind import user_location
    available = ", ".join(_device.list_devices())
    hint = ("Turn soft placement on (tf.config.set_soft_device_placement(True)) to run such "
            "ops on the CPU, or place them on an available device (e.g. "
            "`with tf.device('/cpu:0'):`)." if why == "device" else
            "Remove the job/replica/task part of the device name: stagecraft runs ops in this "
            "process only (/job:localhost/replica:0/task:0).")
    gpu_hint = (" Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 before importing stagecraft) "
                "provides a GPU:0 for testing." if spec.device_type == "GPU" else "")
    return InvalidArgumentError(
        f"Could not satisfy device specification '{full_name(spec)}' for {what}: no such "
        f"device on this machine (available: [{available}]). {hint}{gpu_hint}\n"
        f"  at {user_location()}")


def resolve(spec: DeviceSpec, what: str = "an op") -> str:
    """The device (CPU_DEVICE or GPU_DEVICE) that ops under ``spec`` run on; a device this
    machine lacks means the CPU with soft placement on, else InvalidArgumentError."""
    if spec.job not in (None, "localhost") or spec.replica not in (None, 0) or \
            spec.task not in (None, 0):
        raise _unsatisfiable(spec, "remote", what)
    kind, index = spec.device_type, spec.device_index
    if kind is None or kind == "CPU" and index in (None, 0):
        return CPU_DEVICE
    if kind == "GPU" and index in (None, 0) and _device.has_gpu():
        return GPU_DEVICE
    if _device.get_soft_device_placement():
        return CPU_DEVICE
    raise _unsatisfiable(spec, "device", what)


def device_of(x: Any) -> str:
    """Where an eager tensor (or variable) lives."""
    if type(x) is DeviceTensor:
        return GPU_DEVICE
    if getattr(x, "_device", None) is not None:  # a variable
        return x._device
    return CPU_DEVICE


def call_device(flat: Sequence[Any]) -> str | None:
    """The device a ``tf.function`` call runs on: the device scope's when it names one, else
    GPU when an argument is a GPU tensor; None for the CPU (the trace-cache key is then the
    same as without devices)."""
    state = STATE.get()
    if state.graph is not None:
        return None
    if state.place is not None:
        target = resolve(state.place, "a tf.function call")
    elif state.device is not None and state.device.device_type == "CPU":
        return None
    else:
        target = GPU_DEVICE if any(type(x) is DeviceTensor for x in flat) else CPU_DEVICE
    return None if target == CPU_DEVICE else target


# ------------------------------------------------------------------------- copies

def to_device_array(value: Any) -> Any:
    """A device array holding ``value`` (a NumPy value, or already a device array)."""
    return memory().to_device(value)  # device arrays are returned as they are


def to_host_array(value: Any) -> np.ndarray:
    """A NumPy array holding ``value`` (a device array or a NumPy value)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    return memory().to_host(value)


def copy(x: Tensor, target: str) -> Tensor:
    """``x`` on device ``target`` (``x`` itself when it is already there). The copy is recorded
    by the active tapes; its gradient is the output gradient copied back."""
    source = device_of(x)
    if source == target:
        return x
    if target == GPU_DEVICE and not _device.has_gpu():
        raise InvalidArgumentError(
            "Cannot copy a tensor to GPU:0: this machine has no CUDA GPU (stagecraft found "
            f"{', '.join(_device.list_devices())}). Keep the tensor on the CPU, or set "
            "NUMBA_ENABLE_CUDASIM=1 before importing stagecraft to use Numba's CUDA "
            "simulator.")
    if x._value is None:
        # Inside a trace: a graph function runs on one device for now (see host_call).
        from stagecraft.ops.array_ops import identity
        return identity(x)
    if target == GPU_DEVICE:
        out: Tensor = wrap_device(to_device_array(x._value))
    else:
        out = wrap(to_host_array(x._value))
    tapes = STATE.get().tapes
    for tape in tapes:
        tape.record(None, {}, (x,), (out,), functools.partial(_copy_back, source))
    return out


def _copy_back(source: str, gouts: list) -> tuple:
    g = gouts[0]
    return (None if g is None else copy(g, source),)


def _policy_check(x: Tensor, target: str, op: OpDef, i: int) -> None:
    policy = _device.get_device_policy()
    if policy == "silent" or policy == "silent_for_int32" and x.dtype == _dt.int32:
        return
    text = (f"{op.name}: input #{i} was expected to be on {target} but is actually on "
            f"{device_of(x)} (operation running on {target}).")
    if policy == "warn":
        logger.warning("%s It is copied; copy it yourself to silence this warning.", text)
        return
    from stagecraft.eager.bind import user_location
    raise InvalidArgumentError(
        f"Tensors on conflicting devices: {text} The device policy is '{policy}'. Copy it "
        f"explicitly (`with tf.device(name): x = tf.identity(x)`, or x.gpu() / x.cpu()), or "
        f"call tf.config.experimental.set_device_policy('silent').\n  at {user_location()}")


# ---------------------------------------------------------------------- execution

def execute(op: OpDef, inputs: tuple, attrs: dict) -> Any:
    """Runs ``op`` eagerly on its device: the ``device`` scope's if it names one, else the
    device of its (GPU) inputs. Inputs elsewhere are copied there first."""
    from stagecraft.eager.bind import bind, leaked, normalize
    state = STATE.get()
    given = [isinstance(x, Tensor) or hasattr(x, "read_value") for x in inputs]
    inputs = normalize(op, inputs)
    if any(x._value is None for x in inputs):
        raise leaked(op, inputs)
    if state.place is not None or state.device is not None and \
            state.device.device_type is not None:
        target = resolve(state.device, f"op '{op.name}'")
    else:
        target = GPU_DEVICE if any(type(x) is DeviceTensor for x in inputs) else CPU_DEVICE
    moved = []
    for i, x in enumerate(inputs):
        if device_of(x) != target:
            if given[i]:
                _policy_check(x, target, op, i)
            x = copy(x, target)
        moved.append(x)
    if target == GPU_DEVICE:
        return _run_gpu(op, moved, attrs, state)
    if state.place is None:
        return bind(op, *moved, **attrs)
    token = STATE.set(state.replace(place=None))  # CPU inputs only: bind's own eager path
    try:
        return bind(op, *moved, **attrs)
    finally:
        STATE.reset(token)


def _run_gpu(op: OpDef, inputs: list, attrs: dict, state: Any) -> Any:
    from stagecraft.eager.bind import diagnose
    values = [x._value for x in inputs]
    unify = range(len(values)) if op.unify == "all" else op.unify_indices
    dtypes = {values[i].dtype for i in unify if i < len(values)}
    if len(dtypes) > 1 or any(d not in op.np_dtypes for d in dtypes):
        raise diagnose(op, [to_host_array(v) for v in values], attrs, None)
    try:
        out = _kernels().run(op.name, values, attrs)
    except NotImplementedError as e:
        return _no_gpu_kernel(op, inputs, attrs, state, e)
    except (ValueError, IndexError, TypeError, ZeroDivisionError) as e:
        # The kernels run the op's inference (InvalidArgumentError is a ValueError):
        # diagnose gives the same message as on the CPU and in staged code, with file:line.
        raise diagnose(op, [to_host_array(v) for v in values], attrs, e) from None
    if op.num_outputs == 1:
        results: tuple = (wrap_device(out),)
    else:
        results = tuple(wrap_device(o) for o in out)
    for tape in state.tapes:
        tape.record(op, attrs, inputs, results)
    return results[0] if op.num_outputs == 1 else results


def _no_gpu_kernel(op: OpDef, inputs: list, attrs: dict, state: Any, error: Exception) -> Any:
    """An op without a GPU kernel: soft placement runs it on the CPU (TensorFlow's rule)."""
    if not _device.get_soft_device_placement():
        from stagecraft.eager.bind import user_location
        raise InvalidArgumentError(
            f"Could not satisfy device specification '{GPU_DEVICE}' for op '{op.name}': it has "
            f"no GPU kernel ({error}). Turn soft placement on "
            f"(tf.config.set_soft_device_placement(True)) to run it on the CPU, or run it "
            f"under `with tf.device('/cpu:0'):`.\n  at {user_location()}") from None
    from stagecraft.eager.bind import bind
    host = [copy(x, CPU_DEVICE) for x in inputs]
    token = STATE.set(state.replace(place=None, device=None))
    try:
        return bind(op, *host, **attrs)
    finally:
        STATE.reset(token)


# ------------------------------------------------------- graph functions on the GPU

def host_call(executable: Any, values: list, device: str | None) -> list[Tensor]:
    """Runs a CPU executable on arguments that may be device arrays or GPU variables (copied
    to the host for the call, GPU variables written back), returning its results on
    ``device`` (None: the CPU). Used for graph functions that run on the CPU with GPU values
    (see the module docstring); GPU traces run the staged GPU executable instead."""
    variables = [v for v in values if getattr(v, "_device", None) is not None]
    saved = [v._value for v in variables]
    host = [v if v is None or hasattr(v, "_device") or isinstance(v, (np.ndarray, np.generic))
            else to_host_array(v) for v in values]
    staged = []
    try:
        for v in variables:
            v._value = to_host_array(v._value)
            staged.append(v._value)
        outs = executable(host)
    except BaseException:
        for v, old in zip(variables, saved):
            v._value = old
        raise
    for v, old, before in zip(variables, saved, staged):
        # Unchanged by the call: keep the device buffer; assigned: upload the new value.
        v._value = old if v._value is before else to_device_array(np.asarray(v._value))
    if device is None:
        return [wrap(o) for o in outs]
    return [wrap_device(to_device_array(np.asarray(o))) for o in outs]
