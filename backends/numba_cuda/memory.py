"""Device buffers: host <-> device copies, empty device arrays and the device-array test.

Every array this backend produces is C-contiguous and owns (or views) device memory; rank-0
arrays (TensorFlow scalars) are device arrays of shape ``()`` and bool arrays keep NumPy's
one-byte ``bool`` dtype.
"""
from __future__ import annotations

import functools
import math
import sys
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.numba_cuda import config
from stagecraft.backends.numba_cuda.launch import RECORDING, context_here, cuda_module, simulated
from stagecraft.backends.numba_cuda.pool import device_pool


def to_device(array: Any) -> Any:
    """A device copy of ``array`` (anything ``np.asarray`` accepts; NumPy scalars and rank-0
    arrays become rank-0 device arrays). Device arrays are returned as they are.

    On a GPU the copy goes into a buffer of the pool (:func:`empty`) and is enqueued on the
    default stream (``cuMemcpyHtoDAsync``), where every kernel of this backend runs after it:
    from pageable host memory the driver stages the bytes before it returns, without waiting
    for the device (CUDA's API synchronization behavior). Numba's ``cuda.to_device`` issues
    the synchronous ``cuMemcpyHtoD``, which first waits for all the work queued on the device,
    into memory of its own (``cuMemAlloc``, and a ``cuMemFree`` later that waits too): an
    eager program that uploads anything per step (a batch, a number under a gradient tape)
    would make the host wait for the GPU at every upload.

    >>> d = to_device(np.array([1.5, 2.0], np.float32))
    >>> is_device_array(d), d.shape, d.dtype
    (True, (2,), dtype('float32'))
    """
    if is_device_array(array):
        return array
    host = np.asarray(array)
    if not host.flags.c_contiguous:   # (np.ascontiguousarray would turn rank 0 into rank 1)
        host = host.copy(order="C")
    # (ml_dtypes' bfloat16 has no buffer-protocol code, which Numba's upload needs on a GPU:
    # its bits go up)
    bits = host.view(_BITS[host.dtype.itemsize]) \
        if host.dtype.kind == "V" and host.dtype.itemsize in _BITS else host
    if RECORDING[0] is None and host.nbytes and config.POOL_BYTES and not simulated():
        device = empty(bits.shape, bits.dtype)
        _upload(device, bits)
    else:   # (a recording keeps the upload's bytes and its buffer itself)
        device = cuda_module().to_device(bits)
    if bits is not host:
        device = view_as(device, host.dtype)
    if RECORDING[0] is not None:
        _recorder().upload(host, device)
    return device


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _upload(device: Any, host: np.ndarray) -> None:
    """Copies ``host`` into ``device`` (of its size), ordered on the default stream. Pageable
    memory goes asynchronously: the driver stages it before the call returns. Memory the
    driver knows (page-locked or managed) would be read only when the copy runs, after the
    work queued before it, and the caller may change or free it once this returns: it goes
    synchronously."""
    if not _UPLOAD:
        from cuda.bindings import driver
        kind = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        _UPLOAD[:] = [driver.cuMemcpyHtoDAsync, driver.cuMemcpyHtoD,
                      lambda pointer: driver.cuPointerGetAttribute(kind, pointer)[0],
                      driver.CUresult.CUDA_SUCCESS]
    copy_async, copy, known, success = _UPLOAD
    context_here()
    source = host.ctypes.data
    if known(source) == success:
        error, = copy(address(device), source, host.nbytes)
    else:
        error, = copy_async(address(device), source, host.nbytes, 0)
    if error != success:
        raise RuntimeError(f"to_device: the CUDA driver failed to copy {host.nbytes} bytes to "
                           f"the device: {error!r}")


# The driver's cuMemcpyHtoDAsync, cuMemcpyHtoD, a test of whether it knows a host address
# (cuPointerGetAttribute) and CUDA_SUCCESS (cuda.bindings), looked up on the first upload;
# tests put stand-ins here.
_UPLOAD: list = []


def view_as(array: Any, dtype: Any) -> Any:
    """The device array ``array`` read as ``dtype``, of the same item size (no copy): the bits
    of a float16/bfloat16 array as uint16 and back. Numba's ``view`` fails on a GPU for rank 0
    (it passes the strides on as a list); this builds the array from tuples.

    >>> bits = view_as(to_device(np.float16(1.5)), np.uint16)
    >>> bits.shape, to_host(bits)
    ((), array(15872, dtype=uint16))
    """
    dtype = np.dtype(dtype)
    if dtype.itemsize != array.dtype.itemsize:
        raise ValueError(f"view_as: {array.dtype} and {dtype} differ in item size")
    if simulated():
        return array.view(dtype)
    return pooled_array(tuple(array.shape), tuple(array.strides), dtype, array.gpu_data)


def _recorder() -> Any:
    """The recording of a staged call if one runs on this thread, else a no-op stand-in."""
    recorder = RECORDING[0]
    return recorder if recorder is not None and recorder.records_here() else _NOT_RECORDING


class _NotRecording:
    def upload(self, host: Any, device: Any) -> None:
        pass

    def allocated(self, array: Any) -> None:
        pass

    def spoil(self, why: str) -> None:
        pass

    def guard(self, array: Any, value: Any, site: int | None = None, loop: bool = False) -> None:
        pass

    def copy(self, dst: Any, src: Any) -> None:
        pass


_NOT_RECORDING = _NotRecording()


def address(array: Any) -> int:
    """The device address of a device array's first element (a host address under the
    simulator, whose device arrays wrap NumPy arrays); 0 for an empty array.

    >>> x = to_device(np.arange(4.0))
    >>> address(x[1:]) - address(x), address(x[:0])
    (8, 0)
    """
    if array.size == 0:
        return 0
    if simulated():
        return int(array._ary.__array_interface__["data"][0])
    # (not __cuda_array_interface__: Numba builds that dict on every read, 1.4 us against
    # 0.13; a view's gpu_data already points at its first element)
    return array.gpu_data.device_pointer_value or 0


def references(array: Any) -> tuple[int, ...]:
    """The reference counts of a device array and of the objects that every view of its
    memory holds: on a GPU its memory pointer (which reshapes and dtype views share) and that
    pointer's owner (which slices hold), under the simulator the NumPy buffer. Equal counts
    at two moments say that nothing took hold of the array or its memory in between; only
    their change means anything, so compare counts taken by the same code. (CPython's counts:
    whatever holds an object, a variable, a container or an attribute, holds a counted
    reference.)

    >>> x = to_device(np.zeros(4))
    >>> before = references(x)
    >>> view = x[1:]
    >>> references(x) == before
    False
    >>> del view
    >>> references(x) == before
    True
    """
    if simulated():
        holders: tuple = (array._ary if array._ary.base is None else array._ary.base,)
    else:
        holders = (array.gpu_data, array.gpu_data.owner)
    return (sys.getrefcount(array), *(sys.getrefcount(h) for h in holders))


def to_host(array: Any) -> np.ndarray:
    """A host NumPy copy of a device array (rank 0 stays a 0-d ndarray); host arrays pass
    through ``np.asarray``.

    >>> to_host(to_device(np.float64(2.5)))
    array(2.5)
    >>> to_host(to_device(np.array([True, False])))
    array([ True, False])
    """
    if is_device_array(array):
        if RECORDING[0] is not None:
            _recorder().spoil("a device array is copied to the host")
        return np.asarray(array.copy_to_host())
    return np.asarray(array)


def is_device_array(x: Any) -> bool:
    """Whether ``x`` is a Numba CUDA device array (real or simulated). Never imports
    ``numba.cuda``: before it is imported nothing can be a device array.

    >>> is_device_array(np.zeros(3)), is_device_array(to_device(np.zeros(3)))
    (False, True)
    """
    kind = type(x)
    try:
        return _DEVICE_TYPES[kind]
    except KeyError:
        pass
    # (Numba's classes, real and simulated, say so by a class attribute: the answer holds for
    # every instance of the type, and a dict lookup is 0.1 us of every kernel argument)
    found = bool(getattr(kind, "__cuda_ndarray__", False))
    if len(_DEVICE_TYPES) < 1024:   # (bounded: classes made at run time are not all kept)
        _DEVICE_TYPES[kind] = found
    return found


_DEVICE_TYPES: dict[type, bool] = {}


def empty(shape: Sequence[int], dtype: Any) -> Any:
    """An uninitialized C-contiguous device array (``shape`` may be ``()``). On a GPU its
    memory comes from the caching allocator (``pool.device_pool``) unless
    ``config.POOL_BYTES`` is 0.

    >>> empty((2, 0), np.int32).shape
    (2, 0)
    """
    try:
        allocate = _ALLOCATORS[shape, dtype]
    except (KeyError, TypeError):   # (TypeError: a list shape, which is not kept)
        allocate = allocator(shape, dtype)
    return allocate()


def allocator(shape: Sequence[int], dtype: Any) -> Callable[[], Any]:
    """``empty(shape, dtype)`` made ready: a function of no arguments that returns a new
    array of that layout (kept per layout; an eager op allocates the same few again and
    again). A pooled array is a copy of a prototype's attributes over a block of the pool,
    as :func:`pooled_array` makes, with its launch parameters.

    >>> allocate = allocator((2, 3), np.float32)
    >>> a, b = allocate(), allocate()
    >>> a.shape, a.dtype, a.strides, a is not b
    ((2, 3), dtype('float32'), (12, 4), True)
    """
    dims, np_dtype, nbytes, strides = _layout(shape, dtype)

    def unpooled() -> Any:
        array = cuda_module().device_array(dims, np_dtype)
        if RECORDING[0] is not None:
            _recorder().allocated(array)
        return array
    if nbytes == 0 or simulated():
        allocate = unpooled
    else:
        cls = _device_ndarray()
        prototype = _prototype(cls, dims, strides, np_dtype)
        take: Any = None   # (the pool's, on the first pooled call: the pool needs the GPU)
        n, itemsize = math.prod(dims), np_dtype.itemsize

        def allocate() -> Any:
            nonlocal take
            if not config.POOL_BYTES:
                return unpooled()
            if take is None:   # (cuda_module raises the clear error where CUDA is missing)
                cuda_module()
                take = device_pool().take
            array = _new(cls)
            attributes = array.__dict__ = prototype.copy()
            lease = attributes["gpu_data"] = take(nbytes)
            # (flat_params, made here: a new array is launched next, and this is 3x faster)
            attributes["_stagecraft_params"] = (0, 0, n, itemsize, int(lease.device_pointer),
                                                n, itemsize)
            if RECORDING[0] is not None:
                _recorder().allocated(array)
            return array
    if type(shape) is tuple:
        _keep(_ALLOCATORS, (shape, dtype), allocate)
    return allocate


# (shape, dtype) as empty() was given them -> allocator(shape, dtype)
_ALLOCATORS: dict = {}


# (shape, dtype) as empty() was given them -> (shape, np.dtype, bytes, C strides): an eager op
# allocates the same few layouts over and over.
_LAYOUTS: dict = {}


def _layout(shape: Sequence[int], dtype: Any) -> tuple:
    dims = tuple(int(d) for d in shape)
    np_dtype = np.dtype(dtype)
    itemsize = np_dtype.itemsize
    found = (dims, np_dtype, math.prod(dims) * itemsize,
             tuple(math.prod(dims[i + 1:]) * itemsize for i in range(len(dims))))
    if type(shape) is tuple:
        _keep(_LAYOUTS, (shape, dtype), found)
    return found


def _keep(kept: dict, key: tuple, value: Any) -> None:
    """Stores ``value`` under ``key`` in a cache of at most 4096 entries (cleared when full);
    a key with an unhashable part (a dtype argument) is not kept."""
    if len(kept) >= 4096:
        kept.clear()
    try:
        kept[key] = value
    except TypeError:
        pass


def pooled_array(shape: tuple, strides: tuple, dtype: np.dtype, gpu_data: Any,
                 array_type: Any = None) -> Any:
    """A device array (Numba's ``DeviceNDArray``, or ``array_type``) of this layout over
    ``gpu_data``. Made as a copy of a prototype built once per layout by the class itself:
    the constructor recomputes the layout on every call (about 2 us of every eager GPU op),
    while its result depends only on the layout and the memory it is given.

    >>> class Array:
    ...     def __init__(self, shape, strides, dtype, gpu_data):
    ...         self.shape, self.strides, self.gpu_data = shape, strides, gpu_data
    >>> a = pooled_array((2,), (4,), np.dtype(np.float32), "block", Array)
    >>> b = pooled_array((2,), (4,), np.dtype(np.float32), "other", Array)
    >>> type(a) is Array, a.shape, a.gpu_data, b.gpu_data
    (True, (2,), 'block', 'other')
    """
    cls = _device_ndarray() if array_type is None else array_type
    array = _new(cls)
    array.__dict__ = _prototype(cls, shape, strides, dtype).copy()
    array.gpu_data = gpu_data
    return array


def _prototype(cls: type, shape: tuple, strides: tuple, dtype: np.dtype) -> dict:
    """The attributes ``cls``'s constructor gives an array of this layout (over placeholder
    memory), made once per layout."""
    key = (cls, shape, strides, dtype)
    prototype = _PROTOTYPES.get(key)
    if prototype is None:
        prototype = cls(shape, strides, dtype, gpu_data=_NO_DATA).__dict__
        _keep(_PROTOTYPES, key, prototype)
    return prototype


@functools.lru_cache(maxsize=None)
def _device_ndarray() -> type:
    # Numba's array class, looked up once (empty() is on every eager GPU op's path).
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray


# Prototypes' attributes by (class, layout); their memory is this placeholder, never used.
_PROTOTYPES: dict = {}
_NO_DATA = object()
_new = object.__new__


def reshape(array: Any, shape: tuple) -> Any:
    """A C-contiguous device array's elements as ``shape`` (of the same size), sharing its
    buffer. Numba's ``reshape`` recomputes the layout every time (about 8 us); this builds the
    array from the layout kept per shape, as :func:`empty` does.

    >>> x = to_device(np.arange(6.0))
    >>> to_host(reshape(x, (2, 3)))
    array([[0., 1., 2.],
           [3., 4., 5.]])
    """
    # (the kept layouts are those of Numba's own class; any other array reshapes itself)
    if simulated() or not array.size or type(array) is not _device_ndarray():
        return array.reshape(shape)
    try:
        shape, dtype, nbytes, strides = _LAYOUTS[shape, array.dtype]
    except KeyError:
        shape, dtype, nbytes, strides = _layout(shape, array.dtype)
    if nbytes != array.nbytes or not contiguous(array):
        raise ValueError(f"reshape: a contiguous array of shape {tuple(array.shape)} cannot "
                         f"become shape {shape}")
    return pooled_array(shape, strides, dtype, array.gpu_data)


def empty_like(array: Any) -> Any:
    """An uninitialized device array with the shape and dtype of ``array``.

    >>> empty_like(to_device(np.zeros((2, 3), np.float32))).dtype
    dtype('float32')
    """
    return empty(array.shape, array.dtype)


def flat(array: Any) -> Any:
    """A 1-D view of a C-contiguous device array (rank 0 gives shape ``(1,)``): kernels index
    every buffer with one flat index.

    >>> flat(to_device(np.zeros((2, 3)))).shape, flat(to_device(np.float32(1))).shape
    ((6,), (1,))
    """
    if not contiguous(array):
        raise ValueError(f"the CUDA backend needs C-contiguous device arrays, got one of shape "
                         f"{tuple(array.shape)} with strides {tuple(array.strides)}; make it "
                         f"contiguous first (every array this backend returns is).")
    return array.reshape(array.size)


def flat_params(array: Any) -> tuple:
    """A C-contiguous device array's kernel parameters as its flat view (:func:`flat`), the
    way Numba passes an array: ``(meminfo, parent, nitems, itemsize, data, shape,
    strides)``. An array's layout and memory never change, so they are kept on it
    (``_stagecraft_params``): inputs and error flags are passed again and again, and arrays
    from :func:`empty` come with them.

    >>> from types import SimpleNamespace as Fake   # (a GPU's array, as far as read here)
    >>> x = Fake(size=6, ndim=2, dtype=np.dtype(np.float32), strides=(12, 4),
    ...          is_c_contiguous=lambda: True, gpu_data=Fake(device_pointer_value=4096))
    >>> flat_params(x), flat_params(x) == x._stagecraft_params
    ((0, 0, 6, 4, 4096, 6, 4), True)
    """
    n = array.size
    itemsize = array.dtype.itemsize
    # (unit strides of a 1-D array, the common case, need no call to tell contiguity)
    if n > 1 and array.strides != (itemsize,) and not contiguous(array):
        flat(array)  # raises the error that says what to do
    pointer = array.gpu_data.device_pointer_value if n else 0   # (a GPU's array: launches)
    packed = array.__dict__["_stagecraft_params"] = (0, 0, n, itemsize, pointer or 0, n,
                                                      itemsize)
    return packed


def contiguous(array: Any) -> bool:
    """Whether a device array is C-contiguous (a 1-D array: unit stride).

    >>> contiguous(to_device(np.zeros((2, 3)))), contiguous(to_device(np.zeros(4))[::2])
    (True, False)
    """
    if array.ndim <= 1 and (array.ndim == 0 or array.strides[0] in (array.dtype.itemsize, 0)):
        return True
    return bool(array.is_c_contiguous())


def scalar(array: Any, site: int | None = None, loop: bool = False) -> Any:
    """The value of a one-element device array on the host (a NumPy scalar): a device-to-host
    copy, used only where the host needs a value (result shapes, error checks; ``site``
    numbers a ``cond``/``while`` test of a staged function, ``loop`` marks a ``while`` test's:
    see ``recording.Branch``).

    >>> scalar(to_device(np.int64(7)))
    np.int64(7)
    """
    value = np.asarray(array.copy_to_host()).reshape(())[()]
    if RECORDING[0] is not None:   # (a replay is valid while this read would give the same)
        _recorder().guard(array, value, site, loop)
    return value


def copy_into(dst: Any, src: Any) -> None:
    """Copies the values of ``src`` (a device array, or a host array) into the device array
    ``dst`` of the same shape and dtype (both C-contiguous), ordered on the default stream
    with all other work: a driver copy on a GPU, no host synchronization.

    >>> d = empty((2,), np.int32)
    >>> copy_into(d, to_device(np.int32([4, 5]))); to_host(d)
    array([4, 5], dtype=int32)
    """
    if tuple(dst.shape) != tuple(src.shape) or np.dtype(dst.dtype) != np.dtype(src.dtype):
        raise ValueError(f"copy_into: a {src.dtype} array of shape {tuple(src.shape)} cannot "
                         f"fill a {dst.dtype} array of shape {tuple(dst.shape)}")
    if RECORDING[0] is not None:
        if is_device_array(src):
            _recorder().copy(dst, src)
        else:   # (not a recordable step: replays would skip it)
            _recorder().spoil("a host array is copied into a device buffer")
    if src.size == 0:
        return
    if simulated() or not is_device_array(src):
        dst.copy_to_device(src if is_device_array(src) else np.ascontiguousarray(src))
        return
    from cuda.bindings import driver
    context_here()
    error, = driver.cuMemcpyDtoDAsync(address(dst), address(src), dst.nbytes, 0)
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"copy_into: the CUDA driver failed to copy {dst.nbytes} bytes "
                           f"({driver.cuGetErrorName(error)[1]})")
