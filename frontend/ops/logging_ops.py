"""``print`` and assertions: stateful ops that run every time a staged function runs."""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from stagecraft.backends.runtime import format_print, write
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.eager.tensor import Tensor


def print_(*inputs: Any, output_stream: Any = "stderr", sep: str = " ", end: str = "\n",
           summarize: int = 3, name: str | None = None) -> None:
    """Prints tensors and Python values, every time it runs (also inside ``@function``, where
    Python's print runs only while tracing). Writes to stderr by default, like ``tf.print``.

    >>> import stagecraft as tf, sys
    >>> tf.print("x:", tf.constant([1, 2, 3]), output_stream=sys.stdout)
    x: [1 2 3]
    """
    # Compared by identity with the current and the original streams (the default is the name
    # "stderr", resolved when printing: a sys.stderr bound at import time may have been
    # replaced since, e.g. by output capturing).
    if output_stream is sys.stdout or output_stream is sys.__stdout__ or \
            (isinstance(output_stream, str) and output_stream == "stdout"):
        stream = "stdout"
    elif output_stream is sys.stderr or output_stream is sys.__stderr__ or \
            (isinstance(output_stream, str) and output_stream == "stderr"):
        stream = "stderr"
    elif STATE.get().graph is None and hasattr(output_stream, "write"):
        _direct(output_stream, inputs, sep, end, summarize)
        return
    else:
        raise ValueError(f"print: output_stream must be sys.stdout or sys.stderr inside "
                         f"@function, got {output_stream!r}.")
    template, tensors = [], []
    for x in inputs:
        if isinstance(x, Tensor) or hasattr(x, "read_value"):
            template.append(("t",))
            tensors.append(x)
        else:
            template.append(("s", str(x)))
    emit_print(tuple(template), tensors, sep, end, stream, summarize)


def _direct(stream: Any, inputs: tuple, sep: str, end: str, summarize: int) -> None:
    # lazy import: the backends (numba, numba-cuda) load on first use, not with stagecraft
    from stagecraft.backends.runtime import format_tensor
    parts = [format_tensor(np.asarray(convert_to_tensor(x)._value), summarize)
             if isinstance(x, Tensor) else str(x) for x in inputs]
    stream.write(sep.join(parts) + end)


def emit_print(template: tuple, tensors: list, sep: str, end: str, stream: str,
               summarize: int | None) -> None:
    """Prints now (eager) or adds a ``print`` equation to the graph being traced."""
    fg = STATE.get().graph
    if fg is None:
        values = [convert_to_tensor(t)._value for t in tensors]
        write(stream, format_print(template, values, sep, summarize) + end)
        return
    operands = [fg.operand(t) for t in tensors]
    fg.emit("print", operands, [], {"template": template, "sep": sep, "end": end,
                                     "stream": stream, "summarize": summarize})


def emit_assert(condition: Any, message: str) -> None:
    """Raises InvalidArgumentError with ``message`` when ``condition`` is not all true (at run
    time inside ``@function``)."""
    fg = STATE.get().graph
    if fg is None:
        if not bool(np.all(convert_to_tensor(condition)._value)):
            raise InvalidArgumentError(message)
        return
    fg.emit("assert", [fg.operand(condition)], [], {"message": message})


def Assert(condition: Any, data: Any, summarize: int | None = None,  # noqa: N802 (TF's name)
           name: str | None = None) -> None:
    """Asserts that ``condition`` holds; the error shows ``data``.

    >>> import stagecraft as tf
    >>> tf.debugging.Assert(tf.constant(True), ["never shown"])
    """
    text = " ".join(str(d) if not isinstance(d, Tensor) or d._value is None else
                    str(d.numpy()) for d in data)
    emit_assert(condition, f"assertion failed: {text}")
