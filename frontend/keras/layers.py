"""``keras.layers``: the layer base class and the core layers.

>>> import stagecraft as tf
>>> tf.keras.layers.Dense(3)(tf.ones([2, 4])).shape
TensorShape([2, 3])
"""
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.core_layers import Activation, Dense, Flatten
from stagecraft.keras.functional import Input, InputLayer
from stagecraft.keras.merging_layers import (Add, Average, Concatenate, Lambda, Maximum, Minimum,
                                             Multiply, Subtract)

__all__ = ["Activation", "Add", "Average", "Concatenate", "Dense", "Flatten", "Input",
           "InputLayer", "Lambda", "Layer", "Maximum", "Minimum", "Multiply", "Subtract"]
