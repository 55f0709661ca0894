"""``keras.backend``: the default float type of new layers (``floatx``) and layer names.

>>> import stagecraft as tf
>>> tf.keras.backend.floatx()
'float32'
"""
from __future__ import annotations

import threading

from stagecraft.ir import dtypes as _dt
from stagecraft.keras.call_context import learning_phase, set_learning_phase

_FLOATX = ["float32"]
_name_counts: dict[str, int] = {}
_name_lock = threading.Lock()


def floatx() -> str:
    """The dtype name new layers use for their weights unless given ``dtype=``.

    >>> import stagecraft as tf
    >>> tf.keras.backend.floatx()
    'float32'
    """
    return _FLOATX[0]


def set_floatx(value: str) -> None:
    """Sets the default float type of new layers: ``'float32'`` or ``'float64'``.

    >>> import stagecraft as tf
    >>> tf.keras.backend.set_floatx('float64'); tf.keras.layers.Dense(1).dtype
    'float64'
    >>> tf.keras.backend.set_floatx('float32')
    """
    names = ("float32", "float64")
    name = _dt.as_dtype(value).name if not isinstance(value, str) else value
    if name not in names:
        raise ValueError(f"keras.backend.set_floatx: unknown or unsupported floatx {value!r}; "
                         f"expected one of {names}.")
    _FLOATX[0] = name


def unique_object_name(base: str) -> str:
    """``base`` the first time, then ``base_1``, ``base_2``, ... (Keras's default layer names).

    >>> clear_session(); unique_object_name('dense'), unique_object_name('dense')
    ('dense', 'dense_1')
    """
    with _name_lock:
        n = _name_counts.get(base, 0)
        _name_counts[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def unique_input_name() -> str:
    """``input_1``, ``input_2``, ...: Keras numbers input layers from 1.

    >>> clear_session(); unique_input_name(), unique_input_name()
    ('input_1', 'input_2')
    """
    with _name_lock:
        n = _name_counts.get("input", 0) + 1
        _name_counts["input"] = n
    return f"input_{n}"


def clear_session() -> None:
    """Restarts the default layer names (``dense``, ``dense_1``, ...) from the beginning.

    >>> import stagecraft as tf
    >>> tf.keras.backend.clear_session(); tf.keras.layers.Dense(1).name
    'dense'
    """
    with _name_lock:
        _name_counts.clear()


__all__ = ["clear_session", "floatx", "learning_phase", "set_floatx", "set_learning_phase",
           "unique_object_name"]
