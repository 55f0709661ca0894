"""Python builtins that converted code reroutes (AutoGraph's ``py_builtins``): ``abs``,
``float``, ``int``, ``len``, ``print`` and ``range`` behave as Python for Python values and
eager tensors, and become tensor ops for the symbolic tensors of a trace."""
from __future__ import annotations

import builtins
import sys
from typing import Any

from stagecraft.eager.context import STATE
from stagecraft.staging.graph_tensor import GraphTensor

_NO_BASE = object()


def abs_(x: Any) -> Any:
    """``abs(x)``: ``tf.abs`` for a symbolic tensor (the magnitude of a complex one)."""
    if isinstance(x, GraphTensor):
        from stagecraft.ops.math_ops import abs as tf_abs
        return tf_abs(x)
    return builtins.abs(x)


def float_(x: Any = 0.0) -> Any:
    """``float(x)``: for a symbolic tensor, a cast to float32 (float64 stays float64), as
    AutoGraph does; Python's ``float`` otherwise (an eager scalar tensor gives its value)."""
    if isinstance(x, GraphTensor):
        from stagecraft.ir import dtypes
        from stagecraft.ops.math_ops import cast
        return x if x.dtype == dtypes.float64 else cast(x, dtypes.float32)
    return builtins.float(x)


def int_(x: Any = 0, base: Any = _NO_BASE) -> Any:
    """``int(x)``: for a symbolic tensor, a cast to int32 (int64 stays int64; floats are
    truncated toward zero, as ``int`` does), as AutoGraph does; Python's ``int`` otherwise."""
    if isinstance(x, GraphTensor):
        if base is not _NO_BASE:
            # As Python: a base only applies to strings (int(5, 10) is a TypeError too).
            raise TypeError(f"int() can't convert non-string with explicit base: x is a "
                            f"tensor, so drop base={base!r} (int(x) casts it to int32).")
        from stagecraft.ir import dtypes
        from stagecraft.ops.math_ops import cast
        return x if x.dtype == dtypes.int64 else cast(x, dtypes.int32)
    return builtins.int(x) if base is _NO_BASE else builtins.int(x, base)


def len_(x: Any) -> Any:
    """``len(x)``: for a symbolic tensor its first dimension, a Python int when the trace knows
    it (as AutoGraph), else a scalar int32 tensor."""
    if isinstance(x, GraphTensor):
        if x.shape.rank == 0:
            raise TypeError("len() of a scalar tensor is not defined: it has no first "
                            "dimension.")
        if x.shape.rank is not None and x.shape[0] is not None:
            return builtins.int(x.shape[0])
        from stagecraft.ops.array_ops import shape
        return shape(x)[0]
    if hasattr(x, "size") and hasattr(x, "stack") and hasattr(x, "_nest_components"):
        return x.size()  # a TensorArray
    return builtins.len(x)


def print_(*args: Any, **kwargs: Any) -> None:
    """``print``: inside a trace, when an argument is a tensor (or a variable), a ``tf.print``
    to stdout that prints at every call; otherwise Python's print (while tracing, for Python
    values: a Python side effect)."""
    tracing = STATE.get().graph is not None
    if tracing and any(isinstance(a, GraphTensor) or hasattr(a, "read_value") for a in args):
        from stagecraft.ops.logging_ops import print_ as tf_print
        stream = kwargs.get("file") or sys.stdout
        tf_print(*args, output_stream=stream, sep=kwargs.get("sep") or " ",
                 end=kwargs.get("end") if kwargs.get("end") is not None else "\n")
        return
    builtins.print(*args, **kwargs)


def range_(*args: Any) -> Any:
    """``range``: ``tf.range`` for symbolic bounds (a ``for`` over it is staged without
    materializing it), Python's ``range`` otherwise (eager tensors give their values)."""
    from stagecraft.eager.tensor import Tensor
    if any(isinstance(a, GraphTensor) for a in args):
        from stagecraft.ops.array_ops import range as tf_range
        return tf_range(*args)
    return builtins.range(*[builtins.int(a) if isinstance(a, Tensor) else a for a in args])
