"""The CUDA backend in every dtype the default sample leaves out (see
tests/backends/test_dtype_matrix.py): the eager path gives the NumPy reference kernel's dtype,
shape and values, and staged elementwise and reduction ops (generated kernels) those of the
reference backend. Marked ``full_matrix``; the default run keeps one smoke case per new
dtype."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cuda import eager, memory
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops import Kind

from support.compare import assert_arrays_match, assert_tensors_match
from support.op_examples import apply_all, as_list, examples, extra_dtype_cases, inputs

pytestmark = pytest.mark.cuda

NEW = tuple(d for d in dt.ALL if d not in dt.CLASSIC)
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


def _check(name: str, cases: list) -> None:
    op = OPS[name]
    for d, ex in cases:
        where = f"{name}[{d.name}] {[np.shape(x) for x in ex.inputs]} {ex.attrs}"
        expected = as_list(op.kernel(*ex.inputs, **ex.attrs))
        got = as_list(eager.run(name, [memory.to_device(np.asarray(x)) for x in ex.inputs],
                                dict(ex.attrs)))
        assert len(got) == len(expected), where
        for a, e in zip(got, expected):
            assert_arrays_match(memory.to_host(a), e, where)


@pytest.mark.full_matrix
@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items()
                                        if op.kind is not Kind.RANDOM and extra_dtype_cases(n)))
def test_every_dtype_on_cuda(name):
    _check(name, extra_dtype_cases(name))


@pytest.mark.full_matrix
@pytest.mark.parametrize("kind", [Kind.ELEMENTWISE, Kind.REDUCE], ids=lambda k: k.name)
def test_every_dtype_staged_on_cuda(kind):
    cases = [(n, d, ex) for n, op in sorted(OPS.items()) if op.kind is kind
             for d, ex in extra_dtype_cases(n)]
    flat = [x for _, _, ex in cases for x in inputs(ex)]
    fn = apply_all(cases)
    expected = tf.function(fn, backend="reference")(*flat)
    with tf.device("/gpu:0"):
        actual = tf.function(fn)(*flat)
    assert len(actual) == len(expected)
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert_tensors_match(a, e, f"output {k}", device=GPU)


@pytest.mark.parametrize("d", NEW, ids=[d.name for d in NEW])
def test_new_dtypes_smoke_on_cuda(d):
    for name in ("add", "floordiv", "reduce_sum", "matmul", "cast", "right_shift"):
        if d in OPS[name].dtypes:
            _check(name, [(d, ex) for ex in examples(name, d)[:2]])
