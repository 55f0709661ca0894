"""Every kernel under one name: generated graph code imports this module as ``K``."""
from stagecraft.backends.numba_cpu.kernels.creation import (  # noqa: F401
    empty, eye_into, fill_into, random_into, range_into, range_len, where_indices)
from stagecraft.backends.numba_cpu.kernels.linalg import (  # noqa: F401
    batch_index, batch_matmul3, diag2, diag_part3, matmul2)
from stagecraft.backends.numba_cpu.kernels.reduce import (  # noqa: F401
    all3, any3, argmax3, argmin3, argsort3, cumprod3, cumsum3, max3, mean3, min3, prod3, sum3,
    to3)
from stagecraft.backends.numba_cpu.kernels.shape import (  # noqa: F401
    broadcast_dim, broadcast_into, concat_part_into, gather_grad_into, gather_into, one_hot_into,
    reshape_dims, row_update, row_update1, sum_like_into, take1, tile_into)
from stagecraft.backends.numba_cpu.kernels.slicing import (  # noqa: F401
    check_update_shape, slice_bounds, strided_slice_grad_into, strided_slice_into,
    strided_slice_update_into)
from stagecraft.backends.numba_cpu.kernels.scatter import scatter_nd  # noqa: F401
from stagecraft.backends.numba_cpu.kernels.conv import (  # noqa: F401
    conv5, conv_backprop_filter5, conv_backprop_input5)
from stagecraft.backends.numba_cpu.kernels.decompositions import (  # noqa: F401
    cholesky3, determinant3, eigh3, inverse3, lu3, qr3, slogdet3, solve3, svd3,
    triangular_solve3)
from stagecraft.backends.numba_cpu.kernels.pooling import (  # noqa: F401
    avg_pool5, avg_pool_grad5, max_pool5, max_pool_grad5, max_pool_grad_grad5)
from stagecraft.backends.numba_cpu.kernels.segment import (  # noqa: F401
    searchsorted2, segment_reduce, unique_index)
from stagecraft.backends.numba_cpu.kernels.special import (  # noqa: F401
    digamma, erf, erfc, erfinv, lgamma, random_gamma_grad, zeta)
from stagecraft.backends.numba_cpu.kernels.rejection import (  # noqa: F401
    binomial_sample_into, rejection_sample_into)
from stagecraft.backends.numba_cpu.kernels.logsumexp import cumulative_logsumexp3  # noqa: F401
from stagecraft.backends.numba_cpu.kernels.softmax import (  # noqa: F401
    first_bad_label, softmax3, sparse_xent, sparse_xent_grad)
from stagecraft.backends.numba_cpu.kernels.fft import (  # noqa: F401
    fft_axis3, fit_axis3, hermitian_axis3)
from stagecraft.backends.numba_cpu.kernels.eig import eig3  # noqa: F401
from stagecraft.backends.numba_cpu.kernels.half import floor_to, round_array, round_to  # noqa: F401
