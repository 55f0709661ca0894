"""``assert test, msg`` → ``sc__.assert_stmt(test, lambda: msg)``: Python's assert for Python
values, a runtime assertion (InvalidArgumentError when it fails) for a symbolic test. An assert
without a message passes ``None`` and a 'file:line: test' description for the staged error.

    >>> import gast, astunparse
    >>> from stagecraft.converters.context import Context, Namer
    >>> src = "def f(x):\\n    assert x > 0, 'x must be positive'\\n    assert x"
    >>> tree = gast.parse(src).body[0]
    >>> out = convert(tree, Context("f.py", "f", Namer(set())))
    >>> print(astunparse.unparse(gast.gast_to_ast(out)).strip())
    def f(x):
        sc__.assert_stmt((x > 0), (lambda : 'x must be positive'))
        sc__.assert_stmt(x, None, 'f.py:3: x')
"""
from __future__ import annotations

import gast

from stagecraft.converters.context import RUNTIME, Context
from stagecraft.converters.templates import copy_location


def _test_text(test: gast.expr) -> str:
    """The assert's test as source text (for the staged error of an assert without message)."""
    import astunparse
    try:
        expr = gast.gast_to_ast(gast.Expression(body=test))
        return astunparse.unparse(expr.body).strip()
    except Exception:  # only a description: never let it break the conversion
        return "assert"


class _Asserts(gast.NodeTransformer):
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit_Assert(self, node: gast.Assert) -> gast.Expr:
        func = gast.Attribute(gast.Name(RUNTIME, gast.Load(), None, None), "assert_stmt",
                              gast.Load())
        if node.msg is not None:
            args = [node.test, gast.Lambda(
                args=gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[],
                                    kw_defaults=[], kwarg=None, defaults=[]),
                body=node.msg)]
        else:
            what = f"{self.ctx.loc(node)}: {_test_text(node.test)}"
            args = [node.test, gast.Constant(None, None), gast.Constant(what, None)]
        call = gast.Expr(gast.Call(func, args, []))
        return copy_location(gast.copy_location(call, node), node)


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Rewrites every ``assert`` in ``node`` (nested functions included)."""
    return _Asserts(ctx).visit(node)
