"""A caching allocator for device buffers: freed blocks are kept by size and handed out again.

An eager op allocates its output; through Numba (``cuda.device_array``) that is a
``cuMemAlloc`` plus Numba's bookkeeping, about 40 us on an H100 host, and the freeing later
goes through ``cuMemFree``, which waits for the device. Like PyTorch's and CuPy's allocators,
this pool keeps a dead array's block and gives it to the next array of that (rounded) size.
Reuse is safe because every kernel and copy of this backend runs on the default stream: work
that used the block before is ordered before work that uses it next.

A block is handed out as a *lease*: a Numba ``MemoryPointer`` over the block that puts the
block back when it dies (when the last array or view using it does; ``leases``). At most
``config.POOL_BYTES`` of idle blocks are kept; beyond that they are released to the driver,
and when an allocation fails for lack of memory the idle blocks are released and it is tried
once more.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable

from stagecraft.backends.numba_cuda import config

_MIN_BLOCK = 512
_LARGE = 1 << 20


def block_size(nbytes: int) -> int:
    """The size of the block that holds ``nbytes``: powers of two from 512 bytes up to 1 MiB,
    then whole MiB (sizes that recur map to one block size, and waste stays below half).

    >>> block_size(1), block_size(800), block_size(3 << 20), block_size((3 << 20) + 1)
    (512, 1024, 3145728, 4194304)
    """
    if nbytes <= _LARGE:
        return max(_MIN_BLOCK, 1 << (nbytes - 1).bit_length())
    return -(-nbytes // _LARGE) * _LARGE


class BlockPool:
    """Idle device blocks by size. ``allocate(size)`` makes a new block (an object that owns
    device memory, released when garbage-collected); ``leases(give_back)`` gives the function
    ``lease(block, size, key)`` that wraps a block for one array, which calls
    ``give_back(key, size)`` when that array is gone.

    >>> made = []
    >>> pool = BlockPool(lambda n: made.append(n) or f"block{len(made)}",
    ...                  lambda give_back: lambda block, n, key: (block, n, key), limit=4096)
    >>> block, size, key = pool.take(600)
    >>> block, made
    ('block1', [1024])
    >>> pool.give_back(key, size)   # the array using it died: the block is idle, kept
    >>> pool.take(1000)[0], made    # the same size class reuses it
    ('block1', [1024])
    """

    def __init__(self, allocate: Callable[[int], Any],
                 leases: Callable[[Callable[[int, int], None]], Callable[[Any, int, int], Any]],
                 limit: int | None = None):
        self._allocate = allocate
        self._lease = leases(self.give_back)
        self._limit = limit
        self.idle: dict[int, list] = {}
        self.idle_bytes = 0
        # Every block out on a lease, by id. A lease caught in a reference cycle dies in a
        # garbage collection; if its block were reachable only through the lease, the block
        # would be unreachable too and its own finalizer (Numba's, which frees the memory)
        # would run before the lease's give_back put the freed block back in the pool.
        self._leased: dict[int, Any] = {}
        self._sizes: dict[int, int] = {}   # block_size by request: eager ops repeat sizes

    def take(self, nbytes: int) -> Any:
        """A lease over a block of at least ``nbytes`` (``nbytes`` > 0)."""
        size = self._sizes.get(nbytes)
        if size is None:
            size = block_size(nbytes)
            if len(self._sizes) < 4096:
                self._sizes[nbytes] = size
        blocks = self.idle.get(size)
        if blocks:
            try:
                block = blocks.pop()
                self.idle_bytes -= size
            except IndexError:   # another thread took the last one
                block = self._new(size)
        else:
            block = self._new(size)
        key = id(block)
        self._leased[key] = block
        return self._lease(block, size, key)

    def release_idle(self) -> None:
        """Lets every idle block go back to the driver."""
        self.idle.clear()
        self.idle_bytes = 0

    def _new(self, size: int) -> Any:
        try:
            return self._allocate(size)
        except Exception as e:
            if not self.idle or "OUT_OF_MEMORY" not in str(e).upper().replace(" ", "_"):
                raise
            self.release_idle()
            return self._allocate(size)

    def give_back(self, key: int, size: int) -> None:
        """Makes the block leased under ``key`` idle (kept for the next ``take`` of its size,
        within the limit): a lease calls it when it dies."""
        # Runs from a finalizer, possibly in the middle of take() on this thread: no locks;
        # list and dict operations are atomic.
        block = self._leased.pop(key)
        limit = config.POOL_BYTES if self._limit is None else self._limit
        if self.idle_bytes + size <= limit:
            self.idle.setdefault(size, []).append(block)
            self.idle_bytes += size


@functools.lru_cache(maxsize=None)
def device_pool() -> BlockPool:
    """The pool of the current CUDA context (one GPU; real hardware only)."""
    from numba.cuda.cudadrv import devices
    from stagecraft.backends.numba_cuda.launch import context_here
    context = devices.get_context()

    def allocate(size: int) -> Any:   # (cuMemAlloc: on a thread with the context current)
        context_here()
        return context.memalloc(size)
    # (no owner: a lease owns itself, so Numba's views of it (slices) keep the lease, not
    # just the block, alive; the pool keeps the block alive while it is leased)
    return BlockPool(allocate, functools.partial(leases, context))


def leases(context: Any, give_back: Callable[[int, int], None],
           pointer_type: type | None = None) -> Callable[[Any, int, int], Any]:
    """``lease(block, size, key)``: Numba's ``MemoryPointer`` (or ``pointer_type``) of
    ``context`` over a pooled block that calls ``give_back(key, size)`` when it dies. Not a
    *managed* pointer (``free()`` does nothing): only its death returns the block.

    A lease is a copy of the attributes Numba's constructor gives a pointer of its size, with
    the block's address: Numba's own ``finalizer`` argument would make a
    ``weakref.finalize`` per pointer, about 1 us of every eager op's allocation, and its
    constructor is half of the rest.

    >>> class Pointer:
    ...     def __init__(self, context, pointer, size):
    ...         self.device_pointer, self.size = pointer, size
    >>> class Block:
    ...     device_pointer = 4096
    >>> back = []
    >>> lease = leases(None, lambda key, size: back.append((key, size)), Pointer)(Block, 512, 7)
    >>> type(lease).__mro__[1] is Pointer, lease.device_pointer, back
    (True, 4096, [])
    >>> del lease
    >>> back
    [(7, 512)]
    """
    cls = _lease_class(pointer_type)
    base = cls.__mro__[1]
    prototypes: dict[int, dict] = {}

    def lease(block: Any, size: int, key: int) -> Any:
        prototype = prototypes.get(size)
        if prototype is None:   # (the base class's own attributes for this size)
            prototype = prototypes[size] = dict(vars(base(context, 0, size)), _back=give_back)
        made = _new(cls)
        attributes = made.__dict__ = prototype.copy()
        attributes["device_pointer"] = attributes["handle"] = block.device_pointer
        attributes["_key"] = key
        return made
    return lease


@functools.lru_cache(maxsize=None)
def _lease_class(pointer_type: type | None) -> type:
    if pointer_type is None:
        from numba.cuda.cudadrv.driver import MemoryPointer as pointer_type

    class Lease(pointer_type):  # type: ignore[misc,valid-type]
        __doc__ = f"A {pointer_type.__name__} over a pooled block (pool.leases)."
        # (kept on the class: at interpreter exit, leases that outlive the modules (a staged
        # function's graph buffers) die after the modules' names are cleared, and the pool
        # is gone with the process's memory anyway)
        _finalizing = staticmethod(sys.is_finalizing)

        def __del__(self) -> None:
            if not self._finalizing():
                self._back(self._key, self.size)
    return Lease


_new = object.__new__
