"""``tf.VariableSynchronization`` and ``tf.VariableAggregation``: accepted by ``tf.Variable``
for TensorFlow compatibility. stagecraft has no replicas (no distribution strategy), so every
policy means the same here: one copy, read and written where it lives."""
from __future__ import annotations

import enum


class VariableSynchronization(enum.Enum):
    """When a distributed variable would be synchronized (every value is accepted).

    >>> import stagecraft as tf
    >>> tf.VariableSynchronization.AUTO.value
    0
    """

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How a distributed variable's updates would be aggregated (every value is accepted).

    >>> import stagecraft as tf
    >>> tf.VariableAggregation.SUM.value
    1
    """

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
