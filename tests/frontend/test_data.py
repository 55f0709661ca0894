"""``tf.data`` eagerly: sources, transformations, element specs, cardinalities, iterators and
their errors, as TensorFlow 2 gives them (the expected values are TF's)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import stagecraft as tf


def values(ds):
    return [tf.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in ds]


# ------------------------------------------------------------------ sources

def test_from_tensor_slices_slices_every_component_and_keeps_structure():
    ds = tf.data.Dataset.from_tensor_slices(({"a": [1, 2], "b": [[1.0], [2.0]]}, [5, 6]))
    assert values(ds) == [({"a": 1, "b": [1.0]}, 5), ({"a": 2, "b": [2.0]}, 6)]
    spec = ds.element_spec
    assert spec[0]["b"].shape == tf.TensorShape([1]) and spec[0]["b"].dtype == tf.float32
    assert int(ds.cardinality()) == 2 and len(ds) == 2


def test_a_list_is_one_component_as_in_tensorflow():
    ds = tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]])
    assert isinstance(ds.element_spec, tf.TensorSpec)
    assert values(ds) == [[1, 2], [3, 4]]


def test_from_tensor_slices_errors_say_what_is_wrong():
    with pytest.raises(ValueError) as e:
        tf.data.Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))
    assert str(e.value).splitlines()[0] == (
        "Dataset.from_tensor_slices: all components must have the same size in their first "
        "dimension; got sizes [2, 3].")
    with pytest.raises(ValueError, match="needs a first dimension to slice"):
        tf.data.Dataset.from_tensor_slices(3.0)


def test_from_tensors_and_range():
    assert values(tf.data.Dataset.from_tensors(([1, 2], 3))) == [([1, 2], 3)]
    assert values(tf.data.Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert values(tf.data.Dataset.range(2, 9, 3)) == [2, 5, 8]
    assert values(tf.data.Dataset.range(5, 0, -2)) == [5, 3, 1]
    assert tf.data.Dataset.range(3).element_spec.dtype == tf.int64
    assert tf.data.Dataset.range(3, dtype=tf.int32).element_spec.dtype == tf.int32
    assert int(tf.data.Dataset.range(2, 9, 3).cardinality()) == 3


def test_from_generator_checks_elements_and_calls_the_generator_per_pass():
    calls = []

    def gen(n):
        calls.append(int(n))
        for i in range(int(n)):
            yield i, [float(i)] * i

    ds = tf.data.Dataset.from_generator(gen, args=(3,), output_signature=(
        tf.TensorSpec([], tf.int64), tf.TensorSpec([None], tf.float32)))
    assert values(ds) == [(0, []), (1, [1.0]), (2, [2.0, 2.0])]
    assert values(ds.take(1)) == [(0, [])]
    assert calls == [3, 3]
    assert int(ds.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    old = tf.data.Dataset.from_generator(lambda: iter([[1, 2]]), output_types=tf.int32,
                                         output_shapes=[2])
    assert values(old) == [[1, 2]]


def test_from_generator_mismatches_are_clear_errors():
    ds = tf.data.Dataset.from_generator(lambda: iter([[1.0, 2.0]]),
                                        output_signature=tf.TensorSpec([3], tf.float32))
    with pytest.raises(ValueError) as e:
        list(ds)
    assert str(e.value) == ("Dataset.from_generator: element 0 has shape (2,) where "
                            "output_signature says (3,).")
    with pytest.raises(TypeError, match="pass output_signature"):
        tf.data.Dataset.from_generator(lambda: iter([]))


def test_zip_and_concatenate():
    a, b = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)
    assert values(tf.data.Dataset.zip(a, b)) == [(0, 10), (1, 11)]
    assert values(tf.data.Dataset.zip((a, b))) == [(0, 10), (1, 11)]
    assert values(tf.data.Dataset.zip({"x": a, "y": b})) == [{"x": 0, "y": 10},
                                                             {"x": 1, "y": 11}]
    assert int(tf.data.Dataset.zip(a, b.repeat()).cardinality()) == 3
    c = a.concatenate(b)
    assert values(c) == [0, 1, 2, 10, 11] and int(c.cardinality()) == 5
    with pytest.raises(TypeError, match="differ in structure or dtype"):
        a.concatenate(tf.data.Dataset.range(2, dtype=tf.int32))


# ------------------------------------------------------------------ transformations

def test_map_unpacks_tuples_and_packs_returned_lists():
    ds = tf.data.Dataset.from_tensor_slices(([1, 2], [10, 20]))
    assert values(ds.map(lambda a, b: a + b)) == [11, 22]
    assert values(ds.map(lambda a, b: [b, a])) == [(10, 1), (20, 2)]
    d = tf.data.Dataset.from_tensor_slices({"x": [1.0, 2.0]})
    assert values(d.map(lambda e: e["x"] * 2)) == [2.0, 4.0]


def test_map_traces_once_so_python_side_effects_run_once():
    traces = []

    def f(x):
        traces.append(1)  # a Python side effect: runs while tracing only
        return tf.fill([x], x)

    ds = tf.data.Dataset.range(1, 6).map(f)
    assert values(ds) == [[i] * i for i in range(1, 6)]
    assert len(traces) == 1
    assert ds.element_spec.shape.as_list() == [None]


def test_map_with_control_flow_is_converted():
    def f(x):
        if x > 2:
            x = x * 10
        return x

    assert values(tf.data.Dataset.range(5).map(f)) == [0, 1, 2, 30, 40]


@pytest.mark.parametrize("deterministic", [None, False])
def test_parallel_map_gives_every_element(deterministic):
    ds = tf.data.Dataset.range(50).map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE,
                                       deterministic=deterministic)
    got = values(ds)
    assert (got if deterministic is None else sorted(got)) == [2 * i for i in range(50)]


def test_filter_and_its_predicate_type_error():
    assert values(tf.data.Dataset.range(6).filter(lambda x: x % 2 == 1)) == [1, 3, 5]
    assert int(tf.data.Dataset.range(6).filter(lambda x: x > 1).cardinality()) == -2
    with pytest.raises(TypeError) as e:
        tf.data.Dataset.range(3).filter(lambda x: x)
    assert str(e.value).startswith("Dataset.filter: the predicate must return a scalar bool "
                                   "tensor; it returns TensorSpec(shape=()")


def test_batch_drop_remainder_specs_and_cardinality():
    ds = tf.data.Dataset.range(5)
    assert values(ds.batch(2)) == [[0, 1], [2, 3], [4]]
    assert values(ds.batch(2, drop_remainder=True)) == [[0, 1], [2, 3]]
    assert ds.batch(2).element_spec.shape.as_list() == [None]
    assert ds.batch(2, drop_remainder=True).element_spec.shape.as_list() == [2]
    assert int(ds.batch(2).cardinality()) == 3
    assert int(ds.batch(2, drop_remainder=True).cardinality()) == 2
    with pytest.raises(ValueError, match="cannot batch component 0 whose elements have "
                                         "different shapes"):
        list(ds.map(lambda n: tf.fill([n], n)).batch(3))


def test_padded_batch_pads_to_the_longest_or_the_given_shape():
    ds = tf.data.Dataset.range(1, 4).map(lambda n: tf.fill([n], n))
    assert values(ds.padded_batch(2)) == [[[1, 0], [2, 2]], [[3, 3, 3]]]
    assert values(ds.padded_batch(3, padded_shapes=[4], padding_values=tf.constant(-1, tf.int64))) \
        == [[[1, -1, -1, -1], [2, 2, -1, -1], [3, 3, 3, -1]]]
    assert ds.padded_batch(2, padded_shapes=[4]).element_spec.shape.as_list() == [None, 4]
    with pytest.raises(ValueError, match="larger than padded shape"):
        list(ds.padded_batch(3, padded_shapes=[2]))


def test_unbatch_undoes_batch():
    ds = tf.data.Dataset.from_tensor_slices(({"a": [[1, 2], [3, 4]]}, [[5, 6], [7, 8]]))
    assert values(ds.unbatch()) == [({"a": 1}, 5), ({"a": 2}, 6), ({"a": 3}, 7), ({"a": 4}, 8)]
    assert values(tf.data.Dataset.range(7).batch(3).unbatch()) == list(range(7))


def test_repeat_take_skip_and_their_cardinalities():
    ds = tf.data.Dataset.range(3)
    assert values(ds.repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(ds.repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert values(ds.skip(1)) == [1, 2] and values(ds.skip(-1)) == []
    assert values(ds.take(-1)) == [0, 1, 2]
    assert int(ds.repeat().cardinality()) == tf.data.INFINITE_CARDINALITY == -1
    assert int(ds.repeat().take(5).cardinality()) == 5
    assert int(ds.repeat(3).skip(4).cardinality()) == 5
    assert values(ds.filter(lambda x: x > 5).repeat()) == []  # an empty repeat ends
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())


def test_shuffle_is_a_permutation_repeatable_with_seeds_and_reshuffled_each_epoch():
    ds = tf.data.Dataset.range(20)
    order = values(ds.shuffle(20, seed=7))
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert values(ds.shuffle(20, seed=7)) == order  # the same seed, the same first order
    epochs = values(ds.shuffle(20, seed=7).repeat(2))
    assert epochs[:20] == order and epochs[20:] != order and sorted(epochs[20:]) == sorted(order)
    fixed = ds.shuffle(20, seed=7, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)
    again = ds.shuffle(20, seed=7)
    assert values(again) != values(again)  # each new iterator reshuffles
    assert values(ds.shuffle(1)) == list(range(20))  # a buffer of one keeps the order
    tf.random.set_seed(3)
    a = values(ds.shuffle(5))
    tf.random.set_seed(3)
    assert values(ds.shuffle(5)) == a


def test_small_shuffle_buffers_only_move_elements_locally():
    order = values(tf.data.Dataset.range(100).shuffle(4, seed=1))
    assert sorted(order) == list(range(100))
    assert all(v <= i + 3 for i, v in enumerate(order))  # drawn from the 4 seen so far
    assert order != list(range(100))


def test_enumerate_flat_map_reduce_apply():
    assert values(tf.data.Dataset.range(5, 7).enumerate(1)) == [(1, 5), (2, 6)]
    ds = tf.data.Dataset.range(1, 4).flat_map(lambda n: tf.data.Dataset.range(n))
    assert values(ds) == [0, 0, 1, 0, 1, 2]
    total = tf.data.Dataset.range(5).reduce(tf.constant(0, tf.int64), lambda s, x: s + x)
    assert int(total) == 10
    assert values(tf.data.Dataset.range(4).apply(lambda d: d.skip(3))) == [3]


def test_prefetch_overlaps_and_propagates_errors_and_stops_when_abandoned():
    def gen():
        yield 1
        raise RuntimeError("broken input")

    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int32))
    it = iter(ds.prefetch(2))
    assert int(next(it)) == 1
    with pytest.raises(RuntimeError, match="broken input"):
        next(it)
    before = threading.active_count()
    for i, _ in enumerate(tf.data.Dataset.range(10 ** 9).prefetch(4)):
        if i == 3:
            break  # the producer thread must end, not fill memory forever
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before


def test_cache_runs_the_pipeline_once():
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)

    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64))
    cached = ds.map(lambda x: x * x).cache()
    assert values(cached) == [0, 1, 4] and values(cached) == [0, 1, 4]
    assert len(calls) == 1
    partial = ds.cache()
    list(partial.take(1))  # an incomplete pass is not kept
    assert values(partial) == [0, 1, 2] and len(calls) == 3


def test_a_cache_file_is_reused_by_later_datasets_and_validated(tmp_path):
    name = str(tmp_path / "c")
    first = tf.data.Dataset.range(4).map(lambda x: tf.cast(x, tf.float32) / 2).cache(name)
    assert values(first) == [0.0, 0.5, 1.0, 1.5]
    calls = []

    def gen():
        calls.append(1)
        yield from (9.0,)

    second = tf.data.Dataset.from_generator(
        gen, output_signature=tf.TensorSpec([], tf.float32)).cache(name)
    assert values(second) == [0.0, 0.5, 1.0, 1.5] and calls == []
    wrong = tf.data.Dataset.range(2).cache(name)  # int64 elements: the file holds float32
    with pytest.raises(tf.errors.DataLossError) as e:
        list(wrong)
    assert str(e.value).startswith(f"{name}.npz: the tf.data cache file does not hold this "
                                   f"dataset's elements")
    (tmp_path / "c.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(tf.errors.DataLossError):
        list(tf.data.Dataset.range(4).cache(name))


# ------------------------------------------------------------------ iterators

def test_iterator_protocol_get_next_and_optional():
    it = iter(tf.data.Dataset.range(2))
    assert int(next(it)) == 0 and int(it.get_next()) == 1
    assert not bool(it.get_next_as_optional().has_value())
    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
        it.get_next()
    with pytest.raises(StopIteration):
        next(it)
    o = tf.data.Optional.from_value((tf.constant(1), tf.constant([2.0])))
    assert bool(o.has_value()) and float(o.get_value()[1][0]) == 2.0


def test_as_numpy_iterator_yields_numpy_values():
    got = list(tf.data.Dataset.from_tensor_slices(([1, 2], [[1.0], [2.0]])).as_numpy_iterator())
    assert isinstance(got[0][0], np.integer) and isinstance(got[0][1], np.ndarray)
    assert [(int(a), b.tolist()) for a, b in got] == [(1, [1.0]), (2, [2.0])]


@pytest.mark.parametrize("pipeline", ["plain", "shuffled", "prefetched"])
def test_a_checkpointed_iterator_resumes_where_it_was_saved(tmp_path, pipeline):
    ds = tf.data.Dataset.range(12)
    if pipeline == "shuffled":
        ds = ds.shuffle(12, seed=5).repeat(2)
    if pipeline == "prefetched":
        ds = ds.map(lambda x: x + 100).prefetch(3)
    it = iter(ds)
    head = [int(next(it)) for _ in range(5)]
    ckpt = tf.train.Checkpoint(iterator=it)
    path = ckpt.save(str(tmp_path / "ckpt"))
    expected = [int(next(it)) for _ in range(6)]
    ckpt.restore(path)
    assert [int(next(it)) for _ in range(6)] == expected
    fresh = iter(ds)
    tf.train.Checkpoint(iterator=fresh).restore(path)
    assert [int(next(fresh)) for _ in range(6)] == expected
    assert head and len(set(head)) == 5



@pytest.mark.parametrize("drop", [False, True])
def test_batches_of_slices_by_indexing_equal_element_by_element_batches(drop):
    """A batch over tensor slices (shuffled with a whole buffer or not) indexes the arrays
    once per batch; it must give exactly the batches stacking each element would."""
    x = np.arange(46, dtype=np.float32).reshape(23, 2)
    ds = tf.data.Dataset.from_tensor_slices((x, np.arange(23)))
    for source in (ds, ds.shuffle(23, seed=4)):
        fused = values(source.batch(5, drop_remainder=drop))
        stepwise = values(source.map(lambda a, b: (a, b)).batch(5, drop_remainder=drop))
        assert fused == stepwise and len(fused) == (4 if drop else 5)
    order = values(ds.shuffle(23, seed=4))
    assert [b for batch in values(ds.shuffle(23, seed=4).batch(5)) for b in batch[1]] == \
        [o[1] for o in order]
