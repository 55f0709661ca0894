"""One table of lowerings per code generator, keyed by op name: ``@LOWER.lowers("while")`` above
the function that emits an op is the one place that says how a backend compiles it (grep
``lowers("while")``), and the completeness tests compare each table with the op table."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.backends.codegen.source_emitter import LoweringError
from stagecraft.ir.graph import Eqn

Lowering = Callable[[Any, Eqn], None]   # (the code generator, the equation) -> emits its code


class Lowerings(dict):
    """op name -> the function emitting its code, for one backend (``missing`` is what the
    error for an op without a lowering tells the user to do instead).

    >>> LOWER = Lowerings("toy", missing="run it elsewhere")
    >>> @LOWER.lowers("negative", "abs")
    ... def _unary(cg, e):
    ...     cg.append(e.op)
    >>> sorted(LOWER), LOWER["abs"] is _unary
    (['abs', 'negative'], True)
    >>> LOWER.lowers("abs")(_unary)
    Traceback (most recent call last):
    ...
    ValueError: The toy backend already has a lowering for 'abs'.
    """

    def __init__(self, backend: str, missing: str):
        super().__init__()
        self.backend = backend
        self.missing = missing

    def lowers(self, *names: str) -> Callable[[Lowering], Lowering]:
        """Registers the decorated function as the lowering of the ops ``names``."""
        def register(fn: Lowering) -> Lowering:
            for name in names:
                if name in self:   # two lowerings of one op: the later would silently win
                    raise ValueError(f"The {self.backend} backend already has a lowering for "
                                     f"'{name}'.")
                self[name] = fn
            return fn
        return register

    def emit(self, cg: Any, e: Eqn) -> None:
        """Emits ``e`` with its lowering; an op without one is a LoweringError at compile
        time, never a fallback."""
        fn = self.get(e.op)
        if fn is None:
            raise LoweringError(f"The {self.backend} backend has no lowering for the op "
                                f"'{e.op}' (at {e.loc}); {self.missing}.")
        fn(cg, e)
