"""Runtime helpers shared by the eager path and every backend (``print`` formatting)."""
from __future__ import annotations

import sys
from typing import Sequence

import numpy as np


def format_tensor(a: np.ndarray, summarize: int | None = 3) -> str:
    """How ``tf.print`` shows a tensor: ``[1 2 3]``, at most ``summarize`` items at each end of
    every dimension (None or -1: all)."""
    a = np.asarray(a)
    if a.ndim == 0:
        return str(a[()])
    if summarize is None or summarize < 0:
        return np.array2string(a, separator=" ", threshold=sys.maxsize)
    return np.array2string(a, separator=" ", threshold=2 * summarize, edgeitems=summarize)


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
