"""Lowers ``break`` to a flag, and loop ``else:`` clauses to plain statements after the loop.

Also home of the block-guarding helpers that the continue and return passes share.
"""
from __future__ import annotations

from collections.abc import Callable

import gast

from ..context import Context
from ..templates import copy_location, template, template_expr

_LOOPS = (gast.For, gast.AsyncFor, gast.While)
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)


def located(nodes: list[gast.stmt], origin: gast.AST) -> list[gast.stmt]:
    """``nodes`` (freshly built from a template) with ``origin``'s source location."""
    copy_location(nodes, origin)
    return nodes


def assign_flag(flag: str, value: bool, origin: gast.AST) -> list[gast.stmt]:
    """``flag = True`` / ``flag = False`` located at ``origin``."""
    return located(template("flag = value", flag=flag, value=gast.Constant(value, None)), origin)


def not_flag(flag: str, origin: gast.AST) -> gast.expr:
    """The expression ``not flag``, located at ``origin``."""
    expr = template_expr("not flag", flag=flag)
    copy_location(expr, origin)
    return expr


def guarded(flag: str, stmts: list[gast.stmt]) -> gast.If:
    """``if not flag: <stmts>``, located at the first guarded statement."""
    (node,) = located(template("if not flag:\n    pass", flag=flag), stmts[0])
    node.body = stmts
    return node


def and_not_flag(flag: str, test: gast.expr | None, origin: gast.AST) -> gast.expr:
    """``not flag and <test>`` (the flag first, so a loop that is stopped does not evaluate
    its test again), or ``not flag`` when there is no test. The ``and``/``not`` stay plain
    Python here; the logical-expressions pass converts them later."""
    if test is None:
        return not_flag(flag, origin)
    expr = template_expr("not flag and test", flag=flag)
    copy_location(expr, origin)
    expr.values[1] = test
    return expr


def block_fields(node: gast.stmt, loops: bool) -> list[list[gast.stmt]]:
    """The statement lists of ``node`` that belong to the same jump scope. For a loop
    (``loops=True``: only its ``else``, since a jump in its body belongs to the loop) and
    never the bodies of functions or classes."""
    if isinstance(node, _SCOPES):
        return []
    if isinstance(node, _LOOPS):
        return [node.orelse] if loops else [node.body, node.orelse]
    lists = [getattr(node, f) for f in ("body", "orelse", "finalbody") if
             isinstance(getattr(node, f, None), list)]
    lists += [h.body for h in getattr(node, "handlers", [])]
    lists += [c.body for c in getattr(node, "cases", [])]
    return lists


def lower_jumps(stmts: list[gast.stmt], is_jump: Callable[[gast.stmt], bool],
                replace: Callable[[gast.stmt], list[gast.stmt]], flag: str,
                on_inner: Callable[[gast.stmt, bool], None] | None = None,
                ) -> tuple[list[gast.stmt], bool]:
    """Replaces each jump of ``stmts`` (at any depth of the same jump scope) by
    ``replace(jump)`` and guards everything that follows a statement that may have jumped
    with ``if not flag:``. Statements after an unconditional jump are unreachable and dropped.
    ``on_inner(loop, may_jump)`` sees each nested loop whose ``else`` was rewritten.
    Returns the new statements and whether they may jump."""
    out: list[gast.stmt] = []
    for i, s in enumerate(stmts):
        if is_jump(s):
            out.extend(replace(s))
            return out, True
        may_jump = False
        for block in block_fields(s, loops=True):
            new, jumped = lower_jumps(block, is_jump, replace, flag, on_inner)
            block[:] = new
            may_jump = may_jump or jumped
        if on_inner is not None and isinstance(s, _LOOPS):
            on_inner(s, may_jump)
        out.append(s)
        if may_jump:
            rest, _ = lower_jumps(stmts[i + 1:], is_jump, replace, flag, on_inner)
            if rest:
                out.append(guarded(flag, rest))
            return out, True
    return out, False


def has_jump(stmts: list[gast.stmt], kind: type) -> bool:
    """Whether a ``kind`` statement of this jump scope occurs in ``stmts``."""
    for s in stmts:
        if isinstance(s, kind):
            return True
        if any(has_jump(b, kind) for b in block_fields(s, loops=kind is not gast.Return)):
            return True
    return False


def map_blocks(stmts: list[gast.stmt], rewrite: Callable[[gast.stmt], list[gast.stmt]],
               ) -> list[gast.stmt]:
    """Applies ``rewrite`` bottom-up to every statement (nested functions and classes
    included), splicing the statement lists it returns."""
    out: list[gast.stmt] = []
    for s in stmts:
        for name in ("body", "orelse", "finalbody"):
            block = getattr(s, name, None)
            if isinstance(block, list) and (block and isinstance(block[0], gast.stmt)):
                setattr(s, name, map_blocks(block, rewrite))
        for part in getattr(s, "handlers", []) + getattr(s, "cases", []):
            part.body = map_blocks(part.body, rewrite)
        out.extend(rewrite(s))
    return out


def set_extra_test(loop: gast.For, flag: str) -> None:
    """Adds ``not flag`` in front of the ``for`` loop's ``sc_extra_test``."""
    loop.sc_extra_test = and_not_flag(flag, getattr(loop, "sc_extra_test", None), loop)


class _BreakLowering:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def rewrite(self, s: gast.stmt) -> list[gast.stmt]:
        if not isinstance(s, _LOOPS):
            return [s]
        orelse, s.orelse = s.orelse, []
        if not has_jump(s.body, gast.Break):
            return [s] + orelse  # no break: the else clause always runs after the loop
        flag = self.ctx.namer.new("brk")
        s.body, _ = lower_jumps(s.body, lambda n: isinstance(n, gast.Break),
                                lambda n: assign_flag(flag, True, n), flag)
        if isinstance(s, gast.While):
            s.test = and_not_flag(flag, s.test, s.test)
        else:
            set_extra_test(s, flag)
        after = [guarded(flag, orelse)] if orelse else []
        return assign_flag(flag, False, s) + [s] + after


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Lowers every ``break`` (also in nested functions) to a fresh flag ``brk``.

    Before the loop ``brk = False``; ``break`` becomes ``brk = True`` and the rest of the
    iteration is guarded by ``if not brk:``. A ``while`` test becomes ``not brk and <test>``;
    a ``for`` loop keeps its header and gets ``node.sc_extra_test = not brk`` (checked before
    each iteration by the control-flow pass). A loop ``else:`` becomes ``if not brk: <else>``
    after the loop (without a break in the loop, the else body simply follows the loop).

        >>> import gast, astunparse
        >>> from stagecraft.converters.context import Context, Namer
        >>> fn = gast.parse('''
        ... def f(i, n):
        ...     while i < n:
        ...         if i > 3:
        ...             break
        ...         i += 1
        ...     return i
        ... ''').body[0]
        >>> fn = convert(fn, Context("<doc>", "f", Namer.for_tree(fn)))
        >>> print(astunparse.unparse(gast.gast_to_ast(fn)).strip())
        def f(i, n):
            brk = False
            while ((not brk) and (i < n)):
                if (i > 3):
                    brk = True
                if (not brk):
                    i += 1
            return i
    """
    node.body = map_blocks(node.body, _BreakLowering(ctx).rewrite)
    return node
