"""launcher.Bound, a kernel bound to a grid for arguments of fixed kinds: under the simulator
and while a recording runs it launches through launcher.launch; on a GPU its later calls pack
the arguments into a parameter block and call the driver's cuLaunchKernel. The GPU side is
checked here with stand-ins for the compiled overload and the driver (no GPU needed)."""
from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest
from numba.core import types

from stagecraft.backends.numba_cuda import launcher

from test_cuda_launcher import fake_array

pytestmark = pytest.mark.cuda


class Function:
    """A compiled kernel function's stand-in: the ctypes of its parameters in order, which the
    driver would read from its image."""

    def __init__(self, param_types):
        self.param_types = param_types


class Kernel:
    """A compiled kernel's stand-in: its launcher has one overload, found by argument kinds."""

    def __init__(self, kinds, arg_types, param_types):
        fast = launcher._Launcher(self)
        fast.overloads[kinds] = (Function(param_types),
                                 [launcher._packer(t) for t in arg_types])
        self._stagecraft_launcher = fast


ARRAY = [ctypes.c_uint64] * 7   # (meminfo, parent, nitems, itemsize, data, shape, strides)


@pytest.fixture
def gpu(monkeypatch):
    """What a GPU would do: launches through launcher.launch are recorded, and so are the
    parameters the driver's cuLaunchKernel would read (each through its pointer)."""
    calls = {"launch": [], "driver": []}

    def cu_launch_kernel(function, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        pointers = [ctypes.c_void_p.from_address(params + 8 * j).value
                    for j in range(len(function.param_types))]
        calls["driver"].append(((gx, gy, gz), (bx, by, bz), shmem, stream, extra,
                                [t.from_address(p).value
                                 for t, p in zip(function.param_types, pointers)]))
        return (calls.get("error", 0),)
    monkeypatch.setattr(launcher, "simulated", lambda: False)
    monkeypatch.setattr(launcher, "launch", lambda k, dims, *args: calls["launch"].append(args))
    monkeypatch.setattr(launcher, "is_device_array", lambda x: hasattr(x, "gpu_data"))
    monkeypatch.setattr(launcher, "_DRIVER", [cu_launch_kernel, 0])
    monkeypatch.setattr(launcher, "_driver_function", lambda function: function)
    return calls


def float_kernel():
    return Kernel((("array", fake_array((3,)).dtype), float),
                  (types.Array(types.float32, 1, "C"), types.float64),
                  ARRAY + [ctypes.c_double])


def test_later_calls_go_to_the_driver_without_launch(gpu):
    bound = launcher.Bound(float_kernel(), (1, 32))
    out, other = fake_array((3,), pointer=4096), fake_array((3,), pointer=8192)
    bound(out, 2.0)
    assert len(gpu["launch"]) == 1 and gpu["driver"] == []   # the first call compiles
    bound(other, 3.0)
    assert gpu["launch"] == [(out, 2.0)]
    assert gpu["driver"] == [((1, 1, 1), (32, 1, 1), 0, 0, 0, [0, 0, 3, 4, 8192, 3, 4, 3.0])]


def test_a_recording_sees_every_launch(gpu, monkeypatch):
    bound = launcher.Bound(float_kernel(), (1, 32))
    bound(fake_array((3,)), 1.0)
    monkeypatch.setattr(launcher, "_RECORDER", [object()])
    bound(fake_array((3,)), 2.0)
    assert len(gpu["launch"]) == 2 and gpu["driver"] == []


def test_another_thread_goes_through_launch(gpu):
    # (the parameter block is its first thread's: another's launch could overwrite it while
    # the driver reads it)
    bound = launcher.Bound(float_kernel(), (1, 32))
    bound(fake_array((3,)), 1.0)
    other = threading.Thread(target=bound, args=(fake_array((3,)), 2.0))
    other.start()
    other.join()
    assert len(gpu["launch"]) == 2 and gpu["driver"] == []
    bound(fake_array((3,)), 2.0)
    assert len(gpu["driver"]) == 1


def test_a_non_contiguous_array_is_refused_on_the_driver_path(gpu):
    bound = launcher.Bound(float_kernel(), (1, 32))
    bound(fake_array((3,)), 1.0)
    with pytest.raises(ValueError, match="the CUDA backend needs C-contiguous device arrays"):
        bound(fake_array((3, 2), contiguous=False), 1.0)


def test_a_launch_the_driver_refuses_raises(gpu):
    bound = launcher.Bound(float_kernel(), (1, 32))
    bound(fake_array((3,)), 1.0)
    gpu["error"] = 1
    with pytest.raises(RuntimeError, match=r"^the CUDA driver refused a kernel launch: 1 "
                                           r"\(grid \(1, 1, 1\), block \(32, 1, 1\)\)"):
        bound(fake_array((3,)), 1.0)


def test_kernels_that_are_not_compiled_dispatchers_always_use_launch(monkeypatch):
    seen = []
    monkeypatch.setattr(launcher, "launch", lambda k, dims, *args: seen.append((dims, args)))

    class Double:   # no numba dispatcher: the simulator's path
        pass
    bound = launcher.Bound(Double(), (2, 4))
    bound(1)
    bound(2)
    assert seen == [((2, 4), (1,)), ((2, 4), (2,))] and bound._ready is False


def test_every_scalar_kind_reaches_its_slot(gpu):
    # (slots are 8 bytes; a parameter's own bytes are the slot's lowest, which the driver
    # copies by the parameter's size)
    kernel = Kernel((("array", fake_array((3,)).dtype), bool, np.float16, np.complex64,
                     np.int32, (int, int)),
                    (types.Array(types.float32, 1, "C"), types.boolean, types.float16,
                     types.complex64, types.int32, types.UniTuple(types.int64, 2)),
                    ARRAY + [ctypes.c_bool, ctypes.c_uint16, ctypes.c_float, ctypes.c_float,
                             ctypes.c_int32, ctypes.c_int64, ctypes.c_int64])
    bound = launcher.Bound(kernel, (2, 4))
    out = fake_array((3,), pointer=4096)
    bound(out, True, np.float16(1.5), np.complex64(2 - 3j), np.int32(-7), (5, -6))
    bound(out, False, np.float16(-2), np.complex64(0.5j), np.int32(9), (1 << 40, 0))
    assert [call[-1][7:] for call in gpu["driver"]] == [
        [False, 0xC000, 0.0, 0.5, 9, 1 << 40, 0]]   # (-2 as float16 bits)
    bound(out, True, np.float16(1.5), np.complex64(2 - 3j), np.int32(-7), (5, -6))
    assert gpu["driver"][-1][-1][7:] == [True, 0x3E00, 2.0, -3.0, -7, 5, -6]


def test_arguments_passed_again_are_not_packed_again(gpu, monkeypatch):
    kernel = Kernel((("array", fake_array((3,)).dtype), (int, int), int),
                    (types.Array(types.float32, 1, "C"), types.UniTuple(types.int64, 2),
                     types.int32),
                    ARRAY + [ctypes.c_int64, ctypes.c_int64, ctypes.c_int32])
    bound = launcher.Bound(kernel, (1, 32))
    shape, out = (2, 5), fake_array((3,), pointer=4096)
    bound(out, shape, 7)
    packed = []
    i, pack, start = bound._ready.others[0]
    bound._ready.others[0] = (i, lambda value, params: packed.append(value) or pack(value, params),
                              start)
    bound(out, shape, 7)
    bound(out, shape, 7)
    bound(out, (6, 1), 8)                # (other values: packed afresh)
    assert packed == [(6, 1)]
    assert [call[-1][-3:] for call in gpu["driver"]] == [[2, 5, 7], [2, 5, 7], [6, 1, 8]]


def test_arrays_passed_again_keep_their_slots_and_other_arrays_rewrite_them(gpu):
    bound = launcher.Bound(float_kernel(), (1, 32))
    a, b = fake_array((3,), pointer=4096), fake_array((5,), pointer=8192)
    bound(a, 1.0)
    for x in (a, b, b, a):
        bound(x, 1.0)
    assert [call[-1][2:5] for call in gpu["driver"]] == [
        [3, 4, 4096], [5, 4, 8192], [5, 4, 8192], [3, 4, 4096]]
