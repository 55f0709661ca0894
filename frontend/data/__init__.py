"""``tf.data``: input pipelines. A ``Dataset`` is built from tensors, a range or a Python
generator and transformed (``map``, ``filter``, ``batch``, ``shuffle``, ``prefetch``, ...);
it is iterated eagerly with ``for`` or ``iter``/``next``, or inside a ``tf.function``, and its
iterators can be saved in checkpoints.

>>> import stagecraft as tf
>>> ds = tf.data.Dataset.from_tensor_slices(([1.0, 2.0, 3.0], [0, 1, 0])).batch(2)
>>> [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
[([1.0, 2.0], [0, 1]), ([3.0], [0])]
"""
from stagecraft.data import experimental
from stagecraft.data.dataset import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY,
                                     Dataset)
from stagecraft.data.iterator import Iterator, Optional
# The modules defining the dataset and iterator kinds register them with Dataset's methods.
from stagecraft.data import cache, prefetch, sources, staged, transformations  # noqa: F401

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Iterator",
           "Optional", "experimental"]
