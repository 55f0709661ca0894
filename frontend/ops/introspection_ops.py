"""Questions a TF 2 program asks about its tensors and context: ``is_tensor``,
``is_symbolic_tensor``, ``inside_function``, plus ``get_logger`` and ``timestamp``."""
from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir import dtypes as _dt
from stagecraft.staging.graph_tensor import GraphTensor
from stagecraft.state.variables import Variable

__all__ = ["is_tensor", "is_symbolic_tensor", "inside_function", "get_logger", "timestamp"]


def is_tensor(x: Any) -> bool:
    """True for stagecraft tensors (eager or symbolic) and variables, as TF 2's ``is_tensor``
    is for its tensor-like types; False for NumPy arrays and Python values.

    >>> import stagecraft as tf
    >>> tf.is_tensor(tf.constant(1)), tf.is_tensor(tf.Variable(1.0)), tf.is_tensor([1])
    (True, True, False)
    """
    return isinstance(x, (Tensor, Variable))


def is_symbolic_tensor(tensor: Any) -> bool:
    """True for a tensor of a function being traced (it has no value yet).

    >>> import stagecraft as tf
    >>> seen = []
    >>> f = tf.function(lambda x: seen.append(tf.is_symbolic_tensor(x)) or x)
    >>> _ = f(tf.constant(1.0)); seen, tf.is_symbolic_tensor(tf.constant(1.0))
    ([True], False)
    """
    return isinstance(tensor, GraphTensor)


def inside_function() -> bool:
    """True while a ``@function`` is being traced (ops then build a graph).

    >>> import stagecraft as tf
    >>> tf.inside_function()
    False
    """
    return STATE.get().graph is not None


def get_logger() -> logging.Logger:
    """stagecraft's logger (TF's ``get_logger`` returns the ``tensorflow`` one).

    >>> import stagecraft as tf
    >>> tf.get_logger().name
    'stagecraft'
    """
    return logging.getLogger("stagecraft")


def _now() -> Any:
    return wrap(np.asarray(time.time(), np.float64))


def timestamp(name: str | None = None) -> Tensor:
    """Seconds since the epoch as a float64 scalar, read when the op runs (inside
    ``@function``: at every call, through ``py_function``).

    >>> import stagecraft as tf
    >>> float(tf.timestamp()) > 1.5e9
    True
    """
    if STATE.get().graph is None:
        return _now()
    from stagecraft.ops.script_ops import py_function
    from stagecraft.staging.tensor_spec import TensorSpec
    return py_function(_now, [], TensorSpec([], _dt.float64))
