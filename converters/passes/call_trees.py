"""Routes calls through the runtime so user functions called from converted code are converted
too (``f(a, *b, k=c)`` → ``sc__.converted_call(f, (a, *b), {'k': c})``); library code runs
untouched.

    >>> import gast, astunparse
    >>> from stagecraft.converters.context import Context, Namer
    >>> tree = gast.parse("def f(x):\\n    return g(x, k=1)").body[0]
    >>> out = convert(tree, Context("f.py", "f", Namer(set())))
    >>> print(astunparse.unparse(gast.gast_to_ast(out)).strip())
    def f(x):
        return sc__.converted_call(g, (x,), {'k': 1})
"""
from __future__ import annotations

import gast

from stagecraft.converters.context import RUNTIME, Context
from stagecraft.converters.templates import copy_location

# Builtins that look at the caller's frame: they must be called directly.
FRAME_SENSITIVE = frozenset({"super", "locals", "globals", "vars", "eval", "exec", "dir"})


class _CallTrees(gast.NodeTransformer):
    def visit_Call(self, node: gast.Call) -> gast.AST:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and \
                func.value.id == RUNTIME:
            return node
        if isinstance(func, gast.Name) and func.id in FRAME_SENSITIVE:
            return node
        args = gast.Tuple(elts=list(node.args), ctx=gast.Load())
        keys, values = [], []
        for kw in node.keywords:
            keys.append(None if kw.arg is None else gast.Constant(kw.arg, None))
            values.append(kw.value)
        call = gast.Call(
            func=gast.Attribute(gast.Name(RUNTIME, gast.Load(), None, None), "converted_call",
                                gast.Load()),
            args=[func, args, gast.Dict(keys=keys, values=values)], keywords=[])
        # Every generated node (the call, the args tuple, the kwargs dict) gets the user's
        # call location; left without one they would inherit an enclosing statement's later.
        return copy_location(call, node)


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Wraps every call in ``sc__.converted_call`` (except frame-sensitive builtins)."""
    return _CallTrees().visit(node)
