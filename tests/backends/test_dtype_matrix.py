"""The whole dtype matrix of the op table: every op in every dtype it declares that the default
sample (``support.op_examples.dtypes_to_test``: the classic dtypes plus one other per op)
leaves out. Marked ``full_matrix`` (run with ``--full-matrix``); the default run keeps one
smoke case per new dtype.

Per op: the eager result has the inferred dtype and shape and equals the NumPy reference
kernel; one staged function over all of the op's extra cases gives the same on the reference
backend and on Numba (the CUDA backend's matrix is in cuda/test_cuda_dtype_matrix.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops import Kind
from stagecraft.ir.types import TensorType

from support.compare import BACKEND_TOL, assert_tensors_match
from support.op_examples import apply_all, as_list, examples, extra_dtype_cases, inputs

NEW = tuple(d for d in dt.ALL if d not in dt.CLASSIC)
WITH_EXTRA = sorted(n for n in OPS if extra_dtype_cases(n))
RANDOM = {n for n, op in OPS.items() if op.kind is Kind.RANDOM}


def _type(x) -> TensorType:
    a = np.asarray(x)
    return TensorType(dt.from_numpy(a.dtype), a.shape)


def _check_eager(name: str, cases: list) -> None:
    op = OPS[name]
    for d, ex in cases:
        where = f"{name}[{d.name}] {[np.shape(x) for x in ex.inputs]} {ex.attrs}"
        predicted = op.infer([_type(x) for x in ex.inputs], **ex.attrs)
        got = as_list(bind(op, *inputs(ex), **ex.attrs))
        want = as_list(op.kernel(*[np.asarray(x) for x in ex.inputs], **ex.attrs))
        for g, w, t in zip(got, want, predicted):
            assert g.dtype is t.dtype and np.asarray(w).dtype == t.dtype.np, where
            np.testing.assert_array_equal(g.numpy(), w, err_msg=where)


def _check_backends(name: str, cases: list) -> None:
    flat_cases = [(name, d, ex) for d, ex in cases]
    flat = [x for _, _, ex in flat_cases for x in inputs(ex)]
    fn = apply_all(flat_cases)
    expected = [as_list(bind(OPS[name], *inputs(ex), **ex.attrs)) for _, _, ex in flat_cases]
    expected = [e for group in expected for e in group]
    for backend in ("reference", "numba"):
        got = tf.function(fn, backend=backend)(*flat)
        for k, (a, e) in enumerate(zip(got, expected)):
            assert_tensors_match(a, e, f"{name} output {k} on {backend}", BACKEND_TOL)


@pytest.mark.full_matrix
@pytest.mark.parametrize("name", WITH_EXTRA)
def test_every_dtype_eager_staged_and_numba(name):
    cases = extra_dtype_cases(name)
    _check_eager(name, cases)
    if name not in RANDOM:
        _check_backends(name, cases)


# The default run: each new dtype through a few ops of each kind, eagerly and staged on the
# reference backend and on Numba (one staged function for all of them: compiling is what costs).
# Ops whose Numba kernels are specialized per dtype (the elementwise ones share generated
# scalar code; the generated per-op tests also run a new dtype on one op in three).
SMOKE = ["reduce_sum", "matmul", "cast"]


def test_new_dtypes_smoke():
    cases = [(n, d, examples(n, d)[-1]) for d in NEW for n in SMOKE
             if n in OPS and d in OPS[n].dtypes]
    for d in NEW:
        assert sum(c[1] is d for c in cases) == len(SMOKE), d
    for n, d, ex in cases:
        _check_eager(n, [(d, ex)])
    flat = [x for _, _, ex in cases for x in inputs(ex)]
    fn = apply_all(cases)
    expected = tf.function(fn, backend="reference")(*flat)
    got = tf.function(fn, backend="numba")(*flat)
    assert len(got) == len(expected) >= len(cases)
    for k, (a, e) in enumerate(zip(got, expected)):
        assert_tensors_match(a, e, f"smoke output {k}", BACKEND_TOL)
