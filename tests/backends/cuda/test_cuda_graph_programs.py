"""Programs of CUDA graphs (``programs.py``): a staged GPU function whose loops run a different
number of times from call to call is replayed one graph per block with a predicate copy after
each. Every call must still give what running the host code gives (checked against NumPy), the
status must say how calls run, and work that a program cannot stand for must keep the function
plain and say why."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cuda import memory, programs
from stagecraft.backends.numba_cuda.graphs import NotReplayable
from stagecraft.backends.numba_cuda.recording import recording
from stagecraft.backends.numba_cuda.staged import runtime

pytestmark = pytest.mark.cuda


def replayer(staged, *args):
    with tf.device("/gpu:0"):
        return staged.get_concrete_function(*args).executable.replayer


def iterate(x: np.float32, n: int) -> np.float32:
    for _ in range(n):
        x = np.tanh(x) + np.float32(1.0)
    return x


@tf.function
def loop(x, n):
    i = tf.constant(0)
    while i < n:
        x = tf.tanh(x) + 1.0
        i += 1
    return x


def test_a_loop_whose_trip_count_varies_replays_a_program_of_graphs():
    # flat recordings at 3 and 3, two misses (5, 2), program recordings (7, 0), then replays
    trips = [3, 3, 3, 5, 2, 7, 0, 4, 1, 6, 0, 9, 2]
    statuses = []
    with tf.device("/gpu:0"):
        outs = []
        for k, n in enumerate(trips):
            outs.append(loop(tf.constant([0.25 * k]), tf.constant(n)).numpy()[0])
            statuses.append(replayer(loop, tf.constant([1.0]).gpu(), tf.constant(1).gpu()).status)
    for k, (out, n) in enumerate(zip(outs, trips)):
        np.testing.assert_allclose(out, iterate(np.float32(0.25 * k), n), rtol=1e-6)
    assert statuses[-1].startswith("@loop replays CUDA graphs of 4 blocks ("), statuses
    assert statuses[-1].endswith("one branch read after each"), statuses


def test_nested_loops_and_a_swap_of_carried_values():
    @tf.function
    def fib(n, m):
        total = tf.constant(0)
        j = tf.constant(0)
        while j < m:
            a, b = tf.constant(0), tf.constant(1)
            i = tf.constant(0)
            while i < n + j:
                a, b = b, a + b    # (carried buffers swap: each is copied before rewriting)
                i += 1
            total += a
            j += 1
        return total

    def expected(n, m):
        def f(k):
            a, b = 0, 1
            for _ in range(k):
                a, b = b, a + b
            return a
        return sum(f(n + j) for j in range(m))

    calls = [(3, 2), (3, 2), (3, 2), (5, 1), (1, 3), (4, 3), (2, 0), (6, 2), (0, 4), (7, 1)]
    with tf.device("/gpu:0"):
        outs = [int(fib(tf.constant(n), tf.constant(m)).numpy()) for n, m in calls]
        status = replayer(fib, tf.constant(1).gpu(), tf.constant(1).gpu()).status
    assert outs == [expected(n, m) for n, m in calls]
    assert "replays CUDA graphs of" in status, status


def test_a_program_taking_a_branch_no_recording_took_runs_plainly():
    @tf.function
    def f(x, n):
        i = tf.constant(0)
        while i < n:
            if tf.reduce_sum(x) > 100.0:
                x = x - 50.0
            else:
                x = x * 3.0
            i += 1
        return x

    def expected(x, n):
        for _ in range(n):
            x = x - 50.0 if x > 100.0 else x * 3.0
        return x

    calls = [(1.0, 2), (1.0, 2), (1.0, 2), (1.0, 4), (1.0, 1), (1.0, 3), (1.0, 2), (2.0, 5),
             (1.0, 1), (30.0, 6)]
    with tf.device("/gpu:0"):
        outs = [float(f(tf.constant([x]), tf.constant(n)).numpy()[0]) for x, n in calls]
        status = replayer(f, tf.constant([1.0]).gpu(), tf.constant(1).gpu()).status
    np.testing.assert_allclose(outs, [expected(np.float32(x), n) for x, n in calls], rtol=1e-6)
    assert "replays CUDA graphs of" in status, status   # (one miss, the last call)


def test_a_cond_branch_first_taken_in_a_later_pass_reads_that_pass_values():
    # the else branch first runs in the loop's second pass, on values that pass made: its
    # graph is redirected to the buffers a replay's passes write
    @tf.function
    def f(x, n):
        i = tf.constant(0)
        while i < n:
            y = x * 0.5
            if i % 2 == 0:
                x = y + 3.0
            else:
                x = y * 4.0
            i += 1
        return x

    def expected(x, n):
        for i in range(n):
            x = x * 0.5 + 3.0 if i % 2 == 0 else x * 0.5 * 4.0
        return x

    calls = [(1.0, 2), (1.0, 2), (1.0, 2), (1.0, 3), (2.0, 1), (3.0, 4), (1.0, 2), (5.0, 5),
             (1.0, 0), (7.0, 3)]
    with tf.device("/gpu:0"):
        outs = [float(f(tf.constant([x]), tf.constant(n)).numpy()[0]) for x, n in calls]
        status = replayer(f, tf.constant([1.0]).gpu(), tf.constant(1).gpu()).status
    np.testing.assert_allclose(outs, [expected(np.float32(x), n) for x, n in calls], rtol=1e-6)
    assert "replays CUDA graphs of 7 blocks" in status, status


def test_variables_assigned_in_a_varying_loop():
    with tf.device("/gpu:0"):
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def f(n):
            i = tf.constant(0)
            while i < n:
                v.assign(v * 2.0 + 1.0)
                i += 1
            return v.read_value()

        trips = [1, 1, 1, 2, 3, 0, 2, 1, 4]
        outs = [f(tf.constant(n)).numpy() for n in trips]
        status = replayer(f, tf.constant(1).gpu()).status
    x = np.float32([1.0, 2.0])
    for n, out in zip(trips, outs):
        for _ in range(n):
            x = x * np.float32(2.0) + np.float32(1.0)
        np.testing.assert_allclose(out, x, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), x, rtol=1e-6)
    assert "replays CUDA graphs of" in status, status


def test_a_carried_value_that_changes_shape_keeps_the_function_plain_and_says_why():
    @tf.function
    def grow(n):
        x = tf.zeros((1,))
        i = tf.constant(0)
        while i < n:
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(x, tf.TensorShape([None]))])
            x = tf.concat([x, x + 1.0], 0)
            i += 1
        return tf.reduce_sum(x)

    trips = [1, 1, 1, 2, 3, 1, 2]
    with tf.device("/gpu:0"):
        outs = [float(grow(tf.constant(n)).numpy()) for n in trips]
        status = replayer(grow, tf.constant(1).gpu()).status
    assert outs == [float(sum(bin(k).count("1") for k in range(2 ** n))) for n in trips]
    assert status == ("@grow runs without a CUDA graph: a loop's carried value changes shape "
                      "between iterations"), status


def _count_down(n, escape: bool):
    """Host code like a generated function's: ``while c > 0: c -= 1``; with ``escape``, it
    also returns a value made in the last pass that is not a carried one."""
    zero, one = memory.to_device(np.int32(0)), memory.to_device(np.int32(1))
    (c,) = runtime.loop_entry((n,))
    last = zero
    while True:
        runtime.loop_head(1)
        if not runtime.predicate(runtime.run("greater", [c, zero], ({}, "")), 1, loop=True):
            break
        last = runtime.run("multiply", [c, c], ({}, ""))
        (c,) = runtime.loop_next((c,), (runtime.run("subtract", [c, one], ({}, "")),))
    return (c, last) if escape else (c,)


def test_a_value_made_in_a_loop_and_read_after_it_is_not_replayed():
    # (with no trip, the code after the loop would read another value: only carried values
    # leave a loop)
    n = memory.to_device(np.int32(3))
    with recording() as rec:
        rec.stable_blocks = True
        out = _count_down(n, escape=True)
    with pytest.raises(NotReplayable) as info:
        programs.build(rec, out)
    assert str(info.value) == ("a result was made in a loop pass or cond branch, not carried "
                               "out of it"), info.value


def test_programs_of_two_calls_compare_the_blocks_both_ran():
    n = memory.to_device(np.int32(0))   # (the argument's buffer: the same in both calls)

    def record(trips, scale):
        memory.copy_into(n, memory.to_device(np.int32(trips)))
        with recording() as rec:
            rec.stable_blocks = True
            (c,) = _count_down(n, escape=False)
            out = runtime.run("multiply", [c, memory.to_device(np.int32(scale))], ({}, ""))
        return programs.build(rec, [out])
    assert record(2, 5).difference(record(4, 5)) is None
    assert record(2, 5).difference(record(0, 5)) is None   # (no body pass in one: not compared)
    assert record(2, 5).difference(record(4, 6)) == "block 3: step 1 (upload) differs"


def test_a_value_bound_in_a_cond_two_tests_before_its_use_is_read_from_the_branch_taken():
    # r is made in either arm of the first cond; the third cond's arms read it. A replay may
    # pass (first cond False) -> (second cond) -> (third cond True), a path no recorded pass
    # took, though each of its edges was recorded: the third cond's block must then read the
    # False arm's r, not the buffer the recorded True arm wrote.
    @tf.function
    def f(pb, sb, n):
        acc, v, i = tf.constant(0.0), tf.constant(1.0), tf.constant(0)
        while i < n:
            if pb % 2 == 1:
                r = v * 2.0
            else:
                r = v * 3.0
            if pb > -100:   # (always True: a test between the make and the use)
                q = tf.constant(1.0)
            else:
                q = tf.constant(2.0)
            if sb % 2 == 1:
                acc = acc + r * q
            else:
                acc = acc - r * q
            pb, sb, i = pb // 2, sb // 2, i + 1
        return acc

    def expected(pb, sb, n):
        acc = 0.0
        for k in range(n):
            r = 2.0 if (pb >> k) & 1 else 3.0
            acc = acc + r if (sb >> k) & 1 else acc - r
        return acc

    # (bit k of pb / sb: the first / third test's value in pass k); recorded as a program
    # on the 4th and 5th calls, replayed from the 6th
    calls = [(3, 3, 2), (1, 1, 1), (1, 1, 2), (0b101, 0b101, 3), (0b101, 0b101, 3),
             (0b10, 0b11, 2), (0b0, 0b1, 1)]
    with tf.device("/gpu:0"):
        outs = [float(f(tf.constant(p), tf.constant(s), tf.constant(n)).numpy())
                for p, s, n in calls]
    assert outs == [expected(p, s, n) for p, s, n in calls]


def carried_read_case():
    """A loop whose slice ``x[k:]`` reads the carried ``k`` on the host (a guard on the
    loop's buffer of k, which the pass then rewrites in loop_next), recorded with k == 2
    throughout: a replay starting at k == 0 must not pass as valid because the buffer holds
    2 again by the end of the block. Returns the function, the calls and their results."""
    @tf.function
    def f(x, k, n):
        acc, i = tf.constant(0.0), tf.constant(0)
        while i < n:
            acc = acc + tf.reduce_sum(x[k:])
            k = tf.maximum(k, 2)
            i += 1
        return acc

    x = np.float32([10, 20, 30, 40])
    calls = [(2, 1), (2, 2), (2, 3), (2, 4), (2, 2), (2, 3), (0, 3), (1, 2)]
    return f, [(x, k, n) for k, n in calls], [float(x[k:].sum() + x[2:].sum() * (n - 1))
                                              for k, n in calls]


def test_a_host_read_of_a_carried_value_checks_the_value_it_read_not_the_next_ones():
    f, calls, expected = carried_read_case()
    with tf.device("/gpu:0"):
        outs = [float(f(*(tf.constant(a) for a in args)).numpy()) for args in calls]
    assert outs == expected


def test_indexing_and_tensor_array_writes_by_the_loop_counter_replay_as_a_program():
    # x[i] and a TensorArray write at i read i on the device, so every pass issues the
    # same work and the host reads only the loop's test
    @tf.function
    def running(x, n):
        ta = tf.TensorArray(tf.float32, size=8)   # (a size of n would be read on the host)
        acc = tf.constant(0.0)
        i = tf.constant(0)
        while i < n:
            acc = acc + x[i] * x[-1 - i]
            ta = ta.write(i, acc)
            i += 1
        return ta.stack()

    x = np.float32([1, 2, 3, 4, 5, 6, 7, 8])
    trips = [3, 3, 3, 5, 2, 6, 4, 8, 1, 7]
    with tf.device("/gpu:0"):
        outs = [running(tf.constant(x), tf.constant(n)).numpy() for n in trips]
        status = replayer(running, tf.constant(x).gpu(), tf.constant(1).gpu()).status
    for n, out in zip(trips, outs):
        np.testing.assert_allclose(out[:n], np.cumsum(x[:n] * x[::-1][:n]), rtol=1e-6)
    assert "replays CUDA graphs of" in status, status


def test_an_index_read_on_the_device_keeps_the_errors_of_the_host_read():
    from stagecraft.backends.numba_cuda import eager
    with tf.device("/gpu:0"):
        x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        for i in (0, 2, -1, -3):
            np.testing.assert_array_equal(x[tf.constant(i)].numpy(), x.numpy()[i])
            np.testing.assert_array_equal(x[:, tf.constant(i % 2)].numpy(), x.numpy()[:, i % 2])
        with pytest.raises(Exception) as bad:
            x[tf.constant(3)]
    assert "out of bounds" in str(bad.value) or "index" in str(bad.value), bad.value
    buffer = memory.to_device(np.zeros((3, 2), np.float32))
    row = memory.to_device(np.float32([7, 8]))
    out = eager.row_update(buffer, memory.to_device(np.int32(2)), row)
    np.testing.assert_array_equal(memory.to_host(out)[2], [7, 8])
    for i in (3, -1):   # (no wrapping: a TensorArray index is a position)
        with pytest.raises(IndexError, match=rf"row_update: index {i} is not in \[0, 3\)"):
            eager.row_update(buffer, memory.to_device(np.int32(i)), row)
