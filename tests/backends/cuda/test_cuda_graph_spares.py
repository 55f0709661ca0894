"""Results handed out without a copy by the spare instances of a replayed graph
(``staged/replay.py``, stage 4): a spare runs again only when nothing outside the replayer holds
its last results (``memory.references``), so every result a caller, a view, a variable or
another staged function still holds keeps its value, and a loop that drops its results gets
them from two buffers in turn.
"""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cuda import memory
from stagecraft.backends.numba_cuda.recording import NotReplayable
from stagecraft.backends.numba_cuda.staged.replay import _Spare

pytestmark = pytest.mark.cuda


def replayer(staged, *args):
    with tf.device("/gpu:0"):
        return staged.get_concrete_function(*args).executable.replayer


def inputs(count, shape=(3, 3)):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def new_affine():
    """A new staged ``x @ w + 1`` (each test counts its own calls and spares)."""
    @tf.function
    def affine(x, w):
        return tf.matmul(x, w) + 1.0
    return affine


def handed_result(count):
    """A new staged affine map, ``count`` inputs, its weight (host and GPU) and the result of
    its fourth call (of ``xs[3]``), the first one a spare hands out."""
    affine, xs, (w,) = new_affine(), inputs(count), inputs(1)
    with tf.device("/gpu:0"):
        tw = tf.constant(w)
        for x in xs[:4]:
            y = affine(tf.constant(x), tw)
    return affine, xs, w, tw, y


def test_a_loop_that_drops_its_results_gets_them_from_two_buffers_in_turn():
    affine = new_affine()
    xs, (w,) = inputs(10), inputs(1)
    buffers, values = [], []
    with tf.device("/gpu:0"):
        tw = tf.constant(w)
        for x in xs:
            y = affine(tf.constant(x), tw)
            buffers.append(id(y._value))
            values.append(y.numpy())
    assert "replays a CUDA graph" in replayer(affine, tf.constant(xs[0]).gpu(), tw).status
    assert len(set(buffers[3:])) == 2 and buffers[3] == buffers[5] != buffers[4]
    for x, got in zip(xs, values):
        np.testing.assert_allclose(got, x @ w + 1.0, rtol=1e-5)


def test_results_held_by_the_caller_keep_their_values_while_calls_go_on():
    affine = new_affine()
    xs, (w,) = inputs(12), inputs(1)
    with tf.device("/gpu:0"):
        tw = tf.constant(w)
        held = [affine(tf.constant(x), tw) for x in xs]   # (both spares busy: copies)
    assert len({id(h._value) for h in held}) == len(held)
    for x, got in zip(xs, held):
        np.testing.assert_allclose(got.numpy(), x @ w + 1.0, rtol=1e-5)


def test_a_view_of_a_handed_result_keeps_its_buffer_from_being_rewritten():
    affine, xs, w, tw, y = handed_result(8)
    row = y._value[1:]                   # a view of it, the array itself dropped
    del y
    with tf.device("/gpu:0"):
        for x in xs[4:]:
            affine(tf.constant(x), tw)
    np.testing.assert_allclose(memory.to_host(row), (xs[3] @ w + 1.0)[1:], rtol=1e-5)


def test_a_spare_is_free_only_when_nothing_else_holds_its_results():
    affine, xs, _, tw, y = handed_result(4)
    spares = replayer(affine, tf.constant(xs[0]).gpu(), tw)._spares
    assert [s.free() for s in spares] == [False]    # y holds the first spare's result
    view = y._value.reshape(9)
    del y
    assert [s.free() for s in spares] == [False]    # a view of its memory still does
    del view
    assert [s.free() for s in spares] == [True]


def test_variables_updated_by_replays_keep_every_step_right():
    @tf.function
    def step(v, x):
        v.assign(v * 0.5 + x)
        return v.read_value() * 2.0

    xs = inputs(9, (4,))
    expected, v_host, outs = [], np.zeros(4, np.float32), []
    with tf.device("/gpu:0"):
        v = tf.Variable(np.zeros(4, np.float32))
        for x in xs:
            outs.append(step(v, tf.constant(x)))
            v_host = v_host * 0.5 + x
            expected.append(v_host * 2.0)
        np.testing.assert_allclose(v.numpy(), v_host, rtol=1e-5)
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_a_result_fed_to_another_staged_function_is_not_rewritten_under_it():
    """g keeps the last array it copied in and skips copying the same array again: a spare
    must not rewrite a result g still keeps, or g would read stale staging."""
    @tf.function
    def g(y):
        return y * 3.0

    affine = new_affine()
    xs, (w,) = inputs(10), inputs(1)
    with tf.device("/gpu:0"):
        tw = tf.constant(w)
        for x in xs:
            y = affine(tf.constant(x), tw)
            z = g(y)
            z2 = g(y)   # (the same array again: g's shortcut)
            np.testing.assert_allclose(z.numpy(), (x @ w + 1.0) * 3.0, rtol=1e-5)
            np.testing.assert_allclose(z2.numpy(), z.numpy())


def test_an_input_returned_as_it_is_is_copied_not_handed_out():
    @tf.function
    def passthrough(x):
        return x, x + 1.0

    xs = inputs(6, (2,))
    with tf.device("/gpu:0"):
        outs = [passthrough(tf.constant(x)) for x in xs]
    spare = replayer(passthrough, tf.constant(xs[0]).gpu())._spares[0]
    assert spare.handed == [1]
    for x, (same, plus) in zip(xs, outs):
        np.testing.assert_allclose(same.numpy(), x)
        np.testing.assert_allclose(plus.numpy(), x + 1.0, rtol=1e-6)


def test_references_see_every_view_of_a_gpu_array_pooled_or_not():
    """memory.references on Numba's real GPU array classes (a child process without the
    simulator; no GPU needed to make arrays over given addresses): slices hold the memory's
    owner, reshapes and dtype views share the memory pointer, in pooled arrays (a lease) and
    in Numba's own (``config.POOL_BYTES = 0``: an owned pointer over a weak proxy)."""
    import os
    import subprocess
    import sys
    code = """
import numpy as np
from numba.cuda.cudadrv.devicearray import DeviceNDArray
from numba.cuda.cudadrv.driver import MemoryPointer, binding
from stagecraft.backends.numba_cuda import memory, pool
kept = []
def unpooled():
    made = MemoryPointer(None, binding.CUdeviceptr(4096), 36, finalizer=lambda: None)
    kept.append(made)   # (as Numba's memory manager keeps its allocations)
    return DeviceNDArray((3, 3), (12, 4), np.dtype(np.float32), gpu_data=made.own())
class Block:
    device_pointer = binding.CUdeviceptr(8192)
def pooled():
    lease = pool.leases(None, lambda key, size: None)(Block, 36, 1)
    return DeviceNDArray((3, 3), (12, 4), np.dtype(np.float32), gpu_data=lease)
views = {"a slice's memory": lambda y: y.gpu_data.view(12),  # (slicing itself needs a GPU)
         "numba reshape": lambda y: y.reshape(9),
         "memory.reshape": lambda y: memory.reshape(y, (9,)),
         "dtype view": lambda y: memory.view_as(y, np.int32)}
for kind, make in (("unpooled", unpooled), ("pooled", pooled)):
    y = make()
    alone = memory.references(y)
    for name, take in views.items():
        view = take(y)
        assert memory.references(y) != alone, (kind, name)
        del view
        assert memory.references(y) == alone, (kind, name)
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_relocate_moves_arrays_held_in_closures_and_default_arguments():
    """A library call or host step holds its arrays in closure cells or default arguments
    (recordings compare both): a spare's moved items must read and write its own buffers."""
    from stagecraft.backends.numba_cuda.recording import Allocations, HostStep, Relocate
    made, other = memory.to_device(np.zeros(4)), memory.to_device(np.ones(4))
    seen = []

    def by_default(out=made):
        seen.append(memory.to_host(out).tolist())

    def by_cell():
        seen.append(memory.to_host(made[2:]).tolist())
    move = Relocate(Allocations([made]), {0: other})
    for step in (HostStep(by_default), HostStep(by_cell)):
        move.item(step).fn()
    assert seen == [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("error", [NotReplayable("a step reads part of a buffer as another "
                                                 "dtype"),
                                   RuntimeError("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY")])
def test_a_spare_that_cannot_be_made_leaves_the_graph_copying_its_results(monkeypatch, error):
    def fail(*args):
        raise error
    monkeypatch.setattr(_Spare, "build", fail)
    affine, xs, w, tw, y = handed_result(6)
    with tf.device("/gpu:0"):
        outs = [y] + [affine(tf.constant(x), tw) for x in xs[4:]]
    replay = replayer(affine, tf.constant(xs[0]).gpu(), tw)
    assert "replays a CUDA graph" in replay.status and replay._spares is None
    for x, got in zip(xs[3:], outs):
        np.testing.assert_allclose(got.numpy(), x @ w + 1.0, rtol=1e-5)


def test_another_error_making_a_spare_is_raised(monkeypatch):
    def fail(*args):
        raise RuntimeError("a bug")
    monkeypatch.setattr(_Spare, "build", fail)
    with pytest.raises(RuntimeError, match="a bug"):
        handed_result(4)


def test_relocate_refuses_a_view_it_cannot_rebuild():
    """A transposed view of a buffer (the same shape, other strides) is not the new buffer
    itself, nor a reshape of it: Relocate says so (a spare is then not made, and the graph
    copies its results out), rather than moving it as the plain buffer."""
    from stagecraft.backends.numba_cuda.recording import Allocations, Relocate
    made, other = memory.to_device(np.zeros((2, 2))), memory.to_device(np.ones((2, 2)))
    with pytest.raises(NotReplayable, match="another dtype or layout"):
        Relocate(Allocations([made]), {0: other}).array(made.T)
