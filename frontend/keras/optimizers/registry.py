"""The optimizers by (lower-case) class name, and ``get``/``serialize``/``deserialize``:
apart from the package so that an optimizer that holds another (``LossScaleOptimizer``) can
serialize it without importing the package. The package fills ``BY_NAME``."""
from __future__ import annotations

from typing import Any

from stagecraft.keras.optimizers.optimizer import Optimizer
from stagecraft.keras.optimizers.schedules import LearningRateSchedule
from stagecraft.keras.optimizers.schedules import deserialize as deserialize_schedule
from stagecraft.keras.optimizers.schedules import serialize as serialize_schedule

#: Filled by ``stagecraft.keras.optimizers`` with every built-in optimizer class.
BY_NAME: dict[str, type] = {}


def get(identifier: Any) -> Optimizer:
    """The optimizer for ``identifier``: a name (``"adam"``, case-insensitive) gives a new one
    with default settings; an optimizer is returned as is.

    >>> import stagecraft as tf
    >>> type(tf.keras.optimizers.get("RMSprop")).__name__
    'RMSprop'
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer: {identifier!r}. Valid names are "
                             f"{', '.join(repr(n) for n in sorted(BY_NAME))}.")
        return cls()
    raise TypeError(f"Could not interpret optimizer identifier: {identifier!r} (of type "
                    f"{type(identifier).__name__}).")


def serialize(optimizer: Optimizer) -> dict:
    """``{'class_name': ..., 'config': optimizer.get_config()}`` (hyperparameters' current
    values; a learning-rate schedule as its own serialized form).

    >>> import stagecraft as tf
    >>> tf.keras.optimizers.serialize(tf.keras.optimizers.Lion(0.01))["config"]["beta_2"]
    0.9900000095367432
    """
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"keras.optimizers.serialize: expected an optimizer, got "
                        f"{type(optimizer).__name__}.")
    config = optimizer.get_config()
    lr = config.get("learning_rate")
    if isinstance(lr, LearningRateSchedule):
        config["learning_rate"] = serialize_schedule(lr)
    return {"class_name": type(optimizer).__name__, "config": config}


def deserialize(config: dict, custom_objects: dict | None = None) -> Optimizer:
    """A new optimizer from ``serialize``'s output (class names are matched
    case-insensitively, as ``get`` does; ``custom_objects`` adds user classes).

    >>> import stagecraft as tf
    >>> opt = tf.keras.optimizers.deserialize({"class_name": "Adadelta",
    ...                                        "config": {"rho": 0.9}})
    >>> type(opt).__name__, round(opt.get_config()["rho"], 4)
    ('Adadelta', 0.9)
    """
    if not isinstance(config, dict) or not isinstance(config.get("config", {}), dict):
        raise ValueError(f"keras.optimizers.deserialize: expected a dict with 'class_name' "
                         f"and a 'config' dict; got {str(config)[:200]}.")
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or \
        (BY_NAME.get(name.lower()) if isinstance(name, str) else None)
    if cls is None:
        raise ValueError(f"Unknown optimizer: {name!r}. Valid names are "
                         f"{', '.join(repr(n) for n in sorted(BY_NAME))}; pass custom "
                         f"optimizers as custom_objects={{'Name': Name}}.")
    kwargs = dict(config.get("config", {}))
    lr = kwargs.get("learning_rate")
    if isinstance(lr, dict):
        kwargs["learning_rate"] = deserialize_schedule(lr)
    return cls(**kwargs)
