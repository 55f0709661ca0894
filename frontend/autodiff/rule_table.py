"""``RuleTable``: the VJP rules of one op family, kept in the family's own module and merged
into :data:`stagecraft.autodiff.vjps.VJPS` by that table (the family module never imports
``vjps``, which imports it: no import cycle)."""
from __future__ import annotations

from typing import Callable


class RuleTable(dict):
    """op name -> VJP rule; ``@table.rule("op")`` registers the function below it.

    >>> table = RuleTable()
    >>> @table.rule("double")
    ... def _double(g, out, x):
    ...     return (2 * g,)
    >>> table["double"](1.0, None, None)
    (2.0,)
    """

    def rule(self, *names: str) -> Callable[[Callable], Callable]:
        def register(fn: Callable) -> Callable:
            for name in names:
                self[name] = fn
            return fn
        return register
