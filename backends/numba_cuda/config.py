"""Launch parameters of the CUDA kernels: module-level so tests can shrink them for the simulator.

Kernels that bake a parameter into their code (shared-memory sizes) are cached per value, so
changing a parameter between calls is safe.

>>> from stagecraft.backends.numba_cuda import config
>>> config.THREADS_PER_BLOCK, config.TILE
(256, 16)
"""
from __future__ import annotations

# Threads per block of the 1-D kernels (elementwise, copies, reductions' block size).
# Reductions need a power of two (their tree halves the block).
THREADS_PER_BLOCK: int = 256
# Upper bound on blocks per launch; grid-stride loops cover whatever is left, so this only
# trades parallelism for fewer, longer-lived threads (the simulator runs blocks one by one).
MAX_BLOCKS: int = 1024
# Side of the square shared-memory tiles of matmul (TILE x TILE threads per block).
TILE: int = 16
