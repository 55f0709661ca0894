"""Numba CPU kernel library for the ``numba`` backend.

Real module files whose functions are compiled with
``@numba.njit(cache=True, error_model="numpy", nogil=True)``, so that their machine code is
cached in ``__pycache__`` and shared by every generated graph function that calls them.
Generated code calls them through a module alias; every kernel returns (or fills) arrays with
exactly the dtype the op table's NumPy reference kernel produces, never bare scalars (which
would lose their dtype). Arrays passed in must be C-contiguous.

Submodules are imported lazily by their users (``import numba`` costs 0.15-0.35 s):

* :mod:`.reduce` -- reductions over axes via an (outer, reduced, inner) view, arg-reductions,
  cumulative sums and products.
* :mod:`.linalg` -- 2-D and batched matmul (BLAS for floats, loops for integers), diag,
  diag_part.
* :mod:`.shape` -- gather and its scatter-add adjoint, one_hot, concat, tile, broadcasting,
  sum_like.
* :mod:`.slicing` -- strided slicing and its adjoint, planned at code-generation time.
* :mod:`.creation` -- fill, eye, range, where (indices), and random ops (Philox,
  in nopython mode: the Philox stream of ir/ops/philox.py).
* :mod:`.decompositions` -- inverse, determinants, Cholesky, QR, SVD, eigh, LU and solves
  (LAPACK through Numba's np.linalg per matrix of a batch; substitution loops for
  triangular solves).
"""

# Before any kernel is defined: the kernels' numba cache files are sealed with a digest that is
# checked before numba unpickles them, so a damaged file is rebuilt instead of crashing.
from stagecraft.backends.numba_cache import install_verified_numba_cache as _install

_install()
