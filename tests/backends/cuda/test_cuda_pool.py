"""The caching allocator's bookkeeping (pool.BlockPool) with fake blocks: reuse by size
class, the idle limit, and the retry after an out-of-memory error. Its use for real device
memory runs with every CUDA test on a GPU (memory.empty)."""
from __future__ import annotations

import functools
import gc
import weakref

import pytest

from stagecraft.backends.numba_cuda.pool import BlockPool, block_size


class Lease:
    """Stands in for Numba's MemoryPointer: gives its block back when collected."""

    def __init__(self, block, size, give_back):
        self.block, self.size = block, size
        weakref.finalize(self, give_back)


def make_pool(limit=1 << 20, fail=(), lease=Lease):
    made = []

    def allocate(n):
        if fail and len(made) in fail:
            fail.remove(len(made))
            raise RuntimeError("Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY")
        made.append(n)
        return object()
    return BlockPool(allocate, lambda give_back: lambda block, size, key: lease(
        block, size, functools.partial(give_back, key, size)), limit=limit), made


@pytest.mark.parametrize("nbytes, size", [(1, 512), (512, 512), (513, 1024), (1 << 20, 1 << 20),
                                          ((1 << 20) + 1, 2 << 20)])
def test_block_sizes(nbytes, size):
    assert block_size(nbytes) == size


def test_a_dead_arrays_block_serves_the_next_array_of_its_size_class():
    pool, made = make_pool()
    a = pool.take(700)
    block = a.block
    del a
    gc.collect()
    assert pool.idle_bytes == 1024
    b = pool.take(1000)
    assert b.block is block and made == [1024] and pool.idle_bytes == 0
    c = pool.take(100)          # another size class: a new block
    assert c.block is not block and made == [1024, 512]


def test_live_leases_are_never_shared():
    pool, made = make_pool()
    leases = [pool.take(64) for _ in range(5)]
    assert len({id(x.block) for x in leases}) == 5 and len(made) == 5


def test_idle_blocks_beyond_the_limit_go_back_to_the_driver():
    pool, made = make_pool(limit=1024)
    leases = [pool.take(1024) for _ in range(3)]
    del leases
    gc.collect()
    assert pool.idle_bytes == 1024 and len(pool.idle[1024]) == 1


def test_out_of_memory_releases_idle_blocks_and_retries_once():
    pool, made = make_pool(fail=[1])
    a = pool.take(4096)
    del a
    gc.collect()
    assert pool.idle_bytes == 4096
    b = pool.take(512)          # allocation 1 fails: idle blocks released, retried
    assert pool.idle_bytes == 0 and made == [4096, 512] and b.block is not None


def test_out_of_memory_with_nothing_idle_propagates():
    pool, _ = make_pool(fail=[0])
    with pytest.raises(RuntimeError, match="OUT_OF_MEMORY"):
        pool.take(8)            # nothing idle to release: the error stands


def test_a_lease_collected_in_a_cycle_gives_back_a_block_that_was_not_freed():
    """Numba's blocks free their memory from a finalizer. A lease in a reference cycle dies in
    a garbage collection, which runs the finalizers of every object only it could reach
    before the lease's own __del__: the pool must keep leased blocks reachable, or the freed
    block went back into the pool (a ReferenceError or a use after free on the GPU)."""
    freed = []

    class Block:
        def __init__(self, n):
            weakref.finalize(self, freed.append, n)

    class CyclicLease:
        def __init__(self, block, size, give_back):
            self.block, self._give_back = block, give_back
            self.me = self           # a cycle: only the garbage collector frees it

        def __del__(self):
            self._give_back()
    pool, made = make_pool(lease=CyclicLease)
    pool._allocate = Block
    lease = pool.take(100)
    block = id(lease.block)
    del lease
    gc.collect()
    assert freed == [] and [id(b) for b in pool.idle[512]] == [block]
    assert id(pool.take(100).block) == block


def test_leases_are_numbas_pointers_that_give_their_block_back_when_they_die():
    """pool.leases on Numba's real MemoryPointer (a child process without the simulator; no
    GPU needed to make pointers to given addresses): the attributes Numba's constructor sets,
    each lease its own, a view keeping the lease alive, and the block given back once, when
    the last user dies."""
    import os
    import subprocess
    import sys
    code = """
import gc
from types import SimpleNamespace
from numba.cuda.cudadrv.driver import MemoryPointer
from stagecraft.backends.numba_cuda.pool import leases
back = []
lease = leases("context", lambda key, size: back.append((key, size)))
a = lease(SimpleNamespace(device_pointer=1 << 20), 4096, 7)
other = lease(SimpleNamespace(device_pointer=1 << 24), 4096, 8)
made = MemoryPointer("context", 1 << 20, 4096)
assert isinstance(a, MemoryPointer)
for name, value in vars(made).items():
    assert getattr(a, name) == value, name
assert a.device_pointer_value == 1 << 20 and a.owner is a and not a.is_managed
assert other.device_pointer_value == 1 << 24 and vars(other) is not vars(a)
view = a.view(1024, 2048)
del a
gc.collect()
assert back == [], back
assert view.device_pointer_value == (1 << 20) + 1024
del view
gc.collect()
assert back == [(7, 4096)], back
del other
assert back == [(7, 4096), (8, 4096)], back
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_lease_dying_at_interpreter_exit_gives_nothing_back(monkeypatch):
    """At exit the modules' names are cleared before the last leases die (a staged
    function's graph buffers live to the end): giving back then would fail on them."""
    from stagecraft.backends.numba_cuda.pool import _lease_class, leases

    class Pointer:
        def __init__(self, context, pointer, size):
            self.device_pointer, self.size = pointer, size

    class Block:
        device_pointer = 4096
    back = []
    lease = leases(None, lambda key, size: back.append(key), Pointer)
    kept = lease(Block, 512, 1)
    del kept
    assert back == [1]
    dying = lease(Block, 512, 2)
    monkeypatch.setattr(_lease_class(Pointer), "_finalizing", staticmethod(lambda: True))
    del dying
    assert back == [1]
