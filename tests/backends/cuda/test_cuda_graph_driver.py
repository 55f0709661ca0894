"""The GPU form of a replay (``graphs.DriverGraph``) checked without a GPU: the CUDA driver is
replaced by a stand-in that captures what is issued on the capture stream into a list and runs
it at ``cuGraphLaunch``, with copies done by ``memmove`` on the simulator's arrays (host memory,
so their addresses are real). Kernel launches go through ``launcher.prepare``/``enqueue`` as on
a GPU. The staged functions of test_cuda_graphs.py's kind then run through the capture, the
upload sources, the guard summary and its one device-to-host check."""
from __future__ import annotations

import ctypes
import sys
import threading
import types

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cuda import graphs, launcher, memory, recording
from stagecraft.backends.numba_cuda.detect import detect
from stagecraft.backends.numba_cuda.kernels.shape import copy_view
from stagecraft.backends.numba_cuda.recording import NotReplayable

pytestmark = pytest.mark.cuda

CALLS = 6
STREAM = 77   # the handle the stand-in gives the capture stream


class FakeDriver:
    """The driver calls DriverGraph makes, on host memory."""
    CUresult = types.SimpleNamespace(CUDA_SUCCESS=0)
    CUstream_flags = types.SimpleNamespace(CU_STREAM_NON_BLOCKING=types.SimpleNamespace(value=1))
    CUstreamCaptureMode = types.SimpleNamespace(CU_STREAM_CAPTURE_MODE_RELAXED=2)

    def __init__(self):
        self.capturing: list | None = None
        self.calls: list[str] = []

    def issue(self, op, stream) -> tuple:
        if stream == STREAM:
            assert self.capturing is not None, "work on the capture stream outside a capture"
            self.capturing.append(op)
        else:
            assert self.capturing is None, "work outside the capture stream during a capture"
            op()
        return (0,)

    def cuStreamCreate(self, flags):
        assert flags == 1   # non-blocking: no implicit sync with the legacy stream
        self.calls.append("create")
        return (0, STREAM)

    def cuStreamBeginCapture(self, stream, mode):
        self.calls.append("begin")
        self.capturing = []
        return (0,)

    def cuMemcpyDtoDAsync(self, dst, src, n, stream):
        return self.issue(lambda: ctypes.memmove(dst, src, n), stream)

    def cuStreamEndCapture(self, stream):
        self.calls.append("end")
        graph, self.capturing = self.capturing, None
        return (0, graph)

    def cuGraphInstantiate(self, graph, flags):
        return (0, list(graph))

    def cuGraphLaunch(self, exe, stream):
        assert stream == 0   # on the legacy default stream, ordered with everything else
        self.calls.append("launch")
        for op in exe:
            op()
        return (0,)

    def cuMemcpyDtoH(self, dst, src, n):
        self.calls.append("read")
        ctypes.memmove(dst, src, n)
        return (0,)

    def cuGetErrorName(self, error):
        return (0, b"CUDA_ERROR_FAKE")

    def cuGraphExecDestroy(self, exe):
        return (0,)

    cuGraphDestroy = cuStreamDestroy = cuGraphExecDestroy


@pytest.fixture
def driver(monkeypatch):
    if detect() != "simulator":
        # (the stand-in runs kernels on the simulator; on a GPU, test_cuda_graphs.py and
        # test_cuda_graph_programs.py replay the same functions through the real driver)
        pytest.skip("the stand-in driver runs on Numba's CUDA simulator only")
    fake = FakeDriver()
    import cuda.bindings
    import cuda.core
    monkeypatch.setattr(cuda.bindings, "driver", fake, raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", fake)
    monkeypatch.setattr(cuda.core, "Stream",
                        types.SimpleNamespace(from_handle=lambda handle: handle))
    monkeypatch.setattr(graphs, "simulated", lambda: False)
    # Launches: "prepared" is what the simulator needs to run the kernel; enqueued on the
    # capture stream, they wait in the captured list like any other work.
    monkeypatch.setattr(launcher, "prepare", lambda kernel, dims, args: (kernel, dims, args))
    monkeypatch.setattr(launcher, "enqueue", lambda prepared, stream=None: fake.issue(
        lambda: launcher.launch_now(*prepared), STREAM if stream is not None else 0))
    return fake


def replayer(staged, *args):
    with tf.device("/gpu:0"):
        return staged.get_concrete_function(*args).executable.replayer


def test_a_captured_graph_replays_kernels_uploads_and_checks_its_guards(driver):
    @tf.function
    def f(x, indices):
        y = tf.gather(x, indices) * 2.0   # an upload (the check's flag) and a guard
        if tf.reduce_sum(y) > 0:          # a guard
            y = y + 1.0
        return y

    cases = [([1.0, 2.0, 3.0], [2, 0])] * 4 + [([4.0, 5.0, 6.0], [1, 1]),
                                               ([-4.0, 5.0, -6.0], [0, 2])]
    with tf.device("/gpu:0"):
        outs = [f(tf.constant(x), tf.constant(i)).numpy() for x, i in cases]
        status = replayer(f, tf.constant([1.0, 2.0, 3.0]).gpu(), tf.constant([0, 1]).gpu()).status
    for (x, i), out in zip(cases, outs):
        y = np.float32(x)[i] * 2
        np.testing.assert_array_equal(out, y + 1 if y.sum() > 0 else y)
    assert "replays a CUDA graph" in status, status
    # two captures, the graph and its spare (which writes the results into buffers it hands
    # out: dropped at once here, so it serves every replay); each replay is one graph launch
    # and one read of the guards' summary
    assert driver.calls.count("begin") == driver.calls.count("end") == 2
    launches = driver.calls.count("launch")
    assert launches == 3 and driver.calls.count("read") == launches, driver.calls


def test_a_guard_miss_in_a_captured_graph_runs_the_call_plainly(driver):
    @tf.function
    def f(x, n):
        i = tf.constant(0)
        while i < n:
            x = x * 2.0
            i += 1
        return x

    trips = [2, 2, 2, 2, 4, 2]
    with tf.device("/gpu:0"):
        outs = [f(tf.constant([1.0]), tf.constant(n)).numpy()[0] for n in trips]
    assert outs == [2.0 ** n for n in trips]
    assert driver.calls.count("launch") == 3


def test_a_print_splits_the_captured_graph(driver, capsys):
    @tf.function
    def f(x):
        y = x * 3.0
        tf.print(y)
        return y + 1.0

    with tf.device("/gpu:0"):
        outs = [f(tf.constant([float(k)])).numpy()[0] for k in range(CALLS)]
    assert outs == [3.0 * k + 1 for k in range(CALLS)]
    assert capsys.readouterr().err.split() == [f"[{3 * k}]" for k in range(CALLS)]
    # two captures (before and after the print), for the graph and again for its spare; each
    # of the 3 replays launches the spare's two
    assert driver.calls.count("begin") == 4 and driver.calls.count("launch") == 6, driver.calls


def test_a_program_captures_one_graph_per_block_and_reads_one_branch_after_each(driver):
    @tf.function
    def f(x, n):
        i = tf.constant(0)
        while i < n:
            x = x * 2.0 + 1.0
            i += 1
        return x

    # flat recordings (2, 2), misses (4, 1), program recordings (3, 5), then replays
    trips = [2, 2, 2, 4, 1, 3, 5, 6, 0, 2]
    with tf.device("/gpu:0"):
        outs = [f(tf.constant([1.0]), tf.constant(n)).numpy()[0] for n in trips]
        status = replayer(f, tf.constant([1.0]).gpu(), tf.constant(1).gpu()).status
    assert outs == [2.0 ** (n + 1) - 1 for n in trips]
    assert status.startswith("@f replays CUDA graphs of 4 blocks"), status
    # two captures of the flat graph, for the graph and its spare (two misses), then one per
    # block a replay starts (the first, a pass; the one after the loop is empty: the result is
    # the loop's buffer), each with the loop's test block that follows it without a read; a
    # replay of n trips launches n + 1 graphs, each followed by one read of its branch
    assert driver.calls.count("begin") == 4, driver.calls
    program = driver.calls[len(driver.calls) - driver.calls[::-1].index("end"):]
    assert program.count("launch") == program.count("read") == 7 + 1 + 3, driver.calls


def test_a_captured_guard_copies_the_value_where_it_was_read(driver):
    # (the guard reads a carried value that the pass rewrites later: the graph must copy the
    # guard's bytes at its place, not after the last step)
    from test_cuda_graph_programs import carried_read_case
    f, calls, expected = carried_read_case()
    with tf.device("/gpu:0"):
        outs = [float(f(*(tf.constant(a) for a in args)).numpy()) for args in calls]
    assert outs == expected


def _copy_graph() -> tuple:
    """A one-launch graph (a copy of ``x`` into ``y``) and its arrays."""
    x = memory.to_device(np.float32([1, 2]))
    with recording.recording() as rec:
        y = copy_view(x, lambda v: v)
    return graphs.build(rec), x, y


def test_a_replay_on_a_new_thread_makes_the_context_current_first(driver, monkeypatch):
    # (a thread's first staged call may replay at once, its arguments unchanged: without a
    # current context its cuGraphLaunch fails and the function lost its graph for good)
    current = threading.local()
    monkeypatch.setattr(graphs, "context_here", lambda: setattr(current, "made", True))
    launched, launch = [], driver.cuGraphLaunch
    driver.cuGraphLaunch = lambda exe, stream: (
        launched.append(getattr(current, "made", False)) or launch(exe, stream))
    graph, x, y = _copy_graph()
    memory.copy_into(x, memory.to_device(np.float32([5, 6])))
    worker = threading.Thread(target=graph.launch)
    worker.start()
    worker.join()
    assert launched == [True] and memory.to_host(y).tolist() == [5.0, 6.0]


def test_a_capture_that_fails_frees_its_partial_graph_and_says_why(driver):
    destroyed = []
    driver.cuGraphDestroy = lambda graph: destroyed.append(graph) or (0,)

    def library(stream: int) -> None:   # a library call that cannot be captured
        if stream:
            raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED")
    x = memory.to_device(np.float32([1, 2]))
    with recording.recording() as rec:
        copy_view(x, lambda v: v)
        launcher.library_call(library)
    with pytest.raises(NotReplayable) as failed:
        graphs.build(rec)
    assert str(failed.value) == ("capturing the recorded work into a CUDA graph failed: "
                                 "RuntimeError: CUBLAS_STATUS_NOT_SUPPORTED")
    assert len(destroyed) == 1 and len(destroyed[0]) == 1   # the captured copy, freed
