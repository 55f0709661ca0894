"""The CUDA kernels beyond the op table's examples: launch parameters that force grid-stride
loops, several tiles and batch strides; errors equal to the reference kernels'; views; and the
random ops (reproducible, independent of the launch configuration, right distributions)."""
from __future__ import annotations

import numpy as np
import pytest

from stagecraft.backends.numba_cuda import config, eager, memory
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import InvalidArgumentError

pytestmark = pytest.mark.cuda


def run(name, *inputs, **attrs):
    out = eager.run(name, [memory.to_device(np.asarray(x)) for x in inputs], attrs)
    return memory.to_host(out)


def reference(name, *inputs, **attrs):
    return np.asarray(OPS[name].kernel(*inputs, **attrs))


@pytest.mark.parametrize("params", [
    dict(THREADS_PER_BLOCK=8, MAX_BLOCKS=3, MATMUL_TILE=(3, 3, 3), MATMUL_WORK=(1, 1)),
    dict(THREADS_PER_BLOCK=2, MAX_BLOCKS=1, MATMUL_TILE=(8, 4, 5), MATMUL_WORK=(4, 2))])
def test_results_do_not_depend_on_launch_parameters(params, monkeypatch):
    for k, v in params.items():
        monkeypatch.setattr(config, k, v)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3, 7)), rng.normal(size=(7, 4))
    cases = [("matmul", (a, b), dict(transpose_a=False, transpose_b=False)),
             ("matmul", (a[:1], np.swapaxes(a, 1, 2)), dict(transpose_a=False, transpose_b=False)),
             ("reduce_sum", (a,), dict(axes=(0, 2), keepdims=True)),
             ("reduce_max", (a,), dict(axes=None, keepdims=False)),
             ("reduce_prod", (a,), dict(axes=(1,), keepdims=False)),   # short: thread per row
             ("reduce_mean", (a,), dict(axes=(-1,), keepdims=True)),
             ("cumsum", (a,), dict(axis=1, exclusive=True, reverse=True)),
             ("cumsum", (np.arange(-20, 30),), dict(axis=0, exclusive=True, reverse=False)),
             ("cumprod", (np.linspace(0.9, 1.1, 50),), dict(axis=0, exclusive=False,
                                                            reverse=True)),
             ("tanh", (a,), {}),
             ("add", (a, b[:, 0]), {}),
             ("where_indices", (a > 0.5,), {}),
             ("transpose", (a,), dict(perm=(2, 0, 1)))]
    for name, inputs, attrs in cases:
        np.testing.assert_allclose(run(name, *inputs, **attrs), reference(name, *inputs, **attrs),
                                   rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("shape, axes", [
    ((300,), None),            # a full sum: one output, chunks on blocks, then folded
    ((3, 5, 40), (1, 2)),      # few rows of a merged contiguous run
    ((40, 33), (0,)),          # a column sum (bias gradient): chunks on threads
    ((6, 2, 33), (0, 1)),      # columns over two merged leading dims
    ((2, 40, 3), (1,))])       # a middle dim, few outputs: the tree reads it strided
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_mean", "reduce_all"])
def test_long_reductions_of_few_outputs_are_cut_into_chunks(name, shape, axes, monkeypatch):
    """Splitting (reduce._splits > 1) under launch sizes where it happens on the simulator's
    small blocks; the results are NumPy's."""
    from stagecraft.backends.numba_cuda.kernels import reduce
    monkeypatch.setattr(config, "THREADS_PER_BLOCK", 4)
    monkeypatch.setattr(config, "MAX_BLOCKS", 64)
    x = np.random.default_rng(1).normal(size=shape)
    if name == "reduce_all":
        x = x > -2.5
    m = int(np.prod([shape[a] for a in axes])) if axes else x.size
    assert reduce._splits(x.size // m, m, False, 4) > 1 or \
        reduce._splits(x.size // m, m, True, 4) > 1
    for keepdims in (False, True):
        np.testing.assert_allclose(run(name, x, axes=axes, keepdims=keepdims),
                                   reference(name, x, axes=axes, keepdims=keepdims),
                                   rtol=1e-12, atol=1e-12)


def test_reductions_need_a_power_of_two_block(monkeypatch):
    monkeypatch.setattr(config, "THREADS_PER_BLOCK", 6)
    with pytest.raises(ValueError, match="power of two"):
        run("reduce_sum", np.ones(4), axes=None, keepdims=False)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_integer_sums_wrap_like_numpy():
    x = np.full(5, 2**30, np.int32)
    np.testing.assert_array_equal(run("reduce_sum", x, axes=None, keepdims=False),
                                  reference("reduce_sum", x, axes=None, keepdims=False))


def test_empty_inputs():
    e = np.zeros((0, 3), np.float32)
    assert run("reduce_max", e, axes=(0,), keepdims=False).tolist() == [-np.inf] * 3
    assert run("exp", e).shape == (0, 3)
    assert run("matmul", e, np.ones((3, 2), np.float32), transpose_a=False,
               transpose_b=False).shape == (0, 2)
    np.testing.assert_array_equal(
        run("matmul", np.ones((2, 0)), np.ones((0, 3)), transpose_a=False, transpose_b=False),
        np.zeros((2, 3)))
    assert run("where_indices", np.zeros((2, 2), bool)).shape == (0, 2)


def test_pass_through_ops_return_views_of_the_same_buffer():
    d = memory.to_device(np.arange(6.0))
    assert eager.run("identity", [d], {}) is d
    r = eager.run("reshape", [d], {"shape": (2, 3)})
    assert r.shape == (2, 3)
    np.testing.assert_array_equal(memory.to_host(r), np.arange(6.0).reshape(2, 3))


# -------------------------------------------------------------------------------- errors

ERRORS = [
    ("gather", (np.zeros((4, 3)), np.array([[0, 1], [2, 7]])), dict(axis=0, batch_dims=0)),
    ("gather", (np.zeros((4, 3)), np.array([-1])), dict(axis=1, batch_dims=0)),
    # (the first bad position in C order, though the kernel visits outputs, not indices)
    ("gather", (np.zeros((2, 4, 3)), np.array([[0, 5], [9, 1]])), dict(axis=1, batch_dims=0)),
    ("gather", (np.zeros((2, 4)), np.array([[0, 1], [5, 0]])), dict(axis=1, batch_dims=1)),
    ("gather", (np.zeros((0, 3)), np.array([7])), dict(axis=1, batch_dims=0)),  # (no output)
    ("gather_grad", (np.ones((2, 2, 3)), np.array([[1, 4], [6, 0]]), np.zeros((2, 4, 3))),
     dict(axis=1, batch_dims=1)),
    ("gather_grad", (np.ones((1, 3)), np.array([9]), np.zeros((4, 3))),
     dict(axis=0, batch_dims=0)),
    ("floordiv", (np.array([1, 2], np.int32), np.array([1, 0], np.int32)), {}),
    ("floormod", (np.array([1, 2], np.int64), np.array(0, np.int64)), {}),
    ("pow", (np.array([2], np.int32), np.array([-1], np.int32)), {}),
    ("range", (np.int32(0), np.int32(5), np.int32(0)), {}),
    ("argmax", (np.zeros((0, 2)),), dict(axis=0, output_type=dt.int64)),
    ("strided_slice", (np.zeros((4, 5)), np.int32(9)),
     dict(spec=(("index", "$0"), ("slice", 1, None, None)))),
    ("row_update", (np.zeros((4, 3)), np.int32(4), np.ones(3)), {}),
    ("random_uniform_int", (np.array([1, 2, 3]), np.int32(5), np.int32(5)), dict(shape=(2,))),
]


@pytest.mark.parametrize("name,inputs,attrs", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_the_reference_kernels(name, inputs, attrs):
    """bind turns a kernel's exception into InvalidArgumentError with its message, so raising
    the same exception with the same message gives users the same error on both devices."""
    with pytest.raises(Exception) as expected:
        reference(name, *inputs, **attrs)
    with pytest.raises(expected.type) as actual:
        run(name, *inputs, **attrs)
    if name != "gather_grad":   # NumPy's add.at words its own error; ours is gather's
        assert str(actual.value) == str(expected.value)


def test_type_errors_come_from_inference():
    with pytest.raises(InvalidArgumentError, match="^add: Incompatible shapes"):
        run("add", np.ones(3), np.ones(4))
    with pytest.raises(InvalidArgumentError, match="^add: 'x' is float64 but 'y' is int32"):
        run("add", np.ones(3), np.ones(3, np.int32))


def test_unknown_op_and_opt_out_errors(monkeypatch):
    with pytest.raises(ValueError, match="^Unknown op 'no_such_op'"):
        eager.run("no_such_op", [], {})
    monkeypatch.delitem(eager.TABLE, "tanh")
    monkeypatch.setitem(eager.OPT_OUT, "tanh", "a test reason")
    with pytest.raises(NotImplementedError, match=r"^tanh: .*\(a test reason\)"):
        eager.run("tanh", [memory.to_device(np.ones(2))], {})


# -------------------------------------------------------------------------------- random

def draw(name, shape, dtype=dt.float64, seed=(1, 2, 3)):
    seed = np.asarray(seed, np.int64)
    if name == "random_uniform_int":
        return run(name, seed, np.int64(-3), np.int64(7), shape=shape)
    return run(name, seed, shape=shape, dtype=dtype)


RANDOM_OPS = ["random_normal", "random_uniform", "random_uniform_int", "random_truncated_normal"]


@pytest.mark.parametrize("name", RANDOM_OPS)
def test_random_ops_are_reproducible_and_independent_of_the_launch(name, monkeypatch):
    first = draw(name, (7, 3))
    np.testing.assert_array_equal(first, draw(name, (7, 3)))
    assert not np.array_equal(first, draw(name, (7, 3), seed=(1, 2, 4)))
    assert not np.array_equal(first, draw(name, (7, 3), seed=(1, 5, 3)))
    monkeypatch.setattr(config, "THREADS_PER_BLOCK", 2)
    monkeypatch.setattr(config, "MAX_BLOCKS", 3)
    np.testing.assert_array_equal(first, draw(name, (7, 3)))
    # The first elements of a longer draw are the same stream.
    np.testing.assert_array_equal(first.ravel(), draw(name, (30,))[:21])


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64])
def test_random_distributions(dtype):
    n = 4000
    u = draw("random_uniform", (n,), dtype)
    assert u.dtype == dtype.np and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.03 and abs(u.var() - 1 / 12) < 0.01
    z = draw("random_normal", (n,), dtype)
    assert z.dtype == dtype.np and np.all(np.isfinite(z))
    assert abs(z.mean()) < 0.08 and abs(z.std() - 1) < 0.06
    assert 0.62 < np.mean(np.abs(z) < 1) < 0.74   # P(|z| < 1) = 0.683
    k = draw("random_uniform_int", (n,))
    assert k.dtype == np.int64 and k.min() == -3 and k.max() == 6
    counts = np.bincount(k + 3)
    assert counts.min() > n / 10 * 0.75


@pytest.mark.parametrize("name", ["random_normal", "random_uniform", "random_truncated_normal"])
def test_random_values_are_the_reference_stream(name):
    """The GPU computes the op table's Philox stream: uniforms bit for bit, normals up to the
    last bits of the GPU's log/cos/sin."""
    for d in (dt.float32, dt.float64):
        for ex in OPS[name].examples(np.random.default_rng(0), d):
            out = memory.to_host(eager.run(name, [memory.to_device(ex.inputs[0])],
                                           dict(ex.attrs)))
            expected = OPS[name].kernel(*ex.inputs, **ex.attrs)
            assert out.dtype == expected.dtype and out.shape == np.shape(expected)
            if name == "random_uniform":
                np.testing.assert_array_equal(out, expected)
            else:
                np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
