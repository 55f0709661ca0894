"""The callable around a staged GPU graph function: uploads its constants once, moves host
arguments to the device, reads variables' buffers, writes assigned variables back and returns
device arrays."""
from __future__ import annotations

import pathlib
from typing import Any, Sequence

from stagecraft.backends.numba_cuda import kernel_module, memory
from stagecraft.backends.numba_cuda.kernels import half
from stagecraft.backends.numba_cuda.staged import runtime
from stagecraft.backends.numba_cuda.staged.codegen import ENTRY, generate
from stagecraft.backends.numba_cuda.staged.replay import Replayer
from stagecraft.ir import dtypes as dt
from stagecraft.ir.graph import Graph


class Executable:
    """``exe(args) -> list of device arrays`` for a graph: tensor parameters take device
    arrays (host arrays are copied up), reference parameters take variable objects (their
    buffer in ``_value``; assigned ones get the new buffer after the call, see
    ``runtime.write_back``). ``source`` is the generated module (kernels and host function),
    ``path`` its cached file; ``replayer.status`` says whether calls replay a CUDA graph."""

    def __init__(self, graph: Graph):
        self.graph = graph
        gen = generate(graph)
        self.source = gen.source
        self.fallback_reason = None
        self.num_kernels = gen.num_kernels
        module = kernel_module.load(gen.source, "staged")
        self.path = pathlib.Path(module.__file__)
        consts = [memory.to_device(c) for c in gen.consts]
        self.replayer = Replayer(getattr(module, ENTRY)(consts, gen.sites),
                                 f"@{graph.name}" if getattr(graph, "name", None) else "staged call")
        self._params = [(i, graph.params[i].ref) for i in gen.param_indices]
        self._assigned = gen.assigned
        self._n = gen.num_results
        # float16/bfloat16 tensors are float32 buffers inside (codegen/half.py): the dtypes
        # of the parameters, results and assigned variables to convert at the boundary
        halves = [p.type.dtype if p.type.dtype in dt.HALF else None for p in graph.params]
        self._half_in = [halves[i] for i in gen.param_indices]
        self._half_out = [r.type.dtype if r.type.dtype in dt.HALF else None
                          for r in graph.results] + [halves[i] for i in gen.assigned]

    def __call__(self, args: Sequence[Any]) -> list:
        values = [runtime.read(args[i]) if ref else memory.to_device(args[i])
                  for i, ref in self._params]
        if any(self._half_in):
            values = [v if d is None else half.widen(v) for v, d in zip(values, self._half_in)]
        with runtime.calling(args):
            out = self.replayer(values)
        if any(self._half_out):   # (rounded already: narrowing is exact)
            out = [v if d is None else half.narrow(v, d) for v, d in zip(out, self._half_out)]
        for j, i in enumerate(self._assigned):
            runtime.write_back(args[i], out[self._n + j])
        return list(out[:self._n])
