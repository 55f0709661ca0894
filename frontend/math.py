"""``stagecraft.math``: TensorFlow's math namespace."""
from stagecraft.ops.math_ops import *  # noqa: F401,F403
from stagecraft.ops.math_ops import TOP_LEVEL_ONLY as _top_only
from stagecraft.ops.math_ops import __all__ as _math_all
from stagecraft.ops.indexing_ops import top_k  # noqa: F401
from stagecraft.ops.stable_math_ops import *  # noqa: F401,F403
from stagecraft.ops.stable_math_ops import __all__ as _stable_all

for _name in _top_only:
    del globals()[_name]
__all__ = [n for n in _math_all if n not in _top_only] + list(_stable_all) + ["top_k"]
from stagecraft.ops.segment_ops import (  # noqa: F401
    bincount, segment_max, segment_mean, segment_min, segment_prod, segment_sum,
    unsorted_segment_max, unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod,
    unsorted_segment_sqrt_n, unsorted_segment_sum)

__all__ += ["bincount", "segment_max", "segment_mean", "segment_min", "segment_prod",
            "segment_sum", "unsorted_segment_max", "unsorted_segment_mean",
            "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
            "unsorted_segment_sum"]
from stagecraft.ops.special_math_ops import (  # noqa: F401
    cumulative_logsumexp, digamma, erf, erfc, erfinv, lgamma, log_sigmoid, polygamma,
    reciprocal_no_nan, xdivy, xlog1py, zeta)

__all__ += ["cumulative_logsumexp", "digamma", "erf", "erfc", "erfinv", "lgamma", "log_sigmoid",
            "polygamma", "reciprocal_no_nan", "xdivy", "xlog1py", "zeta"]
from stagecraft.ops.counting_ops import (  # noqa: F401
    confusion_matrix, count_nonzero, in_top_k, invert_permutation, is_non_decreasing,
    is_strictly_increasing, zero_fraction)

__all__ += ["confusion_matrix", "count_nonzero", "in_top_k", "invert_permutation",
            "is_non_decreasing", "is_strictly_increasing", "zero_fraction"]
from stagecraft.ops.complex_ops import angle, conj, imag, real  # noqa: F401

__all__ += ["angle", "conj", "imag", "real"]
from stagecraft.ops.arithmetic_ops import scalar_mul  # noqa: F401

__all__ += ["scalar_mul"]
