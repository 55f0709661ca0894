"""Which calls of a generated module go through published symbols (``numba_links``).

Every outlined function of the module (``_fused_*``, ``_repeated_*``) and the kernels of the
library that run loop nests are called through symbols, so each is compiled once per process
instead of once more inside every caller. The small scalar helpers below stay ordinary calls:
they compile in milliseconds and LLVM inlines them into the loops that call them.
"""
from __future__ import annotations

import types

INLINED = frozenset(("take1", "range_len", "broadcast_dim", "batch_index", "slice_bounds",
                     "row_update1"))


def link(module: types.ModuleType, links) -> None:
    """Wraps the njit functions of the generated ``module`` and its kernel library ``K`` in
    ``links`` (a :class:`stagecraft.backends.numba_links.Links`)."""
    from numba.core.dispatcher import Dispatcher
    own = [name for name, v in vars(module).items()
           if isinstance(v, Dispatcher) and v.py_func.__module__ == module.__name__]
    links.wrap(vars(module), own)
    kernels = module.K
    linked = [name for name, v in vars(kernels).items()
              if isinstance(v, Dispatcher) and name not in INLINED]
    module.K = links.kernels(kernels, linked, "K.")
