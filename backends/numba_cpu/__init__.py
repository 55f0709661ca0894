"""The Numba CPU backend: a graph function becomes one ``numba.njit`` function (a large one a
plan of small ones, :mod:`.hybrid`).

``compile(graph)`` generates the source (:mod:`.codegen`: fused elementwise loops, kernel calls,
``cond``/``while``/``call`` inlined as native control flow), loads it through the disk cache
(:mod:`stagecraft.backends.numba_cache`, so a new process reuses the machine code) and wraps it
in an :class:`~.executable.Executable` that unboxes arguments, writes variables back and boxes
results with their exact dtypes.

>>> import numpy as np
>>> from stagecraft.ir import dtypes
>>> from stagecraft.ir.graph import GraphBuilder
>>> from stagecraft.ir.types import TensorType
>>> b = GraphBuilder("cube")
>>> x = b.param(TensorType(dtypes.float32, (3,)), "x")
>>> (y,) = b.add("multiply", [x, x], [x.type])
>>> (z,) = b.add("multiply", [y, x], [x.type])
>>> exe = compile(b.build([z]))
>>> exe([np.array([1, 2, 3], np.float32)])
[array([ 1.,  8., 27.], dtype=float32)]
>>> print(exe.source.split("def ")[1].splitlines()[0])
graph_fn(x):
"""
from __future__ import annotations

import logging
from typing import Any

from stagecraft.backends.numba_cpu.codegen import LoweringError, unknown_rank  # noqa: F401
from stagecraft.backends import compile_mode, hybrid_threshold, reference
from stagecraft.backends.numba_cpu.executable import Executable  # noqa: F401
from stagecraft.backends.numba_cpu.hybrid import HybridExecutable, equation_count
from stagecraft.backends.numba_cpu.tiered import SyncExecutable, TieredExecutable
from stagecraft.ir.graph import Graph

_log = logging.getLogger("stagecraft")


def compile(graph: Graph) -> Any:  # noqa: A001 (the backend protocol's name)
    """The compiled executable for ``graph``.

    How it compiles follows ``stagecraft.backends.compile_mode()`` (``stagecraft.config.
    set_compile_mode``): ``"background"`` gives a ``TieredExecutable`` (the reference
    interpreter until the compile worker is done), ``"sync"`` compiles at the first call,
    ``"eager"`` only interprets. A graph with more equations than
    ``stagecraft.config.get_hybrid_threshold()`` becomes a ``HybridExecutable`` instead (a
    Python driver calling small compiled kernels shared by identical steps, see
    :mod:`.hybrid`): one compiled function of thousands of equations takes minutes to compile.

    Raises LoweringError for an op it cannot compile, naming the op and the
    ``backend="reference"`` alternative. Native code needs the rank of every tensor: a graph
    with a tensor of unknown rank (a ``TensorSpec(None)`` input, a trace relaxed across ranks,
    a ``py_function`` result) runs on the reference interpreter instead, which computes the
    same values; a warning on the ``"stagecraft"`` logger says which tensor, and the
    executable's ``fallback_reason`` keeps it (``show_compiled`` prints it).
    """
    reason = unknown_rank(graph)
    if reason is None:
        mode = compile_mode()
        if mode == "eager":
            return reference.compile(graph)
        if equation_count(graph) > hybrid_threshold():
            return HybridExecutable(graph, mode)
        return SyncExecutable(graph) if mode == "sync" else TieredExecutable(graph)
    exe = reference.compile(graph)
    exe.fallback_reason = (f"{reason} has an unknown rank, so '{graph.name}' runs on the "
                           f"reference interpreter (same results, Python speed); give it a "
                           f"rank (dims may be None) to compile it with Numba.")
    _log.warning("%s", exe.fallback_reason)
    return exe

