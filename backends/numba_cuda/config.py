"""Launch parameters of the CUDA kernels: module-level so tests can shrink them for the simulator.

Kernels that bake a parameter into their code (shared-memory sizes) are cached per value, so
changing a parameter between calls is safe.

>>> from stagecraft.backends.numba_cuda import config
>>> config.THREADS_PER_BLOCK, config.MATMUL_TILE, config.MATMUL_WORK
(256, (64, 64, 16), (4, 4))
"""
from __future__ import annotations

# Threads per block of the 1-D kernels (elementwise, copies, reductions' block size).
# Reductions need a power of two (their tree halves the block).
THREADS_PER_BLOCK: int = 256
# Upper bound on blocks per launch; grid-stride loops cover whatever is left, so this only
# trades parallelism for fewer, longer-lived threads (the simulator runs blocks one by one).
MAX_BLOCKS: int = 1024
# matmul: each block computes a (rows, columns) tile of the output, stepping (depth) along the
# shared dimension through shared memory; each thread accumulates (rows, columns) of it in
# registers, so a block has (64 / 4) x (64 / 4) = 256 threads. Measured on an H100 (4096^2
# float32): 14 TFLOP/s with these, 7.6 with 128 x 128 x 8 tiles of 8 x 8 per thread, 7.2 with
# the earlier one-output-per-thread 16 x 16 tiles.
MATMUL_TILE: tuple[int, int, int] = (64, 64, 16)
MATMUL_WORK: tuple[int, int] = (4, 4)
# float32/float64/complex matmuls (and convolutions' products) call cuBLAS on a real GPU when
# nvmath-python is installed (cublas.py); False runs the kernel above instead (to compare).
USE_CUBLAS: bool = True
# The device workspace each cuBLAS handle gets (32 MiB, cuBLAS's recommendation for Hopper);
# capturing cuBLAS calls into a CUDA graph needs a workspace set by the caller.
CUBLAS_WORKSPACE_BYTES: int = 32 << 20
# TensorFloat-32: float32 matmuls and convolutions on the GPU round their inputs to 10 mantissa
# bits on tensor cores (float32 accumulation), as TensorFlow does by default; False computes
# them in full float32. Set through tf.config.experimental.enable_tensor_float_32_execution.
TENSOR_FLOAT_32: bool = True
# Idle device memory the caching allocator (pool.py) keeps for reuse, in bytes; 0 turns the
# allocator off (every array then gets its own cuMemAlloc through Numba).
POOL_BYTES: int = 1 << 30
# Staged GPU functions replay their recorded device work as one CUDA graph from their fourth
# call on (staged/replay.py); False runs every call's host code.
CUDA_GRAPHS: bool = True
# A recording (staged/replay.py) that grows past these limits is given up: a long loop in a
# staged function would otherwise keep every iteration's buffers alive in its graph.
GRAPH_MAX_STEPS: int = 20_000
GRAPH_MAX_BYTES: int = 4 << 30
