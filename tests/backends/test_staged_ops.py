"""Staged execution against eager execution, generated from the op table.

For every op in ``stagecraft.ir.OPS``, every dtype in ``OpDef.test_dtypes`` (default
``dtypes``) and every example ``OpDef.examples`` produces, a ``tf.function`` applying the op
to placeholders is run by the reference backend on ``tf.constant`` inputs and must give the
eager ``bind`` result: same dtype, shape and values (random ops: the same ``seed`` attribute
gives the same values), and the traced output type (shape inference) must agree with it. The
same holds for traces with unknown dimensions (``TensorSpec([None, ...])``) and unknown ranks
(``TensorSpec(None)``).

Gradients: for every op with a VJP rule (``stagecraft.autodiff.vjps.VJPS``) and every float64
example, the gradient of ``sum(out * w)`` through a staged function (tape outside the call, and
tape inside the traced body) must equal the eager tape's; second order (Hessian-vector
products with nested tapes around the call) on the first example of each op.
"""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.eager.bind import bind
from stagecraft.autodiff.vjps import VJPS
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt

from support.compare import SAME_KERNELS_TOL, assert_same_grads, assert_tensors_match
from support.gradients import Objective, first_order, gradients_traced_inside, second_order
from support.op_examples import as_list, dtypes_to_test, examples, inputs, seed

RTOL = ATOL = 1e-12  # identical kernels: staged values must match bit for bit-ish


def assert_same_tensor(actual, expected, where: str) -> None:
    assert_tensors_match(actual, expected, where, SAME_KERNELS_TOL)

# The executable specification; the Numba backend is checked against it in test_numba_ops.py.
BACKEND = "reference"


def _value_cases() -> list:
    cases = []
    for name in sorted(OPS):
        for d in dtypes_to_test(name):
            for i, ex in enumerate(examples(name, d)):
                cases.append(pytest.param(name, d, i, id=f"{name}-{d.name}-{i}"))
    return cases


def _has_float_output(name: str, ex) -> bool:
    outs = as_list(bind(OPS[name], *inputs(ex), **ex.attrs))
    return any(o.dtype.is_floating or o.dtype.is_complex for o in outs)


# Ops whose second derivative is undefined (their gradient goes through an op listed in
# autodiff.vjps.UNDEFINED, which raises): that error is tested where the op is.
NO_SECOND_ORDER = {
    "random_gamma": "random_gamma_grad has no derivative; tests/frontend/test_gamma_gradient.py",
}


def _grad_cases(second_order: bool) -> list:
    """Float64 examples with a float output (casts to int/bool have nothing to differentiate);
    for second order the first such example of each op."""
    cases = []
    for name in sorted(VJPS):
        op = OPS[name]
        if dt.float64 not in op.dtypes or (second_order and name in NO_SECOND_ORDER):
            continue
        usable = [i for i, ex in enumerate(examples(name, dt.float64))
                  if _has_float_output(name, ex)]
        for i in usable[:1] if second_order else usable:
            cases.append(pytest.param(name, i, id=f"{name}-{i}"))
    return cases


def _staged(op, attrs):
    return tf.function(lambda *xs: bind(op, *xs, **attrs), backend=BACKEND)


@pytest.mark.parametrize("name,d,i", _value_cases())
def test_staged_equals_eager(name, d, i):
    op = OPS[name]
    ex = examples(name, d)[i]
    xs = inputs(ex)
    expected = as_list(bind(op, *xs, **ex.attrs))
    f = _staged(op, ex.attrs)
    actual = as_list(f(*xs))
    assert len(actual) == len(expected)
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert_same_tensor(a, e, f"{name}[{i}] output {k}")
    # the traced output types (shape/dtype inference) describe what the backend produced
    concrete = f.get_concrete_function(*xs)
    for k, (t, e) in enumerate(zip(concrete.outputs, expected)):
        assert t.dtype == e.dtype, f"{name}[{i}] output {k}: inferred dtype {t.dtype}"
        assert t.shape.is_compatible_with(e.shape), \
            f"{name}[{i}] output {k}: inferred shape {t.shape}, actual {e.shape}"
    # a second call runs the cached trace and gives the same result again
    again = as_list(f(*xs))
    for k, (a, e) in enumerate(zip(again, expected)):
        assert_same_tensor(a, e, f"{name}[{i}] output {k} (second call)")
    assert f.experimental_get_tracing_count() == 1
    tensors = [x for x in xs if isinstance(x, tf.Tensor)]
    if len(tensors) != len(xs):
        return
    # a trace for unknown dimensions (known rank) runs the same kernels
    relaxed = f.get_concrete_function(*[tf.TensorSpec([None] * x.ndim, x.dtype) for x in xs])
    for k, (a, e) in enumerate(zip(as_list(relaxed(*xs)), expected)):
        assert_same_tensor(a, e, f"{name}[{i}] output {k} (unknown dims)")
    # ... and for unknown ranks (negative axes are resolved by the kernel at run time)
    unranked = f.get_concrete_function(*[tf.TensorSpec(None, x.dtype) for x in xs])
    for k, (a, e) in enumerate(zip(as_list(unranked(*xs)), expected)):
        assert_same_tensor(a, e, f"{name}[{i}] output {k} (unknown rank)")


def test_every_op_has_value_cases():
    covered = {p.values[0] for p in _value_cases()}
    assert covered == set(OPS)


def test_random_ops_same_seed_same_values_different_seed_differs():
    for name in ("random_normal", "random_uniform", "random_truncated_normal"):
        f = _staged(OPS[name], {"shape": (50,), "dtype": dt.float64})
        a, b, c = (f(np.asarray(s, np.int64)) for s in [(1, 2, 3), (1, 2, 3), (4, 5, 6)])
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert not np.array_equal(a.numpy(), c.numpy())


def test_staged_ops_on_relaxed_shapes():
    """A trace for unknown dimensions (reduce_retracing's ``[None, ...]`` placeholders) runs
    the same kernels: elementwise, matmul and reductions."""
    cases = [("add", {}), ("multiply", {}), ("matmul", {"transpose_a": False,
                                                        "transpose_b": False}),
             ("reduce_sum", {"axes": (0,), "keepdims": False}),
             ("transpose", {"perm": (1, 0)})]
    rng = np.random.default_rng(0)
    for name, attrs in cases:
        op = OPS[name]
        x = rng.uniform(-1, 1, (3, 3))
        y = rng.uniform(-1, 1, (3, 3))
        xs = [tf.constant(x)] + ([tf.constant(y)] if len(op.inputs) > 1 else [])
        f = _staged(op, attrs)
        spec = [tf.TensorSpec([None, None], tf.float64)] * len(xs)
        c = f.get_concrete_function(*spec)
        assert_same_tensor(c(*xs), bind(op, *xs, **attrs), f"{name} relaxed")


# -------------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("name,i", _grad_cases(second_order=False))
def test_staged_gradient_equals_eager(name, i):
    ex = examples(name, dt.float64)[i]
    obj = Objective(name, ex)
    y_e, g_e = first_order(obj, obj.xs, obj.sources)
    staged = tf.function(obj, backend=BACKEND)
    y_s, g_s = first_order(staged, obj.xs, obj.sources)
    np.testing.assert_allclose(y_s.numpy(), y_e.numpy(), rtol=RTOL, atol=ATOL)
    assert_same_grads(g_s, g_e, f"{name}[{i}] tape outside")

    # the tape inside the traced body: the VJP rules themselves are staged
    g_s = gradients_traced_inside(obj, obj.xs, obj.sources, BACKEND)
    assert_same_grads(g_s, g_e, f"{name}[{i}] tape inside")


@pytest.mark.parametrize("name,i", _grad_cases(second_order=True))
def test_staged_second_order_equals_eager(name, i):
    ex = examples(name, dt.float64)[i]
    obj = Objective(name, ex, quadratic=True)
    rng = np.random.default_rng(seed(name, "v"))
    vs = [tf.constant(rng.uniform(-1, 1, np.shape(obj.xs[j].numpy()))) for j in obj.sources]
    g_e, h_e = second_order(obj, obj.xs, obj.sources, vs)
    g_s, h_s = second_order(tf.function(obj, backend=BACKEND), obj.xs, obj.sources, vs)
    assert_same_grads(g_s, g_e, f"{name}[{i}] first order")
    assert_same_grads(h_s, h_e, f"{name}[{i}] second order")


def test_every_differentiable_op_has_gradient_cases():
    names = {p.values[0] for p in _grad_cases(second_order=False)}
    assert names == {n for n in VJPS if dt.float64 in OPS[n].dtypes}
    second = {p.values[0] for p in _grad_cases(second_order=True)}
    assert second == names - set(NO_SECOND_ORDER)
