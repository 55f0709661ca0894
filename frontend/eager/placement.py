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
from stagecraft.eager.remote import RemoteTensor, is_remote, is_remote_spec, runtime
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.eager.locations import leaked, user_location
from stagecraft.eager.tensor import LATE_BOUND, Tensor, wrap

logger = logging.getLogger("stagecraft")
_IDENTITY = OPS["identity"]

_cuda_eager: Any = None  # stagecraft.backends.numba_cuda.eager, imported on first GPU op


def kernels() -> Any:
    """The GPU op library (``stagecraft.backends.numba_cuda.eager``), imported on first use.

    >>> kernels().run("add", [a, b], {})  # doctest: +SKIP
    """
    global _cuda_eager
    if _cuda_eager is None:
        # lazy import: numba-cuda is optional and slow to import; CPU-only programs never need it
        from stagecraft.backends.numba_cuda import eager
        _cuda_eager = eager
    return _cuda_eager


# ------------------------------------------------------------------ resolving names

def _unsatisfiable(spec: DeviceSpec, why: str, what: str) -> InvalidArgumentError:
    available = ", ".join(_device.list_devices())
    hint = ("Turn soft placement on (tf.config.set_soft_device_placement(True)) to run such "
            "ops on the CPU, or place them on an available device (e.g. "
            "`with tf.device('/cpu:0'):`)." if why == "device" else
            "This program is not connected to a cluster: connect first "
            "(tf.distribute.connect(num_workers=N) starts local workers; "
            "tf.config.experimental_connect_to_cluster(cluster_spec) joins one), or remove the "
            "job/replica/task part of the device name to run in this process "
            "(/job:localhost/replica:0/task:0).")
    gpu_hint = (" Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 before importing stagecraft) "
                "provides a GPU:0 for testing." if spec.device_type == "GPU" else "")
    return InvalidArgumentError(
        f"Could not satisfy device specification '{full_name(spec)}' for {what}: no such "
        f"device on this machine (available: [{available}]). {hint}{gpu_hint}\n"
        f"  at {user_location()}")


def resolve(spec: DeviceSpec, what: str = "an op") -> str:
    """The device (CPU_DEVICE, GPU_DEVICE or a remote device's full name) that ops under
    ``spec`` run on; a local device this machine lacks means the CPU with soft placement on,
    else InvalidArgumentError. Remote names need a connected cluster (``stagecraft.distribute``).
    """
    if is_remote_spec(spec):
        connected = runtime()
        if connected is None:
            raise _unsatisfiable(spec, "remote", what)
        return connected.resolve(spec, what)
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
    if type(x) is RemoteTensor:
        return x._value.device
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
        target = inputs_device(flat)
    return None if target == CPU_DEVICE else target


def inputs_device(inputs: Sequence[Any]) -> str:
    """Where an op or call without a device scope runs: on the device of its first remote
    input (tensor or variable), else on the GPU when an input is a GPU tensor, else on the CPU.
    """
    gpu = False
    for x in inputs:
        kind = type(x)
        if kind is RemoteTensor:
            return x._value.device
        if is_remote(getattr(x, "_device", None)):
            return x._device
        gpu = gpu or kind is DeviceTensor
    return GPU_DEVICE if gpu else CPU_DEVICE


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
    if target == GPU_DEVICE and not is_remote(source) and not _device.has_gpu():
        raise InvalidArgumentError(
            "Cannot copy a tensor to GPU:0: this machine has no CUDA GPU (stagecraft found "
            f"{', '.join(_device.list_devices())}). Keep the tensor on the CPU, or set "
            "NUMBA_ENABLE_CUDASIM=1 before importing stagecraft to use Numba's CUDA "
            "simulator.")
    if x._value is None:
        # Inside a trace: a graph function runs on one device for now (see host_call), so the
        # copy is the identity equation ``tf.identity`` would add.
        graph = STATE.get().graph
        if graph is None:
            raise leaked(_IDENTITY, (x,))
        return graph.bind(_IDENTITY, (x,), {})
    if is_remote(target) or is_remote(source):
        runtime_ = _connected(source if is_remote(source) else target)
        out: Tensor = runtime_.transfer(x, target if is_remote(target) else CPU_DEVICE)
        if target == GPU_DEVICE:  # remote -> GPU goes through this process's memory
            out = wrap_device(to_device_array(out._value))
    elif target == GPU_DEVICE:
        out = wrap_device(to_device_array(x._value))
    else:
        out = wrap(to_host_array(x._value))
    tapes = STATE.get().tapes
    for tape in tapes:
        tape.record(None, {}, (x,), (out,), functools.partial(_copy_back, source))
    return out


LATE_BOUND["copy"] = copy  # Tensor.gpu() / cpu()


def _connected(device: str) -> Any:
    """The connected runtime, for a tensor or variable that lives on remote ``device``."""
    connected = runtime()
    if connected is None:
        raise InvalidArgumentError(
            f"The remote device {device} is no longer connected (tf.distribute.disconnect() "
            f"was called, or the program reconnected): its tensors and variables are gone. "
            f"Fetch values with .numpy() before disconnecting.\n  at {user_location()}")
    return connected


def _copy_back(source: str, gouts: list) -> tuple:
    g = gouts[0]
    return (None if g is None else copy(g, source),)


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
