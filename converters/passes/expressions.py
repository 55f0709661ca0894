"""Lazy ``and``/``or``, ``not``, conditional expressions and chained comparisons, rewritten
into runtime operators that stage them when their operands are symbolic tensors.

    >>> import gast, astunparse
    >>> from stagecraft.converters.context import Context, Namer
    >>> tree = gast.parse("def f(a, b):\\n    return a and not b").body[0]
    >>> out = convert(tree, Context("f.py", "f", Namer(set())))
    >>> print(astunparse.unparse(gast.gast_to_ast(out)).strip())
    def f(a, b):
        return sc__.and_((lambda : a), (lambda : sc__.not_(b)))
"""
from __future__ import annotations

import gast

from stagecraft.converters.context import RUNTIME, Context
from stagecraft.converters.templates import copy_location


def _runtime(name: str) -> gast.Attribute:
    return gast.Attribute(gast.Name(RUNTIME, gast.Load(), None, None), name, gast.Load())


def _thunk(expr: gast.expr) -> gast.Lambda:
    args = gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                          kwarg=None, defaults=[])
    return gast.Lambda(args=args, body=expr)


_OPS = {gast.Eq: "==", gast.NotEq: "!=", gast.Lt: "<", gast.LtE: "<=", gast.Gt: ">",
        gast.GtE: ">=", gast.Is: "is", gast.IsNot: "is not", gast.In: "in", gast.NotIn: "not in"}


class _Expressions(gast.NodeTransformer):
    def visit_BoolOp(self, node: gast.BoolOp) -> gast.AST:
        self.generic_visit(node)
        name = "and_" if isinstance(node.op, gast.And) else "or_"
        values = list(node.values)
        result = values[-1]
        for v in reversed(values[:-1]):
            result = gast.Call(_runtime(name), [_thunk(v), _thunk(result)], [])
        return copy_location(result, node)

    def visit_UnaryOp(self, node: gast.UnaryOp) -> gast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, gast.Not):
            return node
        return copy_location(gast.Call(_runtime("not_"), [node.operand], []), node)

    def visit_IfExp(self, node: gast.IfExp) -> gast.AST:
        self.generic_visit(node)
        call = gast.Call(_runtime("if_exp"), [node.test, _thunk(node.body),
                                              _thunk(node.orelse)], [])
        return copy_location(call, node)

    def visit_Compare(self, node: gast.Compare) -> gast.AST:
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        # a < b < c: each operand evaluated once, lazily, left to right.
        pairs = gast.Tuple(elts=[gast.Tuple(elts=[gast.Constant(_OPS[type(op)], None),
                                                  _thunk(right)], ctx=gast.Load())
                                 for op, right in zip(node.ops, node.comparators)],
                           ctx=gast.Load())
        return copy_location(gast.Call(_runtime("compare_chain"), [node.left, pairs], []),
                                  node)


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Rewrites ``and``/``or``/``not``, ``x if c else y`` and chained comparisons."""
    return _Expressions().visit(node)
