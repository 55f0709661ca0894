"""Eager ops replayed from a recording of their own device work: once an op's plan has run for
one input signature, later calls issue the same launches on new buffers without running the
op's Python code again (its layout planning, launch typing and argument packing), which is most
of the host cost of an eager GPU op that is not elementwise.

An op's second and third calls with one signature are recorded (``recording.py``) and each
becomes a :class:`Template`: its launches (kernel, grid, arguments) and device copies in order,
every device array among their arguments and the op's results being one of the call's inputs,
one of the buffers the call made (uploads keep their bytes), a whole-buffer reshape of either,
or a fixed array the op library keeps (a constant, the shared error flag). The op is replayed
only when the two templates are equal, which shows that its work depends on the signature and
nothing else (a seed, a size or any scalar computed from anything else would differ; arrays
compare by identity wherever they sit, in lists and closures too). A value the host code read
(a guard: an error flag, a size) is read again at the same point of a replay, which goes on
only if it is the recorded one: otherwise the op's code runs, raising its error or taking
its other path (the work replayed so far wrote only buffers made for it: this backend's ops
never write their inputs), and two such misses in a row end replaying. An op whose only work
is a library call (a matmul: its cuBLAS wrapper is the lean path already) runs its code on
every call, as does one that runs host work. A library call is a closure over its arrays (``cublas.py``): a
replay calls the same code over the new call's arrays. Templates are kept per signature by the
eager plans (``eager.py``), for the backend settings they were made under.

>>> import numpy as np
>>> from stagecraft.backends.numba_cuda import memory
>>> from stagecraft.backends.numba_cuda.kernels.shape import copy_view
>>> op = Replayed(lambda xs: copy_view(xs[0], lambda a: a.T))
>>> outs = [memory.to_host(op([memory.to_device(np.arange(6.0).reshape(2, 3) + i)]))
...         for i in range(4)]
>>> op.replaying, outs[3]
(True, array([[3., 6.],
       [4., 7.],
       [5., 8.]]))
"""
from __future__ import annotations

from types import CellType, FunctionType
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.numba_cuda import config, memory
from stagecraft.backends.numba_cuda.launch import RECORDING
from stagecraft.backends.numba_cuda.launcher import Bound, library_call
from stagecraft.backends.numba_cuda.recording import (Allocations, Copy, Guard, Launch,
                                                      LibraryCall, Recording, Upload, recording,
                                                      same)

class _Identity(Allocations):
    """Locates every device array at itself: ``recording.same`` then compares arrays by
    identity wherever they sit (lists, closures), so two recordings whose work involved
    different arrays in any place a slot does not name never agree."""

    def __init__(self) -> None:
        super().__init__([])

    def locate(self, array: Any) -> Any:
        return id(array)


_IDENTITY = _Identity()


class Replayed:
    """``run(inputs) -> result`` (an op's plan: device arrays in, a device array or a tuple of
    them out) replayed from its recordings as described above; ``replaying`` says whether
    calls replay now."""

    __slots__ = ("_run", "_calls", "_first", "_template", "_off", "_misses")

    def __init__(self, run: Callable[[Sequence[Any]], Any]):
        self._run = run
        self._calls = 0
        self._first: Template | None = None
        self._template: Template | None = None
        self._off = False
        self._misses = 0   # consecutive replays stopped by a guard

    @property
    def replaying(self) -> bool:
        return self._template is not None

    def __call__(self, inputs: Sequence[Any]) -> Any:
        template = self._template
        if template is not None and RECORDING[0] is None:
            if template.settings == _settings():
                result = template.replay(inputs)
                if result is None:   # (inputs that share buffers otherwise)
                    return self._run(inputs)
                if result is not _MISSED:
                    self._misses = 0
                    return result
                self._misses += 1   # (a guard read another value: the op's code decides)
                if self._misses >= 2:   # (data-dependent work, not a rare error: stop)
                    self._template, self._off = None, True
                return self._run(inputs)
            self._template = self._first = None   # (made under other settings: record again)
            self._calls = 1
        if self._off or RECORDING[0] is not None:
            return self._run(inputs)
        self._calls += 1
        if self._calls == 1:   # (the first call compiles kernels and fills caches)
            return self._run(inputs)
        with recording() as rec:
            result = self._run(inputs)
        made = Template.of(rec, inputs, result)
        if made is None or self._first is not None and not made.equals(self._first):
            self._off = True
        elif self._first is None:
            self._first = made
        else:
            self._template, self._first = made, None
        return result


class Template:
    """One recorded call of an op, with its arrays as slots: ``("in", i, shape)`` an input,
    ``("new", k, shape)`` the k-th buffer the call made (``shape``: a whole-buffer reshape, or
    None for the array itself), ``("fixed", array)`` an array kept by the op library, or
    ``("value", v)`` any other argument."""

    def __init__(self, buffers: list, steps: list, result: Any, several: bool,
                 sharing: tuple | None):
        self.buffers = buffers   # (shape, dtype, host bytes of an upload or None) per buffer
        # ("launch", kernel, dims, slots, Bound, constants, substitutions) (``_split``),
        # ("library", code, slots of its closure's cells, function), ("guard", slot, value)
        # or ("copy", dst, src)
        self.steps = steps
        self.result = result     # a slot, or a tuple of slots (several)
        self.several = several
        # Which inputs shared a buffer (``_sharing``), None if none did: a slot then names the
        # first of them, so the template holds only for calls whose inputs share the same way.
        self.sharing = sharing
        self.settings = _settings()

    @staticmethod
    def of(rec: Recording, inputs: Sequence[Any], result: Any) -> "Template | None":
        """The template of recording ``rec`` of a call on ``inputs`` that gave ``result``;
        None when the call cannot be replayed."""
        if rec.spoiled is not None:
            return None
        places = [memory.address(x) if memory.is_device_array(x) else 0 for x in inputs]
        uploads = {id(i.device): i.host for i in rec.items if isinstance(i, Upload)}
        buffers = [(tuple(a.shape), np.dtype(a.dtype), uploads.get(id(a)))
                   for a in rec.allocations]
        finder = _Finder(inputs, rec.allocations)
        steps: list = []
        for item in rec.items:
            if isinstance(item, Launch):
                slots = tuple(finder.slot(a) for a in item.args)
                steps.append(("launch", item.kernel, item.dims, slots,
                              Bound(item.kernel, item.dims)) + _split(slots))
            elif isinstance(item, Copy):
                steps.append(("copy", finder.slot(item.dst), finder.slot(item.src)))
            elif isinstance(item, LibraryCall):   # (its closure's arrays become slots)
                call = item.call
                cells = tuple(finder.slot(c.cell_contents) for c in call.__closure__ or ())
                steps.append(("library", call.__code__, cells, call))
            elif type(item) is Guard:   # (a value the host code read, then acted on)
                steps.append(("guard", finder.slot(item.array), item.value))
            elif not isinstance(item, Upload):   # (a staged call's branch, a host step)
                return None
        if not any(step[0] == "launch" for step in steps):
            return None   # (a library call alone, a matmul's, is lean already: cublas.py)
        several = isinstance(result, tuple)
        slots = tuple(finder.slot(r) for r in result) if several else finder.slot(result)
        if finder.unplaced:
            return None
        return Template(buffers, steps, slots, several, _sharing(places))

    def equals(self, other: "Template") -> bool:
        """Whether two recorded calls issued the same work (kernels, grids, slots, scalars,
        buffers and uploaded bytes)."""
        if len(self.steps) != len(other.steps) or len(self.buffers) != len(other.buffers):
            return False
        for (shape, dtype, host), (shape2, dtype2, host2) in zip(self.buffers, other.buffers):
            if shape != shape2 or dtype != dtype2 or (host is None) != (host2 is None) or \
                    host is not None and not _same(host, host2):
                return False
        for a, b in zip(self.steps, other.steps):
            if a[0] != b[0] or not _same(a[1:_COMPARED.get(a[0], 4)],
                                         b[1:_COMPARED.get(b[0], 4)]):
                return False
        return (self.several == other.several and self.sharing == other.sharing
                and _same(self.result, other.result))

    def replay(self, inputs: Sequence[Any]) -> Any:
        """The recorded work on ``inputs``: new buffers, the launches and copies, the
        results; None when ``inputs`` share buffers otherwise than the recorded call's,
        ``_MISSED`` when a guard reads another value than the recorded one."""
        if self.sharing is not None and _sharing(
                [memory.address(x) if memory.is_device_array(x) else 0 for x in inputs]) \
                != self.sharing:
            return None
        made = [memory.empty(shape, dtype) if host is None else memory.to_device(host)
                for shape, dtype, host in self.buffers]
        for step in self.steps:
            if step[0] == "launch":
                args = list(step[5])
                for position, slot in step[6]:   # (_array inlined for the common slots)
                    kind = slot[0]
                    if kind == "tuple":
                        args[position] = _array(slot, inputs, made)
                        continue
                    array = inputs[slot[1]] if kind == "in" else made[slot[1]]
                    args[position] = array if slot[2] is None else memory.reshape(array, slot[2])
                step[4](*args)
            elif step[0] == "library":   # (the recorded function over this call's arrays)
                call = step[3]
                cells = tuple(CellType(_array(s, inputs, made)) for s in step[2])
                library_call(FunctionType(call.__code__, call.__globals__, call.__name__,
                                          call.__defaults__, cells))
            elif step[0] == "guard":
                # The host code read this value here and issued the rest because of it: go on
                # only if it reads the same (else the caller runs the op's code, which also
                # raises its error; the work so far only wrote buffers made here).
                value = np.asarray(memory.scalar(_array(step[1], inputs, made)))
                if value.dtype != step[2].dtype or value.tobytes() != step[2].tobytes():
                    return _MISSED
            else:
                memory.copy_into(_array(step[1], inputs, made), _array(step[2], inputs, made))
        if self.several:
            return tuple(_array(s, inputs, made) for s in self.result)
        return _array(self.result, inputs, made)


# How much of each kind of step two recordings must agree on (``Template.equals``): a launch's
# kernel, grid and slots; a library call's code and slots; a guard's slot and value read.
_COMPARED = {"launch": 4, "library": 3, "guard": 3, "copy": 3}
# What Template.replay gives when a guard read another value than the recorded one.
_MISSED = object()


def _sharing(places: list) -> tuple | None:
    """For each input, the first input at the same address (``places``; 0: no buffer), or
    None when no two inputs share a buffer.

    >>> _sharing([16, 32, 0, 0]), _sharing([16, 32, 16])
    (None, (0, 1, 0))
    """
    first: dict = {}
    pattern = tuple(first.setdefault(p, i) if p else i for i, p in enumerate(places))
    return None if pattern == tuple(range(len(places))) else pattern


class _Finder:
    """The slot of each array of one recorded call (see :class:`Template`); ``unplaced`` is
    set when an array is a part of a buffer (a slice) or empty, which a slot cannot name."""

    def __init__(self, inputs: Sequence[Any], made: list):
        owners = [("in", i, x) for i, x in enumerate(inputs) if memory.is_device_array(x)]
        self.owners = owners + [("new", k, a) for k, a in enumerate(made)]
        self.where = Allocations([array for _, _, array in self.owners])
        self.unplaced = False

    def slot(self, value: Any) -> tuple:
        if isinstance(value, tuple):
            return ("tuple", tuple(self.slot(v) for v in value))
        if not memory.is_device_array(value):
            return ("value", value)
        for kind, index, array in self.owners:
            if value is array:
                return (kind, index, None)
        found = self.where.locate(value)
        if found[0] == "alloc":   # (in a buffer: the whole of it, reshaped, has a slot)
            kind, index, array = self.owners[found[1]]
            if found[2] == 0 and value.nbytes == array.nbytes and memory.contiguous(value) \
                    and np.dtype(value.dtype) == np.dtype(array.dtype):
                return (kind, index, tuple(value.shape))
            self.unplaced = True
        elif value.size == 0:
            self.unplaced = True
        return ("fixed", value)


def _split(slots: tuple) -> tuple[tuple, tuple]:
    """A launch's arguments as ``(constants, substitutions)``: every argument that names no
    input or made buffer (a value, a fixed array, a tuple of them) resolved once, and
    ``(position, slot)`` for the others, resolved per call."""
    constants: list = []
    subs: list = []
    for position, slot in enumerate(slots):
        if _constant(slot):
            constants.append(_array(slot, (), []))
        else:
            constants.append(None)
            subs.append((position, slot))
    return tuple(constants), tuple(subs)


def _constant(slot: tuple) -> bool:
    if slot[0] == "tuple":
        return all(_constant(s) for s in slot[1])
    return slot[0] in ("value", "fixed")


def _array(slot: tuple, inputs: Sequence[Any], made: list) -> Any:
    kind = slot[0]
    if kind == "value" or kind == "fixed":
        return slot[1]
    if kind == "tuple":
        return tuple(_array(s, inputs, made) for s in slot[1])
    array = inputs[slot[1]] if kind == "in" else made[slot[1]]
    return array if slot[2] is None else memory.reshape(array, slot[2])


def _same(x: Any, y: Any) -> bool:
    """Equal values (``recording.same``), device arrays only when they are the same array."""
    return same(x, y, _IDENTITY, _IDENTITY)


def _settings() -> tuple:
    """The backend settings that select kernels and grids: a template made under others is
    made again."""
    elementwise = _ELEMENTWISE[0]
    if elementwise is None:   # (imported here: the kernel modules import this one's users)
        from stagecraft.backends.numba_cuda.kernels import elementwise
        _ELEMENTWISE[0] = elementwise
    return (config.THREADS_PER_BLOCK, config.MAX_BLOCKS, tuple(config.MATMUL_TILE),
            tuple(config.MATMUL_WORK), config.TENSOR_FLOAT_32, config.USE_CUBLAS,
            elementwise.FORCE_DEVICE_NUMPY)


_ELEMENTWISE: list = [None]
