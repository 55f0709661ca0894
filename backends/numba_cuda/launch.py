"""The lazily imported ``numba.cuda`` module and launch configurations (kernels built from
generated source are ``kernel_module``'s)."""
from __future__ import annotations

import functools
import threading
from types import ModuleType

from stagecraft.backends.numba_cuda import config

# The recording of a staged call in progress (``recording.Recording``), or None. Launches,
# library calls, allocations and host copies check it (here: memory and launcher both read
# it); it is a one-element list so that setting it needs no ``global``.
RECORDING: list = [None]


@functools.lru_cache(maxsize=None)
def cuda_module() -> ModuleType:
    """``numba.cuda`` (imported on first use: it costs about 0.5 s).

    Raises a RuntimeError that says how to get CUDA when neither a GPU nor the simulator is
    available.
    """
    from stagecraft.backends.numba_cuda.detect import detect, implementation
    if detect() == "none":
        raise RuntimeError(f"CUDA is not available: {implementation()}. Run on a machine with "
                           f"an NVIDIA GPU and driver, or set NUMBA_ENABLE_CUDASIM=1 before "
                           f"numba is imported to use Numba's CUDA simulator.")
    from numba import cuda as module
    return module


def context_here() -> None:
    """Makes Numba's CUDA context current on this thread, once per thread: the driver calls
    made directly (launches, copies, the pool's allocations) need it, and a thread other
    than the one that made the context has none until then."""
    if not getattr(_THREAD, "has_context", False):
        cuda_module().current_context()
        _THREAD.has_context = True


_THREAD = threading.local()


@functools.lru_cache(maxsize=None)
def simulated() -> bool:
    """Whether kernels run on Numba's CUDA simulator (Python threads) rather than a GPU."""
    import numba
    return bool(getattr(numba.config, "ENABLE_CUDASIM", 0))


def bind_cuda(namespace: dict) -> ModuleType:
    """Binds ``numba.cuda`` to the global ``cuda`` of a kernel module and returns it.

    Kernels must reach the CUDA API through a *global* named after the module: the simulator
    runs a kernel by swapping the globals that hold ``numba.cuda`` for its thread-aware fake,
    and Numba compiles globals as constants. Kernel modules stay cheap to import by binding it
    in their kernel factories, on first use.
    """
    module = cuda_module()
    namespace["cuda"] = module
    return module


def grid(n: int) -> tuple[int, int]:
    """``(blocks, threads)`` for a 1-D grid-stride kernel over ``n`` items (at least 1 block).

    >>> grid(1000) == (4, 256), grid(0) == (1, 256), grid(10**9)[0] == config.MAX_BLOCKS
    (True, True, True)
    """
    threads = config.THREADS_PER_BLOCK
    blocks = max(1, min(-(-n // threads), config.MAX_BLOCKS))
    return blocks, threads
