"""The cuBLAS side of GPU matmuls without a GPU: the plan that maps a row-major (batched,
broadcast) product onto column-major gemm calls (``numba_cuda/gemm_plan.py``), executed by an
emulator of BLAS's gemm written from its definition and compared with ``np.matmul``; and the
executor (``numba_cuda/cublas.py``) issuing those calls to a stand-in for nvmath-python's
cuBLAS bindings that runs the emulator on host memory, so pointers, offsets, strides, scalars,
stream, workspace and compute types are all checked. Nothing here needs CUDA or nvmath."""
from __future__ import annotations

import ctypes
import enum
import threading
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagecraft as tf
from stagecraft.backends.numba_cuda import config, cublas
from stagecraft.backends.numba_cuda.gemm_plan import DATA_TYPES, Gemm, compute_type, plan


def blas_gemm(transa: str, transb: str, m: int, n: int, k: int, alpha, A: np.ndarray, lda: int,
              B: np.ndarray, ldb: int, beta, C: np.ndarray, ldc: int) -> None:
    """The reference BLAS xGEMM: ``C := alpha*op(A)*op(B) + beta*C`` with ``op(X) = X`` ("N")
    or ``X**T`` ("T"), ``op(A)`` m x k, ``op(B)`` k x n, ``C`` m x n; element (i, j) of a
    matrix with leading dimension ``ld`` is ``X[i + j*ld]`` of its 1-D buffer (column-major).
    The reference implementation's argument checks (its ``xerbla`` cases) are asserted; when
    ``beta`` is zero, ``C`` is not read. Indexing past a buffer's end raises IndexError."""
    assert transa in ("N", "T") and transb in ("N", "T") and min(m, n, k) >= 0
    nrowa, nrowb = (m if transa == "N" else k), (k if transb == "N" else n)
    assert lda >= max(1, nrowa), f"lda={lda} < {nrowa}"
    assert ldb >= max(1, nrowb), f"ldb={ldb} < {nrowb}"
    assert ldc >= max(1, m), f"ldc={ldc} < {m}"
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    lr, lc = np.arange(k)[None, :], np.arange(k)[:, None]
    op_a = A[i + lr * lda] if transa == "N" else A[lr + i * lda]      # m x k
    op_b = B[lc + j * ldb] if transb == "N" else B[j + lc * ldb]      # k x n
    product = alpha * (op_a @ op_b)
    C[i + j * ldc] = product if beta == 0 else product + beta * C[i + j * ldc]


def strided_batched(transa, transb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                    batch) -> None:
    """cublasGemmStridedBatchedEx: matrix z of each buffer starts ``z * stride`` elements in."""
    for z in range(batch):
        blas_gemm(transa, transb, m, n, k, alpha, A[z * sa:], lda, B[z * sb:], ldb, beta,
                  C[z * sc:], ldc)


def run_plan(a: np.ndarray, b: np.ndarray, ta: bool, tb: bool, tf32: bool = False) -> np.ndarray:
    """``op(a) @ op(b)`` by the plan's calls on flat buffers. ``out`` starts as NaN, and each
    element must be written exactly once: the calls rerun on all-ones operands accumulating
    (beta = 1) into zeros must give k everywhere."""
    p = plan(a.shape, b.shape, ta, tb, a.dtype.name, tf32)
    m, k = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
    n = b.shape[-2] if tb else b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = np.full(batch + (m, n), np.nan, a.dtype).reshape(-1)
    writes = np.zeros(out.size)
    for c in p.calls:
        strided_batched(c.trans_a, c.trans_b, c.m, c.n, c.k, 1, b.reshape(-1)[c.a_offset:],
                        c.lda, c.stride_a, a.reshape(-1)[c.b_offset:], c.ldb, c.stride_b, 0,
                        out[c.c_offset:], c.ldc, c.stride_c, c.batch)
        strided_batched(c.trans_a, c.trans_b, c.m, c.n, c.k, 1, np.ones(b.size)[c.a_offset:],
                        c.lda, c.stride_a, np.ones(a.size)[c.b_offset:], c.ldb, c.stride_b, 1,
                        writes[c.c_offset:], c.ldc, c.stride_c, c.batch)
    assert (writes == k).all(), f"elements written {writes.min() / k}..{writes.max() / k} times"
    return out.reshape(batch + (m, n))


def operands(rng, batch_a, batch_b, m, k, n, ta, tb, dtype=np.float64):
    """Integer-valued operands (exact sums) of the given batch shapes; stored transposed where
    the flags say so."""
    a = rng.integers(-4, 5, size=tuple(batch_a) + ((k, m) if ta else (m, k))).astype(dtype)
    b = rng.integers(-4, 5, size=tuple(batch_b) + ((n, k) if tb else (k, n))).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.integers(-4, 5, size=a.shape)
        b = b - 2j * rng.integers(-4, 5, size=b.shape)
    return a, b


def reference(a, b, ta, tb):
    return np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)


CASES = [  # (batch of a, batch of b, m, k, n)
    ((), (), 3, 4, 5), ((), (), 1, 1, 1), ((), (), 1, 5, 1), ((), (), 4, 1, 3),
    ((), (), 1, 3, 4), ((), (), 4, 3, 1), ((2,), (), 3, 4, 5), ((), (2,), 3, 4, 5),
    ((3,), (3,), 2, 1, 2), ((2, 3), (), 1, 2, 3), ((2, 3), (3,), 2, 2, 2),
    ((5, 1), (7,), 2, 3, 2), ((2, 1), (1, 3), 3, 2, 1), ((1, 3), (2, 1), 2, 2, 3),
    ((2, 3, 1), (4,), 2, 2, 2), ((2, 1, 4), (3, 1), 1, 2, 2), ((1, 1), (2, 3), 2, 3, 2),
    ((2, 1, 3), (1, 2, 1), 3, 1, 2)]


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_plan_on_the_emulator_equals_np_matmul(case, ta, tb):
    batch_a, batch_b, m, k, n = case
    a, b = operands(np.random.default_rng(len(str(case))), batch_a, batch_b, m, k, n, ta, tb)
    np.testing.assert_array_equal(run_plan(a, b, ta, tb), reference(a, b, ta, tb))


@st.composite
def products(draw):
    """Broadcast-compatible batch shapes (rank 0..2 each side, sizes 1..3) and matrix dims."""
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    sides = []
    for _ in range(2):
        own = [d if draw(st.booleans()) else 1 for d in batch]
        sides.append(tuple(own[draw(st.integers(0, len(own))):]))
    dims = draw(st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)))
    return sides[0], sides[1], *dims, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(products(), st.sampled_from([np.float32, np.complex128]))
def test_any_broadcast_product_on_the_emulator(product, dtype):
    batch_a, batch_b, m, k, n, ta, tb = product
    a, b = operands(np.random.default_rng(0), batch_a, batch_b, m, k, n, ta, tb, dtype)
    np.testing.assert_array_equal(run_plan(a, b, ta, tb), reference(a, b, ta, tb))


def shape(a_op, b_op, ta=False, tb=False):
    """Stored shapes of operands whose ``op`` shapes are given."""
    swap = lambda s, t: s[:-2] + (s[-1], s[-2]) if t else s  # noqa: E731
    return swap(a_op, ta), swap(b_op, tb), ta, tb


@pytest.mark.parametrize("args,calls", [
    # b shared by the batch, a's matrices consecutive: one plain gemm of 2*3*4 rows
    (shape((2, 3, 4, 5), (5, 6)), [(1, 24)]),
    (shape((3, 4, 5), (3, 5, 6)), [(3, 4)]),
    (shape((4, 5), (3, 5, 6)), [(3, 4)]),            # a shared: stride 0, no fold
    (shape((3, 4, 5), (5, 6), ta=True), [(3, 4)]),   # transposed a: no fold
    (shape((5, 1, 2, 2), (7, 2, 2)), [(7, 2)] * 5),  # the larger run is one call
    (shape((2, 1, 4, 5), (1, 3, 5, 6)), [(3, 4)] * 2),
    (shape((2, 3, 1, 2, 2), (4, 2, 2)), [(6, 2)] * 4),  # a run of outer dims
    (shape((1, 1, 4, 5), (5, 6)), [(1, 4)]),
])
def test_batch_dims_become_as_few_calls_as_strides_allow(args, calls):
    a_shape, b_shape, ta, tb = args
    assert [(c.batch, c.n) for c in plan(a_shape, b_shape, ta, tb, "float32", False).calls] \
        == calls


def test_operands_swap_for_column_major():
    c, = plan((7, 3), (5, 7), True, True, "complex64", False).calls
    assert c == Gemm(trans_a="T", trans_b="T", m=5, n=3, k=7, a_offset=0, lda=7, stride_a=0,
                     b_offset=0, ldb=3, stride_b=0, c_offset=0, ldc=5, stride_c=0, batch=1)


def test_compute_types():
    assert [compute_type(d, True) for d in DATA_TYPES] == [
        "COMPUTE_32F_FAST_TF32", "COMPUTE_64F", "COMPUTE_32F", "COMPUTE_64F"]
    assert [compute_type(d, False) for d in DATA_TYPES] == [
        "COMPUTE_32F", "COMPUTE_64F", "COMPUTE_32F", "COMPUTE_64F"]
    assert plan((2, 2), (2, 2), False, False, "float32", True).compute_type == \
        "COMPUTE_32F_FAST_TF32"


def test_empty_products_are_not_planned():
    with pytest.raises(ValueError) as e:
        plan((2, 0), (0, 3), False, False, "float32", False)
    assert str(e.value).splitlines()[0].startswith(
        "gemm plan: op(a) of shape 2 x 0 and op(b) of 0 x 3")


def test_plan_names_exist_in_nvmath_bindings():
    """The enum names the plan and executor use are nvmath-python's (where it is installed)."""
    nvmath = pytest.importorskip("nvmath", reason="nvmath-python (the cuda extra) not installed")
    from nvmath.bindings import cublas as bindings
    for d in DATA_TYPES:
        assert DATA_TYPES[d] in nvmath.CudaDataType.__members__
        assert compute_type(d, True) in bindings.ComputeType.__members__
    assert {"N", "T"} <= set(bindings.Operation.__members__)
    assert "DEFAULT" in bindings.GemmAlgo.__members__


# ------------------------------------------------------------------ the executor, on the host

class HostArray:
    """A C-contiguous NumPy array posing as a device array (the CUDA Array Interface points
    at its host memory, which the stand-in bindings read and write)."""

    def __init__(self, array: np.ndarray):
        self.array = self._ary = np.ascontiguousarray(array)   # (_ary: as the simulator's)
        self.shape, self.dtype, self.ndim = self.array.shape, self.array.dtype, self.array.ndim
        self.size, self.strides = self.array.size, self.array.strides
        # (a real device array's address, as memory.address reads it on a GPU)
        self.gpu_data = types.SimpleNamespace(device_pointer_value=self.array.ctypes.data)

    def is_c_contiguous(self) -> bool:
        return True

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "strides": None, "data": (self.array.ctypes.data, False),
                "typestr": self.dtype.str, "version": 3}


class Bindings:
    """A stand-in for ``nvmath.bindings.cublas`` over host memory: records every call and
    runs gemms on the emulator, finding each pointer inside one of ``arrays``."""
    Operation = enum.IntEnum("Operation", {"N": 0, "T": 1})
    ComputeType = enum.IntEnum("ComputeType", {"COMPUTE_32F": 68, "COMPUTE_32F_FAST_TF32": 77,
                                               "COMPUTE_64F": 70})
    GemmAlgo = enum.IntEnum("GemmAlgo", {"DEFAULT": -1})
    DataType = enum.IntEnum("CudaDataType", {"CUDA_R_32F": 0, "CUDA_R_64F": 1, "CUDA_C_32F": 4,
                                             "CUDA_C_64F": 5})
    DTYPES = {0: np.float32, 1: np.float64, 4: np.complex64, 5: np.complex128}

    def __init__(self, arrays: list):
        self.arrays = arrays
        self.log: list[tuple] = []

    def create(self) -> int:
        return 4242

    def set_stream(self, handle: int, stream: int) -> None:
        self.log.append(("set_stream", handle, stream))

    def set_workspace(self, handle: int, pointer: int, nbytes: int) -> None:
        self.log.append(("set_workspace", handle, pointer, nbytes))

    def memory(self, pointer: int, dtype) -> np.ndarray:
        """The elements of ``dtype`` from ``pointer`` to the end of the array holding it."""
        for x in self.arrays:
            start = x.array.ctypes.data
            if start <= pointer < start + x.array.nbytes:
                assert (pointer - start) % np.dtype(dtype).itemsize == 0
                assert x.dtype == dtype, f"a {x.dtype} buffer read as {np.dtype(dtype)}"
                return x.array.reshape(-1)[(pointer - start) // x.dtype.itemsize:]
        raise AssertionError(f"pointer {pointer:#x} is in no array")

    @staticmethod
    def host_scalar(pointer: int, dtype):
        return np.frombuffer(ctypes.string_at(pointer, np.dtype(dtype).itemsize), dtype)[0]

    def gemm_ex(self, handle, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc,
                compute, algo) -> None:
        self.gemm_strided_batched_ex(handle, ta, tb, m, n, k, alpha, a, at, lda, 0, b, bt, ldb,
                                     0, beta, c, ct, ldc, 0, 1, compute, algo, name="gemm_ex")

    def gemm_strided_batched_ex(self, handle, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt,
                                ldb, sb, beta, c, ct, ldc, sc, batch, compute, algo,
                                name="gemm_strided_batched_ex") -> None:
        assert handle == 4242 and at == bt == ct and algo == self.GemmAlgo.DEFAULT
        dtype = self.DTYPES[at]
        self.log.append((name, self.ComputeType(compute).name, batch))
        strided_batched(self.Operation(ta).name, self.Operation(tb).name, m, n, k,
                        self.host_scalar(alpha, dtype), self.memory(a, dtype), lda, sa,
                        self.memory(b, dtype), ldb, sb, self.host_scalar(beta, dtype),
                        self.memory(c, dtype), ldc, sc, batch)


@pytest.fixture
def host_blas(monkeypatch):
    """``cublas``'s handle swapped for one over the stand-in bindings; yields a function
    running ``matmul_into`` on host arrays: ``(result, bindings' log)``."""
    workspace = HostArray(np.zeros(256, np.uint8))
    bindings = Bindings([workspace])
    handle = cublas._Handle(bindings, Bindings.DataType, workspace)
    monkeypatch.setattr(cublas, "_handle", lambda: handle)

    def matmul(a, b, ta, tb):
        a, b = HostArray(a), HostArray(b)
        out = HostArray(np.full(reference(a.array, b.array, ta, tb).shape, np.nan, a.dtype))
        bindings.arrays[1:] = [a, b, out]
        del bindings.log[:]
        assert cublas.matmul_into(out, a, b, ta, tb)
        return out.array, list(bindings.log)
    yield matmul


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_executor_issues_the_plan(host_blas, dtype):
    rng = np.random.default_rng(1)
    for case, ta, tb in [(((2, 1), (3,), 2, 3, 4), False, True), (((4,), (), 3, 2, 2), False, False),
                         (((), (2,), 1, 3, 2), True, False), (((), (), 5, 4, 3), True, True)]:
        a, b = operands(rng, *case, ta, tb, dtype)
        result, _ = host_blas(a, b, ta, tb)
        np.testing.assert_array_equal(result, reference(a, b, ta, tb))


def test_executor_sets_stream_and_workspace_once_and_calls_plain_or_batched_gemms(host_blas):
    a, b = np.ones((2, 3, 4), np.float64), np.ones((2, 4, 5), np.float64)
    _, first = host_blas(a, b, False, False)
    workspace = cublas._handle().workspace
    assert first == [("set_stream", 4242, 0),
                     ("set_workspace", 4242, workspace.array.ctypes.data, 256),
                     ("gemm_strided_batched_ex", "COMPUTE_64F", 2)]
    _, again = host_blas(a, b[0], False, False)     # same stream: no resets; one folded gemm
    assert again == [("gemm_ex", "COMPUTE_64F", 1)]


def test_tensor_float_32_flag_round_trips_and_selects_the_compute_type(host_blas):
    before = tf.config.experimental.tensor_float_32_execution_enabled()
    x = np.eye(3, dtype=np.float32)
    try:
        for enabled in (True, False):
            tf.config.experimental.enable_tensor_float_32_execution(enabled)
            assert tf.config.experimental.tensor_float_32_execution_enabled() is enabled
            assert config.TENSOR_FLOAT_32 is enabled
            _, log = host_blas(x, x, False, False)
            assert log[-1][1] == ("COMPUTE_32F_FAST_TF32" if enabled else "COMPUTE_32F")
            _, log = host_blas(x.astype(np.complex64), x.astype(np.complex64), False, False)
            assert log[-1][1] == "COMPUTE_32F"   # TF32 is for float32 only
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(before)


def test_integer_products_and_the_off_switch_leave_cublas_alone(host_blas, monkeypatch):
    x = HostArray(np.eye(2, dtype=np.int32))
    assert not cublas.matmul_into(HostArray(np.zeros((2, 2), np.int32)), x, x, False, False)
    monkeypatch.setattr(config, "USE_CUBLAS", False)
    y = HostArray(np.eye(2))
    assert not cublas.matmul_into(HostArray(np.zeros((2, 2))), y, y, False, False)


def test_a_threads_gemm_lands_on_its_own_stream_while_another_thread_captures():
    """Threads share a context's handle, whose stream is a setting: setting it and enqueueing
    the gemms are one step, so an eager gemm of one thread never lands in the CUDA graph
    another thread is capturing (nor the captured gemm on the eager stream)."""
    class Streams(Bindings):
        def __init__(self):
            super().__init__([])
            self.current, self.during_setup, self.landed = None, None, []

        def set_stream(self, handle, stream):
            self.current = stream

        def set_workspace(self, handle, pointer, nbytes):
            during, self.during_setup = self.during_setup, None
            if during is not None:
                during()

        def gemm_ex(self, handle, *args):
            self.landed.append((threading.current_thread().name, self.current))

    lib = Streams()
    handle = cublas._Handle(lib, Bindings.DataType, HostArray(np.zeros(256, np.uint8)))
    calls = handle.calls(plan((2, 2), (2, 2), False, False, "float32", False), 4)
    handle.run(calls, 1, 2, 3, 0)   # the handle was last used eagerly, on stream 0
    eager = threading.Thread(target=handle.run, args=(calls, 1, 2, 3, 0), name="eager")

    def another_thread_calls():   # while this thread moves the handle to its capture stream
        eager.start()
        eager.join(0.2)           # (it must wait until this thread's gemm is enqueued)
    lib.during_setup = another_thread_calls
    del lib.landed[:]
    handle.run(calls, 1, 2, 3, 77)
    eager.join()
    assert sorted(lib.landed) == sorted([(threading.current_thread().name, 77), ("eager", 0)])
