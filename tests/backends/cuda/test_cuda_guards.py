"""Guards merged in replayed CUDA graphs (``guards.py``): a graph's guarded buffers of one dtype
(error flags, loop predicates) become slots of one buffer, the flags set by one upload, all
checked by one read, and a replay must stay valid exactly when it was: a bad value late in a
loop still makes the replay invalid, and the call then raises its plain error; a loop that
runs longer still misses. Buffers that anything else touches are left as they are."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cuda import graphs, guards, memory, programs
from stagecraft.backends.numba_cuda.kernels.elementwise import run
from stagecraft.backends.numba_cuda.kernels.gather import check_indices
from stagecraft.backends.numba_cuda.kernels.shape import copy_view
from stagecraft.backends.numba_cuda.launch import cuda_module
from stagecraft.backends.numba_cuda.launcher import launch
from stagecraft.backends.numba_cuda.recording import Branch, Copy, Guard, Upload, recording
from stagecraft.backends.numba_cuda.staged import runtime
from stagecraft.ir import dtypes as dt

pytestmark = pytest.mark.cuda

CALLS = 6


def _kinds(items: list) -> list[str]:
    return [type(i).__name__ for i in items if not isinstance(i, Branch)]


def test_the_flags_of_a_loop_are_merged_and_a_bad_index_late_in_it_still_raises():
    @tf.function
    def f(x, idx):
        def body(t, acc):
            return t + 1, acc + tf.gather(x, tf.gather(idx, t))
        return tf.while_loop(lambda t, acc: t < 4, body, (0, tf.zeros([2])))[1]

    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    good = np.int32([0, 4, 2, 3])
    with tf.device("/gpu:0"):
        xs = tf.constant(x)
        outs = [f(xs, tf.constant(good)).numpy() for _ in range(CALLS)]
        r = f.get_concrete_function(xs, tf.constant(good)).executable.replayer
        assert "replays a CUDA graph" in r.status, r.status
        kinds = _kinds(r._graph.items)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"= 5 is not in \[0, 5\)"):
            f(xs, tf.constant(np.int32([0, 1, 2, 5])))   # (the last pass's index)
        again = f(xs, tf.constant(good)).numpy()
    for out in outs + [again]:
        np.testing.assert_array_equal(out, x[good].sum(0))
    # 8 gathers, each with its flag: one upload sets them all, and one read checks them
    # all, as one more checks the loop's 5 predicates
    assert kinds.count("Launch") >= 16
    assert kinds.count("Upload") == 1 and kinds.count("Guard") == 2, kinds
    assert not any(isinstance(i, Branch) for i in r._graph.items)


def _flags_recorded(n: int) -> tuple[list, list]:
    """A recording of ``n`` index checks (int64 flags) and ``n`` integer floor divisions
    (int8 flags), and the flag arrays in the order they were read."""
    idx = memory.to_device(np.int64([0, 1]))
    a, b = memory.to_device(np.int32([7, -7])), memory.to_device(np.int32([2, 2]))
    with recording() as rec:
        for _ in range(n):
            check_indices(idx, 5)
            run("floordiv", [a, b], dt.int32, (2,))
    return rec.items, [i.array for i in rec.items if type(i) is Guard]


def test_flags_are_merged_a_dtype_at_a_time_set_first_and_read_where_the_last_was():
    items, flags = _flags_recorded(3)
    merged = guards.merge(items)
    assert _kinds(items).count("Upload") == 6 and _kinds(items).count("Guard") == 6
    assert _kinds(merged) == ["Upload", "Upload", "Launch", "Launch", "Launch", "Launch",
                              "Launch", "Guard", "Launch", "Guard"], _kinds(merged)
    uploads = [i for i in merged if isinstance(i, Upload)]
    assert [u.host.tolist() for u in uploads] == [[2, 2, 2], [0, 0, 0]]
    assert not any(isinstance(i, Guard) and i.array is f for i in merged for f in flags)


@pytest.mark.parametrize("use", ["a copy after its read", "a result of the call"])
def test_a_flag_anything_else_touches_is_left_alone(use):
    items, flags = _flags_recorded(2)
    int64_flags = [f for f in flags if f.dtype == np.int64]
    touched = int64_flags[0]
    results = ()
    if use == "a copy after its read":
        items = items + [Copy(memory.empty((1,), np.int64), touched)]
    else:
        results = (touched,)
    merged = guards.merge(items, results)
    # the other int64 flag has no partner left: the int64 flags stay as recorded
    assert [i for i in merged if type(i) is Guard and i.array.dtype == np.int64] == \
        [i for i in items if type(i) is Guard and i.array.dtype == np.int64]
    assert sum(isinstance(i, Guard) for i in merged) == 3   # (the int8 ones merged)


def test_a_single_flag_is_not_worth_merging():
    items, _ = _flags_recorded(1)
    assert guards.merge(items) is items


def test_a_loop_with_a_varying_trip_count_merges_the_flags_of_each_pass():
    @tf.function
    def f(x, idx, n):
        def body(t, acc):
            return t + 1, acc + tf.gather(x, tf.gather(idx, t))
        return tf.while_loop(lambda t, acc: t < n, body, (0, tf.zeros([2])))[1]

    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    idx = np.int32([4, 0, 3, 1])
    trips = [2, 3, 4, 2, 3, 4, 3, 2, 4]
    with tf.device("/gpu:0"):
        xs, ids = tf.constant(x), tf.constant(idx)
        outs = [f(xs, ids, tf.constant(n)).numpy() for n in trips]
        r = f.get_concrete_function(xs, ids, tf.constant(2)).executable.replayer
        status = r.status
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"= 7 is not in \[0, 5\)"):
            f(xs, tf.constant(np.int32([4, 0, 3, 7])), tf.constant(4))
        again = f(xs, ids, tf.constant(3)).numpy()
    for n, out in zip(trips, outs):
        np.testing.assert_array_equal(out, x[idx[:n]].sum(0))
    np.testing.assert_array_equal(again, x[idx[:3]].sum(0))
    assert "replays CUDA graphs of" in status, status
    merged = [_kinds(g.items) for g in r._graph._graphs if g is not None]
    assert any(k.count("Guard") == 1 and k.count("Launch") >= 4 for k in merged), merged


def test_a_buffer_a_launch_writes_shares_the_slots_of_the_flags_and_both_read_right():
    src, idx = memory.to_device(np.int64([3])), memory.to_device(np.int64([0, 1]))
    with recording() as rec:
        n = copy_view(src, lambda v: v)   # (a launch writes n: a size the host reads)
        assert int(memory.scalar(n)) == 3
        check_indices(idx, 5)            # (an int64 flag, uploaded after n was written)
    merged = guards.merge(rec.items, (), rec.allocations)
    assert _kinds(merged) == ["Upload", "Launch", "Launch", "Guard"], _kinds(merged)
    assert graphs.graph(merged).launch()   # (the flag's upload did not clear n's slot)
    memory.copy_into(src, memory.to_device(np.int64([4])))
    assert not graphs.graph(merged).launch()   # (another size: the replay is not valid)


def test_reads_of_buffers_made_before_the_call_are_left_alone():
    made_before = [memory.to_device(np.int64([k])) for k in range(3)]
    with recording() as rec:
        for a in made_before:
            memory.scalar(a)
    assert guards.merge(rec.items, (), rec.allocations) is rec.items


def _count_down(n: Any, zero: Any, one: Any) -> Any:
    """A generated host function's shape, by hand: the call-wide error flag is uploaded in
    the program's first block (beside another flag of its dtype) and set and read in the
    loop's blocks, where a kernel flags a counter of 5."""
    err = runtime.error_flag()
    other = memory.to_device(np.zeros(1, np.int32))
    launch(_nothing(), (1, 1), other)
    memory.scalar(other)
    (c,) = runtime.loop_entry((n,))
    while True:
        runtime.loop_head(1)
        runtime.raise_if_error(err, ["c reached 5"])
        if not runtime.predicate(runtime.run("greater", [c, zero], ({}, "")), 1, loop=True):
            break
        launch(_flag_if_five(), (1, 1), err, c)
        (c,) = runtime.loop_next((c,), (runtime.run("subtract", [c, one], ({}, "")),))
    runtime.raise_if_error(err, ["c reached 5"])
    return c


@functools.lru_cache(maxsize=None)
def _nothing() -> Any:
    @cuda_module().jit
    def nothing(f):
        pass
    return nothing


@functools.lru_cache(maxsize=None)
def _flag_if_five() -> Any:
    @cuda_module().jit
    def flag_if_five(err, c):
        if c[0] == 5:
            err[0] = 1
    return flag_if_five


def test_a_programs_block_leaves_alone_a_flag_its_other_blocks_read():
    zero, one = memory.to_device(np.int32(0)), memory.to_device(np.int32(1))
    n = memory.to_device(np.int32(3))
    with recording() as rec:
        rec.stable_blocks = True
        out = _count_down(n, zero, one)
    program = programs.build(rec, [out]).compile()
    valid = []
    for trips in (3, 7, 3, 2, 4):   # (7 counts down through 5: that replay's flag is set)
        memory.copy_into(n, memory.to_device(np.int32(trips)))
        valid.append(program.launch())
    # each replay's first block clears the error flag again: one failure stays one
    assert valid == [True, False, True, True, True]


def test_a_buffer_nothing_writes_before_its_read_is_left_alone():
    with recording() as rec:
        for _ in range(2):
            memory.scalar(memory.empty((1,), np.int64))
    assert guards.merge(rec.items, (), rec.allocations) is rec.items
