"""CUDA graphs of staged GPU functions (``staged/replay.py``, ``recording.py``, ``graphs.py``):
from the fourth call on, a concrete function replays its recorded device work, and every call
must still give what running the host code gives: new inputs, variables assigned in the call
and eagerly between calls, results held across calls, random draws. Functions whose host code
reads device values, or issues different work from call to call, must keep running plainly and
say why. Under the simulator a replay issues the recorded launches again (``graphs.
SimulatedGraph``); on a GPU it is one CUDA graph, through the same recording and staging.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cuda import config, memory
from stagecraft.backends.numba_cuda.kernels.shape import copy_view
from stagecraft.backends.numba_cuda.recording import difference, recording
from stagecraft.backends.numba_cuda.staged.replay import Replayer

pytestmark = pytest.mark.cuda

CALLS = 6   # warm-up, two recordings, three replays


def replayer(staged, *args):
    """The replayer of the concrete function ``staged`` runs for ``args`` on the GPU."""
    with tf.device("/gpu:0"):
        return staged.get_concrete_function(*args).executable.replayer


def test_replays_give_each_calls_own_results_and_keep_earlier_ones():
    @tf.function
    def f(x, y):
        z = tf.matmul(x, y)
        return tf.tanh(z * 0.5 + 1.0), tf.reduce_sum(z, axis=0)

    rng = np.random.default_rng(0)
    inputs = [(rng.standard_normal((3, 4)).astype(np.float32),
               rng.standard_normal((4, 2)).astype(np.float32)) for _ in range(CALLS)]
    with tf.device("/gpu:0"):
        outs = [f(tf.constant(a), tf.constant(b)) for a, b in inputs]
    status = replayer(f, tf.constant(inputs[0][0]).gpu(), tf.constant(inputs[0][1]).gpu()).status
    assert status.startswith("@f replays a CUDA graph"), status
    for (a, b), (t, s) in zip(inputs, outs):   # earlier results survive later replays
        np.testing.assert_allclose(t.numpy(), np.tanh(a @ b * 0.5 + 1.0), rtol=1e-5)
        np.testing.assert_allclose(s.numpy(), (a @ b).sum(0), rtol=1e-5)
        assert "GPU" in t.device


def test_the_same_input_tensor_again_is_not_copied_but_still_read():
    @tf.function
    def f(x):
        return x * 2.0, x

    with tf.device("/gpu:0"):
        x = tf.constant([1.0, 2.0])
        y = tf.constant([5.0, 7.0])
        outs = [f(x if k % 2 == 0 else y) for k in range(CALLS)] + [f(x), f(x)]
    assert "replays" in replayer(f, x).status
    for k, (doubled, same) in enumerate(outs):
        source = [1.0, 2.0] if k % 2 == 0 or k >= CALLS else [5.0, 7.0]
        np.testing.assert_array_equal(same.numpy(), source)   # an input returned: a copy
        np.testing.assert_array_equal(doubled.numpy(), np.float32(source) * 2)


def test_a_new_threads_first_call_replays_the_graph():
    # (its arguments are the arrays the last call copied in: the replay is the thread's first
    # driver call, so it must make the CUDA context current there itself)
    @tf.function
    def f(x):
        return tf.tanh(x) * 2.0

    with tf.device("/gpu:0"):
        x = tf.constant([0.5, -1.0])
        for _ in range(CALLS):
            f(x)
    replays, calls = replayer(f, x), replayer(f, x)._calls
    assert replays.status.startswith("@f replays a CUDA graph"), replays.status
    out = []

    def call() -> None:
        with tf.device("/gpu:0"):
            out.append(f(x))
    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    assert "GPU" in out[0].device and replays._calls == calls + 1   # (through the replayer)
    np.testing.assert_allclose(out[0].numpy(), np.tanh([0.5, -1.0]) * 2.0, rtol=1e-6)
    assert replays.status.startswith("@f replays a CUDA graph"), replays.status


def test_variables_assigned_in_replays_and_eagerly_between_them():
    with tf.device("/gpu:0"):
        w = tf.Variable(np.ones((2, 2), np.float32))
        b = tf.Variable(np.zeros(2, np.float32))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((tf.matmul(x, w) + b) ** 2)
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.01 * gw)
        b.assign_sub(0.01 * gb)
        return loss

    x_host = np.float32([[1.0, 2.0], [0.5, -1.0]])
    w_ref, b_ref = np.ones((2, 2), np.float32), np.zeros(2, np.float32)
    with tf.device("/gpu:0"):
        x = tf.constant(x_host)
        for k in range(2 * CALLS):
            if k == CALLS:   # an eager assignment between replays is seen by the next one
                w.assign(w * 0.5)
                w_ref = w_ref * np.float32(0.5)
            loss = step(x)
            y = x_host @ w_ref + b_ref
            np.testing.assert_allclose(loss.numpy(), (y ** 2).sum(), rtol=1e-5)
            w_ref = w_ref - np.float32(0.01) * (x_host.T @ (2 * y))
            b_ref = b_ref - np.float32(0.01) * (2 * y).sum(0)
            np.testing.assert_allclose(w.numpy(), w_ref, rtol=1e-5)
            np.testing.assert_allclose(b.numpy(), b_ref, rtol=1e-5, atol=1e-7)
    assert "replays" in replayer(step, x).status


def test_a_tensor_read_from_a_variable_keeps_its_value_after_replays():
    with tf.device("/gpu:0"):
        v = tf.Variable([1.0, 2.0])

    @tf.function
    def bump():
        v.assign_add([1.0, 1.0])
        return v.read_value()

    with tf.device("/gpu:0"):
        seen = [bump() for _ in range(CALLS)]
    for k, s in enumerate(seen, 1):
        np.testing.assert_array_equal(s.numpy(), [1.0 + k, 2.0 + k])
    np.testing.assert_array_equal(v.numpy(), [1.0 + CALLS, 2.0 + CALLS])


def test_random_draws_differ_between_replays():
    tf.random.set_seed(3)

    @tf.function
    def draw(x):
        return x + tf.random.uniform((4,))

    with tf.device("/gpu:0"):
        x = tf.zeros((4,))
        draws = [draw(x).numpy() for _ in range(CALLS)]
    assert len({d.tobytes() for d in draws}) == CALLS, draws


def test_a_predicate_is_a_guard_a_replay_taking_another_branch_runs_plainly():
    @tf.function
    def f(x):
        if tf.reduce_sum(x) > 0:
            x = x * 2.0
        return x

    signs = [1, 1, 1, 1, -1, 1, -1, -1, 1]   # replays from the fourth call; one miss, then two
    with tf.device("/gpu:0"):
        outs, statuses = [], []
        for k, sign in enumerate(signs):
            outs.append(f(tf.constant([sign * (k + 1.0)])).numpy()[0])
            statuses.append(replayer(f, tf.constant([1.0]).gpu()).status)
    assert outs == [2 * (k + 1.0) if s > 0 else -(k + 1.0) for k, s in enumerate(signs)]
    assert "replays" in statuses[5], statuses   # one miss keeps replaying
    assert statuses[-1] == ("@f runs without a CUDA graph: its host reads differed from the "
                            "recorded ones in 2 calls in a row (control flow that depends on "
                            "the data)"), statuses


def test_a_while_loop_replays_while_its_trip_count_stays():
    @tf.function
    def f(x, n):
        i = tf.constant(0)
        while i < n:
            x = tf.tanh(x) + 1.0
            i += 1
        return x

    trips = [3, 3, 3, 3, 3, 5, 3]
    with tf.device("/gpu:0"):
        outs = [f(tf.constant([0.5 * k]), tf.constant(n)).numpy()[0] for k, n in enumerate(trips)]
        status = replayer(f, tf.constant([1.0]).gpu(), tf.constant(1).gpu()).status
    for k, (out, n) in enumerate(zip(outs, trips)):
        x = np.float32(0.5 * k)
        for _ in range(n):
            x = np.tanh(x) + np.float32(1.0)
        np.testing.assert_allclose(out, x, rtol=1e-6)
    assert "replays" in status, status


def test_a_failing_check_in_a_replay_raises_the_plain_error_and_commits_nothing():
    with tf.device("/gpu:0"):
        v = tf.Variable([0.0, 0.0, 0.0])

    @tf.function
    def f(indices):
        v.assign_add([1.0, 1.0, 1.0])
        return tf.gather(tf.constant([10.0, 20.0, 30.0]), indices)

    with tf.device("/gpu:0"):
        good = tf.constant([2, 0])
        for _ in range(CALLS):
            np.testing.assert_array_equal(f(good).numpy(), [30.0, 10.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in"):
            f(tf.constant([1, 7]))
        np.testing.assert_array_equal(v.numpy(), [CALLS] * 3)   # the failed call assigned nothing
        np.testing.assert_array_equal(f(good).numpy(), [30.0, 10.0])
        assert "replays" in replayer(f, good).status


def test_prints_and_asserts_run_between_the_graphs_of_a_replay(capsys):
    @tf.function
    def f(x):
        y = x + 1.0
        tf.print(y)
        tf.debugging.Assert(tf.reduce_all(y > 0.0), ["y must be positive"])
        return y * 2.0

    with tf.device("/gpu:0"):
        outs = [f(tf.constant([float(k)])).numpy()[0] for k in range(CALLS)]
        status = replayer(f, tf.constant([1.0]).gpu()).status
        with pytest.raises(tf.errors.InvalidArgumentError, match="y must be positive"):
            f(tf.constant([-5.0]))
    assert outs == [2 * (k + 1.0) for k in range(CALLS)]
    # each call printed once, in order, its own value (stderr, as TF)
    assert capsys.readouterr().err.split() == [f"[{k + 1}]" for k in range(CALLS)] + ["[-4]"]
    assert "replays a CUDA graph" in status, status


def test_a_host_read_after_a_print_keeps_the_function_plain_and_says_why():
    @tf.function
    def f(x):
        tf.print(x)
        if tf.reduce_sum(x) > 0:
            x = x * 2.0
        return x

    with tf.device("/gpu:0"):
        outs = [f(tf.constant([float(k)])).numpy()[0] for k in range(CALLS)]
        status = replayer(f, tf.constant([1.0]).gpu()).status
    assert outs == [2.0 * k for k in range(CALLS)]
    assert status == ("@f runs without a CUDA graph: it reads a device value on the host after "
                      "a print or an assert (a replay found invalid then could not take the "
                      "print back)"), status


def test_a_py_function_keeps_the_function_plain_and_says_why():
    @tf.function
    def f(x):
        return tf.py_function(lambda v: v + 1.0, [x], tf.float32) * 2.0

    with tf.device("/gpu:0"):
        outs = [f(tf.constant([float(k)])).numpy()[0] for k in range(CALLS)]
        status = replayer(f, tf.constant([1.0]).gpu()).status
    assert outs == [2 * (k + 1.0) for k in range(CALLS)]
    assert status == "@f runs without a CUDA graph: a device array is copied to the host", status


def test_graphs_can_be_turned_off():
    tf.config.set_cuda_graphs(False)
    try:
        _count_plain_calls()
    finally:
        tf.config.set_cuda_graphs(True)


def _count_plain_calls():
    @tf.function
    def f(x):
        return x + 1.0

    with tf.device("/gpu:0"):
        outs = [f(tf.constant([float(k)])).numpy()[0] for k in range(CALLS)]
        status = replayer(f, tf.constant([1.0]).gpu()).status
    assert outs == [k + 1.0 for k in range(CALLS)]
    assert status == "@f is recorded over its next calls (0 so far)"


def test_work_that_changes_between_calls_is_not_replayed():
    counter = iter(range(100))

    def host_varying(x):   # a host-side value baked into the uploaded work
        return (copy_view(x, lambda v: v), memory.to_device(np.int64(next(counter))))

    r = Replayer(host_varying, "@varying")
    x = memory.to_device(np.float32([1.0]))
    seen = [int(memory.to_host(r([x])[1])) for _ in range(CALLS)]
    assert seen == list(range(CALLS))
    assert r.status == ("@varying runs without a CUDA graph: two calls issued different device "
                        "work (step 2 (upload) uploads different host values)")


def test_recordings_compare_buffers_by_allocation_step_not_address():
    x = memory.to_device(np.float32([1.0, 2.0]))

    def call(source):
        with recording() as rec:
            copy_view(source, lambda v: v)
        return rec

    assert difference(call(x), call(x)) is None
    other = memory.to_device(np.float32([1.0, 2.0]))
    assert difference(call(x), call(other)) == "step 1 (launch) passes different arguments"


def test_an_eager_checked_op_in_a_recorded_call_uploads_its_flag_and_can_replay():
    from stagecraft.backends.numba_cuda.kernels.elementwise import run
    from stagecraft.ir import dtypes as dt
    a, b = memory.to_device(np.int32([7, -7])), memory.to_device(np.int32([2, 2]))
    r = Replayer(lambda x, y: (run("floordiv", [x, y], dt.int32, (2,)),), "@floordiv")
    outs = [memory.to_host(r([a, b])[0]).tolist() for _ in range(CALLS)]
    assert outs == [[3, -4]] * CALLS
    assert "replays" in r.status, r.status
    with pytest.raises(ZeroDivisionError):   # (a miss: the plain run raises)
        r([a, memory.to_device(np.int32([2, 0]))])
    assert memory.to_host(r([a, b])[0]).tolist() == [3, -4]   # (the replay cleared the flag)
    assert "replays" in r.status, r.status


def test_a_data_dependent_size_is_a_guard_and_its_kernel_stays_in_bounds():
    @tf.function
    def positives(x):
        return tf.where(x > 0.0)

    rows = [[1.0, -1.0, 2.0, -3.0]] * 5 + [[1.0, 1.0, 1.0, 1.0], [-1.0, 2.0, 3.0, -1.0]]
    with tf.device("/gpu:0"):
        outs = [positives(tf.constant(r)).numpy() for r in rows]
        status = replayer(positives, tf.constant(rows[0]).gpu()).status
    for r, out in zip(rows, outs):
        np.testing.assert_array_equal(out, np.argwhere(np.float32(r) > 0))
    assert "replays" in status, status


def test_a_recording_past_its_step_limit_is_given_up(monkeypatch):
    monkeypatch.setattr(config, "GRAPH_MAX_STEPS", 3)

    @tf.function
    def f(x, n):
        for _ in tf.range(n):
            x = x * 0.5
        return x

    with tf.device("/gpu:0"):
        outs = [f(tf.constant([8.0]), tf.constant(5)).numpy()[0] for _ in range(CALLS)]
        status = replayer(f, tf.constant([1.0]).gpu(), tf.constant(1).gpu()).status
    assert outs == [0.25] * CALLS
    assert status.startswith("@f runs without a CUDA graph: it issued more than 3 launches and "
                             "copies (a long loop?)"), status


def test_a_settings_change_records_the_graph_again(monkeypatch):
    @tf.function
    def f(x):
        return x * 3.0

    with tf.device("/gpu:0"):
        x = tf.constant([1.0, 2.0])
        for _ in range(CALLS):
            f(x)
        r = replayer(f, x)
        assert "replays" in r.status
        tf.config.experimental.enable_tensor_float_32_execution(True)
        try:
            np.testing.assert_array_equal(f(x).numpy(), [3.0, 6.0])
            assert r.status.startswith("@f is recorded over its next calls"), r.status
            for _ in range(2):
                f(x)
            assert "replays" in r.status
        finally:
            tf.config.experimental.enable_tensor_float_32_execution(False)
