"""CUDA graphs for staged GPU functions: a concrete function's device work is recorded, checked
and then replayed with one graph launch per call, skipping its Python host code.

The calls of one executable go through four stages:

1. the first call runs plainly (it compiles the kernels and fills one-time caches);
2. the second is recorded (``recording.py``) on *staging* buffers: the arguments are copied into
   buffers the executable owns, so that later calls can reuse the recorded addresses;
3. the third is recorded the same way, and the two recordings must agree launch by launch;
   the third one becomes the graph (``graphs.build``), its buffers kept for it;
4. every later call copies the arguments that changed into the staging buffers and launches
   the graph. The graph rewrites its own buffers on every launch, while results must stay
   valid after the next call: so the results go to the caller from one of two *spare*
   instances of the graph, each writing them into buffers of its own, whose results nothing
   outside the replayer holds any more (no array, view or recording of another staged
   function: ``memory.references``), as they are, with no copy; in a loop such as
   ``y = f(x)`` the two take turns. When both spares' results are still held (or a result
   is not a whole buffer of the call), the graph itself runs and its results are copied out
   into new arrays.

Values the host code reads one at a time (``cond``/``while`` predicates, error flags) are the
recording's guards: a replay whose guards read other values (another trip count, a failing
check) is discarded and the call runs plainly, which also raises a failing check's own error.
Loops whose trip count varies from call to call (the two recorded calls differ, or two replays
in a row miss) are recorded again, twice, with every value that leaves a loop or a ``cond`` in
buffers of their own, and replayed as a *program* (``programs.py``): one graph per block
between two tests, one predicate copy after each, any number of passes through a loop; a
program's misses (a branch no recorded call took) run plainly, and two in a row end replaying.
A call that copies whole arrays to the host (``print``, ``py_function``, asserts), or two
recorded calls that issued different work, make the executable run plainly from then on;
``status`` says why. Device arrays of this backend are never written in place once made, so
an argument that is the very array copied last time needs no copy.
"""
from __future__ import annotations

import copy
import logging
import threading
from typing import Any, Callable, Sequence

from stagecraft.backends.numba_cuda import config, memory, programs
from stagecraft.backends.numba_cuda.graphs import NotReplayable, build
from stagecraft.backends.numba_cuda.recording import (Allocations, Branch, Recording, Relocate,
                                                      difference, recording)

logger = logging.getLogger("stagecraft")
# Consecutive replays whose guards fail (each one also runs the call plainly) before an
# executable stops replaying.
_MISSES = 2
# Spare instances of a graph that hand their results out without a copy (stage 4): two let
# calls alternate while the caller holds the last call's results.
_SPARES = 2


class Replayer:
    """``replayer(values) -> results``: calls ``fn(*values)`` (a generated host function on
    device arrays) through the stages above. ``name`` names the function in ``status``.

    >>> import numpy as np
    >>> from stagecraft.backends.numba_cuda import memory
    >>> from stagecraft.backends.numba_cuda.kernels.shape import copy_view
    >>> r = Replayer(lambda x: (copy_view(x, lambda v: v),), "@copy")
    >>> outs = [memory.to_host(r([memory.to_device(np.float32([i]))])[0]) for i in range(5)]
    >>> [float(o[0]) for o in outs], r.status
    ([0.0, 1.0, 2.0, 3.0, 4.0], '@copy replays a CUDA graph of 1 launches and copies')
    """

    def __init__(self, fn: Callable[..., Sequence[Any]], name: str):
        self._fn = fn
        self._name = name
        self._lock = threading.Lock()
        self._calls = 0
        self._reason: str | None = None
        self._staging: list | None = None
        self._last: list = []          # the argument arrays last copied into staging
        self._first: Recording | None = None
        self._kept: Recording | None = None   # the graph's recording: it holds every buffer
        self._results: Sequence[Any] = ()
        self._graph: Any = None
        self._misses = 0
        self._loops = False    # whether recordings keep loops in fixed buffers (programs.py)
        self._first_out: tuple = ()
        self._spares: list[_Spare] | None = []   # None: the results cannot be handed out
        self._settings = _settings()

    @property
    def status(self) -> str:
        """Whether calls replay a CUDA graph, and if not, why."""
        if self._reason is not None:
            return f"{self._name} runs without a CUDA graph: {self._reason}"
        if isinstance(self._graph, programs.Program):
            return (f"{self._name} replays CUDA graphs of {self._graph.blocks} blocks "
                    f"({self._graph.size} launches and copies), one branch read after each")
        if self._graph is not None:
            return f"{self._name} replays a CUDA graph of {self._graph.size} launches and copies"
        return f"{self._name} is recorded over its next calls ({self._calls} so far)"

    def __call__(self, values: Sequence[Any]) -> Sequence[Any]:
        if self._reason is not None or not config.CUDA_GRAPHS:
            return self._fn(*values)
        if not self._lock.acquire(blocking=False):   # another thread is in: run plainly
            return self._fn(*values)
        try:
            return self._call(values)
        finally:
            self._lock.release()

    def _call(self, values: Sequence[Any]) -> Sequence[Any]:
        settings = _settings()
        if settings != self._settings:   # the recorded work would differ now: record again
            self._settings = settings
            self._graph = self._kept = self._first = None
            self._results = self._first_out = ()
            self._spares = []
        self._calls += 1
        if self._calls == 1:
            return self._fn(*values)
        staged = self._stage(values)
        if staged is None:
            return self._fn(*values)
        if self._graph is not None:
            spare = self._spare()
            try:
                valid = (spare or self._graph).launch()
            except NotReplayable as e:
                self._give_up(str(e))
                return self._fn(*values)
            if valid:
                self._misses = 0
                return spare.hand_out() if spare else self._copy_out(self._results)
            # A guard read another value: this call's host code takes another path (a loop
            # runs a different number of times, an error check fails). Run it plainly: nothing
            # was written back yet, and a failing check raises its own error from there.
            self._misses += 1
            if self._misses >= _MISSES:
                self._missed()
            return self._fn(*values)
        with recording() as rec:
            rec.stable_blocks = self._loops
            out = self._fn(*staged)
        # (copied out: a result may be a staging buffer, an input returned as it is)
        if rec.spoiled is not None:
            self._give_up(rec.spoiled)
        elif self._first is None:
            self._first, self._first_out = rec, tuple(out)
        else:
            self._compile(rec, tuple(out))
        return self._copy_out(out)

    def _compile(self, rec: Recording, out: tuple) -> None:
        """Makes the replay of the second of two recorded calls (``self._first`` the first):
        one graph when both issued the same work, a program of graphs per block
        (``programs.py``) when their loops ran different numbers of times."""
        first, self._first = self._first, None
        try:
            if self._loops:
                # (replay the one that took more branches: the other's are checked against it)
                a, b = programs.build(first, self._first_out), programs.build(rec, out)
                if len(a.edges) > len(b.edges):
                    (a, b), rec = (b, a), first
                reason = a.difference(b)
                if reason is not None:
                    raise NotReplayable(f"two calls issued different device work ({reason})")
                self._graph, self._results = b.compile(), b.results
            else:
                reason = difference(first, rec)
                if reason is not None and _has_loops(rec):
                    self._loops = True   # (record the loops in buffers of their own)
                    return
                if reason is not None:
                    raise NotReplayable(f"two calls issued different device work ({reason})")
                self._graph, self._results = build(rec, out), out
            self._kept = rec
        except NotReplayable as e:
            self._give_up(str(e))

    def _missed(self) -> None:
        """Replays were invalid _MISSES calls in a row: loops that ran as often in both
        recorded calls run a varying number of times after all, so record them as a program;
        a program's misses (a branch never recorded) end replaying."""
        if not self._loops and _has_loops(self._kept):
            self._loops = True
            self._graph = self._kept = None
            self._results, self._misses, self._spares = (), 0, []
            return
        self._give_up(f"its host reads differed from the recorded ones in {_MISSES} calls in "
                      f"a row (control flow that depends on the data)")

    def _stage(self, values: Sequence[Any]) -> list | None:
        """The staging buffers holding ``values`` (copying those that changed); None when a
        value does not fit them (a variable assigned another shape), which ends replaying."""
        if self._staging is None:
            if not all(memory.contiguous(v) for v in values):
                self._give_up("an argument is not a C-contiguous device array")
                return None
            self._staging = [memory.empty(v.shape, v.dtype) for v in values]
            self._last = [None] * len(values)
        for i, (v, s) in enumerate(zip(values, self._staging)):
            if v is self._last[i]:
                continue
            if tuple(v.shape) != tuple(s.shape) or v.dtype != s.dtype or not memory.contiguous(v):
                self._give_up(f"argument {i} changed shape or layout between calls")
                return None
            memory.copy_into(s, v)
            self._last[i] = v
        return self._staging

    def _spare(self) -> "_Spare | None":
        """A spare instance of a single graph whose handed-out results nothing holds now,
        made when fewer than ``_SPARES`` exist; None when every one is held (or the results
        cannot be handed out, or the replay is a program): the graph runs and copies out."""
        if self._spares is None or isinstance(self._graph, programs.Program):
            return None
        for spare in self._spares:
            if spare.free():
                return spare
        if len(self._spares) >= _SPARES:
            return None
        try:
            spare = _Spare.build(self._kept, self._results)
        except NotReplayable as e:   # (the graph itself still replays: its results are copied)
            spare, why = None, str(e)
        except Exception as e:   # no memory for more buffers: copying out needs none
            if "OUT_OF_MEMORY" not in str(e).upper().replace(" ", "_"):
                raise
            spare, why = None, f"no device memory for their buffers ({e})"
        else:
            why = "no result is a whole buffer the call made"
        if spare is None:
            self._spares = None
            logger.info("%s copies its results out on every call: %s", self._name, why)
            return None
        self._spares.append(spare)
        return spare

    def _copy_out(self, results: Sequence[Any]) -> tuple:
        return tuple(_copy(r) for r in results)

    def _give_up(self, reason: str) -> None:
        self._reason = reason
        self._graph = self._kept = self._first = self._staging = None
        self._results, self._last, self._first_out, self._spares = (), [], (), []
        logger.info("%s", self.status)


class _Spare:
    """Another instance of a recorded call's graph, with the buffers of its results replaced
    by buffers of its own, which :meth:`hand_out` gives to the caller as they are. It may run
    again only when nothing but itself holds them (:meth:`free`): a launch rewrites them."""

    def __init__(self, graph: Any, results: tuple, handed: list[int]):
        self.graph, self.results, self.handed = graph, results, handed
        # (the counts while only this instance holds them: taken when they are first handed
        # out, once the objects that made the instance are gone)
        self._alone: list | None = None

    @classmethod
    def build(cls, rec: Recording, results: Sequence[Any]) -> "_Spare | None":
        """The spare of ``rec``'s graph, or None when no result is a whole buffer the call
        allocated (inputs returned as they are, views of a buffer and fixed arrays are copied
        out on every call)."""
        where = Allocations(rec.allocations)
        moves: dict[int, Any] = {}
        handed = []
        for i, r in enumerate(results):
            spot = where.locate(r)
            if spot[0] != "alloc" or spot[2] != 0:
                continue
            made = rec.allocations[spot[1]]
            if (tuple(made.shape) != tuple(r.shape) or made.dtype != r.dtype
                    or not memory.contiguous(made)):
                continue
            if spot[1] not in moves:
                moves[spot[1]] = memory.empty(made.shape, made.dtype)
            handed.append(i)
        if not handed:
            return None
        move = Relocate(where, moves)
        moved = copy.copy(rec)
        moved.items = [move.item(item) for item in rec.items]
        moved.allocations = [moves.get(k, a) for k, a in enumerate(rec.allocations)]
        out = move.walk(tuple(results))
        return cls(build(moved, out), out, handed)

    def launch(self) -> bool:
        return self.graph.launch()

    def free(self) -> bool:
        return self._alone is None or self._references() == self._alone

    def hand_out(self) -> tuple:
        """The results: the handed buffers themselves, the others copied into new arrays."""
        if self._alone is None:
            self._alone = self._references()
        return tuple(r if i in self.handed else _copy(r) for i, r in enumerate(self.results))

    def _references(self) -> list:
        return [memory.references(self.results[i]) for i in self.handed]


def _copy(array: Any) -> Any:
    """A new device array holding ``array``'s values."""
    fresh = memory.empty(array.shape, array.dtype)
    memory.copy_into(fresh, array)
    return fresh


def _has_loops(rec: Recording | None) -> bool:
    """Whether ``rec`` ran a ``while`` loop's test (a program may replay its varying trips)."""
    return rec is not None and any(isinstance(i, Branch) and i.loop for i in rec.items)


def _settings() -> tuple:
    """The backend settings that change which work a call issues (TensorFloat-32 selects
    cuBLAS's compute type; the launch sizes select grids and tiles): a graph recorded under
    other settings is recorded again rather than replayed."""
    return (config.TENSOR_FLOAT_32, config.USE_CUBLAS, config.THREADS_PER_BLOCK,
            config.MAX_BLOCKS, tuple(config.MATMUL_TILE), tuple(config.MATMUL_WORK))
