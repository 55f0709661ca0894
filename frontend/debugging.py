"""``stagecraft.debugging``: runtime assertions."""
from stagecraft.ops.logging_ops import Assert, assert_equal, assert_non_negative

__all__ = ["Assert", "assert_equal", "assert_non_negative"]
