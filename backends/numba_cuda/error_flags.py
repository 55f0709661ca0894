"""Error flags in replayed CUDA graphs, merged: one upload sets them all, one read checks them
all.

A checked op's flag is a one-element buffer that the host code uploads, that kernels write
on a bad value (a gather index out of range, an integer division by zero), and that the host
reads back at once. Recorded in a staged call, each flag is an upload and a guard, and a
replayed graph copies twice per flag. Loops pay this on every pass: an Elman RNN's
gradient fills 3 stacks and reads 4 indices per step, so 7 flags per step and 1,400 copies
for 100 steps, against about 1,500 launches.

:func:`merge` rewrites one graph's recorded items so that its flags of each dtype become the
slots of one buffer. One upload sets them all, where the first of them was uploaded, and
one guard reads them all, where the last was read. A replay is valid exactly when it was
before. The launches between a flag's upload and its read are the only items that touch it,
and nothing does after the read, so reading it later reads the same bytes. Any other use of
a buffer (a copy, a library call, a second read, a result of the call) leaves it out.
"""
from __future__ import annotations

import bisect
from typing import Any, Sequence

import numpy as np

from stagecraft.backends.numba_cuda import memory
from stagecraft.backends.numba_cuda.memory import address
from stagecraft.backends.numba_cuda.recording import Guard, Launch, Rebind, Upload, held_arrays


def merge(items: list, results: Sequence[Any] = ()) -> list:
    """``items`` (one graph's recorded work, in order) with their error flags merged, a
    dtype at a time; ``results`` (device arrays the caller reads after a replay) are never
    merged. Returns ``items`` itself when fewer than two flags of a dtype qualify.

    >>> from stagecraft.backends.numba_cuda.kernels.gather import check_indices
    >>> from stagecraft.backends.numba_cuda.recording import recording
    >>> with recording() as rec:
    ...     for n in range(3):
    ...         check_indices(memory.to_device(np.array([0, 1], np.int64)), 5)
    >>> [type(i).__name__ for i in rec.items].count("Upload")
    6
    >>> [type(i).__name__ for i in merge(rec.items)]   # (the indices' uploads stay)
    ['Upload', 'Upload', 'Launch', 'Upload', 'Launch', 'Upload', 'Launch', 'Guard']
    """
    flags = _flags(items, results)
    groups: dict[np.dtype, list] = {}
    for flag in flags.values():
        groups.setdefault(flag.array.dtype, []).append(flag)
    slots: dict[int, Any] = {}     # id(flag array) -> its slot of the merged buffer
    opening: dict[int, Upload] = {}    # item index -> the merged upload that goes there
    closing: dict[int, Guard] = {}     # item index -> the merged guard that goes there
    for dtype, group in groups.items():
        if len(group) < 2:
            continue
        group.sort(key=lambda f: f.upload)
        buffer = memory.empty((len(group),), dtype)
        initial = np.concatenate([items[f.upload].host.reshape(-1) for f in group]).astype(dtype)
        for k, f in enumerate(group):
            slots[id(f.array)] = buffer[k:k + 1]
        opening[group[0].upload] = Upload(initial, buffer)
        closing[max(f.guard for f in group)] = Guard(buffer, initial.copy())
    if not slots:
        return items
    rebind = _Slots(slots)
    out = []
    for k, item in enumerate(items):
        if k in opening:
            out.append(opening[k])
        if isinstance(item, Launch):
            out.append(rebind.item(item))
        elif not (isinstance(item, (Upload, Guard)) and id(_buffer(item)) in slots):
            out.append(item)
        if k in closing:
            out.append(closing[k])
    return out


class _Flag:
    __slots__ = ("array", "upload", "guard")

    def __init__(self, array: Any, upload: int, guard: int):
        self.array, self.upload, self.guard = array, upload, guard


class _Slots(Rebind):
    def __init__(self, slots: dict):
        self.slots = slots

    def array(self, a: Any) -> Any:
        return self.slots.get(id(a), a)


def _buffer(item: Any) -> Any:
    return item.device if isinstance(item, Upload) else item.array


def _flags(items: list, results: Sequence[Any]) -> dict[int, _Flag]:
    """The flags among ``items``, by id of their array: a one-element buffer uploaded, then
    passed to launches, then read once by a guard (not a branch) that expects the uploaded
    bytes, and held by nothing else."""
    uploaded = {id(i.device): k for k, i in enumerate(items) if isinstance(i, Upload)}
    flags: dict[int, _Flag] = {}
    spoiled: set[int] = set()
    for k, item in enumerate(items):
        if type(item) is not Guard:   # (a Branch's value is a predicate, not a flag)
            continue
        key = id(item.array)
        u = uploaded.get(key)
        if key in flags:              # (read twice)
            spoiled.add(key)
        elif u is not None and item.array.size == 1 and \
                items[u].host.tobytes() == item.value.tobytes():
            flags[key] = _Flag(item.array, u, k)
    if not flags:
        return flags
    spans = sorted((address(f.array), f.array.nbytes, key) for key, f in flags.items())
    starts = [s[0] for s in spans]

    def touched(a: Any) -> list[int]:
        """The flags whose bytes ``a`` overlaps."""
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

    for k, item in enumerate(items):
        for a in held_arrays(item):
            for key in touched(a):
                f = flags[key]
                expected = a is f.array and (
                    k in (f.upload, f.guard)
                    or isinstance(item, Launch) and f.upload < k < f.guard)
                if not expected:
                    spoiled.add(key)
    for r in results:
        if memory.is_device_array(r):
            spoiled.update(touched(r))
    return {key: f for key, f in flags.items() if key not in spoiled}

