"""A caching allocator for device buffers: freed blocks are kept by size and handed out again.

An eager op allocates its output; through Numba (``cuda.device_array``) that is a
``cuMemAlloc`` plus Numba's bookkeeping, about 40 us on an H100 host, and the freeing later
goes through ``cuMemFree``, which waits for the device. Like PyTorch's and CuPy's allocators,
this pool keeps a dead array's block and gives it to the next array of that (rounded) size.
Reuse is safe because every kernel and copy of this backend runs on the default stream: work
that used the block before is ordered before work that uses it next.

A block is handed out as a *lease*: a Numba ``MemoryPointer`` over the block that puts the
block back when it dies (when the last array or view using it does; ``lease_class``). At most
``config.POOL_BYTES`` of idle blocks are kept; beyond that they are released to the driver,
and when an allocation fails for lack of memory the idle blocks are released and it is tried
once more.
"""
from __future__ import annotations

import functools
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
    device memory, released when garbage-collected); ``lease(block, size, give_back)`` wraps a
    block for one array, calling ``give_back`` when that array is gone.

    >>> made = []
    >>> pool = BlockPool(lambda n: made.append(n) or f"block{len(made)}",
    ...                  lambda block, n, back: (block, back), limit=4096)
    >>> block, back = pool.take(600)
    >>> block, made
    ('block1', [1024])
    >>> back()                      # the array using it died: the block is idle, kept
    >>> pool.take(1000)[0], made    # the same size class reuses it
    ('block1', [1024])
    """

    def __init__(self, allocate: Callable[[int], Any], lease: Callable[..., Any],
                 limit: int | None = None):
        self._allocate = allocate
        self._lease = lease
        self._limit = limit
        self.idle: dict[int, list] = {}
        self.idle_bytes = 0
        # Every block out on a lease, by id. A lease caught in a reference cycle dies in a
        # garbage collection; if its block were reachable only through the lease, the block
        # would be unreachable too and its own finalizer (Numba's, which frees the memory)
        # would run before the lease's give_back put the freed block back in the pool.
        self._leased: dict[int, Any] = {}

    def take(self, nbytes: int) -> Any:
        """A lease over a block of at least ``nbytes`` (``nbytes`` > 0)."""
        size = block_size(nbytes)
        blocks = self.idle.get(size)
        if blocks:
            try:
                block = blocks.pop()
                self.idle_bytes -= size
            except IndexError:   # another thread took the last one
                block = self._new(size)
        else:
            block = self._new(size)
        self._leased[id(block)] = block
        return self._lease(block, size, functools.partial(self._give_back, id(block), size))

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

    def _give_back(self, key: int, size: int) -> None:
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
    context = devices.get_context()
    lease_type = lease_class()

    def lease(block: Any, size: int, give_back: Callable[[], None]) -> Any:
        # No owner: the lease owns itself, so Numba's views of it (slices) keep the lease,
        # not just the block, alive; the pool keeps the block alive while it is leased.
        return lease_type(context, block.device_pointer, size, give_back)
    return BlockPool(context.memalloc, lease)


@functools.lru_cache(maxsize=None)
def lease_class(pointer_type: type | None = None) -> type:
    """Numba's ``MemoryPointer`` (or ``pointer_type``) over a pooled block that gives the
    block back when it dies. It runs ``give_back`` from ``__del__``: Numba's own ``finalizer``
    argument makes a ``weakref.finalize`` per pointer, about 1 us of every eager op's
    allocation. Not a *managed* pointer (``free()`` does nothing): only its death returns
    the block.

    >>> class Pointer:
    ...     def __init__(self, context, pointer, size):
    ...         self.device_pointer, self.size = pointer, size
    >>> back = []
    >>> lease = lease_class(Pointer)(None, 4096, 512, lambda: back.append("block"))
    >>> lease.device_pointer, back
    (4096, [])
    >>> del lease
    >>> back
    ['block']
    """
    if pointer_type is None:
        from numba.cuda.cudadrv.driver import MemoryPointer as pointer_type

    class Lease(pointer_type):  # type: ignore[misc,valid-type]
        def __init__(self, context: Any, pointer: Any, size: int,
                     give_back: Callable[[], None]):
            super().__init__(context, pointer, size)
            self._give_back = give_back

        def __del__(self) -> None:
            self._give_back()
    return Lease
