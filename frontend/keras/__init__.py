"""``stagecraft.keras`` (``tf.keras``): the Keras subset that TF 2 training loops use.

Layers (``layers.Dense``, ``Flatten``, ``Activation``, the ``Layer`` base class), models
(``Model`` subclassing with ``call``, ``Sequential``), optimizers (``SGD``, ``Adam``), losses
(mean squared error, categorical and sparse categorical cross-entropy), metrics (``Mean``,
accuracies), initializers and activations, built from stagecraft ops: they run eagerly, under
``GradientTape`` and inside ``@tf.function``.

>>> import stagecraft as tf
>>> model = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer="zeros")])
>>> opt = tf.keras.optimizers.SGD(learning_rate=0.1)
>>> x, y = tf.constant([[1.0], [2.0]]), tf.constant([[2.0], [4.0]])
>>> with tf.GradientTape() as tape:
...     loss = tf.keras.losses.MeanSquaredError()(y, model(x))
>>> grads = tape.gradient(loss, model.trainable_variables)
>>> _ = opt.apply_gradients(zip(grads, model.trainable_variables))
>>> [round(float(v.numpy().ravel()[0]), 4) for v in model.trainable_variables]
[1.0, 0.6]
"""
from stagecraft.keras import (activations, backend, callbacks, constraints, initializers, layers,
                              losses, metrics, models, optimizers, regularizers)
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.constraints import Constraint
from stagecraft.keras.functional import Input
from stagecraft.keras.initializers import Initializer
from stagecraft.keras.input_spec import InputSpec
from stagecraft.keras.losses import Loss
from stagecraft.keras.metric_base import Metric
from stagecraft.keras.models import Model, Sequential
from stagecraft.keras.optimizers import Optimizer
from stagecraft.keras.regularizers import Regularizer

__all__ = ["Constraint", "Initializer", "Input", "InputSpec", "Layer", "Loss", "Metric",
           "Model", "Optimizer", "Regularizer", "Sequential", "activations", "backend",
           "callbacks", "constraints", "initializers", "layers", "losses", "metrics", "models",
           "optimizers", "regularizers"]
