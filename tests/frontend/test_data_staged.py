"""``for element in dataset:`` inside a ``tf.function`` is a staged loop over a fresh iterator
per call (``converters/operators/dataset_loops.py``): the same results as the plain Python
loop, with ``break``, tuple elements, varying batch shapes, and a new shuffle every call."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

BACKENDS = ["reference", "numba"]


def running_sum(ds):
    s = tf.constant(0.0)
    n = tf.constant(0)
    for x, y in ds:
        if tf.reduce_sum(x) > 40.0:
            break
        s += tf.reduce_sum(x * y)
        n += 1
    return s, n


def pairs():
    x = np.arange(24, dtype=np.float32).reshape(12, 2)
    y = np.linspace(0, 1, 12, dtype=np.float32)[:, None]
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_staged_dataset_loop_agrees_with_the_python_loop(backend):
    staged = tf.function(running_sum, backend=backend)
    ds = pairs()
    expected = [float(v) for v in running_sum(ds)]
    assert [float(v) for v in staged(ds)] == pytest.approx(expected)
    assert [float(v) for v in staged(ds)] == pytest.approx(expected)  # a fresh pass
    assert staged.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_call_iterates_anew_and_a_shuffle_reshuffles(backend):
    ds = tf.data.Dataset.range(30).shuffle(30, seed=2)

    @tf.function(backend=backend)
    def collect(ds):
        out = tf.TensorArray(tf.int64, size=0, dynamic_size=True)
        i = 0
        for x in ds:
            out = out.write(i, x)
            i += 1
        return out.stack()

    first, second = collect(ds).numpy().tolist(), collect(ds).numpy().tolist()
    assert sorted(first) == sorted(second) == list(range(30))
    assert first != second


def test_an_empty_dataset_runs_no_iteration():
    @tf.function
    def count(ds):
        n = tf.constant(0)
        for _ in ds:
            n += 1
        return n

    assert int(count(tf.data.Dataset.range(0))) == 0
    assert int(count(tf.data.Dataset.range(7).filter(lambda x: x % 3 == 0))) == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_iter_and_next_inside_a_function(backend):
    @tf.function(backend=backend)
    def head_and_rest(ds):
        it = iter(ds)
        first = next(it)
        rest = tf.constant(0, tf.int64)
        for x in it:  # continues after the first element
            rest += x
        return first, rest

    ds = tf.data.Dataset.range(1, 5)
    assert [int(v) for v in head_and_rest(ds)] == [1, 9]
    assert [int(v) for v in head_and_rest(ds)] == [1, 9]

    @tf.function(backend=backend)
    def too_far(ds):
        it = iter(ds)
        return next(it) + next(it)

    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
        too_far(tf.data.Dataset.range(1))
