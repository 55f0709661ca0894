"""Loop directives: ``tf.autograph.experimental.set_loop_options(...)`` as the first statement
of a loop body is removed from the body and attached to the loop (``node.sc_loop_options``,
its keyword arguments), which the control_flow pass hands to the loop operator.

    >>> import gast, astunparse
    >>> from stagecraft.converters.context import Context, Namer
    >>> src = ("def f(x):\\n    while x > 0:\\n"
    ...        "        set_loop_options(maximum_iterations=3)\\n        x -= 1")
    >>> fn = convert(gast.parse(src).body[0], Context("f.py", "f", Namer(set())))
    >>> loop = fn.body[0]
    >>> [k.arg for k in loop.sc_loop_options], len(loop.body)
    (['maximum_iterations'], 1)
"""
from __future__ import annotations

import gast

from stagecraft.converters.context import Context
from stagecraft.ir.errors import ConversionError

DIRECTIVE = "set_loop_options"
OPTIONS = frozenset({"maximum_iterations", "shape_invariants", "parallel_iterations",
                     "swap_memory"})


def _is_directive(stmt: gast.stmt) -> bool:
    if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
        return False
    func = stmt.value.func
    name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", None)
    return name == DIRECTIVE


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Moves loop directives from loop bodies onto their loops."""
    for loop in gast.walk(node):
        if not isinstance(loop, (gast.While, gast.For)):
            continue
        if loop.body and _is_directive(loop.body[0]):
            call = loop.body[0].value
            if call.args:
                raise ConversionError(f"{ctx.loc(call)}: {DIRECTIVE} takes keyword arguments "
                                      f"only, e.g. {DIRECTIVE}(maximum_iterations=10).")
            unknown = [k.arg for k in call.keywords if k.arg not in OPTIONS]
            if unknown:
                raise ConversionError(f"{ctx.loc(call)}: unknown loop option(s) {unknown}; "
                                      f"known: {sorted(OPTIONS)}.")
            loop.sc_loop_options = list(call.keywords)
            loop.body = loop.body[1:] or [gast.Pass()]
        for stmt in loop.body[1:]:
            if _is_directive(stmt):
                raise ConversionError(f"{ctx.loc(stmt)}: {DIRECTIVE} must be the first "
                                      f"statement of the loop body.")
    return node
