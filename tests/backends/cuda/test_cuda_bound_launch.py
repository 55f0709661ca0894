"""launcher.Bound, a kernel bound to a grid for arguments of fixed kinds: under the simulator
and while a recording runs it launches through launcher.launch; on a GPU its later calls pack
the arguments with the first call's overload and enqueue them directly. The GPU side is checked
here with stand-ins for the compiled overload and cuda.core's launch (no GPU needed)."""
from __future__ import annotations

import ctypes
import sys
import types as pytypes

import pytest
from numba.core import types

from stagecraft.backends.numba_cuda import launcher

from test_cuda_launcher import fake_array

pytestmark = pytest.mark.cuda


class Kernel:
    """A compiled kernel's stand-in: its launcher has one overload, found by argument kinds."""

    def __init__(self, kinds, arg_types):
        fast = launcher._Launcher(self)
        fast.overloads[kinds] = ("function", [launcher._packer(t) for t in arg_types])
        self._stagecraft_launcher = fast


@pytest.fixture
def gpu(monkeypatch):
    """What a GPU would do: launches through launcher.launch and cuda.core are recorded."""
    calls = {"launch": [], "core": []}
    monkeypatch.setattr(launcher, "simulated", lambda: False)
    monkeypatch.setattr(launcher, "launch", lambda k, dims, *args: calls["launch"].append(args))
    monkeypatch.setattr(launcher, "_launch_config", lambda blocks, threads: (blocks, threads))
    monkeypatch.setattr(launcher, "_default_stream", lambda: "stream")
    monkeypatch.setattr(launcher, "is_device_array", lambda x: hasattr(x, "gpu_data"))
    core = pytypes.ModuleType("cuda.core")
    core.launch = lambda stream, config, function, *params: calls["core"].append(
        (stream, config, function, [p.value if isinstance(p, ctypes._SimpleCData) else p
                                    for p in params]))
    monkeypatch.setitem(sys.modules, "cuda.core", core)
    monkeypatch.setattr(launcher._THREAD, "has_context", True, raising=False)
    return calls


def float_kernel():
    return Kernel((("array", fake_array((3,)).dtype), float),
                  (types.Array(types.float32, 1, "C"), types.float64))


def test_later_calls_pack_and_enqueue_without_launch(gpu):
    bound = launcher.Bound(float_kernel(), (1, 32))
    out, other = fake_array((3,), pointer=4096), fake_array((3,), pointer=8192)
    bound(out, 2.0)
    assert len(gpu["launch"]) == 1 and gpu["core"] == []   # the first call compiles
    bound(other, 3.0)
    assert gpu["launch"] == [(out, 2.0)]
    assert gpu["core"] == [("stream", (1, 32), "function", [0, 0, 3, 4, 8192, 3, 4, 3.0])]


def test_a_recording_sees_every_launch(gpu, monkeypatch):
    bound = launcher.Bound(float_kernel(), (1, 32))
    bound(fake_array((3,)), 1.0)
    monkeypatch.setattr(launcher, "_RECORDER", [object()])
    bound(fake_array((3,)), 2.0)
    assert len(gpu["launch"]) == 2 and gpu["core"] == []


def test_a_thread_without_a_context_goes_through_launch(gpu, monkeypatch):
    bound = launcher.Bound(float_kernel(), (1, 32))
    bound(fake_array((3,)), 1.0)
    monkeypatch.setattr(launcher._THREAD, "has_context", False)
    bound(fake_array((3,)), 2.0)
    assert len(gpu["launch"]) == 2 and gpu["core"] == []


def test_a_non_contiguous_array_is_refused_on_the_packed_path(gpu):
    bound = launcher.Bound(float_kernel(), (1, 32))
    bound(fake_array((3,)), 1.0)
    with pytest.raises(ValueError, match="the CUDA backend needs C-contiguous device arrays"):
        bound(fake_array((3, 2), contiguous=False), 1.0)


def test_kernels_that_are_not_compiled_dispatchers_always_use_launch(monkeypatch):
    seen = []
    monkeypatch.setattr(launcher, "launch", lambda k, dims, *args: seen.append((dims, args)))

    class Double:   # no numba dispatcher: the simulator's path
        pass
    bound = launcher.Bound(Double(), (2, 4))
    bound(1)
    bound(2)
    assert seen == [((2, 4), (1,)), ((2, 4), (2,))] and bound._ready is False


def test_arguments_passed_again_reuse_their_packed_parameters(gpu):
    kernel = Kernel((("array", fake_array((3,)).dtype), (int, int), int),
                    (types.Array(types.float32, 1, "C"), types.UniTuple(types.int64, 2),
                     types.int32))
    bound = launcher.Bound(kernel, (1, 32))
    shape, out = (2, 5), fake_array((3,), pointer=4096)
    bound(out, shape, 7)
    bound(out, shape, 7)
    packed = bound._kept[1][1]
    bound(out, shape, 7)
    assert bound._kept[1][1] is packed   # (the same tuple: packed once)
    bound(out, (6, 1), 8)                # (other values: packed afresh)
    assert [call[3][-3:] for call in gpu["core"]] == [[2, 5, 7], [2, 5, 7], [6, 1, 8]]
