"""``stagecraft.config``: global switches."""
from __future__ import annotations

import types

from stagecraft.ir.verify import CHECKS as _CHECKS

from stagecraft import backends
from stagecraft.backends.numba_cuda import config as _cuda_config

from stagecraft.devices.device import (LogicalDevice, PhysicalDevice, get_device_policy,
                               get_soft_device_placement, list_logical_devices,
                               list_physical_devices, set_device_policy,
                               set_soft_device_placement)
from stagecraft.distribute.connect import experimental_connect_to_cluster

__all__ = ["LogicalDevice", "PhysicalDevice", "checks_enabled", "cuda_graphs_enabled",
           "enable_checks", "experimental",
           "experimental_connect_to_cluster",
           "functions_run_eagerly",
           "get_compile_mode", "get_hybrid_threshold", "get_soft_device_placement",
           "list_logical_devices", "list_physical_devices", "run_functions_eagerly",
           "set_compile_mode", "set_cuda_graphs", "set_hybrid_threshold",
           "set_soft_device_placement"]



def enable_tensor_float_32_execution(enabled: bool) -> None:
    """Whether float32 matrix products and convolutions on a GPU may use TensorFloat-32
    tensor cores (``tf.config.experimental.enable_tensor_float_32_execution``): inputs rounded
    to 10 mantissa bits, products accumulated in float32; several times faster on Ampere and
    newer GPUs, with relative errors near 1e-3 instead of float32's 1e-6. On by default, as in
    TensorFlow; ``False`` gives exact float32 products. Other dtypes and the CPU are never
    affected. Applies to ops run from now on.

    >>> import stagecraft as tf
    >>> before = tf.config.experimental.tensor_float_32_execution_enabled()
    >>> tf.config.experimental.enable_tensor_float_32_execution(False)
    >>> tf.config.experimental.tensor_float_32_execution_enabled()
    False
    >>> tf.config.experimental.enable_tensor_float_32_execution(before)
    """
    _cuda_config.TENSOR_FLOAT_32 = bool(enabled)


def tensor_float_32_execution_enabled() -> bool:
    """Whether TensorFloat-32 is enabled (see :func:`enable_tensor_float_32_execution`).

    >>> import stagecraft as tf
    >>> isinstance(tf.config.experimental.tensor_float_32_execution_enabled(), bool)
    True
    """
    return _cuda_config.TENSOR_FLOAT_32


# `tf.config.experimental`: the subset stagecraft has (device policies; TensorFlow's
# experimental aliases of the device listings; TensorFloat-32).
experimental = types.SimpleNamespace(
    set_device_policy=set_device_policy, get_device_policy=get_device_policy,
    list_logical_devices=list_logical_devices, list_physical_devices=list_physical_devices,
    enable_tensor_float_32_execution=enable_tensor_float_32_execution,
    tensor_float_32_execution_enabled=tensor_float_32_execution_enabled)

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


def set_compile_mode(mode: str) -> None:
    """How staged functions compiled from now on reach machine code (the environment variable
    ``STAGECRAFT_COMPILE_MODE`` sets the initial mode):

    * ``"background"`` (the default): the first calls run at once on the reference
      interpreter, which computes what eager execution computes, while a worker process
      compiles; later calls run the compiled code (results may then differ by a few ulps, see
      the README);
    * ``"sync"``: the first call compiles (seconds, once per function and argument types;
      later processes load it from the disk cache), then runs compiled code: for benchmarks;
    * ``"eager"``: never compile; staged functions run on the interpreter.

    ``tf.function(jit_compile=True)`` always compiles as ``"sync"`` does.

    >>> import stagecraft as tf
    >>> before = tf.config.get_compile_mode()
    >>> tf.config.set_compile_mode("eager"); tf.config.get_compile_mode()
    'eager'
    >>> tf.config.set_compile_mode(before)
    """
    backends.set_compile_mode(mode)


def get_compile_mode() -> str:
    """The mode ``set_compile_mode`` set."""
    return backends.compile_mode()


def set_hybrid_threshold(equations: int) -> None:
    """Graphs (staged functions, their gradients) with more equations than ``equations``
    (regions included; default 300, initially from ``STAGECRAFT_HYBRID_THRESHOLD``) run on
    the Numba backend as a hybrid plan: a Python driver calls one small compiled kernel per op
    or fused elementwise group, kernels of the same structure shared (ResNet-50's forward pass:
    seconds to compile instead of minutes); smaller graphs compile to one function, which runs
    faster (no Python between ops). 0 makes every graph hybrid. Applies to graphs compiled
    from now on.

    >>> import stagecraft as tf
    >>> before = tf.config.get_hybrid_threshold()
    >>> tf.config.set_hybrid_threshold(1000); tf.config.get_hybrid_threshold()
    1000
    >>> tf.config.set_hybrid_threshold(before)
    """
    backends.set_hybrid_threshold(equations)


def get_hybrid_threshold() -> int:
    """The threshold ``set_hybrid_threshold`` set."""
    return backends.hybrid_threshold()


def set_cuda_graphs(enabled: bool) -> None:
    """Whether staged GPU functions replay their device work as CUDA graphs from their fourth
    call on (the default; see the README's GPU section): one graph launch per call instead
    of the Python host code's launches, the same results. ``False`` runs every call's host
    code, for debugging or to compare. Applies from the next call.

    >>> import stagecraft as tf
    >>> tf.config.set_cuda_graphs(False); tf.config.cuda_graphs_enabled()
    False
    >>> tf.config.set_cuda_graphs(True)
    """
    _cuda_config.CUDA_GRAPHS = bool(enabled)


def cuda_graphs_enabled() -> bool:
    """Whether staged GPU functions replay CUDA graphs (see :func:`set_cuda_graphs`)."""
    return _cuda_config.CUDA_GRAPHS


def functions_run_eagerly() -> bool:
    """Whether ``run_functions_eagerly(True)`` is in effect."""
    return _RUN_FUNCTIONS_EAGERLY[0]


def enable_checks(enabled: bool = True) -> None:
    """Checks every graph right after it is traced (like JAX's ``jax_enable_checks``): runs
    ``stagecraft.ir.verify`` on it and prints and parses it back, raising
    ``stagecraft.ir.errors.VerificationError`` (an ``InternalError``) where a graph breaks an
    IR invariant or does not round-trip. For debugging stagecraft itself and for its tests;
    off by default (then tracing pays one flag test). ``STAGECRAFT_ENABLE_CHECKS=1`` turns it
    on for a whole program.

    >>> import stagecraft as tf
    >>> before = tf.config.checks_enabled()
    >>> tf.config.enable_checks(True)
    >>> tf.function(lambda x: x * 2.0)(tf.constant([1.0]))   # traced, verified, round-tripped
    <stagecraft.Tensor: shape=(1,), dtype=float32, numpy=array([2.], dtype=float32)>
    >>> tf.config.enable_checks(before)
    """
    _CHECKS[0] = bool(enabled)


def checks_enabled() -> bool:
    """Whether ``enable_checks(True)`` (or ``STAGECRAFT_ENABLE_CHECKS=1``) is in effect.

    >>> import stagecraft as tf
    >>> isinstance(tf.config.checks_enabled(), bool)
    True
    """
    return _CHECKS[0]
