"""Row-major (batched, broadcast) matrix products as column-major cuBLAS gemm calls.

cuBLAS reads matrices column-major; a C-contiguous ``r x c`` matrix is, read column-major, its
transpose (``c x r`` with leading dimension ``c``). So the row-major product
``out = op(a) @ op(b)`` is computed as the column-major ``out^T = op(b)^T @ op(a)^T``: cuBLAS's
``A`` is the buffer of ``b`` (leading dimension ``b.shape[-1]``, transposed when ``b`` is),
its ``B`` the buffer of ``a``, and ``C`` the buffer of ``out`` with ``ldc = n``; cuBLAS's
``m`` and ``n`` are the row-major ``n`` and ``m``. Nothing is copied.

Batch dimensions are covered by strided-batched calls: matrix ``z`` of a call is read at
``offset + z * stride`` of each buffer, and an operand broadcast over the call's batch has
stride 0. One stride covers a run of consecutive batch dims when, for each buffer, each dim's
stride is the next dim's stride times that dim's size (all zeros qualify). Where no single
run covers every batch dim (``[5, 1]`` against ``[1, 7]``), the longest run (by matrix count)
is one call and the other dims are looped over: one call per index of the other dims (in
the example, 5 calls of 7 matrices). When ``b`` is shared by every matrix of a run and ``a``'s
matrices are consecutive and not transposed, the run folds into the rows of one plain gemm
(``[B, m, k] @ [k, n]`` is one ``[B*m, k] @ [k, n]``).

>>> p = plan((2, 3, 4), (4, 5), False, False, "float32", tf32=False)
>>> p.data_type, p.compute_type, len(p.calls)
('CUDA_R_32F', 'COMPUTE_32F', 1)
>>> c = p.calls[0]
>>> (c.trans_a, c.trans_b, c.m, c.n, c.k, c.lda, c.ldb, c.ldc, c.batch)
('N', 'N', 5, 6, 4, 5, 4, 5, 1)
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from stagecraft.backends.numba_cuda.layout import broadcast_strides, c_strides

# cuBLAS's names (cudaDataType, cublasComputeType_t) of each dtype it multiplies; the
# executor looks them up in the bindings' enums. Scalars (alpha, beta) have the operands' type.
DATA_TYPES = {"float32": "CUDA_R_32F", "float64": "CUDA_R_64F", "complex64": "CUDA_C_32F",
              "complex128": "CUDA_C_64F"}
_COMPUTE_TYPES = {"float32": "COMPUTE_32F", "float64": "COMPUTE_64F",
                  "complex64": "COMPUTE_32F", "complex128": "COMPUTE_64F"}
# cuBLAS takes dims, leading dimensions and batch counts as 32-bit ints.
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Gemm:
    """One column-major strided-batched gemm: for ``z`` in ``range(batch)``,
    ``C_z = op(A_z) @ op(B_z)`` with ``C_z`` ``m x n``. ``A`` lives in the buffer of the
    row-major operand ``b``, ``B`` in that of ``a``, ``C`` in ``out``; offsets and strides
    count elements."""
    trans_a: str            # "N" or "T" (cuBLAS's Operation names)
    trans_b: str
    m: int
    n: int
    k: int
    a_offset: int
    lda: int
    stride_a: int
    b_offset: int
    ldb: int
    stride_b: int
    c_offset: int
    ldc: int
    stride_c: int
    batch: int


@dataclass(frozen=True)
class GemmPlan:
    """The cuBLAS calls of one matmul, all with the same data and compute types."""
    data_type: str          # a cudaDataType name, e.g. "CUDA_R_32F"
    compute_type: str       # a cublasComputeType_t name, e.g. "COMPUTE_32F_FAST_TF32"
    calls: tuple[Gemm, ...]


def compute_type(dtype: str, tf32: bool) -> str:
    """cuBLAS's compute type for operands of ``dtype``: TensorFloat-32 tensor cores
    (``COMPUTE_32F_FAST_TF32``: inputs rounded to 10 mantissa bits, float32 accumulation) only
    for float32 when ``tf32`` is set, as TensorFlow does.

    >>> compute_type("float32", True), compute_type("float32", False)
    ('COMPUTE_32F_FAST_TF32', 'COMPUTE_32F')
    >>> compute_type("complex64", True)
    'COMPUTE_32F'
    """
    if dtype == "float32" and tf32:
        return "COMPUTE_32F_FAST_TF32"
    return _COMPUTE_TYPES[dtype]


@functools.lru_cache(maxsize=4096)
def plan(a_shape: tuple, b_shape: tuple, transpose_a: bool, transpose_b: bool, dtype: str,
         tf32: bool) -> GemmPlan:
    """The cuBLAS calls computing the C-contiguous ``out = op(a) @ op(b)`` of C-contiguous
    ``a`` and ``b`` (rank >= 2; batch dims broadcast as in ``np.matmul``; ``op`` transposes
    the last two dims when its flag is set). ``dtype`` is a key of :data:`DATA_TYPES`. Every
    matrix dim must be at least 1 (an empty product needs no call, and ``k = 0`` is a fill).
    Cached: eager calls repeat shapes.

    >>> p = plan((4, 3), (5, 4), True, True, "float64", tf32=True)
    >>> p.compute_type, [(c.trans_a, c.trans_b, c.m, c.n, c.k) for c in p.calls]
    ('COMPUTE_64F', [('T', 'T', 5, 3, 4)])
    >>> [c.batch for c in plan((5, 1, 2, 2), (7, 2, 2), False, False, "float32", False).calls]
    [7, 7, 7, 7, 7]
    """
    a_shape, b_shape = tuple(int(d) for d in a_shape), tuple(int(d) for d in b_shape)
    m, k = (a_shape[-1], a_shape[-2]) if transpose_a else (a_shape[-2], a_shape[-1])
    kb, n = (b_shape[-1], b_shape[-2]) if transpose_b else (b_shape[-2], b_shape[-1])
    if kb != k or min(m, n, k) < 1:
        raise ValueError(f"gemm plan: op(a) of shape {m} x {k} and op(b) of {kb} x {n} (from "
                         f"shapes {a_shape} and {b_shape}) must have matching inner dims and "
                         f"no empty dim; empty products are handled before planning.")
    batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    size_a, size_b = a_shape[-2] * a_shape[-1], b_shape[-2] * b_shape[-1]
    # (size, a stride, b stride, out stride) per batch dim, in elements; size-1 dims of the
    # output move nothing and are dropped
    dims = [(d, sa * size_a, sb * size_b, so * m * n) for d, sa, sb, so in zip(
        batch, broadcast_strides(a_shape[:-2], batch), broadcast_strides(b_shape[:-2], batch),
        c_strides(batch)) if d != 1]
    start, stop = _longest_run(dims)
    inner, outer = dims[start:stop], dims[:start] + dims[stop:]
    count = math.prod(d[0] for d in inner)
    stride_a, stride_b, stride_c = inner[-1][1:] if inner else (0, 0, 0)
    rows = m
    # b shared by the run, a's matrices consecutive and untransposed, out's consecutive: the
    # run is count * m rows of one product
    if (count > 1 and stride_b == 0 and not transpose_a and stride_a == m * k
            and stride_c == m * n and count * m <= _INT32_MAX):
        rows, count = count * m, 1
    calls = []
    for index in itertools.product(*(range(d[0]) for d in outer)):
        offsets = [sum(i * d[j] for i, d in zip(index, outer)) for j in (1, 2, 3)]
        calls.append(Gemm(
            trans_a="T" if transpose_b else "N", trans_b="T" if transpose_a else "N",
            m=n, n=rows, k=k,
            a_offset=offsets[1], lda=b_shape[-1], stride_a=stride_b,
            b_offset=offsets[0], ldb=a_shape[-1], stride_b=stride_a,
            c_offset=offsets[2], ldc=n, stride_c=stride_c, batch=count))
    return GemmPlan(DATA_TYPES[dtype], compute_type(dtype, tf32), tuple(calls))


def _longest_run(dims: Sequence[tuple[int, int, int, int]]) -> tuple[int, int]:
    """``(start, stop)`` of the consecutive dims with the most matrices that one stride per
    buffer covers (the innermost such run on ties; ``(0, 0)`` when there are no dims)."""
    best, best_count = (len(dims), len(dims)), 1
    for start in range(len(dims)):
        count = 1
        for stop in range(start + 1, len(dims) + 1):
            if stop - start > 1 and not all(dims[stop - 2][j] == dims[stop - 1][j] *
                                            dims[stop - 1][0] for j in (1, 2, 3)):
                break
            count *= dims[stop - 1][0]
            if count >= best_count:
                best, best_count = (start, stop), count
    return best
