"""Which CUDA stagecraft can use: a real GPU, Numba's CUDA simulator, or none.

Importing this module is free; :func:`detect` imports ``numba.cuda`` (about 0.5 s) only when
asked, and never raises.
"""
from __future__ import annotations

import functools
import os
from typing import Literal

Mode = Literal["gpu", "simulator", "none"]


@functools.lru_cache(maxsize=None)
def _probe() -> tuple[Mode, str]:
    # NUMBA_ENABLE_CUDASIM is read once, when numba is first imported; afterwards numba's own
    # config is the truth (setting the variable later changes nothing).
    try:
        import numba
    except Exception as e:  # numba missing or broken: no CUDA either way
        return "none", f"numba is not importable ({type(e).__name__}: {e})"
    simulated = bool(getattr(numba.config, "ENABLE_CUDASIM", 0))
    try:
        from numba import cuda
    except Exception as e:
        return "none", f"numba.cuda is not importable ({type(e).__name__}: {e})"
    implementation = getattr(cuda, "implementation", "unknown")
    if simulated:
        return "simulator", f"Numba CUDA simulator (numba.cuda implementation: {implementation})"
    try:
        available = bool(cuda.is_available())
    except Exception as e:  # a broken driver install raises instead of answering False
        return "none", f"CUDA driver error ({type(e).__name__}: {e})"
    if not available:
        return "none", (f"no usable CUDA GPU or driver (numba.cuda implementation: "
                        f"{implementation}); set NUMBA_ENABLE_CUDASIM=1 before importing numba "
                        f"to use the simulator")
    try:
        name = cuda.get_current_device().name
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as e:
        return "none", f"CUDA device init failed ({type(e).__name__}: {e})"
    return "gpu", f"{name} (numba.cuda implementation: {implementation})"


def detect() -> Mode:
    """``"gpu"`` (a CUDA GPU and driver), ``"simulator"`` (``NUMBA_ENABLE_CUDASIM=1`` was set
    before numba was imported) or ``"none"``. Cached after the first call; never raises.

    >>> detect() in ("gpu", "simulator", "none")
    True
    """
    return _probe()[0]


def implementation() -> str:
    """A one-line description for diagnostics: the device (or why there is none) and
    ``numba.cuda.implementation`` (``"NVIDIA"`` for the numba-cuda package).

    >>> isinstance(implementation(), str)
    True
    """
    return _probe()[1]


def simulator_requested() -> bool:
    """Whether the environment asks for the simulator (without importing numba); it takes
    effect only if set before numba's first import.

    >>> simulator_requested() == (detect() == "simulator")
    True
    """
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
