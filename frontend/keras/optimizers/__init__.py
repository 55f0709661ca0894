"""``keras.optimizers``: ``SGD``, ``Adam``, ``AdamW``, ``Adamax``, ``Nadam``, ``RMSprop``,
``Adagrad``, ``Adadelta``, ``Ftrl``, ``Adafactor``, ``Lion`` and ``Lamb`` with Keras's update
formulas, learning-rate ``schedules``, and ``get``/``serialize``/``deserialize``. The base
class and the checkpoint layout every optimizer shares are in ``optimizer.py``."""
from __future__ import annotations

from stagecraft.keras.optimizers import legacy, schedules
from stagecraft.keras.optimizers.adadelta import Adadelta, Ftrl
from stagecraft.keras.optimizers.adafactor import Adafactor
from stagecraft.keras.optimizers.adam import Adam, Adamax, AdamW, Nadam
from stagecraft.keras.optimizers.lion import Lamb, Lion
from stagecraft.keras.optimizers.loss_scale import LossScaleOptimizer
from stagecraft.keras.optimizers.optimizer import Optimizer
from stagecraft.keras.optimizers.registry import BY_NAME, deserialize, get, serialize
from stagecraft.keras.optimizers.rmsprop import Adagrad, RMSprop
from stagecraft.keras.optimizers.sgd import SGD

BY_NAME.update({"sgd": SGD, "adam": Adam, "adamw": AdamW, "adamax": Adamax, "nadam": Nadam,
                "rmsprop": RMSprop, "adagrad": Adagrad, "adadelta": Adadelta, "ftrl": Ftrl,
                "adafactor": Adafactor, "lion": Lion, "lamb": Lamb,
                "lossscaleoptimizer": LossScaleOptimizer})

__all__ = ["Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "Ftrl", "Lamb", "Lion",
           "LossScaleOptimizer", "Nadam", "Optimizer", "RMSprop", "SGD", "deserialize", "get",
           "legacy", "schedules", "serialize"]
