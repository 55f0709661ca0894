"""The guards of a replayed CUDA graph, merged: one upload sets the error flags and one read
checks every guard of a dtype.

A recorded call reads single values on the host: error flags, ``cond``/``while`` predicates,
data-dependent sizes. Each read is a guard of the replay (``recording.py``). A guard's bytes
are copied into the graph's summary buffer where the host code read them. An error flag is
also uploaded: a one-element buffer the host code sets, that kernels write on a bad value
(a gather index out of range, an integer division by zero), and that it reads back at once.
So a replayed graph copies once per predicate and twice per flag, and loops pay that on
every pass: the graph of an Elman RNN's gradient over 20 steps made 649 copies beside 647
launches (counted on the simulator).

:func:`merge` rewrites a graph's recorded items so that the guarded buffers of each dtype
become the slots of one buffer, which the kernels write in their place:
- one upload sets every flag, before the graph's first step;
- one guard reads every slot, where the last of them was read.

A replay is valid exactly when it was before. A guarded buffer qualifies only when:
- the launches before its read (after its upload, for a flag) are the only items that touch
  it, and one of them at least, where nothing uploads it;
- nothing touches it after the read, and the call does not return it.
So the bytes read at the end are the bytes read at the guard. A guard on a buffer made
before the call (an argument, which the caller's copy writes) stays as it is, as does any
buffer a copy, a library call or a second read touches.
"""
from __future__ import annotations

import bisect
from typing import Any, Sequence

import numpy as np

from stagecraft.backends.numba_cuda import memory
from stagecraft.backends.numba_cuda.memory import address
from stagecraft.backends.numba_cuda.recording import (Branch, Guard, Launch, Rebind, Upload,
                                                      held_arrays)


def merge(items: list, outside: Sequence[Any] = (), allocated: Sequence[Any] | None = None
          ) -> list:
    """``items`` (one graph's recorded work, in order) with their guards merged, a dtype at a
    time. ``outside`` are device arrays something other than ``items`` touches: the call's
    results, which the caller reads after a replay, and in a program the buffers of its other
    blocks' graphs (the call-wide error flag, uploaded in the first block, is read after every
    test). They are never merged.

    Without ``allocated`` only error flags merge (buffers uploaded before their read): a
    block of a program (``programs.py``) must keep its branch last. With ``allocated``, the
    call's allocations, guards on buffers a launch of the call writes merge too, branches
    included. Returns ``items`` itself when no dtype has two guards that qualify.

    >>> from stagecraft.backends.numba_cuda.kernels.gather import check_indices
    >>> from stagecraft.backends.numba_cuda.recording import recording
    >>> with recording() as rec:
    ...     for n in range(3):
    ...         check_indices(memory.to_device(np.array([0, 1], np.int64)), 5)
    >>> [type(i).__name__ for i in rec.items].count("Upload")
    6
    >>> [type(i).__name__ for i in merge(rec.items)]   # (the indices' uploads stay)
    ['Upload', 'Upload', 'Launch', 'Upload', 'Launch', 'Upload', 'Launch', 'Guard']
    >>> merge(rec.items)[0].host   # (every flag's first value: each index check's size)
    array([2, 2, 2])
    """
    found = _mergeable(items, outside, allocated)
    groups: dict[np.dtype, list] = {}
    for read in found.values():
        groups.setdefault(read.array.dtype, []).append(read)
    slots: dict[int, Any] = {}     # id(guarded array) -> its slot of the merged buffer
    opening: list[Upload] = []         # the merged uploads, before every other item
    closing: dict[int, Guard] = {}     # item index -> the merged guard that goes there
    for dtype, group in groups.items():
        if len(group) < 2:
            continue
        group.sort(key=lambda r: r.guard)
        buffer = memory.empty((len(group),), dtype)
        for k, r in enumerate(group):
            slots[id(r.array)] = buffer[k:k + 1]
        expected = np.concatenate([items[r.guard].value.reshape(-1) for r in group])
        closing[group[-1].guard] = Guard(buffer, expected.astype(dtype))
        if any(r.upload is not None for r in group):
            # (at the start, before any launch writes a slot; the slots of buffers a launch
            # writes need no first bytes)
            initial = np.zeros(len(group), dtype)
            for k, r in enumerate(group):
                if r.upload is not None:
                    initial[k] = items[r.upload].host.reshape(-1)[0]
            opening.append(Upload(initial, buffer))
    if not slots:
        return items
    rebind = _Slots(slots)
    out: list = list(opening)
    for k, item in enumerate(items):
        if isinstance(item, Launch):
            out.append(rebind.item(item))
        elif not (isinstance(item, (Upload, Guard)) and id(_buffer(item)) in slots):
            out.append(item)
        if k in closing:
            out.append(closing[k])
    return out


class _Read:
    """A guarded buffer: the index of its guard and of its upload (None: a launch writes it)."""
    __slots__ = ("array", "upload", "guard")

    def __init__(self, array: Any, upload: int | None, guard: int):
        self.array, self.upload, self.guard = array, upload, guard


class _Slots(Rebind):
    def __init__(self, slots: dict):
        self.slots = slots

    def array(self, a: Any) -> Any:
        return self.slots.get(id(a), a)


def _buffer(item: Any) -> Any:
    return item.device if isinstance(item, Upload) else item.array


def _mergeable(items: list, outside: Sequence[Any], allocated: Sequence[Any] | None
               ) -> dict[int, _Read]:
    """The guarded buffers of ``items`` that may become slots (see :func:`merge`), by id."""
    uploaded = {id(i.device): k for k, i in enumerate(items) if isinstance(i, Upload)}
    made = {id(a) for a in allocated} if allocated is not None else set()
    reads: dict[int, _Read] = {}
    spoiled: set[int] = set()
    for k, item in enumerate(items):
        if not isinstance(item, Guard) or isinstance(item, Branch) and allocated is None:
            continue
        key = id(item.array)
        u = uploaded.get(key)
        if key in reads:              # (read twice)
            spoiled.add(key)
        elif item.array.size != 1 or item.value.size != 1:
            continue
        elif u is not None and u < k and \
                (items[u].host.tobytes() == item.value.tobytes() or allocated is not None):
            reads[key] = _Read(item.array, u, k)
        elif u is None and key in made:
            reads[key] = _Read(item.array, None, k)
    if not reads:
        return reads
    spans = sorted((address(r.array), r.array.nbytes, key) for key, r in reads.items())
    starts = [s[0] for s in spans]

    def touched(a: Any) -> list[int]:
        """The guarded buffers whose bytes ``a`` overlaps."""
        if not a.size:
            return []
        lo, hi = address(a), address(a) + a.nbytes
        j = max(bisect.bisect_right(starts, lo) - 1, 0)
        found = []
        while j < len(spans) and spans[j][0] < hi:
            start, nbytes, key = spans[j]
            if start + nbytes > lo:
                found.append(key)
            j += 1
        return found

    launched: set[int] = set()   # (a buffer no upload sets must be a launch's to write)
    for k, item in enumerate(items):
        for a in held_arrays(item):
            for key in touched(a):
                r = reads[key]
                first = -1 if r.upload is None else r.upload
                if a is r.array and isinstance(item, Launch) and first < k < r.guard:
                    launched.add(key)
                elif not (a is r.array and k in (r.upload, r.guard)):
                    spoiled.add(key)
    for a in outside:
        if memory.is_device_array(a):
            spoiled.update(touched(a))
    return {key: r for key, r in reads.items()
            if key not in spoiled and (r.upload is not None or key in launched)}
