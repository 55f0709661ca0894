"""``stagecraft.nn``: activations, softmax, cross-entropies and dropout."""
from stagecraft.ops.nn_ops import *  # noqa: F401,F403
from stagecraft.ops.nn_ops import __all__  # noqa: F401 (re-exported)
