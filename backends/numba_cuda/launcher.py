"""Kernel launches with little host overhead: every device array passed as its flat view.

Numba's own launch path (``kernel[grid, block](*args)``) types every argument, builds a
launch-configuration object, warns about small grids and wraps every array in a strided
memory view: about 40 us of Python per launch on an H100 host, more than most of this
backend's kernels take on the GPU. Here the compiled overload is found once per argument
*kind* (an array's dtype, a scalar's type, a tuple's element kinds), and the kernel's
parameters are packed directly in Numba's calling convention: an array is
``meminfo, parent, nitems, itemsize, data, shape..., strides...``; a 1-D C-contiguous view of
a C-contiguous array is just ``(0, 0, n, itemsize, pointer, n, itemsize)``, so no view object
is made. Under Numba's CUDA simulator (no GPU) launches take Numba's ordinary path.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.numba_cuda.launch import (  # (cuda_module: the doctests use it)
    RECORDING, context_here, cuda_module, grid, simulated)
from stagecraft.backends.numba_cuda.memory import flat, flat_params, is_device_array

def launch(kernel: Any, dims: tuple, *args: Any) -> None:
    """Launches ``kernel`` (a ``cuda.jit`` dispatcher) over ``dims = (blocks, threads)``
    (ints or tuples), passing each device array among ``args`` as its flat C-contiguous view
    (``memory.flat``); ints, floats, NumPy scalars and tuples of them pass as they are.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host, empty
    >>> from stagecraft.backends.numba_cuda.launch import grid
    >>> cuda = cuda_module()
    >>> @cuda.jit
    ... def twice(out, x):
    ...     for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
    ...         out[i] = 2 * x[i]
    >>> x = to_device(np.arange(6.0).reshape(2, 3)); out = empty((2, 3), np.float64)
    >>> launch(twice, grid(6), out, x)
    >>> to_host(out)
    array([[ 0.,  2.,  4.],
           [ 6.,  8., 10.]])
    """
    recorder = _RECORDER[0]
    if recorder is not None and recorder.records_here():
        recorder.launch(kernel, dims, args)
        return
    launch_now(kernel, dims, args)


def launch_now(kernel: Any, dims: tuple, args: Sequence[Any]) -> None:
    """:func:`launch` without the recording check (a recording's own launches). Under the
    simulator, launches from several threads run one at a time, as a GPU runs them on the
    one stream this backend uses: the simulator supports one kernel at a time, and two at
    once saw each other's thread indices or failed."""
    blocks, threads = dims
    fast = None if simulated() else _launcher(kernel)
    if fast is None:  # the simulator's kernels (and test doubles): Numba's launch syntax
        views = [flat(a) if is_device_array(a) else a for a in args]
        with _SIMULATED_LAUNCH:
            kernel[blocks, threads](*views)
    else:
        fast(blocks, threads, args)


_SIMULATED_LAUNCH = threading.Lock()


def prepare(kernel: Any, dims: tuple, args: Sequence[Any]) -> "tuple | None":
    """``(function, config, params)``: the driver-level launch of ``kernel`` over ``dims``
    with ``args`` packed (pointers and scalars fixed), which :func:`enqueue` issues on any
    stream, as often as wanted; None under the simulator (no driver functions there)."""
    if simulated():
        return None
    fast = _launcher(kernel)
    if fast is None:
        return None
    return fast.prepare(dims[0], dims[1], args)


def enqueue(prepared: tuple, stream: Any = None) -> None:
    """Issues a launch made by :func:`prepare` on ``stream`` (a ``cuda.core`` stream; default:
    the legacy default stream, where this backend's work runs)."""
    from cuda.core import launch as core_launch
    function, config, params = prepared
    core_launch(_default_stream() if stream is None else stream, config, function, *params)


def library_call(call: Callable[[int], None]) -> None:
    """Issues work a library enqueues itself (a cuBLAS call): ``call(stream)`` must enqueue
    it on the CUDA stream whose handle is ``stream`` (0: the legacy default stream, where every
    kernel of this backend runs). Going through here lets a recording of a staged call
    (``recording.py``) capture the work into a CUDA graph like the kernels around it.

    >>> seen = []
    >>> library_call(seen.append)
    >>> seen
    [0]
    """
    recorder = _RECORDER[0]
    if recorder is not None and recorder.records_here():
        recorder.library_call(call)
    else:
        call(0)


def launch_over(kernel: Any, n: int, *args: Any) -> None:
    """:func:`launch` on the grid-stride grid for ``n`` items (``launch.grid``); nothing when
    ``n`` is 0."""
    if n > 0:
        launch(kernel, grid(n), *args)


class Bound:
    """``kernel`` bound to a grid ``dims``: ``bound(*args)`` launches like
    ``launch(kernel, dims, *args)``, for arguments of the kinds of the first call's (array
    dtypes, scalar types, tuple lengths; the caller keeps them so, as a cached plan does).
    On a GPU the overload is looked up once, and later calls on the first call's thread go
    straight to the driver (:class:`_DriverLaunch`). A recording in progress, other threads
    and the simulator take :func:`launch`.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host, empty
    >>> cuda = cuda_module()
    >>> @cuda.jit
    ... def scale(out, x, k):
    ...     for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
    ...         out[i] = k * x[i]
    >>> bound, out = Bound(scale, grid(3)), empty((3,), np.float64)
    >>> bound(out, to_device(np.arange(3.0)), 2.0); bound(out, to_device(np.ones(3)), 3.0)
    >>> to_host(out)
    array([3., 3., 3.])
    """

    __slots__ = ("kernel", "dims", "_ready")

    def __init__(self, kernel: Any, dims: tuple):
        self.kernel, self.dims = kernel, tuple(dims)
        self._ready: Any = None  # a _DriverLaunch once the first call compiled; False: never

    def __call__(self, *args: Any) -> None:
        ready = self._ready
        if not ready or _RECORDER[0] is not None or ready.owner != _thread_id():
            launch(self.kernel, self.dims, *args)
            if ready is None:
                self._ready = self._prepare(args)
            return
        ready(args)

    def _prepare(self, args: Sequence[Any]) -> Any:
        """The driver launch later GPU calls reuse (after a first launch compiled the
        overload); False where launches must go through :func:`launch` (the simulator, test
        doubles)."""
        fast = None if simulated() else _launcher(self.kernel)
        if fast is None:
            return False
        function, packers = fast.overloads[tuple(kind(a) for a in args)]
        return _DriverLaunch(function, self.dims, packers, args)


class _DriverLaunch:
    """One bound kernel's launch through the driver's ``cuLaunchKernel``, from a parameter
    block it keeps: every kernel parameter in an 8-byte slot of its own (the driver copies
    each parameter's size, which it reads from the kernel's image, from the slot's address:
    the low bytes, as the machine is little-endian) and an array of the slots' addresses,
    made once. A launch writes the slots of its arrays and of the other arguments that are
    not the objects passed last time, then calls the driver, which copies the parameters
    before it returns. cuda.core's ``launch`` converts every parameter and the launch
    configuration on every call instead. On an H100 host (``gpu_profile.py``'s layers of an
    add) a launch already packed cost 6.0 us through cuda.core, the driver's call alone 3.6,
    and this one, packing included, 6.1 before it skipped the slots of arrays passed again.

    The block is written and read on one thread, the one that made it (``owner``): Bound
    sends the others through :func:`launch`, so no two launches share a block at once.
    """

    __slots__ = ("grid", "arrays", "others", "values", "base", "pointers",
                 "driver_args", "kept", "held", "owner", "call", "success")

    def __init__(self, function: Any, dims: tuple, packers: list, args: Sequence[Any]):
        self.grid = _three(dims[0]) + _three(dims[1])
        params: list = []
        arrays: list = []        # (k, argument index, first slot) of the k-th array
        self.others: list = []   # (argument index, packer, first slot) of the other arguments
        for i, (pack, a) in enumerate(zip(packers, args)):
            if pack is _pack_flat_array:
                arrays.append((len(arrays), i, len(params)))
            else:
                self.others.append((i, pack, len(params)))
            pack(a, params)
        self.arrays = tuple(arrays)
        self.values = (ctypes.c_uint64 * max(len(params), 1))()
        self.base = ctypes.addressof(self.values)
        self.pointers = (ctypes.c_void_p * max(len(params), 1))(
            *[self.base + 8 * i for i in range(len(params))])
        self._store(0, params)
        # The object each argument's slots hold, but arrays': theirs are written every call
        # (and an array kept here would keep its memory).
        self.kept: list = [None if pack is _pack_flat_array else a
                           for pack, a in zip(packers, args)]
        # Per array: the parameters its slots hold (a tuple kept on the array, which stays the
        # same object while the array lives: an op's inputs and flags are passed again).
        self.held: list = [None] * len(self.arrays)
        self.owner = _thread_id()
        self.call, self.success = _driver()
        # cuLaunchKernel's arguments: function, grid, block, shared memory, stream (0: the
        # legacy default stream, where this backend's work runs), parameters, extra
        self.driver_args = (_driver_function(function), *self.grid, 0, 0,
                            ctypes.addressof(self.pointers), 0)

    def __call__(self, args: Sequence[Any]) -> None:
        values, held = self.values, self.held
        for k, i, start in self.arrays:
            a = args[i]
            packed = a.__dict__.get("_stagecraft_params") or flat_params(a)
            if packed is not held[k]:
                values[start:start + 7] = packed
                held[k] = packed
        if self.others:
            kept = self.kept
            for i, pack, start in self.others:
                a = args[i]
                if kept[i] is not a:   # (plans pass the same tuples and numbers again)
                    own: list = []
                    pack(a, own)
                    self._store(start, own)
                    kept[i] = a
        err, = self.call(*self.driver_args)
        if err != self.success:
            g = self.grid
            raise RuntimeError(f"the CUDA driver refused a kernel launch: {err!r} "
                               f"(grid {g[:3]}, block {g[3:]})")

    def _store(self, start: int, params: list) -> None:
        for j, p in enumerate(params, start):
            if isinstance(p, int):   # (bool too: one byte, the slot's lowest)
                self.values[j] = p & 0xFFFF_FFFF_FFFF_FFFF
            else:   # a ctypes scalar: its bytes
                ctypes.memmove(self.base + 8 * j, ctypes.addressof(p), ctypes.sizeof(p))


def _three(dims: Any) -> tuple:
    dims = tuple(int(d) for d in dims) if isinstance(dims, (tuple, list)) else (int(dims),)
    return dims + (1,) * (3 - len(dims))


def _driver_function(function: Any) -> Any:
    """The driver's function handle of a compiled kernel (cuda.core's ``Kernel``, whose
    handle is a library kernel: its function in the current context is looked up once)."""
    from cuda.bindings import driver
    handle = function.handle
    if isinstance(handle, driver.CUfunction):
        return handle
    err, found = driver.cuKernelGetFunction(handle)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"the CUDA driver has no function for a compiled kernel: {err!r}")
    return found


def _driver() -> tuple:
    """``(cuLaunchKernel, CUDA_SUCCESS)`` of ``cuda.bindings``, looked up once."""
    if not _DRIVER:
        from cuda.bindings import driver
        _DRIVER[:] = [driver.cuLaunchKernel, driver.CUresult.CUDA_SUCCESS]
    return _DRIVER[0], _DRIVER[1]


_DRIVER: list = []
_thread_id = threading.get_ident


def _launcher(kernel: Any) -> "_Launcher | None":
    found = getattr(kernel, "_stagecraft_launcher", False)
    if found is False:
        from numba.cuda.dispatcher import CUDADispatcher
        found = _Launcher(kernel) if isinstance(kernel, CUDADispatcher) else None
        kernel._stagecraft_launcher = found
    return found


def kind(value: Any) -> Any:
    """What selects a kernel overload for ``value``: ``("array", dtype)`` for a device array
    (always passed flat and C-contiguous), the Python or NumPy scalar type, or a tuple of the
    elements' kinds.

    >>> kind(3), kind(np.float32(1)), kind((2, 3))
    (<class 'int'>, <class 'numpy.float32'>, (<class 'int'>, <class 'int'>))
    """
    t = type(value)   # (the common types first: this runs for every argument of a launch)
    if t in _SCALARS:
        return t
    if is_device_array(value):
        return ("array", value.dtype)
    if isinstance(value, tuple):
        return tuple([kind(v) for v in value])
    if isinstance(value, np.generic):
        return t
    raise TypeError(f"cannot pass a {type(value).__name__} to a CUDA kernel of this backend")


_SCALARS = (int, float, bool)


class _Launcher:
    """The compiled overloads of one kernel by argument kinds, and its packed launches."""

    def __init__(self, kernel: Any):
        self.kernel = kernel
        self.overloads: dict[tuple, tuple[Any, list[Callable]]] = {}
        self.configs: dict[tuple, Any] = {}

    def __call__(self, blocks: Any, threads: Any, args: Sequence[Any]) -> None:
        from cuda.core import launch as core_launch
        function, config, params = self.prepare(blocks, threads, args)
        core_launch(_default_stream(), config, function, *params)

    def prepare(self, blocks: Any, threads: Any, args: Sequence[Any]) -> tuple:
        context_here()
        key = tuple(kind(a) for a in args)
        entry = self.overloads.get(key)
        if entry is None:
            entry = self.overloads[key] = self._compile(args)
        function, packers = entry
        params: list = []
        for pack, a in zip(packers, args):
            pack(a, params)
        config = self.configs.get((blocks, threads))
        if config is None:
            config = self.configs[(blocks, threads)] = _launch_config(blocks, threads)
        return function, config, params

    def _compile(self, args: Sequence[Any]) -> tuple[Any, list[Callable]]:
        views = [flat(a) if is_device_array(a) else a for a in args]
        types = tuple(self.kernel.typeof_pyval(v) for v in views)
        overload = self.kernel.compile(types)
        function = overload._codelibrary.get_cufunc().kernel
        return function, [_packer(t) for t in types]


def _packer(ty: Any) -> Callable[[Any, list], None]:
    """Appends a value of numba type ``ty`` to a parameter list the way Numba's launch does
    (``_Kernel._prepare_args``): arrays flat, integers and floats as ctypes (float16 as its
    bits), complex numbers as two floats, tuples flattened."""
    from numba.core import types
    if isinstance(ty, types.Array):
        return _pack_flat_array
    if isinstance(ty, types.BaseTuple):
        parts = [_packer(t) for t in ty]

        def pack_tuple(value: tuple, params: list) -> None:
            for p, v in zip(parts, value):
                p(v, params)
        return pack_tuple
    if ty == types.boolean:
        return lambda value, params: params.append(bool(value))
    if ty == types.float16:   # (its bits, as Numba passes it)
        return lambda value, params: params.append(
            ctypes.c_uint16(int(np.float16(value).view(np.uint16))))
    if isinstance(ty, types.Complex):   # (real and imaginary parts, as two parameters)
        part = ctypes.c_float if ty == types.complex64 else ctypes.c_double

        def pack_complex(value: Any, params: list) -> None:
            params.extend((part(value.real), part(value.imag)))
        return pack_complex
    if isinstance(ty, (types.Integer, types.Float)):
        ctype = getattr(ctypes, {"float32": "c_float", "float64": "c_double"}.get(
            str(ty), f"c_{ty}"))
        return lambda value, params: params.append(ctype(value))
    raise TypeError(f"cannot pass a value of numba type {ty} to a CUDA kernel of this backend")


def _pack_flat_array(array: Any, params: list) -> None:
    params.extend(array.__dict__.get("_stagecraft_params") or flat_params(array))


def _launch_config(blocks: Any, threads: Any) -> Any:
    from cuda.core import LaunchConfig
    return LaunchConfig(grid=blocks, block=threads, shmem_size=0)


# The recording of a staged call in progress (recording.Recording), or None: while it is
# set, launches and library calls on its thread go through it (recorded, then issued).
_RECORDER = RECORDING
_STREAM: list = []


def _default_stream() -> Any:
    if not _STREAM:
        from numba.cuda.cudadrv import driver
        _STREAM.append(driver._to_core_stream(0))
    return _STREAM[0]
