"""``stagecraft.debugging``: runtime assertions and checks of ranks, shapes and dtypes.

>>> import stagecraft as tf
>>> tf.debugging.assert_shapes([(tf.zeros([4, 2]), ("N", 2))])
"""
from stagecraft.ops.check_ops import (assert_all_finite, assert_equal, assert_greater,
                                      assert_greater_equal, assert_integer, assert_less,
                                      assert_less_equal, assert_near, assert_negative,
                                      assert_non_negative, assert_non_positive, assert_none_equal,
                                      assert_positive, assert_proper_iterable, assert_rank,
                                      assert_rank_at_least, assert_rank_in,
                                      assert_same_float_dtype, assert_scalar, assert_shapes,
                                      assert_type, check_numerics, is_numeric_tensor)
from stagecraft.ops.logging_ops import Assert

__all__ = ["Assert", "assert_all_finite", "assert_equal", "assert_greater",
           "assert_greater_equal", "assert_integer", "assert_less", "assert_less_equal",
           "assert_near", "assert_negative", "assert_non_negative", "assert_non_positive",
           "assert_none_equal", "assert_positive", "assert_proper_iterable", "assert_rank",
           "assert_rank_at_least", "assert_rank_in", "assert_same_float_dtype", "assert_scalar",
           "assert_shapes", "assert_type", "check_numerics", "is_numeric_tensor"]
