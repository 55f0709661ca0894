"""Code templates: Python source with placeholder names replaced by AST nodes.

    >>> import gast
    >>> x = gast.Name("x", gast.Load(), None, None)
    >>> stmts = template("target = value + 1", target="y", value=x)
    >>> import astunparse
    >>> astunparse.unparse(gast.gast_to_ast(gast.Module(stmts, []))).strip()
    'y = (x + 1)'
"""
from __future__ import annotations

import copy
import textwrap
from typing import Any, Sequence

import gast


def _as_node(value: Any, ctx: Any) -> Any:
    if isinstance(value, str):
        return gast.Name(value, ctx, None, None)
    if isinstance(value, gast.AST):
        node = copy.deepcopy(value)
        if isinstance(node, (gast.Name, gast.Attribute, gast.Subscript, gast.Starred)):
            node.ctx = ctx
        elif isinstance(node, (gast.Tuple, gast.List)):
            node.ctx = ctx
            node.elts = [_as_node(e, ctx) for e in node.elts]
        return node
    return value


class _Replacer(gast.NodeTransformer):
    def __init__(self, replacements: dict):
        self.replacements = replacements

    def visit_Name(self, node: gast.Name) -> Any:
        if node.id not in self.replacements:
            return node
        value = self.replacements[node.id]
        if isinstance(value, (list, tuple)) and not isinstance(value, gast.AST):
            return value  # a statement list placeholder, handled in visit_Expr
        return _as_node(value, node.ctx)

    def visit_Expr(self, node: gast.Expr) -> Any:
        if isinstance(node.value, gast.Name) and node.value.id in self.replacements:
            value = self.replacements[node.value.id]
            if isinstance(value, (list, tuple)):
                return [copy.deepcopy(s) for s in value]  # a block of statements
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: gast.FunctionDef) -> Any:
        if node.name in self.replacements and isinstance(self.replacements[node.name], str):
            node.name = self.replacements[node.name]
        return self.generic_visit(node)

    def visit_Nonlocal(self, node: gast.Nonlocal) -> Any:
        names = []
        for n in node.names:
            value = self.replacements.get(n, n)
            names.extend(value if isinstance(value, (list, tuple)) else [value])
        if not names:
            return None
        node.names = list(names)
        return node


def template(source: str, **replacements: Any) -> list[gast.stmt]:
    """Parses ``source`` and substitutes each placeholder name: a str becomes a Name, an AST
    node is copied in (with Load/Store fixed for its position), a list of statements replaces
    a placeholder that stands alone as a statement; in ``nonlocal`` a list of names."""
    tree = gast.parse(textwrap.dedent(source))
    strip_locations(tree)  # the template's own line numbers mean nothing in the user's file
    tree = _Replacer(replacements).visit(tree)
    return list(tree.body)


_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def strip_locations(tree: gast.AST) -> gast.AST:
    for node in gast.walk(tree):
        for attr in _LOCATION:
            if attr in getattr(node, "_attributes", ()) and hasattr(node, attr):
                delattr(node, attr)
    return tree


def template_expr(source: str, **replacements: Any) -> gast.expr:
    """Like ``template`` for a single expression."""
    (stmt,) = template(source, **replacements)
    return stmt.value


def copy_location(nodes: Sequence[gast.AST] | gast.AST, origin: gast.AST) -> Any:
    """Gives every node without a location the location of ``origin`` (so errors raised in
    generated code point at the user's line)."""
    # Generated code sits on the origin's first line only: spanning the origin's lines would
    # let Python 3.11+ report a multi-line statement's generated call (sc__.if_stmt(...)) at
    # its last line.
    line, col = getattr(origin, "lineno", None), getattr(origin, "col_offset", None)
    where = {"lineno": line, "col_offset": col, "end_lineno": line, "end_col_offset": col}
    if getattr(origin, "end_lineno", None) == line:
        where["end_col_offset"] = getattr(origin, "end_col_offset", col)
    items = nodes if isinstance(nodes, (list, tuple)) else [nodes]
    for n in items:
        for sub in gast.walk(n):
            for attr in _LOCATION:
                if attr in getattr(sub, "_attributes", ()) and getattr(sub, attr, None) is None:
                    setattr(sub, attr, where[attr])
    return nodes
