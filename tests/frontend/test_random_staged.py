"""Random numbers in staged code follow TensorFlow's semantics: every call of a compiled
function draws new numbers (and every iteration of a staged loop), seeds make the sequences
reproducible across processes, gradients see the forward run's numbers, and stateless ops
and ``tf.random.Generator`` work eagerly and staged. Each staged test runs on the reference
interpreter and on Numba."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import stagecraft as tf

BACKENDS = ["reference", "numba"]


@pytest.fixture(autouse=True)
def _fresh_seed():
    tf.random.set_seed(None)
    yield
    tf.random.set_seed(None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_staged_random_op_differs_between_calls(backend):
    @tf.function(backend=backend)
    def f(x):
        return x + tf.random.uniform([4]), tf.random.normal([4], seed=3)

    a, b = f(tf.zeros([4])), f(tf.zeros([4]))
    for x, y in zip(a, b):
        assert not np.array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dropout_mask_differs_between_training_steps(backend):
    w = tf.Variable(tf.ones([64]))

    @tf.function(backend=backend)
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.nn.dropout(w * 1.0, rate=0.5))
        return tape.gradient(loss, w)

    first, second = step().numpy(), step().numpy()
    assert set(np.unique(first)) == {0.0, 2.0}
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_iteration_of_a_staged_loop_draws_new_numbers(backend):
    @tf.function(backend=backend)
    def f(n):
        ta = tf.TensorArray(tf.float32, size=n, element_shape=[3])
        for i in tf.range(n):
            ta = ta.write(i, tf.random.uniform([3], seed=1))
        return ta.stack()

    rows = f(tf.constant(4)).numpy()
    assert len({tuple(r) for r in rows}) == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_global_seed_gives_the_same_sequence_when_the_program_reruns(backend):
    def make():
        @tf.function(backend=backend)
        def f():
            return tf.random.uniform([2]), tf.random.normal([2])
        return f

    tf.random.set_seed(1234)
    f, g = make(), make()
    first = [t.numpy() for t in f() + f()]
    # Two functions with the same random ops draw the same sequences (TF's documented rule).
    np.testing.assert_array_equal(np.concatenate([t.numpy() for t in g() + g()]),
                                  np.concatenate(first))
    # set_seed restarts the streams of existing traces: the program "runs again".
    tf.random.set_seed(1234)
    np.testing.assert_array_equal(np.concatenate([t.numpy() for t in f() + f()]),
                                  np.concatenate(first))


def test_seeded_sequences_are_the_same_in_every_process(tmp_path):
    script = tmp_path / "draw.py"
    script.write_text(textwrap.dedent("""
        import stagecraft as tf
        tf.random.set_seed(7)

        @tf.function(backend="reference")
        def f():
            return tf.random.uniform([3]) + tf.random.normal([3], seed=2)

        print([round(float(v), 6) for v in tf.concat([f(), f(), tf.random.uniform([2])], 0)])
    """))
    env = dict(os.environ)
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.strip()


def _mask_agrees(y, g, x) -> bool:
    """y = sum(mask * x * 6) and g = mask * 6: the gradient used the forward's mask iff
    sum(g * x) == y."""
    return float(y) == float(tf.reduce_sum(g * x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_replay_the_forward_runs_random_numbers(backend):
    x = tf.Variable(tf.range(1.0, 41.0))

    def dropped():
        return tf.reduce_sum(tf.nn.dropout(x * 1.0, 0.5) * 3.0)

    @tf.function(backend=backend)
    def call():
        return dropped()

    with tf.GradientTape() as tape:  # the staged call's gradient replays its graph
        y = call()
    assert _mask_agrees(y, tape.gradient(y, x), x)

    @tf.function(backend=backend)
    def in_cond(c):
        with tf.GradientTape() as tape:
            if c > 0:
                y = dropped()
            else:
                y = tf.reduce_sum(x)
        return y, tape.gradient(y, x)

    assert _mask_agrees(*in_cond(tf.constant(1)), x)

    @tf.function(backend=backend)
    def in_while(n):
        with tf.GradientTape() as tape:
            y, i = tf.constant(0.0), tf.constant(0)
            while i < n and y < 1e6:  # a data-dependent stop
                y += dropped()
                i += 1
        return y, tape.gradient(y, x)

    assert _mask_agrees(*in_while(tf.constant(3)), x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stateless_ops_depend_only_on_the_seed(backend):
    f = tf.function(lambda s: (tf.random.stateless_normal([5], seed=s),
                               tf.random.stateless_uniform([5], seed=s, maxval=9, dtype=tf.int32),
                               tf.random.stateless_truncated_normal([5], seed=s)),
                    backend=backend)
    staged = f(tf.constant([3, 4]))
    eager = (tf.random.stateless_normal([5], seed=[3, 4]),
             tf.random.stateless_uniform([5], seed=[3, 4], maxval=9, dtype=tf.int32),
             tf.random.stateless_truncated_normal([5], seed=[3, 4]))
    for s, e in zip(staged, eager):
        np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(f(tf.constant([3, 4]))[0].numpy(), staged[0].numpy())
    assert not np.array_equal(f(tf.constant([3, 5]))[0].numpy(), staged[0].numpy())


def test_stateless_seed_must_have_shape_2():
    with pytest.raises(ValueError, match=r"^stateless random ops: seed must be an integer "
                                         r"tensor of shape \[2\]"):
        tf.random.stateless_normal([2], seed=[1, 2, 3])


def test_truncated_normal_stays_within_two_standard_deviations():
    z = tf.random.truncated_normal([20000], mean=1.0, stddev=2.0, seed=4).numpy()
    assert z.min() >= -3.0 and z.max() <= 5.0
    assert abs(z.std() - 2.0 * 0.8796) < 0.05


@pytest.mark.parametrize("backend", BACKENDS)
def test_generator_is_reproducible_and_advances_inside_functions(backend):
    g = tf.random.Generator.from_seed(5)
    f = tf.function(lambda: g.normal([3]), backend=backend)
    a, b = f(), f()
    assert not np.array_equal(a.numpy(), b.numpy())
    h = tf.random.Generator.from_seed(5)
    np.testing.assert_allclose(h.normal([3]).numpy(), a.numpy(), rtol=1e-6)
    np.testing.assert_allclose(h.normal([3]).numpy(), b.numpy(), rtol=1e-6)


def test_generator_state_is_checkpointed(tmp_path):
    g = tf.random.Generator.from_seed(9)
    ckpt = tf.train.Checkpoint(generator=g)
    path = ckpt.write(str(tmp_path / "ckpt"))
    first = g.uniform([4]).numpy()
    ckpt.read(path)
    np.testing.assert_array_equal(g.uniform([4]).numpy(), first)


def test_generator_split_gives_independent_streams():
    children = tf.random.Generator.from_seed(1).split(3)
    draws = [c.uniform([4]).numpy() for c in children]
    assert len({tuple(d) for d in draws}) == 3
    again = [c.uniform([4]).numpy() for c in tf.random.Generator.from_seed(1).split(3)]
    np.testing.assert_array_equal(np.stack(again), np.stack(draws))


def test_generator_rejects_a_bad_state():
    with pytest.raises(ValueError, match=r"^Generator: state must be 3 integers"):
        tf.random.Generator.from_state([1.5, 2.0])


def test_a_loaded_saved_model_draws_new_numbers_on_every_call(tmp_path):
    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([16])])
        def __call__(self, x):
            return tf.nn.dropout(x, 0.5)

    tf.saved_model.save(Model(), str(tmp_path / "model"))
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    a, b = loaded(tf.ones([16])).numpy(), loaded(tf.ones([16])).numpy()
    assert set(np.unique(a)) <= {0.0, 2.0} and not np.array_equal(a, b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_shapes_known_only_when_the_function_runs(backend):
    g = tf.random.Generator.from_seed(2)

    @tf.function(backend=backend, input_signature=[tf.TensorSpec([None, 3])])
    def f(x):
        b = tf.shape(x)[0]
        return (tf.random.normal([b, 3]), tf.random.uniform([b], maxval=5, dtype=tf.int32),
                tf.random.truncated_normal(tf.shape(x)), g.uniform([b, 2]),
                tf.random.stateless_normal([b], seed=[1, 2]))

    concrete = f.get_concrete_function()
    assert [o.shape.as_list() for o in concrete.outputs] == [[None, 3], [None], [None, 3],
                                                             [None, 2], [None]]
    out = f(tf.ones([4, 3]))
    assert [tuple(o.shape) for o in out] == [(4, 3), (4,), (4, 3), (4, 2), (4,)]
    np.testing.assert_allclose(out[4].numpy(),
                               tf.random.stateless_normal([4], seed=[1, 2]).numpy(), rtol=1e-6)
