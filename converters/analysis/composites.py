"""Composite symbols: dict/list items and object attributes (``x['b']``, ``a[i]``,
``self.count``, ``x['a']['b']``) that code assigns, which a tensor-dependent ``if``/loop carries
as state of their own, as AutoGraph's qualified names do.

A target is *trackable* when it is a chain of attributes and subscripts on a name whose keys
are constants or names (AutoGraph's rule): ``d['k']``, ``lst[0]``, ``a[i]``, ``obj.x.y``.
Slices and computed keys (``a[i + 1]``, ``a[1:3]``) are not.

    >>> import gast
    >>> body = gast.parse("x['b'] = 1\\nself.n += 1\\na[i + 1] = 2\\nf = lambda: y.z").body
    >>> [(c.text, sorted(c.support)) for c in modified_composites(body)]
    [("x['b']", ['x']), ('self.n', ['self'])]
    >>> sorted(untracked_subscript_bases(body))
    ['a']
"""
from __future__ import annotations

import ast
import copy
from collections.abc import Iterable
from dataclasses import dataclass

import gast

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef, gast.ListComp,
           gast.SetComp, gast.DictComp, gast.GeneratorExp)


@dataclass(frozen=True)
class Composite:
    """One trackable composite symbol.

    ``text`` is how messages name it (``x['b']``); ``target`` the expression itself (copy it
    before use); ``support`` the plain names it depends on (its base and name keys)."""

    text: str
    target: gast.expr
    support: frozenset

    @property
    def base(self) -> str:
        node = self.target
        while isinstance(node, (gast.Subscript, gast.Attribute)):
            node = node.value
        return node.id

    def parent(self) -> gast.expr:
        """A copy of the expression holding the item or attribute (``x`` for ``x['b']``)."""
        node = copy.deepcopy(self.target.value)
        _set_load(node)
        return node

    def key(self) -> gast.expr:
        """A copy of the subscript key (subscripts only)."""
        node = copy.deepcopy(self.target.slice)
        _set_load(node)
        return node


def _set_load(node: gast.AST) -> None:
    for sub in gast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = gast.Load()


def _support(node: gast.expr) -> frozenset | None:
    """The names a trackable expression depends on, or None when it is not trackable."""
    if isinstance(node, gast.Name):
        return frozenset({node.id})
    if isinstance(node, gast.Attribute):
        return _support(node.value)
    if isinstance(node, gast.Subscript):
        base = _support(node.value)
        key = node.slice
        if base is None:
            return None
        if isinstance(key, gast.Constant) and key.value is not Ellipsis:
            return base
        if isinstance(key, (gast.Name, gast.Attribute)):
            inner = _support(key)
            return None if inner is None else base | inner
    return None


def composite(node: gast.expr) -> Composite | None:
    """The composite symbol ``node`` denotes (a Subscript or Attribute), or None."""
    if not isinstance(node, (gast.Subscript, gast.Attribute)):
        return None
    support = _support(node)
    if support is None:
        return None
    plain = copy.deepcopy(node)
    _set_load(plain)
    text = ast.unparse(gast.gast_to_ast(plain))
    return Composite(text, plain, support)


def _store_targets(stmts: Iterable[gast.AST]) -> list[gast.expr]:
    """Subscripts and attributes that ``stmts`` assign, in source order, outside nested
    scopes (an unpacking target contributes each of its elements)."""
    found: list[gast.expr] = []

    def visit(node: gast.AST) -> None:
        if isinstance(node, _SCOPES):
            return
        if isinstance(node, (gast.Subscript, gast.Attribute)) and \
                isinstance(node.ctx, gast.Store):
            found.append(node)
        for child in gast.iter_child_nodes(node):
            visit(child)

    for s in stmts:
        visit(s)
    return found


def modified_composites(stmts: Iterable[gast.AST]) -> list[Composite]:
    """The trackable composite symbols ``stmts`` assign (each once, in source order)."""
    seen: dict[str, Composite] = {}
    for node in _store_targets(stmts):
        c = composite(node)
        if c is not None and c.text not in seen:
            seen[c.text] = c
    return list(seen.values())


def untracked_subscript_bases(stmts: Iterable[gast.AST]) -> set[str]:
    """Names whose items ``stmts`` assign with keys that cannot be tracked (slices, computed
    keys): the container itself is what changes."""
    out = set()
    for node in _store_targets(stmts):
        if isinstance(node, gast.Subscript) and composite(node) is None:
            base = node.value
            while isinstance(base, (gast.Subscript, gast.Attribute)):
                base = base.value
            if isinstance(base, gast.Name):
                out.add(base.id)
    return out
