"""Runtime helpers shared by the eager path and every backend (``print`` formatting)."""
from __future__ import annotations

import sys
from typing import Sequence

import numpy as np


def format_tensor(a: np.ndarray, summarize: int | None = 3) -> str:
    """How ``tf.print`` shows a tensor: ``[1 2 3]``, at most ``summarize`` items at each end of
    every dimension (None or -1: all).

    >>> format_tensor(np.array([1.0, 2.5, 3.0], np.float32)), format_tensor(np.arange(10), 2)
    ('[1 2.5 3]', '[0 1 ... 8 9]')
    """
    a = np.asarray(a)
    # Floats print like TensorFlow's: shortest general form, 6 significant digits (5, 2.5).
    formatter = {"float_kind": lambda v: format(v, "g")} if a.dtype.kind == "f" else None
    if a.ndim == 0:
        return formatter["float_kind"](a[()]) if formatter else str(a[()])
    if summarize is None or summarize < 0:
        return np.array2string(a, separator=" ", threshold=sys.maxsize, formatter=formatter)
    return np.array2string(a, separator=" ", threshold=2 * summarize, edgeitems=summarize,
                           formatter=formatter)


def format_print(template: Sequence[tuple], values: Sequence[np.ndarray], sep: str,
                 summarize: int | None) -> str:
    """Joins the template's strings and formatted tensors (``("s", text)`` / ``("t",)``)."""
    it = iter(values)
    parts = [p[1] if p[0] == "s" else format_tensor(next(it), summarize) for p in template]
    return sep.join(parts)


def write(stream: str, text: str) -> None:
    out = sys.stdout if stream == "stdout" else sys.stderr
    out.write(text)
    out.flush()
