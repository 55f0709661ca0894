"""Backends that compile graph functions: the reference interpreter, Numba CPU and Numba CUDA.

Filled by the staging and backend issues; the package exists now so the folder-to-package
mapping of pyproject.toml is complete.
"""
