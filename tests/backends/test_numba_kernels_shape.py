"""The Numba shape/slicing/creation/random kernels against the op table's NumPy reference.

Generated from the op table: for each op below, each dtype in ``OpDef.dtypes`` and each example
``OpDef.examples`` produces, the kernel (through a small plain-Python adapter that does what
the code generator will emit: normalize static attributes, allocate ``out`` with the IR dtype,
pass rank-0 values as 0-d arrays) must equal ``OPS[name].kernel`` exactly, dtype included.
"""
from __future__ import annotations


import numpy as np
import pytest

pytest.importorskip("numba")

from stagecraft.backends.numba_cpu.kernels import creation as KC  # noqa: E402
from stagecraft.backends.numba_cpu.kernels import shape as KS  # noqa: E402
from stagecraft.backends.numba_cpu.kernels import slicing as KL  # noqa: E402
from stagecraft.ir import OPS  # noqa: E402
from stagecraft.ir.ops import philox  # noqa: E402
from support.op_examples import examples as _examples  # noqa: E402
from support.op_examples import compiled_dtypes  # noqa: E402


def examples(name: str, d) -> list:
    """The op's examples, seeded apart from the staged tests' (the kernels' own draw)."""
    return _examples(name, d, key=("numba", name, d.name))


def _c(x):
    return np.ascontiguousarray(x)


def _gather(params, indices, axis, batch_dims):
    params, indices = _c(params), _c(indices)
    bd = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    a = KS.normalize(axis, params.ndim)
    out = np.empty(KS.gather_out_shape(params.shape, indices.shape, a, bd), params.dtype)
    KS.gather_into(params, indices, out, a, bd)
    return out


def _gather_grad(g, indices, like, axis, batch_dims):
    g, indices = _c(g), _c(indices)
    bd = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    out = np.empty(np.shape(like), g.dtype)
    KS.gather_grad_into(g, indices, out, KS.normalize(axis, out.ndim), bd)
    return out


def _one_hot(indices, on_value, off_value, depth, axis):
    indices = _c(indices)
    on, off = np.asarray(on_value), np.asarray(off_value)
    out = np.empty(KS.one_hot_out_shape(indices.shape, depth, axis), on.dtype)
    KS.one_hot_into(indices, on, off, out, axis)
    return out


def _concat(*xs, axis):
    xs = [_c(x) for x in xs]
    a = KS.normalize(axis, xs[0].ndim)
    shape = list(xs[0].shape)
    shape[a] = sum(x.shape[a] for x in xs)
    out = np.empty(shape, xs[0].dtype)
    if len(xs) == 2:
        KS.concat2_into(xs[0], xs[1], out, a)
    else:
        off = 0
        for x in xs:  # the generator unrolls this
            off = KS.concat_part_into(x, out, a, off)
        assert off == out.shape[a]
    return out


def _tile(x, multiples):
    x = _c(x)
    out = np.empty(tuple(d * m for d, m in zip(x.shape, multiples)), x.dtype)
    KS.tile_into(x, out)
    return out


def _broadcast(x, shape):
    x = _c(x)
    out = np.empty(tuple(shape), x.dtype)
    KS.broadcast_into(x, out)
    return out


def _sum_like(x, like):
    x = _c(x)
    out = np.empty(np.shape(like), x.dtype)
    KS.sum_like_into(x, out)
    return out


def _dyn(dyn):
    return np.array([int(np.asarray(v)) for v in dyn], np.int64)


def _strided_slice(x, *dyn, spec):
    x = _c(x)
    plan = KL.slice_plan(x.shape, spec)
    starts, steps, lens = KL.slice_bounds(x.shape, plan.code, _dyn(dyn))
    shape = eval(plan.shape_expr("lens"))  # what the generator writes into its source
    out = np.empty(shape, x.dtype)
    KL.strided_slice_into(x, out, starts, steps, lens)
    return out


def _strided_slice_grad(g, like, *dyn, spec):
    g = _c(g)
    plan = KL.slice_plan(np.shape(like), spec)
    out = np.empty(np.shape(like), g.dtype)
    starts, steps, lens = KL.slice_bounds(out.shape, plan.code, _dyn(dyn))
    assert tuple(eval(plan.shape_expr("lens"))) == g.shape
    KL.strided_slice_grad_into(g, out, starts, steps, lens)
    return out


def _range(start, limit, delta):
    start, limit, delta = (np.asarray(v) for v in (start, limit, delta))
    out = np.empty(KC.range_len(start, limit, delta), start.dtype)
    KC.range_into(start, delta, out)
    return out


def _eye(num_rows, num_columns, dtype):
    out = np.empty((num_rows, num_columns), dtype.np)
    KC.eye_into(out)
    return out


def _fill(value, dims):
    value = np.asarray(value)
    out = np.empty(tuple(dims), value.dtype)
    KC.fill_into(value, out)
    return out


def _random(kind):
    def run(seed, shape, dtype):
        out = np.empty(tuple(shape), dtype.np)
        KC.random_into(kind, out, seed, 0, 1)
        return out
    return run


ADAPTERS = {
    "gather": _gather,
    "gather_grad": _gather_grad,
    "one_hot": _one_hot,
    "concat": _concat,
    "tile": _tile,
    "broadcast_to": _broadcast,
    "broadcast_like": lambda x, like: _broadcast(x, np.shape(like)),
    "sum_like": _sum_like,
    "strided_slice": _strided_slice,
    "strided_slice_grad": _strided_slice_grad,
    "range": _range,
    "eye": _eye,
    "fill": _fill,
    "where_indices": lambda c: KC.where_indices(_c(c)),
    "random_normal": _random(philox.NORMAL),
    "random_uniform": _random(philox.UNIFORM),
    "random_truncated_normal": _random(philox.TRUNCATED_NORMAL),
}


def _cases():
    cases = []
    for name in ADAPTERS:
        for d in compiled_dtypes(name):
            for i, _ in enumerate(examples(name, d)):
                cases.append(pytest.param(name, d, i, id=f"{name}-{d.name}-{i}"))
    return cases


@pytest.mark.parametrize("name,d,i", _cases())
def test_matches_reference(name, d, i):
    ex = examples(name, d)[i]
    want = np.asarray(OPS[name].kernel(*ex.inputs, **ex.attrs))
    got = ADAPTERS[name](*ex.inputs, **ex.attrs)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want, strict=True)
    assert got.tobytes() == want.tobytes()  # bit for bit (signed zeros, NaN payloads)


def test_gather_out_of_range_raises():
    p = np.arange(12.0).reshape(4, 3)
    for bad in (np.array([0, 4], np.int32), np.array([-1], np.int64)):
        with pytest.raises(IndexError):
            OPS["gather"].kernel(p, bad, axis=0, batch_dims=0)
        with pytest.raises(IndexError, match="out of range"):
            _gather(p, bad, axis=0, batch_dims=0)
    with pytest.raises(IndexError):
        _gather_grad(np.ones((4, 1)), np.array([[0], [3], [0], [0]], np.int32), p, 1, 1)


def test_strided_slice_errors_and_plan():
    x = np.arange(20.0).reshape(4, 5)
    with pytest.raises(IndexError):
        _strided_slice(x, np.int64(4), spec=(("index", "$0"),))
    with pytest.raises(IndexError):
        _strided_slice(x, spec=(("slice", None, None, None), ("index", -6)))
    plan = KL.slice_plan((4, None), (("newaxis",), ("slice", 1, None, None), ("index", 2)))
    assert plan.out_dims == (-1, 0) and plan.out_shape == (1, 3) and plan.ndyn == 0
    assert plan.shape_expr("L") == "(1, L[0])"
    # dynamic negative/clamped bounds and negative steps, checked against NumPy
    for lo, hi, st in [(-3, 100, 1), (7, -9, -2), (-100, 3, 2), (2, 2, -1)]:
        spec = (("slice", "$0", "$1", "$2"), ("slice", None, None, -2))
        got = _strided_slice(x, np.int32(lo), np.int32(hi), np.int64(st), spec=spec)
        np.testing.assert_array_equal(got, x[lo:hi:st, ::-2], strict=True)


def test_range_errors_and_floats():
    with pytest.raises(ValueError):
        _range(np.asarray(0.0), np.asarray(1.0), np.asarray(0.0))
    for t in (np.float32, np.float64):
        args = [np.asarray(v, t) for v in (0.1, 2.3, 0.3)]
        want = OPS["range"].kernel(*args)
        got = _range(*args)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_random_uniform_int_bit_exact():
    seed = np.asarray([1, 2, 3], np.int64)
    for t in (np.int32, np.int64):
        want = OPS["random_uniform_int"].kernel(seed, np.asarray(-3, t), np.asarray(7, t), (5,))
        out = np.empty((5,), t)
        KC.random_into(philox.UNIFORM_INT, out, seed, -3, 7)
        assert out.dtype == want.dtype and out.tobytes() == want.tobytes()
    with pytest.raises(ValueError, match="Need minval < maxval"):
        KC.random_into(philox.UNIFORM_INT, out, seed, 7, 7)


@pytest.mark.parametrize("t", [np.float32, np.float64])
def test_sum_like_float_order_bit_exact(t):
    """NumPy's pairwise order, also for long runs and mixed kept/reduced dims."""
    rng = np.random.default_rng(7)
    for xs, ls in [((3, 50, 20), (50, 1)), ((10000,), ()), ((7, 9, 130), (9, 1)),
                   ((2, 1, 4), (1, 1)), ((4, 6, 3), (1, 3)), ((300, 3, 2), (3, 2))]:
        x = rng.uniform(-2, 2, xs).astype(t)
        want = np.asarray(OPS["sum_like"].kernel(x, np.zeros(ls, t)))
        assert _sum_like(x, np.zeros(ls, t)).tobytes() == want.tobytes(), (xs, ls)
