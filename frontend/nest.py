"""``stagecraft.nest``: flattening and rebuilding nested structures, as ``tf.nest`` (defined in
``stagecraft.eager.nest``, which the engine uses).

>>> import stagecraft as tf
>>> tf.nest.flatten({"b": 2, "a": (1, None)})
[1, None, 2]
"""
from stagecraft.eager.nest import flatten, is_nested, map_structure, pack_sequence_as

__all__ = ["flatten", "is_nested", "map_structure", "pack_sequence_as"]
