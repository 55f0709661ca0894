"""Staged GPU ``while`` loops that write one row of a carried buffer per iteration (a
TensorArray, the stacks of a loop gradient): a buffer the loop owns (``backends.codegen.inplace_rows``)
is copied once on loop entry and its rows are written in place (``rt.row_update_in_place``);
any other ``row_update`` keeps copying the buffer. Results must equal the reference backend's.
"""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cuda import memory
from stagecraft.backends.numba_cuda.staged import runtime as rt
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError

pytestmark = pytest.mark.cuda

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
IN_PLACE, COPYING = "rt.row_update_in_place(", 'run("row_update"'


def on_gpu(fn, *args, calls: int = 1) -> str:
    """Calls staged ``fn`` on the GPU ``calls`` times, checks each result against the
    reference backend, and returns the generated host function."""
    staged = tf.function(fn)
    expected = tf.function(fn, backend="reference")(*args)
    with tf.device("/gpu:0"):
        for _ in range(calls):
            actual = staged(*args)
            for a, e in zip(tf.nest.flatten(actual), tf.nest.flatten(expected)):
                assert a.device == GPU and a.dtype == e.dtype
                np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=2e-5, atol=2e-6)
        source = tf.compiled_source(staged)
    return source[source.index("def graph_fn"):]


def row_update(buffer, index, value):
    return bind(OPS["row_update"], buffer, index, value)


def test_tensor_array_rows_are_written_in_place():
    def f(x):
        ta = tf.TensorArray(tf.float32, size=4, element_shape=(2,))
        for i in tf.range(4):
            ta = ta.write(i, x * tf.cast(i, tf.float32))
        return ta.stack()

    # Twice: the initial buffer (a device constant) must not be written.
    source = on_gpu(f, tf.constant([1.0, 2.0]), calls=2)
    loop = source[source.index("while True:"):]
    assert source.count("rt.copy(") == 1 and "rt.copy(" not in loop   # once, on entry
    assert loop.count(IN_PLACE) == 1 and COPYING not in source


def test_rnn_gradient_stacks_are_written_in_place():
    rng = np.random.default_rng(0)
    xs = tf.constant(rng.normal(size=(5, 2, 3)), tf.float32)
    w = tf.constant(rng.normal(size=(3, 4)) * 0.5, tf.float32)
    u = tf.constant(rng.normal(size=(4, 4)) * 0.5, tf.float32)

    def step(xs, w, u):
        with tf.GradientTape() as tape:
            tape.watch([w, u])
            h = tf.zeros((2, 4))
            for t in tf.range(5):
                h = tf.tanh(tf.matmul(xs[t], w) + tf.matmul(h, u))
            loss = tf.reduce_sum(h * h)
        return [loss] + tape.gradient(loss, [w, u])

    source = on_gpu(step, xs, w, u)
    assert source.count(IN_PLACE) >= 3 and COPYING not in source
    # The stacks' size is the loop's trip count, known when tracing: the stacks are folded
    # constants, not sized at run time from a range of device scalars (a host read)
    assert 'run("range"' not in source and 'run("gather"' not in source


def test_index_out_of_range_raises_the_copying_paths_error():
    def g(x, n):
        ta = tf.TensorArray(tf.float32, size=3, element_shape=(2,))
        for i in tf.range(n):
            ta = ta.write(i, x)
        return ta.stack()

    x = tf.constant([1.0, 2.0])
    with tf.device("/gpu:0"):
        staged = tf.function(g)
        assert staged(x, tf.constant(3)).numpy().tolist() == [[1.0, 2.0]] * 3
        assert IN_PLACE in tf.compiled_source(staged)
        with pytest.raises(InvalidArgumentError) as raised:
            staged(x, tf.constant(4))
        inputs = [memory.to_device(a) for a in (np.zeros((3, 2), np.float32), np.int32(3),
                                                  x.numpy())]
        with pytest.raises(InvalidArgumentError) as copying:
            rt.run("row_update", inputs, ({}, "f.py:1"))
    first = str(raised.value).splitlines()[0]
    assert first == str(copying.value).splitlines()[0]
    assert first.startswith("row_update: index 3 is not in [0, 3)")   # the op named once


def test_a_row_of_the_wrong_run_time_shape_raises_the_ops_error():
    spec = [tf.TensorSpec([3, None], tf.float32), tf.TensorSpec([None], tf.float32)]

    @tf.function(input_signature=spec)
    def f(buf, v):
        for i in tf.range(3):
            buf = row_update(buf, i, v)
        return buf

    with tf.device("/gpu:0"):
        ok = f(tf.zeros((3, 2)), tf.constant([1.0, 2.0]))
        assert ok.numpy().tolist() == [[1.0, 2.0]] * 3
        assert IN_PLACE in tf.compiled_source(f)
        with pytest.raises(InvalidArgumentError, match="does not fit a row"):
            f(tf.zeros((3, 2)), tf.constant([1.0]))


def old_buffer_carried(x):   # the buffer before the write is also carried on
    def body(i, buf, prev):
        return i + 1, row_update(buf, i, x * tf.cast(i + 1, tf.float32)), buf
    zeros = tf.zeros((3, 2))
    return tf.while_loop(lambda i, b, p: i < 3, body, (0, zeros, zeros))[1:]


def read_through_a_view(x):   # a reshape (a view) of the buffer is read after the write
    def body(i, buf, total):
        flat = tf.reshape(buf, [6])
        new = row_update(buf, i, x * tf.cast(i + 1, tf.float32))
        return i + 1, new, total + tf.reduce_sum(flat)
    return tf.while_loop(lambda i, b, t: i < 3, body, (0, tf.zeros((3, 2)), 0.0))[1:]


def read_after_the_write(x):   # a copying read, but of the buffer after its write
    def body(i, buf, total):
        new = row_update(buf, i, x * tf.cast(i + 1, tf.float32))
        return i + 1, new, total + tf.reduce_sum(buf)
    return tf.while_loop(lambda i, b, t: i < 3, body, (0, tf.zeros((3, 2)), 0.0))[1:]


@pytest.mark.parametrize("fn", [old_buffer_carried, read_through_a_view, read_after_the_write])
def test_buffers_seen_elsewhere_keep_copying(fn):
    source = on_gpu(fn, tf.constant([1.0, 2.0]))
    assert COPYING in source and IN_PLACE not in source
