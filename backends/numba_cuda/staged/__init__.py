"""Staged GPU graph functions (the ``"cuda"`` backend): ``compile(graph) -> executable``.

A graph becomes one generated module (:mod:`.codegen`): a ``cuda.jit`` kernel per fusion
group (a grid-stride loop over the flat index with broadcasting index math, the CPU backend's
scalar expressions and dtypes) and a plain-Python host function that allocates device arrays,
launches those kernels, runs every other op with the eager CUDA library and drives
``cond``/``while`` from the host, copying one element (the predicate) per test. The module is
published in the disk cache (``numba_cache.load_module``); on a GPU its kernels are
``cuda.jit(cache=True)``, so a new process loads their machine code from disk.

>>> import numpy as np
>>> from stagecraft.backends.numba_cuda import memory
>>> from stagecraft.ir import dtypes
>>> from stagecraft.ir.graph import GraphBuilder
>>> from stagecraft.ir.types import TensorType
>>> b = GraphBuilder("cube")
>>> x = b.param(TensorType(dtypes.float32, (3,)), "x")
>>> (y,) = b.add("multiply", [x, x], [x.type])
>>> (z,) = b.add("multiply", [y, x], [x.type])
>>> exe = compile(b.build([z]))
>>> (out,) = exe([memory.to_device(np.array([1, 2, 3], np.float32))])
>>> memory.is_device_array(out), memory.to_host(out)
(True, array([ 1.,  8., 27.], dtype=float32))
>>> exe.num_kernels
1
"""
from __future__ import annotations

from typing import Any

from stagecraft.ir.graph import Graph


def compile(graph: Graph) -> Any:  # noqa: A001 (the backend protocol's name)
    """The staged GPU executable for ``graph`` (see the package docstring). Raises
    ``LoweringError`` at compile time for a graph it cannot stage (it names the op and the
    CPU alternative); there is no silent fallback."""
    from stagecraft.backends.numba_cuda.staged.executable import Executable
    return Executable(graph)
