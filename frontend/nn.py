"""``stagecraft.nn``: activations, softmax, cross-entropies, dropout and convolutions."""
from stagecraft.ops.nn_ops import *  # noqa: F401,F403
from stagecraft.ops.math_ops import softsign  # noqa: F401 (tf.nn.softsign is tf.math's)
from stagecraft.ops.nn_ops import __all__ as _nn_all
from stagecraft.ops.conv_ops import *  # noqa: F401,F403
from stagecraft.ops.conv_ops import __all__ as _conv_all
from stagecraft.ops.pooling_ops import *  # noqa: F401,F403
from stagecraft.ops.pooling_ops import __all__ as _pooling_all
from stagecraft.ops.normalization_ops import *  # noqa: F401,F403
from stagecraft.ops.normalization_ops import __all__ as _normalization_all

__all__ = [*_nn_all, *_conv_all, *_pooling_all, *_normalization_all, "softsign"]
