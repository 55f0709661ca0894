"""What generated host orchestration functions call: eager ops with located errors, output
allocation and launch shapes, broadcast index plans, the predicate read of ``cond``/``while``,
the deferred integer-check flag, and the explicit host round trips (print, assert,
py_function).

Every device-to-host copy of a staged GPU function goes through :func:`predicate`,
:func:`raise_if_error` or the host round trips below (and the eager ops that document theirs,
see ``numba_cuda.eager``); everything else only reads array metadata (shapes) on the host.
"""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Any, Iterator, Sequence

import numpy as np

from stagecraft.backends.numba_cuda import config, layout, memory
from stagecraft.backends.numba_cuda.launch import RECORDING
from stagecraft.backends.numba_cuda.launcher import launch  # noqa: F401 (generated code's)
from stagecraft.backends.numba_cuda.memory import address
from stagecraft.backends.numba_cuda.recording import host_step
from stagecraft.backends.runtime import format_print, write
from stagecraft.ir.errors import InvalidArgumentError, kernel_failed
from stagecraft.ir.dtypes import as_dtype

_eager: Any = None


def _eager_module() -> Any:
    global _eager
    if _eager is None:
        from stagecraft.backends.numba_cuda import eager
        _eager = eager
    return _eager


def run(name: str, inputs: list, site: tuple) -> Any:
    """Op ``name`` of the op table on device arrays (``numba_cuda.eager.run``); ``site`` is
    ``(attrs, loc)``. Errors read like the reference backend's: ``op: message`` plus the
    location, as an InvalidArgumentError.

    >>> x = memory.to_device(np.array([1.0, 2.0]))
    >>> memory.to_host(run("reduce_sum", [x], ({"axes": None, "keepdims": False}, "f.py:1")))
    array(3.)
    """
    with _located(name, site[1]):
        return _eager_module().run(name, inputs, site[0])


@contextlib.contextmanager
def _located(name: str, loc: str) -> Iterator[None]:
    try:
        yield
    except (ValueError, IndexError, TypeError, ZeroDivisionError) as e:
        raise kernel_failed(name, e, loc) from None


def row_update_in_place(inputs: list, site: tuple) -> Any:
    """``run("row_update", inputs, site)`` writing the row into the buffer ``inputs[0]``
    itself: one scatter launch, no copy. Generated code calls it for a buffer that its while
    loop copied on entry and that nothing else reads (``backends.codegen.inplace_rows``). Same
    errors as ``run``.

    >>> b, i, v = (memory.to_device(a) for a in (np.zeros(3), np.int32(2), np.float64(5)))
    >>> out = row_update_in_place([b, i, v], ({}, "f.py:1"))
    >>> out is b, memory.to_host(b)
    (True, array([0., 0., 5.]))
    """
    buffer, index, value = inputs
    if tuple(value.shape) != tuple(buffer.shape)[1:]:
        return run("row_update", inputs, site)  # raises the op's own shape error
    with _located("row_update", site[1]):
        return _eager_module().row_update(buffer, index, value, copy=False)


def copy(x: Any) -> Any:
    """A new device array with the values of ``x`` (one copy launch)."""
    from stagecraft.backends.numba_cuda.kernels.shape import copy_view
    return copy_view(x, lambda v: v)


def empty(shape: tuple, dtype: str) -> Any:
    """An uninitialized device array (the output of a fused kernel)."""
    return memory.empty(shape, dtype)


def round_half(x: Any, dtype: str, uniform: bool) -> Any:
    """The float32 buffer ``x`` of a float16/bfloat16 tensor rounded to its format
    (``kernels.half.rounded``; ``uniform``: a uniform draw, rounded down)."""
    from stagecraft.backends.numba_cuda.kernels import half
    return half.rounded(x, as_dtype(dtype), uniform)


def grid(n: int) -> tuple[int, int]:
    """``(blocks, threads)`` of a grid-stride launch over ``n`` elements, from
    ``numba_cuda.config`` at call time (tests shrink it for the simulator).

    >>> blocks, threads = grid(10)
    >>> blocks * threads >= min(10, config.MAX_BLOCKS * config.THREADS_PER_BLOCK)
    True
    """
    threads = config.THREADS_PER_BLOCK
    return max(1, min(-(-n // threads), config.MAX_BLOCKS)), threads


def broadcast_shape(where: str, *shapes: tuple) -> tuple:
    """The NumPy broadcast of run-time ``shapes`` (host metadata, no copy); incompatible
    shapes raise InvalidArgumentError naming ``where`` (the op and its location).

    >>> broadcast_shape("add at f.py:1", (2, 1), (3,))
    (2, 3)
    """
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError as e:
        raise InvalidArgumentError(f"{where}: {e}") from None


def size(shape: tuple) -> int:
    return math.prod(shape)


def strides(shape: tuple, out: tuple) -> tuple:
    """Element strides reading a C-contiguous array of ``shape`` broadcast to ``out``; a
    rank-0 ``out`` is treated as ``(1,)`` (kernels need a non-empty tuple). A shape that does
    not broadcast to ``out`` raises InvalidArgumentError.

    >>> strides((3, 1), (2, 3, 4)), strides((), ())
    ((0, 1, 0), (0,))
    """
    lead = len(out) - len(shape)
    if lead < 0 or any(d != 1 and d != o for d, o in zip(shape, out[lead:])):
        raise InvalidArgumentError(f"Incompatible shapes: {list(shape)} cannot be broadcast to "
                                   f"{list(out)}.")
    return layout.broadcast_strides(shape, out) if out else (0,)


def fail(message: str) -> None:
    """Raises InvalidArgumentError(message): a run-time check of generated code failed."""
    raise InvalidArgumentError(message)


def kernel_shape(out: tuple) -> tuple:
    """The shape a strided kernel unravels its flat index with (rank 0: ``(1,)``)."""
    return tuple(out) or (1,)


def predicate(x: Any, site: int = 0, loop: bool = False) -> bool:
    """The value of a one-element boolean device array on the host: the single copy a staged
    ``cond`` or ``while`` test makes (``site`` numbers the test in its function, ``loop``
    says it is a ``while`` loop's).

    >>> predicate(memory.to_device(np.bool_(True)), 1, loop=True)
    True
    """
    return bool(memory.scalar(x, site, loop))


def _stable_blocks() -> Any:
    """The recording in progress on this thread if it keeps loops' carried values in fixed
    buffers (``Recording.stable_blocks``), else None."""
    rec = RECORDING[0]
    return rec if rec is not None and rec.stable_blocks and rec.records_here() else None


def loop_entry(values: tuple) -> tuple:
    """The carried values of a ``while`` loop about to start: the values themselves, or, while
    a replay that keeps loops in fixed buffers is recorded, copies of them into buffers of the
    loop's own, which every iteration then rewrites (:func:`loop_next`). Each iteration then
    issues the same work on the same buffers, so one graph of it can run any number of times
    (``programs.py``).

    >>> x = memory.to_device(np.float32([1, 2]))
    >>> loop_entry((x,))[0] is x
    True
    """
    if _stable_blocks() is None:
        return values
    return tuple(copy(v) for v in values)


def cond_entry(specs: tuple, slots: tuple) -> tuple:
    """Before a ``cond``: while a replay that keeps control flow in fixed buffers is recorded
    (:func:`loop_entry`), new buffers for its results (``specs``: ``(shape, dtype)`` each) and
    for the variables its branches assign (``slots``: their current buffers), which
    :func:`branch_exit` fills; otherwise Nones. A result whose shape is known only at run time
    ends the recording's replay.

    >>> cond_entry((((2,), "float32"),), ())
    (None,)
    """
    rec = _stable_blocks()
    if rec is None:
        return (None,) * (len(specs) + len(slots))
    if any(shape is None or None in shape for shape, _ in specs):
        rec.spoil("a cond's result has a shape known only at run time")
        return (None,) * (len(specs) + len(slots))
    return (tuple(memory.empty(shape, dtype) for shape, dtype in specs)
            + tuple(memory.empty(s.shape, s.dtype) for s in slots))


def branch_exit(own: tuple, results: tuple) -> tuple:
    """The values a ``cond`` ends with: its branch's ``results``, or, while recording with
    the buffers of :func:`cond_entry` (``own``), those buffers filled with them.

    >>> x = memory.to_device(np.float32([1]))
    >>> branch_exit((None,), (x,))[0] is x
    True
    """
    rec = _stable_blocks()
    if rec is None or any(o is None for o in own):
        return results
    if any(tuple(o.shape) != tuple(r.shape) or o.dtype != r.dtype
           for o, r in zip(own, results)):
        rec.spoil("a cond's branches give values of different shapes")
        return results
    for o, r in zip(own, results):
        memory.copy_into(o, r if memory.contiguous(r) else copy(r))
    return own


def loop_head(site: int) -> None:
    """At the top of each pass of a ``while`` loop (before its test): while recording with
    fixed buffers, the end of the recorded block, so that the loop's cond region is one block
    whether it runs before the first pass or after another (``programs.py``).

    >>> loop_head(1)
    """
    rec = _stable_blocks()
    if rec is not None:
        rec.join(site, head=True)


def join(site: int) -> None:
    """After a ``cond``'s branches: while recording with fixed buffers, the end of the
    recorded block (the code after a ``cond`` is one block whichever branch ran).

    >>> join(3)
    """
    rec = _stable_blocks()
    if rec is not None:
        rec.join(site)


def loop_next(carry: tuple, results: tuple) -> tuple:
    """The carried values of a loop's next iteration: the body's ``results``, or, while a
    replay is recorded with fixed loop buffers (:func:`loop_entry`), the loop's buffers
    ``carry`` rewritten with them (a result that is itself one of the loop's buffers, as
    when a body swaps two values, is copied first).

    >>> x, y = memory.to_device(np.float32([1])), memory.to_device(np.float32([2]))
    >>> loop_next((x,), (y,))[0] is y
    True
    """
    rec = _stable_blocks()
    if rec is None:
        return results
    if any(tuple(c.shape) != tuple(r.shape) or c.dtype != r.dtype
           for c, r in zip(carry, results)):
        rec.spoil("a loop's carried value changes shape between iterations")
        return results
    spans = [(address(c), c.nbytes) for c in carry]
    todo = []
    for c, r in zip(carry, results):
        where = (address(r), r.nbytes)
        if where == (address(c), c.nbytes):
            continue   # (the loop's own buffer, written in place or passed through)
        overlaps = any(a < where[0] + where[1] and where[0] < a + n for a, n in spans)
        todo.append((c, copy(r) if overlaps or not memory.contiguous(r) else r))
    for c, r in todo:
        memory.copy_into(c, r)
    return carry


def error_flag() -> Any:
    """A fresh device flag the integer checks of fused kernels set (0: no error)."""
    return memory.to_device(np.zeros(1, np.int32))


def raise_if_error(err: Any, messages: Sequence[str]) -> None:
    """Reads the check flag (one element) and raises the message of the check that failed:
    code ``k`` means ``messages[k - 1]``. Generated code calls it before a predicate is
    read and at the end of the call, and only when the graph has integer checks."""
    code = int(memory.scalar(err))
    if code:
        raise InvalidArgumentError(messages[code - 1])


def write_back(variable: Any, value: Any) -> None:
    """Makes device array ``value`` the buffer of ``variable`` (a CPU variable gets a host
    copy: it stays on its device)."""
    store = getattr(variable, "_store", None)
    if store is not None:
        store(value)
    else:
        variable._value = value


_CALL = threading.local()  # the variables of the staged call running on this thread


@contextlib.contextmanager
def calling(variables: Sequence[Any]) -> Iterator[None]:
    """While a staged call runs: ``variables`` (its arguments by graph parameter index) are
    what ``sync_variables`` updates."""
    saved = getattr(_CALL, "variables", None)
    _CALL.variables = variables
    try:
        yield
    finally:
        _CALL.variables = saved


def sync_variables(pairs: tuple) -> None:
    """Before a ``py_function`` runs: each (parameter index, buffer) makes the buffer the
    variable's value, so Python code reading the variable sees the assignments made so far in
    the staged call (as it would eagerly)."""
    for i, buffer in pairs:
        variable = _CALL.variables[i]
        if variable._value is not buffer:
            write_back(variable, buffer)


def read(variable: Any) -> Any:
    """The device buffer of ``variable`` (a CPU variable's value is copied up)."""
    return memory.to_device(variable._value)


def host_print(site: tuple, values: tuple) -> None:
    """``tf.print`` in a staged GPU function (``site``: its attributes and location): the
    values are copied to the host and printed, an explicit host round trip."""
    def emit() -> None:
        a = site[0]
        host = [memory.to_host(v) for v in values]
        write(a["stream"], format_print(a["template"],
                                        [h[()] if h.ndim == 0 else h for h in host],
                                        a["sep"], a["summarize"]) + a["end"])
    host_step(emit)   # (a step of a CUDA-graph recording: replays print too)


def host_assert(condition: Any, site: tuple) -> None:
    """``tf.debugging.Assert``: the condition is copied to the host and checked."""
    def check() -> None:
        if not bool(np.all(memory.to_host(condition))):
            raise InvalidArgumentError(f"{site[0]['message']}\n  at {site[1]}")
    host_step(check)


def call_host(site: tuple, values: tuple) -> tuple:
    """``py_function`` (``site``: attributes, location, the (dtype, rank) of its results):
    the inputs are copied to the host, the function runs there, its results are checked
    against the staged types and copied to the device."""
    attrs, _, specs = site
    host = [memory.to_host(v) for v in values]
    results = attrs["fn"](*[h[()] if h.ndim == 0 else h for h in host])
    if not isinstance(results, (list, tuple)):
        results = (results,)
    out = []
    for r, (dtype, rank) in zip(results, specs):
        value = getattr(r, "_value", r)
        a = memory.to_host(value) if memory.is_device_array(value) else np.asarray(value)
        a = np.asarray(a, dtype=dtype)
        if rank is not None and a.ndim != rank:
            raise InvalidArgumentError(
                f"py_function: the function returned a value of rank {a.ndim} where the "
                f"staged code expects rank {rank}.")
        out.append(memory.to_device(a))
    return tuple(out)
