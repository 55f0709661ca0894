"""The CUDA kernel library of the eager path, one file per family. Every kernel is built on
first use (``numba.cuda`` is imported lazily) and cached per dtype signature and launch
parameter."""
