"""``stagecraft.nn``: activations, softmax, cross-entropies, dropout, convolutions, pooling,
normalization, moments, morphology and space/depth/batch rearrangements."""
from stagecraft.ops.nn_ops import *  # noqa: F401,F403
from stagecraft.ops.math_ops import softsign  # noqa: F401 (tf.nn.softsign is tf.math's)
from stagecraft.ops.nn_ops import __all__ as _nn_all
from stagecraft.ops.conv_ops import *  # noqa: F401,F403
from stagecraft.ops.conv_ops import __all__ as _conv_all
from stagecraft.ops.pooling_ops import *  # noqa: F401,F403
from stagecraft.ops.pooling_ops import __all__ as _pooling_all
from stagecraft.ops.normalization_ops import *  # noqa: F401,F403
from stagecraft.ops.normalization_ops import __all__ as _normalization_all
from stagecraft.ops.nn_more_ops import *  # noqa: F401,F403
from stagecraft.ops.nn_more_ops import __all__ as _more_all
from stagecraft.ops.space_batch_ops import depth_to_space, space_to_batch, space_to_depth  # noqa: F401
from stagecraft.ops.fractional_pool_ops import fractional_avg_pool, fractional_max_pool  # noqa: F401
from stagecraft.ops.math_ops import tanh  # noqa: F401 (tf.nn.tanh is tf.math's)
from stagecraft.ops.indexing_ops import top_k  # noqa: F401 (tf.nn.top_k is tf.math's)
from stagecraft.ops.counting_ops import in_top_k  # noqa: F401 (tf.nn.in_top_k is tf.math's)

__all__ = [*_nn_all, *_conv_all, *_pooling_all, *_normalization_all, *_more_all, "softsign",
           "depth_to_space", "space_to_batch", "space_to_depth", "tanh", "top_k", "in_top_k",
           "fractional_avg_pool", "fractional_max_pool"]
