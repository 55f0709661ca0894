"""float16 and bfloat16 as TensorFlow 2 has them: the dtype objects, conversion of Python
scalars and lists, casts rounding to nearest even with overflow to infinity (from float64 and
integers through float32, like TF's), no implicit promotion, float32 accumulation in
reductions, random draws, gradients (a Dense layer), checkpoints and SavedModels, and compiled
code (Numba) equal to eager execution bit for bit."""
from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import InvalidArgumentError

HALF = [tf.float16, tf.bfloat16]
BF16 = np.dtype(ml_dtypes.bfloat16)


def _bits(t) -> np.ndarray:
    """A half tensor's values as their 16-bit patterns (exact comparison, NaNs included)."""
    return np.asarray(t.numpy()).view(np.uint16)


def test_dtype_objects():
    assert tf.half is tf.float16 and tf.dtypes.as_dtype("half") is tf.float16
    assert tf.dtypes.as_dtype("bfloat16") is tf.bfloat16 and tf.as_dtype("bf16") is tf.bfloat16
    assert tf.as_dtype(np.float16) is tf.float16 and tf.as_dtype(ml_dtypes.bfloat16) is tf.bfloat16
    assert tf.bfloat16 == BF16 and tf.float16 == np.float16 and tf.float16 != tf.bfloat16
    assert tf.float16.is_floating and tf.bfloat16.is_floating
    assert not tf.bfloat16.is_integer and not tf.bfloat16.is_complex
    assert (tf.float16.size, tf.bfloat16.size) == (2, 2)
    assert (float(tf.float16.max), float(tf.float16.min)) == (65504.0, -65504.0)
    assert float(tf.bfloat16.max) == 3.3895313892515355e38
    assert tf.bfloat16.as_numpy_dtype is ml_dtypes.bfloat16


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_constants_and_numpy(d):
    x = tf.constant(1.0, d)
    assert x.dtype is d and x.numpy().dtype == d.np and float(x.numpy()) == 1.0
    y = tf.constant([0.1, 2.5], d)
    assert y.numpy().dtype == d.np
    # Python data converts directly (NumPy's / ml_dtypes' conversion, as TF's does)
    assert _bits(y).tolist() == np.array([0.1, 2.5], d.np).view(np.uint16).tolist()
    z = tf.constant(np.array([1.0, 3.0], d.np))
    assert z.dtype is d


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_no_implicit_promotion(d):
    x = tf.constant([1.0, 2.0], d)
    with pytest.raises(InvalidArgumentError, match=f"'x' is {d.name} but 'y' is float32"):
        x + tf.constant([1.0, 2.0])
    other = tf.bfloat16 if d is tf.float16 else tf.float16
    with pytest.raises(InvalidArgumentError, match="the inputs must have the same dtype"):
        tf.multiply(x, tf.constant([1.0, 2.0], other))


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_python_scalars_take_the_tensor_dtype(d):
    x = tf.constant([3.0, 0.7], d)
    y = x * 0.1 + 1
    assert y.dtype is d
    # one rounding per op, of the float32 result
    want = ((x.numpy().astype(np.float32) * np.float32(d.np.type(0.1))).astype(d.np)
            .astype(np.float32) + 1).astype(d.np)
    assert _bits(y).tolist() == want.view(np.uint16).tolist()


def test_casts_round_to_nearest_even_and_overflow_to_inf():
    f32 = tf.constant([1 + 2 ** -11, 1 + 3 * 2 ** -11, 65519.0, 65520.0, -1e6, 1e-8])
    assert tf.cast(f32, tf.float16).numpy().tolist() == [1.0, 1.001953125, 65504.0, np.inf,
                                                        -np.inf, 0.0]
    b = tf.cast(tf.constant([1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.4e38]), tf.bfloat16)
    assert b.numpy().astype(np.float32).tolist() == [1.0, 1.015625, np.inf]
    # float64 reaches the half formats through float32, as TF's casts (Eigen's) do: 1 + 2**-11
    # + 2**-40 first rounds to the tie 1 + 2**-11, which then rounds to even (1.0)
    f64 = tf.constant([1 + 2 ** -11 + 2 ** -40], tf.float64)
    assert tf.cast(f64, tf.float16).numpy().tolist() == [1.0]
    assert tf.cast(tf.constant([2049, 4095], tf.int32), tf.float16).numpy().tolist() == \
        [2048.0, 4096.0]
    back = tf.cast(tf.constant([1.5, -2.25], tf.bfloat16), tf.float32)
    assert back.dtype is tf.float32 and back.numpy().tolist() == [1.5, -2.25]
    assert tf.cast(tf.constant([2.7, -2.7], tf.float16), tf.int32).numpy().tolist() == [2, -2]


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_reductions_and_matmul_accumulate_in_float32(d):
    ones = tf.ones([4096], d)
    # a float16 accumulator would stop at 2048 (2048 + 1 rounds back to 2048)
    assert float(tf.reduce_sum(ones).numpy()) == 4096.0
    assert float(tf.reduce_mean(ones).numpy()) == 1.0
    a = tf.ones([1, 4096], d)
    assert float(tf.matmul(a, tf.transpose(a)).numpy()[0, 0]) == 4096.0


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_random_draws(d):
    tf.random.set_seed(3)
    u = tf.random.uniform([2000], dtype=d)
    v = u.numpy().astype(np.float64)
    assert u.dtype is d and v.min() >= 0.0 and v.max() < 1.0
    quantum = 2.0 ** -11 if d is tf.float16 else 2.0 ** -8
    assert np.all(v / quantum == np.floor(v / quantum))
    assert 0.45 < v.mean() < 0.55
    n = tf.random.normal([2000], dtype=d, seed=1)
    assert n.dtype is d and abs(float(np.mean(n.numpy().astype(np.float32)))) < 0.1
    assert tf.random.uniform([3], 2.0, 4.0, dtype=d).dtype is d


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_gradients_have_the_variable_dtype(d):
    layer = tf.keras.layers.Dense(3, activation="tanh", dtype=d)
    x = np.linspace(-1, 1, 8).reshape(2, 4)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(layer(tf.constant(x, d))))
    assert loss.dtype is d
    grads = tape.gradient(loss, layer.trainable_variables)
    assert [g.dtype for g in grads] == [d, d]
    # the same in float32 from the same (half-valued) weights, to the format's precision
    w, b = (v.numpy().astype(np.float32) for v in layer.trainable_variables)
    w32, b32 = tf.Variable(w), tf.Variable(b)
    with tf.GradientTape() as tape:
        y = tf.tanh(tf.matmul(tf.constant(x, tf.float32), w32) + b32)
        loss32 = tf.reduce_mean(tf.square(y))
    for g, g32 in zip(grads, tape.gradient(loss32, [w32, b32])):
        np.testing.assert_allclose(g.numpy().astype(np.float32), g32.numpy(),
                                   rtol=0.05, atol=0.02 if d is tf.bfloat16 else 2e-3)
    tf.keras.optimizers.SGD(0.1).apply_gradients(zip(grads, layer.trainable_variables))
    assert all(v.dtype is d for v in layer.trainable_variables)


def test_checkpoint_and_saved_model_keep_half_values(tmp_path):
    class M(tf.Module):
        def __init__(self):
            self.v = tf.Variable(tf.constant([1.5, 0.1], tf.bfloat16))
            self.w = tf.Variable(tf.constant([0.1, -3.0], tf.float16))

        @tf.function(input_signature=[tf.TensorSpec([2], tf.bfloat16)])
        def f(self, x):
            return x * self.v + 0.1

    m = M()
    path = tf.train.Checkpoint(m=m).save(str(tmp_path / "ckpt"))
    dtypes = tf.train.load_checkpoint(path).get_variable_to_dtype_map()
    assert dtypes["m/v/.ATTRIBUTES/VARIABLE_VALUE"] is tf.bfloat16
    assert dtypes["m/w/.ATTRIBUTES/VARIABLE_VALUE"] is tf.float16
    want_v, want_w = _bits(m.v), _bits(m.w)
    m.v.assign(tf.zeros([2], tf.bfloat16))
    m.w.assign(tf.zeros([2], tf.float16))
    tf.train.Checkpoint(m=m).restore(path)
    assert _bits(m.v).tolist() == want_v.tolist() and _bits(m.w).tolist() == want_w.tolist()
    x = tf.constant([2.0, 3.0], tf.bfloat16)
    tf.saved_model.save(m, str(tmp_path / "sm"))
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    assert _bits(loaded.f(x)).tolist() == _bits(m.f(x)).tolist()


def test_a_crafted_checkpoint_dtype_name_is_refused(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable(tf.constant([1.0], tf.bfloat16))).save(
        str(tmp_path / "c"))
    import json
    import zlib
    from stagecraft.state.checkpoint import format as fmt
    index = fmt.index_path(path)
    with open(index, encoding="utf-8") as f:
        body = json.load(f)
    meta = body["content"]["tensors"]["v/.ATTRIBUTES/VARIABLE_VALUE"]
    assert meta["dtype"] == "bfloat16"
    meta["dtype"] = "bfloat8"
    body["checksum"] = zlib.crc32(fmt._canonical(body["content"]))
    with open(index, "w", encoding="utf-8") as f:
        json.dump(body, f)
    with pytest.raises(Exception, match=r"\.dtype: expected one of .*'bfloat16'.*, got 'bfloat8'"):
        tf.train.load_checkpoint(path).get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE")


def test_npz_bits_member_of_another_dtype_is_refused(tmp_path):
    from stagecraft.ir.serialize import read_npz, savez
    p = str(tmp_path / "a.npz")
    savez(p, {"x": np.array([1.5, -2.0], BF16), "y": np.arange(3)})
    got = read_npz(p)
    assert got["x"].dtype == BF16 and got["x"].astype(np.float32).tolist() == [1.5, -2.0]
    np.savez(p, **{"x.bfloat16": np.zeros(2, np.int32)})
    with pytest.raises(ValueError, match="must be stored as uint16 bits"):
        read_npz(p)


# ----------------------------------------------------------------- compiled code

def _chain(x, y):
    """Elementwise ops whose float32 results are correctly rounded (so every library agrees),
    with Python scalars, a comparison and casts."""
    z = (x * y + 0.1) / (y - 3.0)
    w = tf.maximum(tf.sqrt(tf.abs(z)), x) - tf.square(y) * 1e-3
    return z, w, tf.cast(w, tf.float32), tf.cast(tf.cast(x, tf.float64) * 1.1, x.dtype), \
        x < y, -w


def _kernels(x, y):
    """Kernel calls: reductions, matmul, cumulative sums, a transcendental."""
    m = tf.reshape(x, (4, 8))
    return tf.reduce_sum(m, axis=1), tf.reduce_mean(x), tf.reduce_max(m, axis=0), \
        tf.matmul(m, tf.reshape(y, (8, 4))), tf.cumsum(x), tf.exp(y * 0.25), tf.tanh(x)


def _values(d, seed):
    rng = np.random.default_rng(seed)
    # spread over the format's range, with values that round at ties
    v = rng.uniform(-4, 4, 32) * 2.0 ** rng.integers(-6, 6, 32)
    return tf.constant(v, d)


@pytest.mark.parametrize("backend", ["reference", "numba"])
@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_compiled_equals_eager_bit_for_bit(d, backend):
    x, y = _values(d, 1), _values(d, 2)
    for fn in (_chain, _kernels):
        eager = fn(x, y)
        staged = tf.function(fn, backend=backend)(x, y)
        for k, (s, e) in enumerate(zip(staged, eager)):
            assert s.dtype is e.dtype, (fn.__name__, k)
            if e.dtype in (tf.float16, tf.bfloat16):
                assert _bits(s).tolist() == _bits(e).tolist(), (fn.__name__, k, s, e)
            else:
                np.testing.assert_array_equal(s.numpy(), e.numpy())


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_numba_code_holds_halves_in_float32_and_rounds(d):
    from stagecraft.backends.numba_cpu.codegen import generate
    f = tf.function(lambda x: tf.reduce_sum(tf.reshape(x * 3.0, (2, 1)), axis=1),
                    backend="numba")
    x = tf.constant([1.0, 2.0], d)
    assert f(x).dtype is d
    source = generate(f.get_concrete_function(x).graph).source
    assert "K.round_to(" in source and "K.round_array(" in source
    assert f"np.{d.np.name}" not in source


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_numba_random_draws_equal_eager(d):
    seed = tf.constant([1, 2, 3], tf.int64)
    from stagecraft.eager.bind import bind
    from stagecraft.ir import OPS

    def draws(s):
        return [bind(OPS[name], s, shape=(7, 3), dtype=d)
                for name in ("random_uniform", "random_normal", "random_truncated_normal")]
    eager = draws(seed)
    staged = tf.function(draws, backend="numba")(seed)
    for s, e in zip(staged, eager):
        assert s.dtype is d and _bits(s).tolist() == _bits(e).tolist()


def test_half_dtypes_in_the_op_table():
    from stagecraft.ir import OPS
    for name in ("add", "exp", "reduce_sum", "matmul", "conv", "max_pool", "avg_pool", "cast",
                 "less", "random_uniform", "random_normal", "cumsum", "select", "gather"):
        assert dt.float16 in OPS[name].dtypes and dt.bfloat16 in OPS[name].dtypes, name
    for name in ("matrix_inverse", "cholesky", "svd", "logical_and", "bitwise_and"):
        assert dt.float16 not in OPS[name].dtypes, name


@pytest.mark.parametrize("d", HALF, ids=lambda d: d.name)
def test_a_staged_training_step_equals_eager_bit_for_bit(d, backend="numba"):
    """Gradients add up broadcast and gathered rows (sum_like, gather_grad) and variables are
    updated in place: every intermediate is rounded in compiled code as eagerly."""
    rng = np.random.default_rng(5)
    w0, b0, t0 = rng.normal(size=(4, 3)), rng.normal(size=(3,)), rng.normal(size=(3, 4))
    x = tf.constant(rng.normal(size=(4, 4)), d)

    def run(staged: bool) -> list:
        w, b, t = (tf.Variable(tf.constant(v, d)) for v in (w0, b0, t0))

        def step(x):
            with tf.GradientTape() as tape:
                h = tf.tanh(tf.matmul(x + tf.gather(t, [0, 2, 2, 1]), w) + b)
                loss = tf.reduce_mean(tf.square(h))
            for v, g in zip((w, b, t), tape.gradient(loss, [w, b, t])):
                v.assign_sub(tf.convert_to_tensor(g) * 0.3)
            return loss
        fn = tf.function(step, backend=backend) if staged else step
        losses = [fn(x) for _ in range(2)]
        return [_bits(v).tolist() for v in (*losses, w, b, t)]
    assert run(True) == run(False)


def test_compiled_kernels_round_their_results_before_the_next_op():
    """Each op's half result is rounded before another op uses it (scaling by 0.3 shows an
    unrounded sum), for the ops that add up (sum_like, gather_grad, scatter_nd too)."""
    from support.op_examples import apply_all, examples, inputs
    # (float16 only: bfloat16 takes the same code with other constants; one function, as
    # compiling is what costs)
    cases = [(n, tf.float16, ex) for n in ("sum_like", "gather_grad", "scatter_nd")
             for ex in examples(n, tf.float16, key=("half-next", n))]
    apply = apply_all(cases)

    def scaled(*flat):
        return [o * 0.3 if o.dtype in HALF else o for o in apply(*flat)]
    flat = [x for _, _, ex in cases for x in inputs(ex)]
    eager = scaled(*flat)
    staged = tf.function(scaled, backend="numba")(*flat)
    assert [_bits(s).tolist() for s in staged] == [_bits(e).tolist() for e in eager]
