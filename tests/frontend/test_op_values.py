"""The public math wrappers against independent NumPy expectations, generated from the tables
below (wrapper, reference, dtypes), plus TensorFlow's dtype rules for Python and NumPy values.

References compute in float64 (or exact integer arithmetic) from first principles, not by
calling the kernel's own NumPy function where that would make the test circular.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import stagecraft as tf

from support.compare import assert_tensor_equals_reference as _check
from support.op_examples import random_values as _values

F = ("float32", "float64")
I = ("int32", "int64")
N = I + F
B = ("bool",)
A = B + N


def _wrapper(path: str) -> Callable:
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _round_half_even(x):
    return np.vectorize(lambda v: float(round(float(v))), otypes=[np.float64])(x)


def _sigmoid(x):
    return np.vectorize(lambda v: 1.0 / (1.0 + math.exp(-v)), otypes=[np.float64])(x)


def _softplus(x):
    return np.vectorize(lambda v: math.log1p(math.exp(v)), otypes=[np.float64])(x)


@dataclass
class Case:
    name: str             # attribute path under `stagecraft`
    ref: Callable         # reference on float64 / Python-int arrays
    dtypes: tuple
    lo: float = -3.0
    hi: float = 3.0
    out: Callable = lambda d: d  # output dtype name from the input dtype name
    nonzero_rhs: bool = False


_same = lambda d: d  # noqa: E731
_bool = lambda d: "bool"  # noqa: E731
_float = lambda d: d if d in F else "float64"  # noqa: E731

UNARY = [
    Case("negative", lambda x: -x, N),
    Case("abs", lambda x: np.where(x < 0, -x, x), N),
    Case("sign", lambda x: (x > 0).astype(np.int64) - (x < 0).astype(np.int64), N),
    Case("square", lambda x: x * x, N),
    Case("exp", lambda x: np.vectorize(math.exp)(x), F),
    Case("math.log", lambda x: np.vectorize(math.log)(x), F, lo=0.1, hi=5.0),
    Case("math.log1p", lambda x: np.vectorize(math.log1p)(x), F, lo=-0.9, hi=3.0),
    Case("sqrt", lambda x: np.vectorize(math.sqrt)(x), F, lo=0.0, hi=5.0),
    Case("math.rsqrt", lambda x: 1.0 / np.vectorize(math.sqrt)(x), F, lo=0.1, hi=5.0),
    Case("sin", lambda x: np.vectorize(math.sin)(x), F),
    Case("cos", lambda x: np.vectorize(math.cos)(x), F),
    Case("tanh", lambda x: np.vectorize(math.tanh)(x), F),
    Case("sigmoid", _sigmoid, F, lo=-20, hi=20),
    Case("math.softplus", _softplus, F, lo=-20, hi=20),
    Case("nn.relu", lambda x: np.where(x > 0, x, 0), N),
    Case("floor", lambda x: np.vectorize(math.floor, otypes=[np.float64])(x), F),
    Case("math.ceil", lambda x: np.vectorize(math.ceil, otypes=[np.float64])(x), F),
    Case("round", _round_half_even, N),
    Case("logical_not", lambda x: x == 0, B),
]

BINARY = [
    Case("add", lambda x, y: x + y, N),
    Case("subtract", lambda x, y: x - y, N),
    Case("multiply", lambda x, y: x * y, N),
    Case("divide", lambda x, y: x.astype(np.float64) / y, N, out=_float, nonzero_rhs=True),
    Case("math.truediv", lambda x, y: x.astype(np.float64) / y, N, out=_float, nonzero_rhs=True),
    Case("math.floordiv", lambda x, y: np.floor(x.astype(np.float64) / y), N, nonzero_rhs=True),
    Case("math.floormod", lambda x, y: x - np.floor(x.astype(np.float64) / y) * y, N,
         nonzero_rhs=True),
    Case("pow", lambda x, y: np.vectorize(lambda a, b: float(a) ** float(b),
                                          otypes=[np.float64])(x, y), N, lo=0.0, hi=3.0),
    Case("maximum", lambda x, y: np.where(x >= y, x, y), N),
    Case("minimum", lambda x, y: np.where(x <= y, x, y), N),
    Case("equal", lambda x, y: x == y, A, lo=-1, hi=1, out=_bool),
    Case("not_equal", lambda x, y: x != y, A, lo=-1, hi=1, out=_bool),
    Case("less", lambda x, y: x < y, N, lo=-1, hi=1, out=_bool),
    Case("less_equal", lambda x, y: x <= y, N, lo=-1, hi=1, out=_bool),
    Case("greater", lambda x, y: x > y, N, lo=-1, hi=1, out=_bool),
    Case("greater_equal", lambda x, y: x >= y, N, lo=-1, hi=1, out=_bool),
    Case("logical_and", lambda x, y: (x != 0) & (y != 0), B),
    Case("logical_or", lambda x, y: (x != 0) | (y != 0), B),
    Case("logical_xor", lambda x, y: (x != 0) != (y != 0), B),
]


def _trunc_mean(x, axis, keepdims):
    s = np.sum(x.astype(np.float64), axis=axis, keepdims=keepdims)
    n = x.size // max(np.size(s), 1)
    return np.trunc(s / n)


REDUCTIONS = [
    Case("reduce_sum", lambda x, axis, keepdims: np.add.reduce(
        x.astype(np.float64), axis=axis, keepdims=keepdims), N),
    Case("reduce_mean", lambda x, axis, keepdims: np.add.reduce(
        x.astype(np.float64), axis=axis, keepdims=keepdims) / (
            x.size // max(np.size(np.add.reduce(x, axis=axis, keepdims=keepdims)), 1)), F),
    Case("reduce_mean", _trunc_mean, I),
    Case("reduce_max", lambda x, axis, keepdims: np.maximum.reduce(
        x, axis=axis, keepdims=keepdims), N),
    Case("reduce_min", lambda x, axis, keepdims: np.minimum.reduce(
        x, axis=axis, keepdims=keepdims), N),
    Case("reduce_prod", lambda x, axis, keepdims: np.multiply.reduce(
        x.astype(np.float64), axis=axis, keepdims=keepdims), N, lo=0.5, hi=1.5),
    Case("reduce_all", lambda x, axis, keepdims: np.logical_and.reduce(
        x, axis=axis, keepdims=keepdims), B),
    Case("reduce_any", lambda x, axis, keepdims: np.logical_or.reduce(
        x, axis=axis, keepdims=keepdims), B),
]

UNARY_SHAPES = [(), (5,), (3, 4)]
BINARY_SHAPES = [((), ()), ((5,), (5,)), ((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)),
                 ((), (2, 3)), ((4,), ())]
REDUCE_SHAPES_AXES = [((), None), ((5,), None), ((5,), 0), ((5,), -1), ((3, 4), None),
                      ((3, 4), 0), ((3, 4), 1), ((3, 4), [0, 1]), ((2, 3, 4), [0, 2]),
                      ((2, 3, 4), -2)]


def _params(cases, shapes, extra=""):
    out = []
    for c in cases:
        for d in c.dtypes:
            for i, s in enumerate(shapes):
                out.append(pytest.param(c, d, s, id=f"{c.name.split('.')[-1]}-{d}-{i}{extra}"))
    return out


@pytest.mark.parametrize("case,dtype,shape", _params(UNARY, UNARY_SHAPES))
def test_unary(case: Case, dtype: str, shape):
    x = _values(f"{case.name}/{dtype}/{shape}", dtype, shape, case.lo, case.hi)
    got = _wrapper(case.name)(tf.constant(x))
    want = case.ref(x.astype(np.float64) if dtype in F else x.astype(np.int64)
                    if dtype in I else x)
    _check(got, want, case.out(dtype), f"{case.name}({x!r})")


@pytest.mark.parametrize("case,dtype,shape", _params(BINARY, BINARY_SHAPES))
def test_binary(case: Case, dtype: str, shape):
    sa, sb = shape
    key = f"{case.name}/{dtype}/{shape}"
    x = _values(key + "/x", dtype, sa, case.lo, case.hi)
    y = _values(key + "/y", dtype, sb, case.lo, case.hi, nonzero=case.nonzero_rhs)
    got = _wrapper(case.name)(tf.constant(x), tf.constant(y))
    up = (lambda a: a.astype(np.float64)) if dtype in F else (
        (lambda a: a.astype(np.int64)) if dtype in I else (lambda a: a))
    want = case.ref(up(x), up(y))
    if case.name == "pow" and dtype in I:
        want = np.rint(want)  # exact small integer powers
    _check(got, want, case.out(dtype), f"{case.name}({x!r}, {y!r})")


@pytest.mark.parametrize("case,dtype,shape", _params(BINARY, [((3, 4), ())], "-scalar"))
def test_binary_with_python_scalar_adopts_the_tensor_dtype(case: Case, dtype: str, shape):
    x = _values(f"{case.name}/{dtype}/py", dtype, (3, 4), case.lo, case.hi)
    scalar = {"bool": True, "int32": 2, "int64": 2}.get(dtype, 1.5)
    fn = _wrapper(case.name)
    up = (lambda a: np.asarray(a, np.float64)) if dtype in F else (
        (lambda a: np.asarray(a, np.int64)) if dtype in I else np.asarray)
    left = fn(tf.constant(x), scalar)
    _check(left, case.ref(up(x), up(scalar)), case.out(dtype), f"{case.name}(x, {scalar!r})")
    if case.nonzero_rhs:
        x = np.where(x == 0, np.ones((), x.dtype), x)
    right = fn(scalar, tf.constant(x))
    _check(right, case.ref(up(scalar), up(x)), case.out(dtype), f"{case.name}({scalar!r}, x)")


def _reduce_params():
    out = []
    for c in REDUCTIONS:
        for d in c.dtypes:
            for i, (s, axis) in enumerate(REDUCE_SHAPES_AXES):
                for k in (False, True):
                    out.append(pytest.param(c, d, s, axis, k,
                                            id=f"{c.name}-{d}-{i}{'-keepdims' if k else ''}"))
    return out


@pytest.mark.parametrize("case,dtype,shape,axis,keepdims", _reduce_params())
def test_reduction(case: Case, dtype: str, shape, axis, keepdims):
    x = _values(f"{case.name}/{dtype}/{shape}/{axis}", dtype, shape, case.lo, case.hi)
    got = _wrapper(case.name)(tf.constant(x), axis=axis, keepdims=keepdims)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    want = case.ref(x, np_axis, keepdims)
    _check(got, want, dtype, f"{case.name}({x!r}, axis={axis}, keepdims={keepdims})",
           rtol=1e-5 if dtype == "float32" else None)


@pytest.mark.parametrize("name,fn", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("dtype", N)
@pytest.mark.parametrize("output_type", ["int32", "int64"])
def test_arg_reductions(name, fn, dtype, output_type):
    x = _values(f"{name}/{dtype}", dtype, (3, 4), -20, 20)
    for axis in (0, 1, -1):
        got = _wrapper(name)(tf.constant(x), axis=axis, output_type=getattr(tf, output_type))
        # First occurrence of the extreme, like TensorFlow.
        ext = x.max(axis=axis, keepdims=True) if name == "argmax" else x.min(axis=axis,
                                                                           keepdims=True)
        want = np.argmax(x == ext, axis=axis)
        _check(got, want, output_type, f"{name}(axis={axis})")
    assert _wrapper(name)(tf.constant(x)).dtype == tf.int64  # the default output_type


@pytest.mark.parametrize("dtype", N)
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(dtype, exclusive, reverse):
    x = _values(f"cumsum/{dtype}", dtype, (3, 4), -3, 3)
    for axis in (0, 1, -1):
        xs = np.asarray(x, np.float64 if dtype in F else np.int64)
        n = xs.shape[axis]
        moved = np.moveaxis(xs, axis, -1)
        want = np.zeros_like(moved)
        for j in range(n):
            idx = range(j + 1, n) if reverse and exclusive else range(j, n) if reverse else (
                range(0, j) if exclusive else range(0, j + 1))
            for k in idx:
                want[..., j] += moved[..., k]
        want = np.moveaxis(want, -1, axis)
        got = tf.cumsum(tf.constant(x), axis=axis, exclusive=exclusive, reverse=reverse)
        _check(got, want, dtype, f"cumsum(axis={axis}, exclusive={exclusive}, reverse={reverse})")


# ------------------------------------------------------------------ special values

@pytest.mark.parametrize("dtype", F)
def test_round_is_half_to_even(dtype):
    x = tf.constant([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.4, 0.6], dtype=getattr(tf, dtype))
    _check(tf.round(x), [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, 1.0], dtype, "round")


@pytest.mark.parametrize("dtype", N)
def test_floordiv_and_floormod_follow_python_signs(dtype):
    xs = [7, -7, 7, -7, 6, -6]
    ys = [2, 2, -2, -2, 3, -3]
    x, y = tf.constant(xs, getattr(tf, dtype)), tf.constant(ys, getattr(tf, dtype))
    _check(tf.math.floordiv(x, y), [a // b for a, b in zip(xs, ys)], dtype, "floordiv")
    _check(tf.math.floormod(x, y), [a % b for a, b in zip(xs, ys)], dtype, "floormod")
    _check(x // y, [a // b for a, b in zip(xs, ys)], dtype, "//")
    _check(x % y, [a % b for a, b in zip(xs, ys)], dtype, "%")


# pytest re-enables the RuntimeWarnings that stagecraft silences for its kernels (as TF is silent).
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", F)
def test_log_sqrt_and_division_special_values(dtype):
    d = getattr(tf, dtype)
    _check(tf.math.log(tf.constant([0.0, 1.0], d)), [-np.inf, 0.0], dtype, "log")
    got = tf.sqrt(tf.constant([-1.0, 4.0], d)).numpy()
    assert np.isnan(got[0]) and got[1] == 2.0
    _check(tf.constant([1.0, -1.0], d) / tf.constant([0.0, 0.0], d), [np.inf, -np.inf], dtype,
           "1/0")


# pytest re-enables the RuntimeWarnings that stagecraft silences for its kernels (as TF is silent).
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", I)
@pytest.mark.parametrize("name", ["floordiv", "floormod"])
def test_integer_division_by_zero_is_an_error(name, dtype):
    # TensorFlow: "Integer division by zero" (NumPy would return 0 with a warning).
    x, y = tf.constant([1, 2], getattr(tf, dtype)), tf.constant([1, 0], getattr(tf, dtype))
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        getattr(tf.math, name)(x, y)
    assert str(info.value).startswith(f"{name}: ")
    assert "division by zero" in str(info.value)
    # True division converts to float64 first, so it gives inf like TensorFlow.
    _check(x / y, [1.0, np.inf], "float64", "int / 0")


def test_integer_power_with_negative_exponent_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.pow(tf.constant([2, 3]), tf.constant([-1, 2]))


# ------------------------------------------------------------------------ dtype rules

CONSTANTS = [
    (1.5, "float32"), ([1.0, 2.0], "float32"), (1, "int32"), ([1, 2], "int32"),
    (2**40, "int64"), ([1, 2**40], "int64"), (-(2**31), "int32"), (2**31, "int64"),
    (True, "bool"), ([True, False], "bool"),
    (np.array([1, 2], np.int64), "int64"), (np.array([1, 2], np.int32), "int32"),
    (np.array([1.0], np.float64), "float64"), (np.array([1.0], np.float32), "float32"),
    (np.array([True]), "bool"), (np.float64(2.0), "float64"), (np.int64(3), "int64"),
]


@pytest.mark.parametrize("value,dtype", CONSTANTS, ids=[
    f"{type(v).__name__}-{d}-{i}" for i, (v, d) in enumerate(CONSTANTS)])
def test_constant_dtype_inference(value, dtype):
    t = tf.constant(value)
    assert t.dtype == getattr(tf, dtype)
    np.testing.assert_array_equal(t.numpy(), np.asarray(value))


def test_python_scalars_adopt_the_tensor_dtype():
    assert (tf.constant([1, 2]) + 1).dtype == tf.int32
    assert (1 + tf.constant([1, 2])).dtype == tf.int32
    assert (tf.constant([1, 2], tf.int64) * 3).dtype == tf.int64
    r = tf.constant([1.0], tf.float64) * 2.5
    assert r.dtype == tf.float64 and r.numpy().tolist() == [2.5]
    assert (2.5 * tf.constant([1.0], tf.float64)).dtype == tf.float64
    assert (tf.constant([1.0]) - 1).dtype == tf.float32  # an int adopts a float dtype
    with pytest.raises(TypeError):  # a non-integral float cannot become int32
        tf.constant([1, 2]) + 1.5


def test_integer_true_division_gives_float64():
    for d in (tf.int32, tf.int64):
        r = tf.constant([3, 4], d) / tf.constant([2, 2], d)
        assert r.dtype == tf.float64
        assert r.numpy().tolist() == [1.5, 2.0]
    assert (tf.constant([3, 4]) / 2).dtype == tf.float64
    assert (tf.constant([3.0], tf.float32) / 2).dtype == tf.float32


@pytest.mark.parametrize("a,b", [("int32", "float32"), ("int32", "int64"),
                                 ("float32", "float64"), ("bool", "int32")])
def test_mixing_tensor_dtypes_raises(a, b):
    x, y = (tf.constant([1 if d != "bool" else True], getattr(tf, d)) for d in (a, b))
    ops = [tf.add, tf.multiply, tf.maximum, tf.equal] if "bool" not in (a, b) else [tf.equal]
    for op in ops:
        for lhs, rhs in ((x, y), (y, x)):
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                op(lhs, rhs)
            assert "dtype" in str(info.value)
    if "bool" not in (a, b):
        with pytest.raises(tf.errors.InvalidArgumentError):
            x + y
