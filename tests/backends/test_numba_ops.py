"""The Numba backend against the reference backend, generated from the op table.

For every op, one staged function applies the op to every example of every dtype (one compile
per op keeps the suite fast: compiling is what costs). Its results on ``backend="numba"`` must
equal those of ``backend="reference"``: the same dtype and shape, exactly equal integers and
booleans, floats equal up to the last bits (Numba's libm and summation order differ from
NumPy's SIMD loops). The same again for a trace with unknown dimensions (known ranks), which
exercises the run-time shape paths of the generated code. Gradients: the sum of the first
two float64 examples' objectives of every differentiable op, differentiated with the tape
outside the staged call (forward and backward compiled by Numba), must equal the eager
gradients; for a set of ops also with the tape inside the traced body (the VJP rules compiled
by Numba) and to second order.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import stagecraft as tf  # noqa: E402
from stagecraft.backends.numba_cpu import LoweringError  # noqa: E402
from stagecraft.backends.numba_cpu.lowerings import LOWER  # noqa: E402
from stagecraft.autodiff.vjps import VJPS  # noqa: E402
from stagecraft.ir import OPS  # noqa: E402
from stagecraft.ir import dtypes as dt  # noqa: E402

from support.compare import (BACKEND_TOL, GRAD_RTOL, assert_same_grads,  # noqa: E402
                             assert_tensors_match)
from support.gradients import (Objective, first_order, gradients_traced_inside,  # noqa: E402
                               second_order)
from support.op_examples import apply_all, cases, examples, inputs, seed  # noqa: E402

# Ops whose lowering needs static shapes in some cases (batched matmul, batched triangular
# solves: their batch dims broadcast): a clear compile error.
NEEDS_STATIC_SHAPES = {"matmul", "triangular_solve"}
# Ops whose VJP rules are also compiled from inside a trace and differentiated twice (each
# compile costs ~0.2-1 s, so not every op: the rules are the same ops checked above).
INSIDE = ["matmul", "tanh", "reduce_max", "gather", "strided_slice", "concat", "divide",
          "cumsum"]


def _cases(name: str) -> list:
    return [(name, d, ex) for d, ex in cases(name)]


def assert_close(actual, expected, where: str) -> None:
    # Floats agree to the last few bits (transcendentals, reassociated sums of the kernels).
    assert_tensors_match(actual, expected, where, BACKEND_TOL)


def test_every_op_has_a_lowering():
    # The backend's one table (see also tests/backends/test_lowering_tables.py).
    assert sorted(n for n in OPS if n not in LOWER) == []


@pytest.mark.parametrize("name", sorted(OPS))
def test_numba_equals_reference(name):
    cases = _cases(name)
    flat = [x for _, _, ex in cases for x in inputs(ex)]
    fn = apply_all(cases)
    expected = tf.function(fn, backend="reference")(*flat)
    staged = tf.function(fn, backend="numba")
    for k, (a, e) in enumerate(zip(staged(*flat), expected)):
        assert_close(a, e, f"{name} output {k}")


# Every other op (and the ops needing static shapes) in the default run: each is a compile of
# its own, the largest cold cost of the suite; --full-matrix runs them all.
_UNKNOWN_DIMS_SAMPLE = set(sorted(OPS)[::2]) | NEEDS_STATIC_SHAPES


@pytest.mark.parametrize("name", [n if n in _UNKNOWN_DIMS_SAMPLE else
                                  pytest.param(n, marks=pytest.mark.full_matrix)
                                  for n in sorted(OPS)])
def test_numba_with_unknown_dims_equals_reference(name):
    # The examples of the first dtype (the run-time shape paths do not depend on the dtype).
    cases = _cases(name)
    first = [(n, d, ex) for n, d, ex in cases if d == cases[0][1]]
    flat = [x for _, _, ex in first for x in inputs(ex)]
    expected = tf.function(apply_all(first), backend="reference")(*flat)
    staged = tf.function(apply_all(first), backend="numba")
    if all(isinstance(x, tf.Tensor) for x in flat):
        specs = [tf.TensorSpec([None] * x.ndim, x.dtype) for x in flat]
        relaxed = staged.get_concrete_function(*specs)
        if name in NEEDS_STATIC_SHAPES:
            with pytest.raises(LoweringError, match=f"^{name} at .*backend=\"reference\""):
                relaxed(*flat)
            return
        for k, (a, e) in enumerate(zip(relaxed(*flat), expected)):
            assert_close(a, e, f"{name} output {k} (unknown dims)")


def _grad_ops() -> list:
    return sorted(n for n in VJPS if dt.float64 in OPS[n].dtypes)


def _objectives(name: str, quadratic: bool = False) -> list:
    objs = []
    for ex in examples(name, dt.float64):
        obj = Objective(name, ex, quadratic)
        if any(w is not None for w in obj.w) and obj.sources:
            objs.append(obj)
    return objs


class _Total:
    """The sum of several objectives over one flat argument list."""

    def __init__(self, objs: list):
        self.objs = objs
        self.xs = [x for o in objs for x in o.xs]
        self.sources, k = [], 0
        for o in objs:
            self.sources += [k + i for i in o.sources]
            k += len(o.xs)

    def __call__(self, *xs):
        total, k = None, 0
        for o in self.objs:
            y = tf.cast(o(*xs[k:k + len(o.xs)]), tf.float64)  # casts may give float32
            k += len(o.xs)
            total = y if total is None else total + y
        return total


@pytest.mark.parametrize("name", _grad_ops())
def test_numba_gradients_equal_eager(name):
    total = _Total(_objectives(name)[:2])
    y_e, g_e = first_order(total, total.xs, total.sources)
    y_s, g_s = first_order(tf.function(total, backend="numba"), total.xs, total.sources)
    np.testing.assert_allclose(y_s.numpy(), y_e.numpy(), rtol=GRAD_RTOL)
    assert_same_grads(g_s, g_e, f"{name} tape outside")


@pytest.mark.parametrize("name", INSIDE)
def test_numba_compiles_vjp_rules_traced_inside(name):
    total = _Total(_objectives(name)[:1])
    _, g_e = first_order(total, total.xs, total.sources)
    g_s = gradients_traced_inside(total, total.xs, total.sources, "numba")
    assert_same_grads(g_s, g_e, f"{name} tape inside")


def test_numba_second_order_equals_eager():
    total = _Total([_objectives(n, quadratic=True)[0] for n in INSIDE[:3]])
    rng = np.random.default_rng(seed("second order"))
    vs = [tf.constant(rng.uniform(-1, 1, np.shape(total.xs[j].numpy()))) for j in total.sources]
    g_e, h_e = second_order(total, total.xs, total.sources, vs)
    g_s, h_s = second_order(tf.function(total, backend="numba"), total.xs, total.sources, vs)
    assert_same_grads(g_s, g_e, "first order")
    assert_same_grads(h_s, h_e, "second order")

