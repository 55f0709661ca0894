"""The Numba-CUDA backend's eager op library: device detection (:mod:`.detect`), device
buffers (:mod:`.memory`) and ``run(op_name, inputs, attrs)`` for every op of the op table
(:mod:`.eager`, kernels in :mod:`.kernels`).

Importing this package (or any module in it) does not import ``numba.cuda``; the first
kernel launch or device copy does. Without a GPU, set ``NUMBA_ENABLE_CUDASIM=1`` before
numba is imported to run everything on Numba's CUDA simulator.
"""
