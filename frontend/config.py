"""``stagecraft.config``: global switches."""
from __future__ import annotations

import types

from stagecraft.devices.device import (LogicalDevice, PhysicalDevice, get_device_policy,
                               get_soft_device_placement, list_logical_devices,
                               list_physical_devices, set_device_policy,
                               set_soft_device_placement)

__all__ = ["LogicalDevice", "PhysicalDevice", "experimental", "functions_run_eagerly",
           "get_soft_device_placement", "list_logical_devices", "list_physical_devices",
           "run_functions_eagerly", "set_soft_device_placement"]

# `tf.config.experimental`: the subset stagecraft has (device policies; TensorFlow's
# experimental aliases of the device listings).
experimental = types.SimpleNamespace(
    set_device_policy=set_device_policy, get_device_policy=get_device_policy,
    list_logical_devices=list_logical_devices, list_physical_devices=list_physical_devices)

_RUN_FUNCTIONS_EAGERLY = [False]


def run_functions_eagerly(run_eagerly: bool) -> None:
    """When True, ``@function`` calls run the plain Python function (for debugging): no
    tracing, Python side effects on every call.

    >>> import stagecraft as tf
    >>> tf.config.run_functions_eagerly(True); tf.config.functions_run_eagerly()
    True
    >>> tf.config.run_functions_eagerly(False)
    """
    _RUN_FUNCTIONS_EAGERLY[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether ``run_functions_eagerly(True)`` is in effect."""
    return _RUN_FUNCTIONS_EAGERLY[0]
