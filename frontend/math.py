"""``stagecraft.math``: TensorFlow's math namespace."""
from stagecraft.ops.math_ops import *  # noqa: F401,F403
from stagecraft.ops.math_ops import __all__ as _math_all

__all__ = list(_math_all)
