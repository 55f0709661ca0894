"""Lowers ``continue`` to a per-iteration flag and guards on the rest of the iteration."""
from __future__ import annotations

import gast

from ..context import Context
from .break_statements import _LOOPS, assign_flag, has_jump, lower_jumps, map_blocks


class _ContinueLowering:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def rewrite(self, s: gast.stmt) -> list[gast.stmt]:
        if not isinstance(s, _LOOPS) or not has_jump(s.body, gast.Continue):
            return [s]
        flag = self.ctx.namer.new("cont")
        body, _ = lower_jumps(s.body, lambda n: isinstance(n, gast.Continue),
                              lambda n: assign_flag(flag, True, n), flag)
        s.body = assign_flag(flag, False, s.body[0]) + body
        return [s]


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Lowers every ``continue`` (also in nested functions) to a fresh flag ``cont``.

    Each iteration of a loop that continues starts with ``cont = False``; ``continue``
    becomes ``cont = True``; whatever follows a statement that may have continued, in its
    block and every enclosing block up to the loop body, is guarded by ``if not cont:``.
    Loop headers are unchanged. Run it after the break pass (which removes loop ``else:``
    clauses; a ``continue`` in a loop's ``else`` belongs to the enclosing loop).

        >>> import gast, astunparse
        >>> from stagecraft.converters.context import Context, Namer
        >>> fn = gast.parse('''
        ... def f(xs, s):
        ...     for x in xs:
        ...         if x < 0:
        ...             continue
        ...         s += x
        ...     return s
        ... ''').body[0]
        >>> fn = convert(fn, Context("<doc>", "f", Namer.for_tree(fn)))
        >>> print(astunparse.unparse(gast.gast_to_ast(fn)).strip())
        def f(xs, s):
            for x in xs:
                cont = False
                if (x < 0):
                    cont = True
                if (not cont):
                    s += x
            return s
    """
    node.body = map_blocks(node.body, _ContinueLowering(ctx).rewrite)
    return node
