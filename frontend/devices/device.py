"""Devices: which ones this process has (detected lazily), the ``device(name)`` scope, listing,
and the soft-placement and device-policy switches that ``stagecraft.eager.placement`` applies."""
from __future__ import annotations

import collections
from typing import Any

from stagecraft.eager.context import STATE
from stagecraft.devices.device_spec import DeviceSpec

CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU_DEVICE = "/job:localhost/replica:0/task:0/device:GPU:0"
_LOCAL = DeviceSpec(job="localhost", replica=0, task=0)

LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])
PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])

# What the Numba-CUDA backend reports ("gpu", "simulator" or "none"); None until first asked,
# so that `import stagecraft` never imports numba.cuda.
_detected: str | None = None
# The full names of the devices of the connected cluster's workers (stagecraft.distribute fills
# it on connect and empties it on disconnect): listed after this process's devices.
REMOTE_DEVICES: list[str] = []
_soft_placement = [True]
_device_policy = ["silent"]
POLICIES = ("silent", "silent_for_int32", "warn", "explicit")


def gpu_kind() -> str:
    """"gpu" (a CUDA GPU), "simulator" (Numba's CUDA simulator, NUMBA_ENABLE_CUDASIM=1) or
    "none"; detected on the first call.

    >>> gpu_kind() in ("gpu", "simulator", "none")
    True
    """
    global _detected
    if _detected is None:
        try:
            # lazy import: the backends (numba, numba-cuda) load on first use, not with stagecraft
            from stagecraft.backends.numba_cuda.detect import detect
        except ModuleNotFoundError as e:
            # Only a missing backend (or numba) means "no GPU"; any other import error is a bug
            # and propagates.
            if e.name is None or not (e.name.startswith("stagecraft.backends.numba_cuda")
                                      or e.name.split(".")[0] == "numba"):
                raise
            _detected = "none"
        else:
            _detected = detect()
    return _detected


def has_gpu() -> bool:
    """Whether GPU:0 exists (a real GPU or Numba's CUDA simulator)."""
    return gpu_kind() != "none"


def _local_devices() -> list[tuple[str, str]]:
    # TODO(issue 7): one GPU, GPU:0; eager kernels and buffers use Numba's current device.
    out = [("CPU", "0")]
    if has_gpu():
        out.append(("GPU", "0"))
    return out


def list_devices() -> list[str]:
    """★ The full names of every device this process can run ops on: the CPU always, GPU:0
    when a CUDA GPU (or Numba's CUDA simulator) is present, then the devices of the cluster
    this program is connected to (``tf.distribute.connect``). The names are the ones
    ``Tensor.device`` reports and ``device()`` accepts.

    >>> import stagecraft as tf
    >>> tf.list_devices()[0]
    '/job:localhost/replica:0/task:0/device:CPU:0'
    """
    return [f"/job:localhost/replica:0/task:0/device:{t}:{i}" for t, i in _local_devices()] + \
        list(REMOTE_DEVICES)


def _check_type(device_type: str | None) -> str | None:
    if device_type is not None and not isinstance(device_type, str):
        raise TypeError(f"device_type must be a string such as 'CPU' or 'GPU', got "
                        f"{device_type!r}.")
    return device_type


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """The logical devices (``LogicalDevice(name='/device:CPU:0', device_type='CPU')``), all of
    them or those of one type; a connected cluster's devices follow with their full names
    (``'/job:worker/replica:0/task:1/device:CPU:0'``), as in TensorFlow.

    >>> import stagecraft as tf
    >>> tf.config.list_logical_devices("CPU")
    [LogicalDevice(name='/device:CPU:0', device_type='CPU')]
    """
    _check_type(device_type)
    local = [LogicalDevice(f"/device:{t}:{i}", t) for t, i in _local_devices()]
    remote = [LogicalDevice(name, DeviceSpec.from_string(name).device_type)
              for name in REMOTE_DEVICES]
    return [d for d in local + remote
            if device_type is None or d.device_type == device_type.upper()]


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The physical devices (``PhysicalDevice(name='/physical_device:CPU:0',
    device_type='CPU')``), all of them or those of one type.

    >>> import stagecraft as tf
    >>> tf.config.list_physical_devices("CPU")
    [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]
    """
    _check_type(device_type)
    return [PhysicalDevice(f"/physical_device:{t}:{i}", t) for t, i in _local_devices()
            if device_type is None or t == device_type.upper()]


def set_soft_device_placement(enabled: bool) -> None:
    """Soft placement (on by default): an op asked to run on a device that does not exist, or
    that has no kernel for it, runs on the CPU instead. Off: such an op raises
    ``InvalidArgumentError``.

    >>> import stagecraft as tf
    >>> tf.config.set_soft_device_placement(False); tf.config.get_soft_device_placement()
    False
    >>> tf.config.set_soft_device_placement(True)
    """
    _soft_placement[0] = bool(enabled)


def get_soft_device_placement() -> bool:
    """Whether soft device placement is on (the default)."""
    return _soft_placement[0]


def set_device_policy(device_policy: str | None) -> None:
    """How an op treats an input that lives on another device: ``'silent'`` (the default, and
    what None means) copies it, ``'warn'`` copies and logs a warning, ``'explicit'`` raises
    ``InvalidArgumentError``, ``'silent_for_int32'`` copies int32 tensors and raises for the
    others. Python values and NumPy arrays are always converted on the op's device.

    >>> import stagecraft as tf
    >>> tf.config.experimental.set_device_policy("explicit")
    >>> tf.config.experimental.get_device_policy()
    'explicit'
    >>> tf.config.experimental.set_device_policy(None)
    """
    policy = "silent" if device_policy is None else device_policy
    if policy not in POLICIES:
        raise ValueError(f"Not a valid device policy: {device_policy!r}. Use one of "
                         f"{list(POLICIES)} (or None for 'silent').")
    _device_policy[0] = policy


def get_device_policy() -> str:
    """The current device policy (see ``set_device_policy``)."""
    return _device_policy[0]


def _is_local_cpu(spec: DeviceSpec) -> bool:
    """True when ``spec`` can only mean this process's CPU:0 (ops then take bind's fast path)."""
    return (spec.device_type in (None, "CPU") and spec.device_index in (None, 0)
            and spec.job in (None, "localhost") and spec.replica in (None, 0)
            and spec.task in (None, 0))


class device:  # noqa: N801 (TensorFlow's name)
    """Places the ops inside the block on a device: ``with stagecraft.device("/gpu:0"):``.

    ``name`` is a device name (any spelling ``DeviceSpec.from_string`` accepts), a
    ``DeviceSpec``, a ``LogicalDevice``, or None (no device: ops run where their inputs live).
    Nested scopes merge field-wise, the inner one winning per field. Eager ops run on the
    scope's device and copy inputs that live elsewhere; with soft placement on (the default) a
    device this machine lacks means the CPU. Variables and constants created inside live on
    the device. ``tf.function`` calls inside run on it too: on a GPU the graph function is
    compiled by the ``"cuda"`` backend (fused kernels launched by a generated host function).
    Entering the block returns the merged ``DeviceSpec`` (a stagecraft addition).

    >>> import stagecraft as tf
    >>> with tf.device("/job:train"):
    ...     with tf.device("/device:GPU:1") as spec:
    ...         spec.to_string()
    '/job:train/device:GPU:1'
    >>> with tf.device("/cpu:0"):
    ...     tf.constant(1.0).device
    '/job:localhost/replica:0/task:0/device:CPU:0'
    """

    __slots__ = ("_spec", "_reset", "_tokens")

    def __init__(self, name: Any):
        if callable(name) and not isinstance(name, DeviceSpec):
            raise RuntimeError("tf.device does not support functions when eager execution is "
                               "enabled: pass a device name such as '/gpu:0' (device "
                               "functions were a TensorFlow 1 graph feature).")
        if isinstance(name, (LogicalDevice, PhysicalDevice)):
            name = name.name.replace("/physical_device:", "/device:")
        if name is None or isinstance(name, DeviceSpec):
            self._spec = name
        elif isinstance(name, str):
            self._spec = DeviceSpec.from_string(name)
        else:
            raise ValueError(f"Expecting a string device name, a tf.DeviceSpec or None; got "
                             f"{type(name).__name__} ({name!r}).")
        self._reset = name is None
        self._tokens: list = []

    def __enter__(self) -> DeviceSpec | None:
        state = STATE.get()
        if self._reset:
            spec = None
        elif state.device is None:
            spec = self._spec
        else:
            spec = state.device.make_merged_spec(self._spec)
        place = None if spec is None or _is_local_cpu(spec) else spec
        self._tokens.append(STATE.set(state.replace(device=spec, place=place)))
        return spec

    def __exit__(self, *exc: Any) -> None:
        STATE.reset(self._tokens.pop())


def current_device() -> DeviceSpec | None:
    """The merged spec of the ``device`` scopes around this point, or None outside them."""
    return STATE.get().device


def full_name(spec: DeviceSpec) -> str:
    """A spec completed with this host's job, replica and task (TensorFlow's error texts)."""
    return _LOCAL.make_merged_spec(spec).to_string()
