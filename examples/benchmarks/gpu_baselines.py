"""What gpu_backend.py compares stagecraft with on the same GPU: PyTorch and CuPy when they are
installed and see a GPU (neither is a dependency of stagecraft), their synchronize calls, the
GPU scope of stagecraft's calls, the TF32 switches of stagecraft and PyTorch, and the accuracy
check the sections share."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import stagecraft as tf

LIBRARIES = ("torch", "cupy")


def in_gpu_scope(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` inside the GPU scope, returning as soon as its work is queued."""
    def run() -> Any:
        with tf.device("/gpu:0"):
            return call()
    return run


def synchronize() -> None:
    """Waits for all work on the device (``cuCtxSynchronize``: every stream of the context,
    PyTorch's and CuPy's too, since all use the primary context)."""
    from numba import cuda
    cuda.synchronize()


@dataclass
class Baselines:
    """The modules ``torch`` and ``cupy``, or None with the reason in ``missing``."""
    torch: Any = None
    cupy: Any = None
    missing: dict[str, str] = field(default_factory=dict)

    def available(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in LIBRARIES
                if getattr(self, name) is not None}

    def sync(self, name: str) -> Callable[[], None]:
        """The library's own device synchronize."""
        if name == "torch":
            return self.torch.cuda.synchronize
        return self.cupy.cuda.Device().synchronize


def _reason(error: Exception) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0]


def find_baselines() -> Baselines:
    """PyTorch with CUDA and CuPy with a GPU where they can run; on Numba's CUDA simulator they
    still run on a real GPU when there is one (a cheap check of this script's baseline code)."""
    found = Baselines()
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        found.torch = torch
    except Exception as e:  # not installed, or no usable GPU
        found.missing["torch"] = _reason(e)
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()  # raises without a driver or a GPU
        found.cupy = cupy
    except Exception as e:
        found.missing["cupy"] = _reason(e)
    return found


def has_tf32_control() -> bool:
    return hasattr(tf.config.experimental, "enable_tensor_float_32_execution")


def set_tf32(enabled: bool, baselines: Baselines) -> None:
    """TF32 for float32 matmuls on or off, in stagecraft (TensorFlow's switch, when stagecraft
    has it) and in PyTorch. CuPy's is the environment variable CUPY_TF32, read at import: it
    is left at its default (off), so CuPy is compared with TF32 off only."""
    if has_tf32_control():
        tf.config.experimental.enable_tensor_float_32_execution(enabled)
    if baselines.torch is not None:
        baselines.torch.backends.cuda.matmul.allow_tf32 = enabled
        baselines.torch.backends.cudnn.allow_tf32 = enabled


def tf32_note() -> str:
    return ("TF32 control: tf.config.experimental.enable_tensor_float_32_execution"
            if has_tf32_control() else
            "TF32 control is MISSING in stagecraft (no tf.config.experimental."
            "enable_tensor_float_32_execution): its matmuls run in their default mode")


def to_numpy(value: Any) -> np.ndarray:
    """A host copy of a stagecraft, PyTorch or CuPy array."""
    if hasattr(value, "detach"):  # torch
        return value.detach().cpu().numpy()
    if hasattr(value, "get") and not hasattr(value, "numpy"):  # cupy
        return value.get()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def relative_error(got: Any, expected: np.ndarray) -> float:
    """||got - expected|| / ||expected|| in float64."""
    got64 = to_numpy(got).astype(np.float64)
    return float(np.linalg.norm(got64 - expected) / np.linalg.norm(expected))


def check_close(section: str, variant: str, what: str, got: Any, expected: np.ndarray,
                limit: float) -> float:
    """The relative error of ``got``; an AssertionError naming the section and the variant when
    it is above ``limit`` (or NaN)."""
    error = relative_error(got, expected)
    assert error <= limit, (f"{section}: {variant}'s {what} is off by {error:.3g} (relative "
                            f"norm; limit {limit:g}) from the float64 NumPy reference")
    return error
