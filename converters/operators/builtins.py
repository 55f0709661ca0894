"""Python builtins that converted code reroutes when their argument is a symbolic tensor."""
from __future__ import annotations

import builtins
from typing import Any

from stagecraft.graph_tensor import GraphTensor


def len_(x: Any) -> Any:
    """``len(x)``: a scalar int32 tensor for a symbolic tensor (its first dimension)."""
    if isinstance(x, GraphTensor):
        if x.shape.rank == 0:
            raise TypeError("len() of a scalar tensor is not defined.")
        from stagecraft.array_ops import shape
        return shape(x)[0]
    return builtins.len(x)


def print_(*args: Any, **kwargs: Any) -> None:
    """``print``: tf.print (every call, to stdout) when an argument is a symbolic tensor."""
    if any(isinstance(a, GraphTensor) for a in args):
        import sys
        from stagecraft.logging_ops import print_ as tf_print
        tf_print(*args, output_stream=sys.stdout, sep=kwargs.get("sep", " "),
                 end=kwargs.get("end", "\n"))
        return
    builtins.print(*args, **kwargs)
