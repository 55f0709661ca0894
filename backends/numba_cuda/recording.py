"""Recordings of a staged GPU call: every kernel launch, library call (cuBLAS) and host-to-device
upload it issues, in order, with the buffers it allocates, so that the same device work can be
replayed without running the host code again (``graphs.py``).

A recording is only replayable when the host code did nothing a replay would skip, and when it
would issue exactly the same work next time:

- host work that only reads device arrays (``print``, an assert) is a :class:`HostStep`
  between the device work before and after it, which a replay runs between their graphs;
- any other copy of a whole array to the host (``py_function``, a host round trip of an op)
  *spoils* the recording: that host work cannot be replayed;
- a single value read on the host (a ``cond``/``while`` predicate, an error flag, a
  data-dependent size) becomes a :class:`Guard`: the host code took its path because of that
  value, so a replay stands for running the host code only if every guard would read the same
  value again, which the replay checks after the fact (``graphs.py``);
- everything else the host code decides must depend only on the input signature. That is
  checked, not assumed: two recordings of consecutive calls on the same input buffers must agree
  step by step (:func:`difference`): same kernels, grids and scalars, and every buffer either
  the same fixed buffer (an input, a constant) or the allocation made at the same step of the
  call. A seed or a size computed on the host from anything else would make them differ.

>>> import numpy as np
>>> from stagecraft.backends.numba_cuda import memory
>>> with recording() as rec:
...     out = memory.empty((3,), np.float32)
...     _ = memory.to_device(np.float32([1, 2, 3]))
>>> len(rec.allocations), [type(i).__name__ for i in rec.items], rec.spoiled
(2, ['Upload'], None)
>>> with recording() as rec:
...     _ = memory.scalar(memory.to_device(np.int32(3)))
...     _ = memory.to_host(memory.to_device(np.int32([4, 5])))
>>> rec.items[-2], rec.spoiled   # doctest: +ELLIPSIS
(Guard(array=..., value=array(3, dtype=int32)), 'a device array is copied to the host')
"""
from __future__ import annotations

import bisect
import contextlib
import dataclasses
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from stagecraft.backends.numba_cuda import config, launcher, memory
from stagecraft.backends.numba_cuda.launch import RECORDING
from stagecraft.backends.numba_cuda.memory import address, is_device_array


class NotReplayable(Exception):
    """The recorded work cannot become a graph (the message says why)."""


@dataclass
class Launch:
    """A kernel launch: the dispatcher, ``(blocks, threads)``, its arguments, and on a GPU the
    packed driver launch (``launcher.prepare``)."""
    kernel: Any
    dims: tuple
    args: tuple
    prepared: "tuple | None"


@dataclass
class LibraryCall:
    """Work a library enqueues itself: ``call(stream)`` (``launcher.library_call``)."""
    call: Callable[[int], None]


@dataclass
class Guard:
    """A one-element device array the host code read, and the value it read: the recorded
    work is what the host code issues as long as every guard reads the same again."""
    array: Any
    value: np.ndarray


@dataclass
class Branch(Guard):
    """A guard that is a ``cond``/``while`` predicate of the generated host code: ``site``
    numbers the test in its function, ``loop`` says it is a ``while`` loop's, ``allocs``
    counts the call's allocations before it (the work between two branches is a block of
    ``programs.py``)."""
    site: int = 0
    loop: bool = False
    allocs: int = 0


@dataclass
class Join:
    """The end of a ``cond``: the code after it is one block of ``programs.py`` whichever
    branch ran (``site`` numbers the ``cond`` in its function, ``allocs`` as in Branch); with
    ``head``, the top of a pass of the ``while`` loop whose test is ``site``."""
    site: int
    allocs: int
    head: bool = False


@dataclass
class Copy:
    """A device-to-device copy of ``src`` into ``dst`` (same shape and dtype)."""
    dst: Any
    src: Any


@dataclass
class HostStep:
    """Host work between device work (``print``, an assert): ``fn()`` reads the device arrays
    it needs itself. A replay runs it between the graphs of the work before and after."""
    fn: Callable[[], None]


@dataclass
class Upload:
    """A host-to-device copy of ``host`` (a private copy of the bytes) into ``device``."""
    host: np.ndarray
    device: Any


class Recording:
    """What one staged call issued on the device (``items``) and allocated (``allocations``);
    ``spoiled`` says why it cannot be replayed (None: it can)."""

    def __init__(self) -> None:
        self.items: list = []
        self.allocations: list = []
        self.spoiled: str | None = None
        # Whether loops and conds keep the values that flow out of them in fixed buffers
        # (``runtime.loop_entry``, ``cond_entry``), so that every pass through a block issues
        # the same work on the same buffers, whichever path led there (``programs.py``).
        self.stable_blocks = False
        self._thread = threading.get_ident()
        self._bytes = 0
        self._in_host_step = False

    def _grew(self) -> None:
        if len(self.items) > config.GRAPH_MAX_STEPS:
            self.spoiled = (f"it issued more than {config.GRAPH_MAX_STEPS} launches and copies "
                            f"(a long loop?); raise numba_cuda.config.GRAPH_MAX_STEPS to "
                            f"record it")
        elif self._bytes > config.GRAPH_MAX_BYTES:
            self.spoiled = (f"its buffers exceed {config.GRAPH_MAX_BYTES} bytes; raise "
                            f"numba_cuda.config.GRAPH_MAX_BYTES to record it")

    def records_here(self) -> bool:
        """Whether work issued now belongs to this recording: on its thread and while it can
        still be replayed (once spoiled, the call goes on at full speed)."""
        return (self.spoiled is None and not self._in_host_step
                and threading.get_ident() == self._thread)

    def launch(self, kernel: Any, dims: tuple, args: Sequence[Any]) -> None:
        prepared = launcher.prepare(kernel, dims, args)
        self.items.append(Launch(kernel, tuple(dims), tuple(args), prepared))
        self._grew()
        if prepared is None:
            launcher.launch_now(kernel, dims, args)
        else:
            launcher.enqueue(prepared)

    def library_call(self, call: Callable[[int], None]) -> None:
        self.items.append(LibraryCall(call))
        self._grew()
        call(0)

    def host_step(self, fn: Callable[[], None]) -> None:
        self.items.append(HostStep(fn))
        self._in_host_step = True   # (its own copies to the host are the step itself)
        try:
            fn()
        finally:
            self._in_host_step = False

    def upload(self, host: np.ndarray, device: Any) -> None:
        self.items.append(Upload(np.array(host, copy=True), device))
        self.allocated(device)   # (a new buffer: made by the upload)

    def allocated(self, array: Any) -> None:
        self.allocations.append(array)
        self._bytes += array.nbytes
        self._grew()

    def guard(self, array: Any, value: Any, site: int | None = None, loop: bool = False) -> None:
        if site is None:
            self.items.append(Guard(array, np.array(value)))
        else:
            self.items.append(Branch(array, np.array(value), site, loop, len(self.allocations)))

    def join(self, site: int, head: bool = False) -> None:
        self.items.append(Join(site, len(self.allocations), head))

    def copy(self, dst: Any, src: Any) -> None:
        self.items.append(Copy(dst, src))
        self._grew()

    def spoil(self, why: str) -> None:
        """The call did something a replay cannot stand for (``why``: a host read of a whole
        array, a shape known only at run time): the function runs plainly from now on."""
        self.spoiled = why


class Rebind:
    """Recorded items with their device arrays mapped through :meth:`array` (the identity
    here; subclasses map some buffers to others), wherever an item holds them: launch
    arguments, nested in tuples, the closure cells of library calls and host steps, copies'
    and uploads' buffers, guards' arrays. An item nothing maps comes back as itself; a launch
    that passes another array is packed again (``launcher.prepare``).

    >>> import numpy as np
    >>> from stagecraft.backends.numba_cuda import memory
    >>> a, b = memory.to_device(np.zeros(1)), memory.to_device(np.ones(1))
    >>> class AToB(Rebind):
    ...     def array(self, x):
    ...         return b if x is a else x
    >>> moved, kept = AToB().item(Copy(a, a)), Copy(b, b)
    >>> moved.dst is b and moved.src is b, AToB().item(kept) is kept
    (True, True)
    """

    def array(self, a: Any) -> Any:
        return a

    def walk(self, x: Any) -> Any:
        """``x`` (an argument, a tuple of them, a function) with its arrays mapped."""
        if is_device_array(x):
            return self.array(x)
        if isinstance(x, (tuple, list)):
            out = [self.walk(v) for v in x]
            return x if all(a is b for a, b in zip(out, x)) else type(x)(out)
        if isinstance(x, types.FunctionType) and (x.__closure__ or x.__defaults__):
            # (cells and default arguments: a recording compares a call's both)
            closure = x.__closure__
            cells = [c.cell_contents for c in closure or ()]
            new = [self.walk(v) for v in cells]
            defaults = self.walk(x.__defaults__) if x.__defaults__ else x.__defaults__
            if defaults is not x.__defaults__ or any(a is not b for a, b in zip(new, cells)):
                f = types.FunctionType(x.__code__, x.__globals__, x.__name__, defaults,
                                       tuple(types.CellType(v) for v in new) or closure)
                f.__kwdefaults__ = x.__kwdefaults__
                return f
        return x

    def item(self, item: Any) -> Any:
        """``item`` with its arrays mapped (``item`` itself when none changes)."""
        if isinstance(item, Launch):
            args = self.walk(item.args)
            if args is item.args:
                return item
            prepared = (launcher.prepare(item.kernel, item.dims, args)
                        if item.prepared is not None else None)
            return Launch(item.kernel, item.dims, args, prepared)
        if isinstance(item, (LibraryCall, HostStep)):
            field = "call" if isinstance(item, LibraryCall) else "fn"
            fn = getattr(item, field)
            new_fn = self.walk(fn)
            return item if new_fn is fn else dataclasses.replace(item, **{field: new_fn})
        if isinstance(item, Guard):
            new = dataclasses.replace(item, array=self.array(item.array))
        elif isinstance(item, Copy):
            new = Copy(self.array(item.dst), self.array(item.src))
        elif isinstance(item, Upload):
            new = Upload(item.host, self.array(item.device))
        else:
            return item
        same = all(getattr(new, f) is getattr(item, f) for f in item.__dataclass_fields__)
        return item if same else new


class Relocate(Rebind):
    """Recorded items with every array that lies in one of the call's allocations moved to
    the same place of its replacement: ``moves`` maps an allocation's step (its index in
    ``allocations``, which ``where`` locates) to a C-contiguous array of its size. Views are
    moved as views, at the same offset, shape and dtype.

    >>> import numpy as np
    >>> from stagecraft.backends.numba_cuda import memory
    >>> made, other = memory.to_device(np.zeros(4)), memory.to_device(np.ones(4))
    >>> move = Relocate(Allocations([made]), {0: other})
    >>> move.array(made) is other, memory.to_host(move.array(made[2:])).tolist()
    (True, [1.0, 1.0])
    """

    def __init__(self, where: "Allocations", moves: dict[int, Any]):
        self.where, self.moves = where, moves

    def array(self, a: Any) -> Any:
        spot = self.where.locate(a)
        if spot[0] != "alloc" or spot[1] not in self.moves:
            return a
        base, offset = self.moves[spot[1]], spot[2]
        if (offset == 0 and tuple(base.shape) == tuple(a.shape) and base.dtype == a.dtype
                and tuple(base.strides) == tuple(a.strides)):
            return base
        if (base.dtype == a.dtype and memory.contiguous(a) and memory.contiguous(base)
                and offset % a.dtype.itemsize == 0):
            at = offset // a.dtype.itemsize
            return base.reshape(base.size)[at:at + a.size].reshape(a.shape)
        raise NotReplayable("a step reads part of a buffer as another dtype or layout, which "
                            "a replay cannot move to another buffer")


class _Collect(Rebind):
    def __init__(self) -> None:
        self.found: list = []

    def array(self, a: Any) -> Any:
        self.found.append(a)
        return a


def held_arrays(item: Any) -> list:
    """The device arrays recorded ``item`` holds (where :class:`Rebind` maps them).

    >>> import numpy as np
    >>> from stagecraft.backends.numba_cuda import memory
    >>> a = memory.to_device(np.zeros(1))
    >>> [x is a for x in held_arrays(Copy(a, a))]
    [True, True]
    """
    collect = _Collect()
    collect.item(item)
    return collect.found


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """Records the device work issued on this thread inside the block. A recording started
    while another one runs (a staged call inside a staged call) records nothing and comes
    back spoiled."""
    rec = Recording()
    if RECORDING[0] is not None:
        rec.spoiled = "it runs inside another recorded call"
        yield rec
        return
    RECORDING[0] = rec
    try:
        yield rec
    finally:
        RECORDING[0] = None


def host_step(fn: Callable[[], None]) -> None:
    """Runs ``fn()``, host work of a staged call that reads device arrays and has no device
    results (``print``, an assert); a recording in progress records it as a step between its
    device work instead of being spoiled by its copies to the host.

    >>> with recording() as rec:
    ...     host_step(lambda: None)
    >>> [type(i).__name__ for i in rec.items], rec.spoiled
    (['HostStep'], None)
    """
    recorder = RECORDING[0]
    if recorder is not None and recorder.records_here():
        recorder.host_step(fn)
    else:
        fn()


class Allocations:
    """Finds which allocation of a recording (by step) an address falls in: two recordings'
    arrays are the same buffer of their calls when they sit at the same place of the same
    allocation step.

    >>> import numpy as np
    >>> from stagecraft.backends.numba_cuda import memory
    >>> a, b = memory.to_device(np.zeros(4, np.float32)), memory.to_device(np.zeros(2))
    >>> where = Allocations([a, b])
    >>> where.locate(b), where.locate(a[2:])
    (('alloc', 1, 0, (2,), 'float64'), ('alloc', 0, 8, (2,), 'float32'))
    """

    def __init__(self, arrays: Sequence[Any]):
        spans = sorted((address(a), a.nbytes, i) for i, a in enumerate(arrays) if a.size)
        self._starts = [s[0] for s in spans]
        self._spans = spans

    def locate(self, array: Any) -> tuple:
        """``("alloc", step, byte offset, shape, dtype)`` inside an allocation of the call,
        else ``("fixed", address, shape, dtype)``."""
        where = address(array)
        k = bisect.bisect_right(self._starts, where) - 1
        if k >= 0 and where > 0:
            start, nbytes, step = self._spans[k]
            if where < start + nbytes:
                return ("alloc", step, where - start, tuple(array.shape), str(array.dtype))
        return ("fixed", where, tuple(array.shape), str(array.dtype))


def difference(a: Recording, b: Recording) -> str | None:
    """The first way recordings ``a`` and ``b`` of two calls differ (None: the same work, so
    a replay of ``b`` does what running the call again would do).

    >>> import numpy as np
    >>> from stagecraft.backends.numba_cuda import memory
    >>> def call(seed):
    ...     with recording() as rec:
    ...         memory.empty((2,), np.float32)
    ...         memory.to_device(np.int64(seed))
    ...     return rec
    >>> difference(call(1), call(1)) is None
    True
    >>> difference(call(1), call(2))
    'step 1 (upload) uploads different host values'
    """
    if len(a.items) != len(b.items) or len(a.allocations) != len(b.allocations):
        return (f"the calls issued {len(a.items)} and {len(b.items)} launches or copies, "
                f"{len(a.allocations)} and {len(b.allocations)} allocations")
    where_a, where_b = Allocations(a.allocations), Allocations(b.allocations)
    for step, (x, y) in enumerate(zip(a.items, b.items), 1):
        if type(x) is not type(y):
            return f"step {step} is a {type(x).__name__} in one call, a {type(y).__name__} in the other"
        if isinstance(x, Launch):
            if x.kernel is not y.kernel or x.dims != y.dims:
                return f"step {step} (launch) runs another kernel or grid"
            if not same(x.args, y.args, where_a, where_b):
                return f"step {step} (launch) passes different arguments"
        elif isinstance(x, Guard):
            if not same(x.array, y.array, where_a, where_b):
                return f"step {step} (host read) reads a different buffer"
            if getattr(x, "site", None) != getattr(y, "site", None):
                return f"step {step} (host read) is another test"
        elif isinstance(x, Copy):
            if not same((x.dst, x.src), (y.dst, y.src), where_a, where_b):
                return f"step {step} (copy) copies different buffers"
        elif isinstance(x, LibraryCall):
            if not _same_call(x.call, y.call, where_a, where_b):
                return f"step {step} (library call) makes a different call"
        elif isinstance(x, HostStep):
            if not _same_call(x.fn, y.fn, where_a, where_b):
                return f"step {step} (host step) does different host work"
        else:
            if not same(x.host, y.host, where_a, where_b):
                return f"step {step} (upload) uploads different host values"
            if not same(x.device, y.device, where_a, where_b):
                return f"step {step} (upload) writes a different buffer"
    return None


def _same_call(f: Callable, g: Callable, where_a: Allocations, where_b: Allocations) -> bool:
    code_f, code_g = getattr(f, "__code__", None), getattr(g, "__code__", None)
    if code_f is None or code_f is not code_g or f is g:
        return f is g
    cells_f = tuple(c.cell_contents for c in f.__closure__ or ())
    cells_g = tuple(c.cell_contents for c in g.__closure__ or ())
    return same(cells_f, cells_g, where_a, where_b) and same(
        getattr(f, "__defaults__", None), getattr(g, "__defaults__", None), where_a, where_b)


def same(x: Any, y: Any, where_a: Allocations, where_b: Allocations) -> bool:
    """Whether two recorded step arguments are the same: device arrays at the same place of
    their recordings' allocations (``where_a``/``where_b``), functions of the same code over
    the same closure, equal values otherwise (NaN equal to NaN).

    >>> nothing = Allocations([])
    >>> same((1, float("nan")), (1, float("nan")), nothing, nothing)
    True
    >>> same(1, 1.0, nothing, nothing)
    False
    """
    if is_device_array(x) or is_device_array(y):
        return (is_device_array(x) and is_device_array(y)
                and where_a.locate(x) == where_b.locate(y))
    if isinstance(x, (tuple, list)):
        return (type(x) is type(y) and len(x) == len(y)
                and all(same(p, q, where_a, where_b) for p, q in zip(x, y)))
    if getattr(x, "__code__", None) is not None:   # (a function: its code and closure)
        return _same_call(x, y, where_a, where_b)
    if isinstance(x, np.ndarray):
        return (isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape
                and x.tobytes() == y.tobytes())
    if type(x) is not type(y):
        return False
    if isinstance(x, (float, complex, np.inexact)) and x != x:   # NaN (or a complex NaN)
        return bool(y != y)
    if x is y:
        return True
    try:
        return bool(x == y)
    except Exception:   # (an object without a meaningful ==: only itself is the same)
        return False
