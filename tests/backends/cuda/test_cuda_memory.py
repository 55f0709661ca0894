"""Device buffers: round trips of every dtype and rank (rank 0, empty, bool)."""
from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from stagecraft.backends.numba_cuda import memory

pytestmark = pytest.mark.cuda

VALUES = [np.float32(1.5), np.float64(-2.0), np.int32(7), np.int64(-3), np.bool_(True),
          np.array([True, False, True]), np.arange(6, dtype=np.int32).reshape(2, 3),
          np.zeros((2, 0, 3), np.float64), np.array(3.25), np.linspace(0, 1, 5)[None],
          np.array([1.5, -2.0], np.float16), np.array([1.5, -2.0], ml_dtypes.bfloat16),
          np.array(0.25, ml_dtypes.bfloat16)]


def in_child_without_simulator(code: str) -> None:
    """Runs ``code`` in a child process on Numba's real classes (no simulator, no GPU needed
    for what it does); it must print "ok"."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# A child's stand-in for the GPU's memory: the caching pool over fake addresses.
STAND_IN_POOL = """
import itertools, types
from stagecraft.backends.numba_cuda import detect, launch, memory, pool
detect._probe = lambda: ("gpu", "stand-in")   # (no driver here: no work reaches one)
launch._THREAD.has_context = True
places = itertools.count(1 << 40, 1 << 32)
blocks = pool.BlockPool(lambda n: types.SimpleNamespace(device_pointer=next(places)),
                        lambda back: pool.leases(None, back))
memory.device_pool = lambda: blocks
"""


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{np.asarray(v).dtype}{np.shape(v)}")
def test_round_trip_keeps_dtype_shape_and_values(value):
    d = memory.to_device(value)
    assert memory.is_device_array(d)
    back = memory.to_host(d)
    assert isinstance(back, np.ndarray)
    assert back.dtype == np.asarray(value).dtype and back.shape == np.shape(value)
    np.testing.assert_array_equal(back, value)


def test_device_arrays_pass_through_and_host_arrays_are_not_device_arrays():
    d = memory.to_device(np.ones(3))
    assert memory.to_device(d) is d
    assert not memory.is_device_array(np.ones(3))
    assert not memory.is_device_array(3.0)
    np.testing.assert_array_equal(memory.to_host(np.ones(2)), np.ones(2))


def test_empty_and_scalar_helpers():
    e = memory.empty((2, 3), np.int64)
    assert memory.is_device_array(e) and e.shape == (2, 3) and e.dtype == np.int64
    assert memory.empty_like(e).shape == (2, 3)
    assert memory.empty((), np.bool_).shape == ()
    assert memory.scalar(memory.to_device(np.int32(5))) == 5


def test_non_contiguous_device_arrays_are_rejected_with_a_clear_error():
    d = memory.to_device(np.arange(6.0).reshape(2, 3))[:, 1:]
    with pytest.raises(ValueError, match="needs C-contiguous device arrays"):
        memory.flat(d)


@pytest.mark.parametrize("shape, dtype", [([2, 3], "float32"), ((np.int64(2), 3), np.float32),
                                          ((2, 3), np.dtype(np.float32)), ((2, 3), "f4")])
def test_empty_normalizes_every_spelling_of_a_layout(shape, dtype):
    for _ in range(2):   # the second call finds the layout empty() kept
        e = memory.empty(shape, dtype)
        assert e.shape == (2, 3) and type(e.shape[0]) is int and e.dtype == np.float32
    assert memory.empty((2, 3), np.int8).dtype == np.int8   # same shape, another dtype


def test_pooled_arrays_equal_numbas_own_construction():
    """memory.pooled_array copies a prototype's attributes instead of running Numba's
    DeviceNDArray constructor: on the real class (a child process without the simulator; no
    GPU needed to build arrays over given memory) the copy must equal a constructed array."""
    code = """
import numpy as np
from numba.cuda.cudadrv.devicearray import DeviceNDArray
from stagecraft.backends.numba_cuda.memory import pooled_array
for shape, dtype in [((3, 4), np.float32), ((), np.int64), ((5,), np.bool_)]:
    dtype = np.dtype(dtype)
    strides = tuple(int(np.prod(shape[i + 1:])) * dtype.itemsize for i in range(len(shape)))
    for memory in ("block-a", "block-b"):
        made = DeviceNDArray(shape, strides, dtype, gpu_data=memory)
        copied = pooled_array(shape, strides, dtype, memory)
        assert type(copied) is DeviceNDArray
        assert sorted(vars(copied)) == sorted(vars(made)), (vars(copied), vars(made))
        for name, value in vars(made).items():
            if name != "_dummy":
                assert getattr(copied, name) == value, name
        assert copied.is_c_contiguous() and copied.reshape(-1).shape == (made.size,)
        assert copied.gpu_data == memory
print("ok")
"""
    in_child_without_simulator(code)


def test_allocated_arrays_equal_numbas_construction_with_their_launch_parameters():
    """memory.allocator's arrays (prototype copies over pool leases, their flat launch
    parameters made with them) on Numba's real classes and a pool of fake addresses (a child
    process without the simulator): each array equals Numba's construction over its lease,
    and the parameters it carries equal those flat_params computes from the array."""
    code = STAND_IN_POOL + """
import numpy as np
from numba.cuda.cudadrv.devicearray import DeviceNDArray
for shape, dtype in [((3, 4), np.float32), ((), np.int64), ((5,), np.bool_)]:
    allocate = memory.allocator(shape, dtype)
    arrays = [allocate(), memory.empty(shape, dtype)]
    assert arrays[0].gpu_data is not arrays[1].gpu_data
    for a in arrays:
        made = DeviceNDArray(a.shape, a.strides, a.dtype, gpu_data=a.gpu_data)
        kept = vars(a).pop("_stagecraft_params")
        assert kept == memory.flat_params(a), (kept, memory.flat_params(a))
        for name, value in vars(made).items():
            if name != "_dummy":
                assert getattr(a, name) == value, name
print("ok")
"""
    in_child_without_simulator(code)


def test_uploads_go_into_pooled_buffers_as_copies_enqueued_on_the_default_stream():
    """memory.to_device on a GPU (a child process without the simulator: Numba's real array
    classes, a pool of fake addresses, the driver's copy replaced by a recorder): every
    upload of pageable memory is an asynchronous copy on the default stream into a buffer of
    the pool, of the host's bytes (bfloat16's bits, viewed back); memory the driver knows
    (page-locked) is copied synchronously; a new thread makes the context current first."""
    code = STAND_IN_POOL + """
import numpy as np
import ml_dtypes
import ctypes, threading
copies, pinned = [], set()
memory._UPLOAD[:] = [
    lambda device, host, n, stream: copies.append(
        (device, ctypes.string_at(host, n), n, stream)) or (0,),
    lambda device, host, n: copies.append((device, ctypes.string_at(host, n), n, "sync")) or (0,),
    lambda pointer: 0 if pointer in pinned else 1,   # (1: CUDA_ERROR_INVALID_VALUE)
    0]
for value in (np.arange(6, dtype=np.float32).reshape(2, 3), np.int64(7),
              np.array([1.5, -2.0], ml_dtypes.bfloat16), [[True], [False]]):
    host = np.asarray(value)
    device = memory.to_device(value)
    assert (device.shape, device.dtype) == (host.shape, host.dtype), (device.shape, device.dtype)
    pointer, data, n, stream = copies.pop()
    assert isinstance(device.gpu_data, pool._lease_class(None)), type(device.gpu_data)
    assert pointer == device.gpu_data.device_pointer and data == host.tobytes()
    assert n == host.nbytes and stream == 0   # (the legacy default stream)
page_locked = np.arange(4.0)   # (memory the driver knows: copied synchronously)
pinned.add(page_locked.ctypes.data)
memory.to_device(page_locked)
assert copies.pop()[2:] == (32, "sync") and not copies
made_current = []   # (a new thread: Numba's context made current on it first)
memory.cuda_module().current_context = lambda: made_current.append(threading.get_ident())
worker = threading.Thread(target=lambda: memory.to_device(np.ones(2)))
worker.start()
worker.join()
assert made_current == [worker.ident] and copies.pop()[2:] == (16, 0)
memory._UPLOAD[3] = 7   # (what the fakes return is not CUDA_SUCCESS: an error names the size)
try:
    memory.to_device(np.zeros(3))
except RuntimeError as e:
    assert str(e).startswith("to_device: the CUDA driver failed to copy 24 bytes"), e
else:
    raise AssertionError("no error")
print("ok")
"""
    in_child_without_simulator(code)


def test_view_as_reads_the_same_bits_as_another_dtype_of_the_same_size():
    d = memory.to_device(np.array([1.5, -2.0], np.float16))
    np.testing.assert_array_equal(memory.to_host(memory.view_as(d, np.uint16)),
                                  np.array([1.5, -2.0], np.float16).view(np.uint16))
    with pytest.raises(ValueError, match="view_as: float16 and float32 differ in item size"):
        memory.view_as(d, np.float32)


def test_view_as_builds_numbas_gpu_array_of_rank_0_where_numbas_view_fails():
    """The GPU path of view_as (Numba's DeviceNDArray over given memory; a child process
    without the simulator, no GPU needed): Numba's own view of a rank-0 array raises
    'unhashable type: list' there, view_as keeps shape, strides and memory."""
    code = """
import numpy as np
from numba.cuda.cudadrv.driver import MemoryPointer
from numba.cuda.cudadrv.devicearray import DeviceNDArray
from stagecraft.backends.numba_cuda import memory
memory.simulated = lambda: False
for shape, strides in [((), ()), ((3, 2), (4, 2))]:
    a = DeviceNDArray(shape, strides, np.float16, gpu_data=MemoryPointer("ctx", 1 << 20, 12))
    b = memory.view_as(a, np.uint16)
    assert isinstance(b, DeviceNDArray) and b.gpu_data is a.gpu_data
    assert (b.shape, b.strides, b.dtype) == (shape, strides, np.uint16), (b.shape, b.strides)
print("ok")
"""
    in_child_without_simulator(code)
