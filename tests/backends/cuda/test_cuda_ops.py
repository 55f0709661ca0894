"""Every op of the op table on the CUDA eager path against its NumPy reference kernel,
generated from the op table's examples: same dtype, same shape, equal values (exactly for
integers and booleans, to the last bits for floats: summation orders differ). Random ops
have their own tests (the streams differ from NumPy's by design)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from stagecraft.backends.numba_cuda import eager, memory
from stagecraft.backends.numba_cuda.kernels import elementwise
from stagecraft.ir import OPS
from stagecraft.ir.ops import Kind

from support.compare import assert_arrays_match
from support.op_examples import as_list, cases


pytestmark = pytest.mark.cuda

RANDOM = sorted(n for n, op in OPS.items() if op.kind is Kind.RANDOM)


def assert_matches(actual, expected, where: str) -> None:
    assert memory.is_device_array(actual), f"{where}: not a device array ({type(actual)})"
    assert_arrays_match(memory.to_host(actual), expected, where)


def test_every_op_has_a_cuda_implementation():
    assert eager.OPT_OUT == {}
    assert sorted(n for n in OPS if n not in eager.TABLE) == []


def _run_examples(name: str) -> None:
    op = OPS[name]
    for d, ex in cases(name):
        where = f"{name}[{d.name}] {[np.shape(x) for x in ex.inputs]} {ex.attrs}"
        expected = op.kernel(*ex.inputs, **ex.attrs)
        inputs = [memory.to_device(np.asarray(x)) for x in ex.inputs]
        actual = eager.run(name, inputs, dict(ex.attrs))
        assert len(as_list(actual)) == op.num_outputs
        inferred = op.infer([_type(x) for x in inputs], **ex.attrs)
        for a, e, t in zip(as_list(actual), as_list(expected), inferred):
            assert_matches(a, e, where)
            assert np.dtype(a.dtype) == t.dtype.np, f"{where}: not the inferred dtype"


def _type(x):
    from stagecraft.ir import dtypes as dt
    from stagecraft.ir.types import TensorType
    return TensorType(dt.from_numpy(np.dtype(x.dtype)), tuple(x.shape))


@pytest.mark.parametrize("name", sorted(n for n in OPS if n not in RANDOM))
def test_cuda_equals_reference(name):
    _run_examples(name)


def test_eager_ops_from_several_threads_at_once():
    # (the simulator runs one kernel at a time: two threads' launches at once saw each other's
    # thread indices or failed; a full-suite run once returned a wrong reduce_sum here, and
    # tests call staged functions from several threads)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((3, 4)) for _ in range(4)]
    results: list = [[] for _ in inputs]

    def work(k: int) -> None:
        x = memory.to_device(inputs[k])
        for _ in range(5):
            results[k].append(float(memory.to_host(
                eager.run("reduce_sum", [x], {"axes": (0, 1), "keepdims": False}))))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, sums in zip(inputs, results):
        np.testing.assert_allclose(sums, [x.sum()] * 5, rtol=1e-12)


FLOAT_ELEMENTWISE = sorted(n for n, op in OPS.items()
                           if op.kind is Kind.ELEMENTWISE and any(d.is_floating for d in op.dtypes))


@pytest.mark.parametrize("name", FLOAT_ELEMENTWISE)
def test_gpu_spelling_of_numpy_functions_equals_reference(name, monkeypatch):
    """The kernels a GPU compiles call kernels.device_numpy (math functions and NumPy's
    algorithms re-written as device functions) instead of NumPy: run that spelling here."""
    monkeypatch.setattr(elementwise, "FORCE_DEVICE_NUMPY", True)
    _run_examples(name)
