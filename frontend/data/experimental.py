"""``tf.data.experimental``: the names TensorFlow 2 still keeps there."""
from __future__ import annotations

from typing import Any

from stagecraft.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality"]


def cardinality(dataset: Any) -> Any:
    """``dataset.cardinality()``.

    >>> import stagecraft as tf
    >>> int(tf.data.experimental.cardinality(tf.data.Dataset.range(3).repeat()))
    -1
    """
    return dataset.cardinality()
