"""Small pieces of source generation: an indented line writer, unique local names and typed
literals (Numba types a bare ``2.0`` as float64, so every constant names its dtype)."""
from __future__ import annotations

import contextlib
import keyword
import math
import re
from typing import Any, Iterator

from stagecraft.backends.codegen import half
from stagecraft.ir import dtypes as dt
from stagecraft.ir.dtypes import DType


class Writer:
    """Lines of a function body with the current indentation."""

    def __init__(self, depth: int = 1):
        self.lines: list[str] = []
        self.depth = depth

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextlib.contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header)
        self.depth += 1
        start = len(self.lines)
        yield
        if len(self.lines) == start:
            self.line("pass")
        self.depth -= 1


_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")


class Namer:
    """Unique Python identifiers derived from IR hints (``x`` -> ``x``, ``x_1``, ...)."""

    def __init__(self, reserved: tuple = ()):
        self.used = set(reserved)

    def fresh(self, hint: str | None, default: str = "t") -> str:
        """A new identifier made of ``[A-Za-z0-9_]`` only (hints may come from a loaded file:
        any other character, non-ASCII letters included, becomes ``_``; at most 64 of the
        hint's characters are kept).

        >>> n = Namer(); n.fresh("x"), n.fresh("x"), n.fresh("a\\nb()"), n.fresh("é"), n.fresh(None)
        ('x', 'x_1', 'a_b', 't', 't_1')
        """
        base = _NOT_IDENTIFIER.sub("_", hint or default).strip("_")[:64] or default
        if base[0].isdigit() or keyword.iskeyword(base) or base in ("np", "K", "rt"):
            base = f"{default}_{base}"
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name


def rank(x: Any) -> int:
    """The rank of a value or literal of known rank (the Numba backends need it).

    >>> from stagecraft.ir.graph import Value
    >>> from stagecraft.ir.types import TensorType
    >>> rank(Value(TensorType(dt.float32, (2, 3)), "x"))
    2
    """
    return len(x.type.shape)


def np_type(d: DType) -> str:
    """The NumPy scalar class that converts to ``d`` in generated code (float32 for the half
    formats, which compiled code holds in float32: see ``half``)."""
    return "np.bool_" if d == dt.bool_ else f"np.{half.storage_name(d)}"


def literal(value: Any, d: DType) -> str:
    """Source text of a scalar of dtype ``d`` that Numba types exactly as ``d``."""
    if d == dt.bool_:
        return "True" if bool(value) else "False"
    if d.is_complex:
        v = complex(value)
        parts = (literal(v.real, d.real_dtype), literal(v.imag, d.real_dtype))
        return f"{np_type(d)}(complex({parts[0]}, {parts[1]}))"
    if d.is_floating:
        v = half.literal_value(value, d) if half.is_half(d) else float(value)
        if math.isnan(v):
            text = "np.nan"
        elif math.isinf(v):
            text = "np.inf" if v > 0 else "-np.inf"
        else:
            text = repr(v)
        return f"{np_type(d)}({text})"
    return f"{np_type(d)}({int(value)})"


def product_text(dims) -> str:
    """The source text of the product of dimension texts (``1`` for none).

    >>> product_text(["2", "x.shape[1]"]), product_text([])
    ('2 * x.shape[1]', '1')
    """
    return " * ".join(dims) if dims else "1"


def tuple_text(items) -> str:
    """``(a, b)``, ``(a,)`` or ``()``."""
    items = [str(i) for i in items]
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"
