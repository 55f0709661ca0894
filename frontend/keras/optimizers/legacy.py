"""``keras.optimizers.legacy``: TensorFlow 2's ``OptimizerV2`` classes. stagecraft's
optimizers already follow their update rules, hyperparameter variables and checkpoint
layout (``iter``, slots under ``.OPTIMIZER_SLOT``), so these are the same classes.

>>> import stagecraft as tf
>>> tf.keras.optimizers.legacy.Adam is tf.keras.optimizers.Adam
True
"""
from stagecraft.keras.optimizers.adadelta import Adadelta, Ftrl
from stagecraft.keras.optimizers.adam import Adam, Adamax, Nadam
from stagecraft.keras.optimizers.optimizer import Optimizer
from stagecraft.keras.optimizers.rmsprop import Adagrad, RMSprop
from stagecraft.keras.optimizers.sgd import SGD

__all__ = ["Adadelta", "Adagrad", "Adam", "Adamax", "Ftrl", "Nadam", "Optimizer", "RMSprop",
           "SGD"]
