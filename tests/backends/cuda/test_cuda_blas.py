"""Which engine runs GPU matmuls: NVIDIA's cuBLAS (through nvmath-python) for float and complex
dtypes on a real GPU, the Numba kernel on the simulator; and, on a real GPU, that cuBLAS gives
the reference results for every float dtype, batch broadcast, transpose and convolution GEMM.
The plan and the executor's calls are tested without CUDA in tests/backends/test_gemm_plan.py.
"""
from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

from stagecraft.backends.numba_cuda import config, cublas, eager, memory, recording
from stagecraft.backends.numba_cuda.detect import detect
from stagecraft.backends.numba_cuda.kernels import matmul
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt

from support.compare import assert_arrays_match
from support.op_examples import examples

pytestmark = pytest.mark.cuda

ON_GPU = detect() == "gpu"


def test_float_matmuls_use_cublas_exactly_on_a_real_gpu():
    """No warning either way: on a GPU the `cuda` extra (nvmath-python) must be installed;
    the simulator cannot run cuBLAS and says nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dtype in (np.float32, np.float64, np.complex64, np.complex128):
            assert cublas.available(dtype) == ON_GPU, np.dtype(dtype).name
    assert not cublas.available(np.int32)
    x = memory.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = eager.run("matmul", [x, x], {"transpose_a": False, "transpose_b": True})
    np.testing.assert_array_equal(memory.to_host(out), [[5, 14], [14, 50]])


def test_recordings_of_two_calls_agree_on_their_cublas_calls(monkeypatch):
    """A staged call becomes a CUDA graph only when two recordings agree step by step
    (recording.difference): a cuBLAS call must compare by its arrays' places among the call's
    allocations and by its plan, not by addresses."""
    if not ON_GPU:   # the simulator cannot run cuBLAS: a handle that enqueues nothing
        # (its "calls" are the plan itself, which recordings then compare)
        stand_in = types.SimpleNamespace(run=lambda *args: None, plans={},
                                         calls=lambda plan, itemsize: [plan])
        monkeypatch.setattr(cublas, "_handle", lambda: stand_in)
    a = memory.to_device(np.ones((2, 3, 4), np.float32))
    b, c = (memory.to_device(np.ones((4, 5), np.float32)) for _ in range(2))

    def call(b):
        with recording.recording() as rec:
            matmul.matmul(a, b, False, False, (2, 3, 5))
        return rec
    first = call(b)
    assert [type(i).__name__ for i in first.items] == ["LibraryCall"]
    assert recording.difference(first, call(b)) is None
    assert recording.difference(first, call(c)) == "step 1 (library call) makes a different call"
    monkeypatch.setattr(config, "TENSOR_FLOAT_32", not config.TENSOR_FLOAT_32)
    assert recording.difference(first, call(b)) == "step 1 (library call) makes a different call"


@pytest.mark.skipif(not ON_GPU, reason="cuBLAS runs on a real GPU only (Numba's CUDA simulator "
                                       "cannot call it); the first test covers the simulator")
def test_float_products_come_from_cublas_on_a_gpu(monkeypatch):
    def no_kernel(*args):
        raise AssertionError("the Numba matmul kernel ran for a float dtype")
    monkeypatch.setattr(matmul, "_blocked_kernel", no_kernel)
    rng = np.random.default_rng(0)
    shapes = [((64, 48), (48, 80), False, False), ((3, 1, 33, 17), (4, 33, 29), True, False),
              ((5, 16, 8), (12, 8), False, True), ((2, 1, 7, 9), (1, 3, 5, 7), True, True),
              ((300, 1), (1, 2), False, False)]
    for d in (dt.float32, dt.float64, dt.complex64, dt.complex128, dt.float16, dt.bfloat16):
        for sa, sb, ta, tb in shapes:
            # small integers: every product is exact in each dtype (TF32 too), so any
            # misplaced element, stride or transpose shows
            a, b = (rng.integers(-4, 5, size=s) for s in (sa, sb))
            if d.is_complex:
                a, b = a + 1j * rng.integers(-4, 5, size=sa), b * (1 - 2j)
            a, b = a.astype(d.np), b.astype(d.np)
            attrs = {"transpose_a": ta, "transpose_b": tb}
            out = eager.run("matmul", [memory.to_device(a), memory.to_device(b)], attrs)
            assert_arrays_match(memory.to_host(out), OPS["matmul"].kernel(a, b, **attrs),
                                f"matmul[{d.name}] {sa} {sb} {attrs}")
    for name in ("conv", "conv_backprop_input", "conv_backprop_filter"):   # their GEMMs
        for d in (dt.float32, dt.float64):
            for ex in examples(name, d):
                out = eager.run(name, [memory.to_device(np.asarray(x)) for x in ex.inputs],
                                dict(ex.attrs))
                assert_arrays_match(memory.to_host(out), OPS[name].kernel(*ex.inputs, **ex.attrs),
                                    f"{name}[{d.name}] {ex.attrs}")
