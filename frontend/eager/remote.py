"""Tensors on remote devices (``/job:worker/task:1/device:CPU:0``) and the hook through which
the eager layer reaches the runtime that runs ops there.

The eager layer does not know how remote workers are reached: ``stagecraft.distribute``
installs a ``Runtime`` when the program connects to a cluster (``tf.distribute.connect``) and
removes it on disconnect. ``placement`` and ``bind`` call it for every op, copy and function
call that involves a remote device; without one, remote device names are an error that says how
to connect. A ``RemoteTensor`` holds a handle (its ``_value``): the value stays on its worker,
and reading it (``.numpy()``, printing) fetches it.
"""
from __future__ import annotations

import abc
from typing import Any, Sequence

import numpy as np

from stagecraft.devices.device_spec import DeviceSpec
from stagecraft.eager.device_tensor import OffHostTensor

LOCAL_PREFIX = "/job:localhost/"


def is_remote(device: str | None) -> bool:
    """Whether a full device name belongs to another process (not ``/job:localhost/``).

    >>> is_remote("/job:worker/replica:0/task:1/device:CPU:0"), is_remote(None)
    (True, False)
    """
    return device is not None and not device.startswith(LOCAL_PREFIX)


def is_remote_spec(spec: DeviceSpec) -> bool:
    """Whether a (partial) device spec names a job, replica or task other than this process's.

    >>> is_remote_spec(DeviceSpec.from_string("/job:worker/task:0"))
    True
    """
    return spec.job not in (None, "localhost") or spec.replica not in (None, 0) or \
        spec.task not in (None, 0)


class RemoteTensor(OffHostTensor):
    """An eager tensor that lives on a remote worker. It behaves like any eager tensor: ops on
    it run on its worker (unless a ``device`` scope says otherwise, then it is copied), and
    reading its value (``.numpy()``, ``float()``, printing) fetches it, waiting for the ops
    that compute it. ``.cpu()`` makes a local copy.
    """

    __slots__ = ()

    @property
    def device(self) -> str:
        return self._value.device

    def _host(self) -> np.ndarray:
        return self._value.fetch()


def wrap_remote(handle: Any) -> RemoteTensor:
    """A remote tensor around a runtime's handle (no checks)."""
    t = object.__new__(RemoteTensor)
    t._value = handle
    return t


class Runtime(abc.ABC):
    """What ``stagecraft.distribute`` provides to the eager layer while connected."""

    @abc.abstractmethod
    def resolve(self, spec: DeviceSpec, what: str) -> str:
        """The full name of the remote device ``spec`` names; InvalidArgumentError (saying
        which devices exist) when there is none."""

    @abc.abstractmethod
    def device_names(self) -> list[str]:
        """The full names of every remote device, in task order."""

    @abc.abstractmethod
    def transfer(self, x: Any, target: str) -> Any:
        """Eager tensor ``x`` (local, GPU or remote) as a tensor on ``target`` (not recorded)."""

    @abc.abstractmethod
    def run_op(self, op: Any, inputs: Sequence[Any], attrs: dict, target: str) -> tuple:
        """Runs ``op`` on remote device ``target`` whose ``inputs`` all live there; the
        output tensors (not recorded)."""

    @abc.abstractmethod
    def call_function(self, concrete: Any, args: Sequence[Any], target: str) -> list:
        """Runs a concrete function's graph on ``target`` with its flat arguments (tensors and
        variables, captures included); the flat outputs (not recorded)."""


RUNTIME: list = [None]  # the connected Runtime, or None


def runtime() -> Runtime | None:
    """The connected runtime, or None when the program is not connected to a cluster."""
    return RUNTIME[0]
