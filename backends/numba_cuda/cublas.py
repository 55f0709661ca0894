"""Matrix products through NVIDIA's cuBLAS, called with nvmath-python's bindings
(``nvmath.bindings.cublas``) on the raw device pointers of numba-cuda arrays.

float32, float64, complex64 and complex128 products (float16/bfloat16 too: the eager library
computes them in float32) run on cuBLAS on a real GPU with nvmath-python installed (the
``cuda`` extra). On Numba's CUDA simulator, for integer dtypes, and with
``config.USE_CUBLAS = False``, the Numba kernel (``kernels/matmul.py``) runs; on a GPU without
nvmath-python it runs too, after one warning that names the fix. Both compute the same
product, in different summation orders.

Each CUDA context gets one cuBLAS handle, created on first use, with a workspace in a device
buffer the handle keeps (capturing cuBLAS work into a CUDA graph requires a workspace set by
the caller). Threads share it under a lock: the stream a handle enqueues on is a setting of
the handle, so a call pairs setting its stream with enqueueing its gemms (else one thread's
eager gemm could land in the CUDA graph another is capturing). All of them run on the legacy
default stream, in order, so one workspace serves them. Every call is issued through
``launcher.library_call``, so a recording of a staged call captures it with the kernels
around it. ``alpha`` and ``beta`` are host scalars
(cuBLAS's default pointer mode) held by this module for the life of the process. Float32
products use TensorFloat-32 tensor cores while ``config.TENSOR_FLOAT_32`` is set
(``tf.config.experimental.enable_tensor_float_32_execution``).
"""
from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.numba_cuda import config, gemm_plan
from stagecraft.backends.numba_cuda.launch import cuda_module, simulated
from stagecraft.backends.numba_cuda.launcher import library_call
from stagecraft.backends.numba_cuda.memory import address, contiguous, flat

# (one, zero) per cudaDataType (the scalars have the operands' type): cuBLAS reads alpha and
# beta through host pointers when a call is enqueued, so the buffers must outlive every call
# (module-level: forever).
_SCALARS = {name: (np.ones(1, dtype), np.zeros(1, dtype))
            for dtype, name in gemm_plan.DATA_TYPES.items()}
# The dtypes cuBLAS multiplies (a set of np.dtype: a lookup, not a dtype.name, which costs
# 2 us of NumPy's string building per read)
_BLAS_DTYPES = frozenset(np.dtype(name) for name in gemm_plan.DATA_TYPES)
# The handle of each CUDA context by its driver handle; None where cuBLAS could not start.
_HANDLES: dict[int, "_Handle | None"] = {}
_CREATING = threading.Lock()
_INSTALL = 'pip install "stagecraft[cuda]" (or pip install "nvmath-python[cu13]")'


class _Handle:
    """A cuBLAS handle with its device workspace, issuing the calls of a
    :class:`~stagecraft.backends.numba_cuda.gemm_plan.GemmPlan`.

    ``bindings`` is ``nvmath.bindings.cublas`` (functions and the ``Operation``,
    ``ComputeType`` and ``GemmAlgo`` enums), ``data_types`` the ``cudaDataType`` enum
    (``nvmath.CudaDataType``) and ``workspace`` a device array.
    """

    def __init__(self, bindings: Any, data_types: Any, workspace: Any):
        self.bindings = bindings
        self.data_types = data_types
        self.workspace = workspace
        self.pointer = bindings.create()
        self.stream: int | None = None
        # held from setting the stream to enqueueing the last gemm (nvmath's calls release
        # the GIL); enqueueing does not wait for the GPU, so holding it costs nothing
        self.lock = threading.Lock()
        # matmul_into's key (shapes, flags, dtype, TF32) -> the plan's resolved calls
        self.plans: dict[tuple, list[Callable[[int, int, int], None]]] = {}

    def run(self, calls: Sequence[Callable[[int, int, int], None]], b: int, a: int, out: int,
            stream: int) -> None:
        """Enqueues ``calls`` (:meth:`calls` of a plan) on ``stream`` (a ``CUstream`` handle;
        0 is the legacy default stream): ``b``, ``a`` and ``out`` are the device pointers of
        the row-major operands and the output (cuBLAS's A, B and C). Safe from any thread."""
        with self.lock:
            if stream != self.stream:
                lib = self.bindings
                self.stream = None   # (unknown until both settings are made)
                lib.set_stream(self.pointer, stream)
                # cublasSetStream puts cuBLAS back on its own workspace pool: set ours again
                lib.set_workspace(self.pointer, _device_pointer(self.workspace),
                                  self.workspace.size * self.workspace.dtype.itemsize)
                self.stream = stream
            for call in calls:
                call(b, a, out)

    def calls(self, plan: gemm_plan.GemmPlan, itemsize: int
              ) -> list[Callable[[int, int, int], None]]:
        """``plan``'s cuBLAS calls with every argument but the three pointers resolved (enum
        names to ints, offsets to bytes), once per plan: an eager matmul's host cost is
        mostly this lookup work otherwise."""
        lib, handle = self.bindings, self.pointer
        dtype = int(self.data_types[plan.data_type])
        compute = int(lib.ComputeType[plan.compute_type])
        algo = int(lib.GemmAlgo.DEFAULT)
        one, zero = _SCALARS[plan.data_type]
        alpha, beta = one.ctypes.data, zero.ctypes.data
        calls = []
        for c in plan.calls:
            ta, tb = int(lib.Operation[c.trans_a]), int(lib.Operation[c.trans_b])
            oa, ob, oc = c.a_offset * itemsize, c.b_offset * itemsize, c.c_offset * itemsize
            if c.batch == 1:
                def call(b: int, a: int, out: int, c: gemm_plan.Gemm = c, ta: int = ta,
                         tb: int = tb, oa: int = oa, ob: int = ob, oc: int = oc) -> None:
                    lib.gemm_ex(handle, ta, tb, c.m, c.n, c.k, alpha, b + oa, dtype, c.lda,
                                a + ob, dtype, c.ldb, beta, out + oc, dtype, c.ldc, compute,
                                algo)
            else:
                def call(b: int, a: int, out: int, c: gemm_plan.Gemm = c, ta: int = ta,
                         tb: int = tb, oa: int = oa, ob: int = ob, oc: int = oc) -> None:
                    lib.gemm_strided_batched_ex(
                        handle, ta, tb, c.m, c.n, c.k, alpha, b + oa, dtype, c.lda, c.stride_a,
                        a + ob, dtype, c.ldb, c.stride_b, beta, out + oc, dtype, c.ldc,
                        c.stride_c, c.batch, compute, algo)
            calls.append(call)
        return calls


def available(dtype: Any) -> bool:
    """Whether matmuls of ``dtype`` run on cuBLAS here: a float or complex dtype of
    :data:`gemm_plan.DATA_TYPES`, a real GPU, nvmath-python importable and a cuBLAS handle
    made, and ``config.USE_CUBLAS``. Creates the current context's handle on first use.

    >>> from stagecraft.backends.numba_cuda.detect import detect
    >>> available(np.int32), available(np.float32) == (detect() == "gpu")
    (False, True)
    """
    return _handle_for(np.dtype(dtype)) is not None


def matmul_into(out: Any, a: Any, b: Any, transpose_a: bool, transpose_b: bool) -> bool:
    """Enqueues ``out = op(a) @ op(b)`` (``np.matmul`` batch broadcasting; ``op`` transposes
    the last two dims when its flag is set) on cuBLAS where :func:`available` says it runs,
    and returns whether it did (False: nothing was done). ``a``, ``b`` and ``out`` are
    C-contiguous device arrays of one dtype with no empty dim.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> x, out = to_device(np.eye(2)), to_device(np.zeros((2, 2)))
    >>> ran = matmul_into(out, x, x, False, False)
    >>> ran == available(np.float64), bool((to_host(out) == np.eye(2)).all()) == ran
    (True, True)
    """
    handle = _handle_for(out.dtype)
    if handle is None:
        return False
    # (one dict lookup per call: the plan, its enums and byte offsets are resolved once)
    key = (tuple(a.shape), tuple(b.shape), bool(transpose_a), bool(transpose_b), out.dtype,
           bool(config.TENSOR_FLOAT_32))
    calls = handle.plans.get(key)
    if calls is None:
        dtype = np.dtype(out.dtype)
        plan = gemm_plan.plan(key[0], key[1], key[2], key[3], dtype.name, key[5])
        calls = handle.plans[key] = handle.calls(plan, dtype.itemsize)

    # A closure over the arrays themselves, not their addresses: a recording of a staged call
    # (recording.py) matches two calls' library calls by the cells, locating device arrays
    # among the call's allocations
    def call(stream: int) -> None:
        handle.run(calls, _device_pointer(b), _device_pointer(a), _device_pointer(out), stream)
    library_call(call)
    return True


def _device_pointer(array: Any) -> int:
    """The address of a C-contiguous device array's first element (``memory.address``);
    a non-contiguous array raises the error of ``memory.flat``."""
    if not contiguous(array):
        flat(array)   # raises, saying what to do
    return address(array)


def _handle_for(dtype: Any) -> _Handle | None:
    if not config.USE_CUBLAS or dtype not in _BLAS_DTYPES:
        return None
    return _handle()


def _handle() -> _Handle | None:
    bindings = _bindings()
    if bindings is None:
        return None
    context = int(cuda_module().current_context().handle)
    handle = _HANDLES.get(context, _HANDLES)
    if handle is _HANDLES:
        with _CREATING:   # (two threads' first matmuls: one handle, one warning)
            if context not in _HANDLES:
                _HANDLES[context] = _create(*bindings)
            handle = _HANDLES[context]
    return handle


@functools.lru_cache(maxsize=None)
def _bindings() -> tuple[Any, Any] | None:
    """``(nvmath.bindings.cublas, nvmath.CudaDataType)``, or None on the simulator (no cuBLAS
    there) or, after a warning, where nvmath-python cannot be imported."""
    if simulated():
        return None
    try:
        # lazy import: nvmath-python is optional (the `cuda` extra) and takes ~0.6 s to import
        from nvmath import CudaDataType
        from nvmath.bindings import cublas
    except ImportError as e:
        _warn(f"nvmath-python is not importable ({type(e).__name__}: {e})")
        return None
    return cublas, CudaDataType


def _create(bindings: Any, data_types: Any) -> _Handle | None:
    try:
        workspace = cuda_module().device_array(config.CUBLAS_WORKSPACE_BYTES, np.uint8)
        return _Handle(bindings, data_types, workspace)
    except Exception as e:   # cuBLAS's library missing or failing to start (nvmath raises
        # RuntimeError subclasses whose messages name the cause)
        _warn(f"cuBLAS could not start ({type(e).__name__}: {e})")
        return None


def _warn(cause: str) -> None:
    warnings.warn(f"GPU matmuls run stagecraft's Numba kernel instead of NVIDIA's cuBLAS "
                  f"(same results, several times slower on large matrices): {cause}. To use "
                  f"cuBLAS, {_INSTALL}.", RuntimeWarning, stacklevel=3)
