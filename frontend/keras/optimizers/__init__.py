"""``keras.optimizers``: ``SGD``, ``Adam``, ``AdamW``, ``Adamax``, ``Nadam``, ``RMSprop`` and
``Adagrad`` with Keras's update formulas, learning-rate ``schedules``, and ``get``. The base
class and the checkpoint layout every optimizer shares are in ``optimizer.py``."""
from __future__ import annotations

from typing import Any

from stagecraft.keras.optimizers import schedules
from stagecraft.keras.optimizers.adam import Adam, Adamax, AdamW, Nadam
from stagecraft.keras.optimizers.optimizer import Optimizer
from stagecraft.keras.optimizers.rmsprop import Adagrad, RMSprop
from stagecraft.keras.optimizers.sgd import SGD

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "adamax": Adamax, "nadam": Nadam,
            "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier: Any) -> Optimizer:
    """The optimizer for ``identifier``: a name (``"adam"``, case-insensitive) gives a new one
    with default settings; an optimizer is returned as is.

    >>> import stagecraft as tf
    >>> type(tf.keras.optimizers.get("RMSprop")).__name__
    'RMSprop'
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer: {identifier!r}. Valid names are "
                             f"{', '.join(repr(n) for n in sorted(_BY_NAME))}.")
        return cls()
    raise TypeError(f"Could not interpret optimizer identifier: {identifier!r} (of type "
                    f"{type(identifier).__name__}).")


__all__ = ["Adagrad", "Adam", "AdamW", "Adamax", "Nadam", "Optimizer", "RMSprop", "SGD", "get",
           "schedules"]
