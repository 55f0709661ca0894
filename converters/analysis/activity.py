"""Activity analysis: which names a piece of gast code binds and reads, scope-aware
(nested functions, lambdas, classes and comprehensions are their own scopes).

    >>> import gast
    >>> body = gast.parse("a, b = f(x)\\nfor i in r: c += i\\ng = lambda t: t + y").body
    >>> sorted(assigned_names(body))
    ['a', 'b', 'c', 'g', 'i']
    >>> sorted(read_names(body))
    ['c', 'f', 'i', 'r', 'x', 'y']
"""
from __future__ import annotations

from collections.abc import Iterable

import gast

Code = gast.AST | Iterable[gast.AST]

_FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef)
_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _nodes(code: Code) -> list[gast.AST]:
    return [code] if isinstance(code, gast.AST) else list(code)


def _visit_args_outer(visitor: gast.NodeVisitor, args: gast.arguments) -> None:
    """The parts of a signature evaluated in the enclosing scope: defaults and annotations."""
    for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
        visitor.visit(d)
    for a in _params_nodes(args):
        if a.annotation is not None:
            visitor.visit(a.annotation)


def _params_nodes(args: gast.arguments) -> list[gast.Name]:
    nodes = list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)
    nodes += [a for a in (args.vararg, args.kwarg) if a is not None]
    return nodes


def parameters(fn: gast.FunctionDef | gast.Lambda) -> set[str]:
    """The names of ``fn``'s parameters."""
    return {a.id for a in _params_nodes(fn.args)}


class _Binder(gast.NodeVisitor):
    """Collects the names bound in the current scope (never inside nested scopes)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.walrus: set[str] = set()

    def visit_Name(self, node: gast.Name) -> None:
        if isinstance(node.ctx, (gast.Store, gast.Del)):
            self.names.add(node.id)

    def visit_NamedExpr(self, node: gast.NamedExpr) -> None:
        self.walrus.add(node.target.id)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: gast.FunctionDef) -> None:
        self.names.add(node.name)
        for d in node.decorator_list:
            self.visit(d)
        _visit_args_outer(self, node.args)
        if node.returns is not None:
            self.visit(node.returns)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: gast.Lambda) -> None:
        _visit_args_outer(self, node.args)

    def visit_ClassDef(self, node: gast.ClassDef) -> None:
        self.names.add(node.name)
        for n in list(node.bases) + list(node.keywords) + list(node.decorator_list):
            self.visit(n)

    def _comprehension(self, node: gast.AST) -> None:
        self.visit(node.generators[0].iter)  # the only part evaluated in the enclosing scope

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_alias(self, node: gast.alias) -> None:
        if node.name != "*":
            self.names.add(node.asname or node.name.split(".")[0])

    def visit_MatchAs(self, node: gast.AST) -> None:
        if node.name:
            self.names.add(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node: gast.AST) -> None:
        if node.rest:
            self.names.add(node.rest)
        self.generic_visit(node)


def assigned_names(stmts: Code) -> set[str]:
    """Names bound by ``stmts`` in their own scope: assignment targets (also augmented,
    annotated, unpacking and walrus), ``for`` targets, ``with ... as``, ``except ... as``,
    imports, ``del`` targets and the names of nested ``def``/``class``; nothing bound inside
    nested functions, lambdas, classes or comprehensions."""
    binder = _Binder()
    for n in _nodes(stmts):
        binder.visit(n)
    return binder.names


def walrus_names(stmts: Code) -> set[str]:
    """Names bound by ``:=`` in ``stmts`` (bound only if that part of an expression runs)."""
    binder = _Binder()
    for n in _nodes(stmts):
        binder.visit(n)
    return binder.walrus


class _Reader(gast.NodeVisitor):
    """Collects the names whose current binding the code reads."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: gast.Name) -> None:
        # ``del x`` needs x bound, so it counts as a use of the binding.
        if isinstance(node.ctx, (gast.Load, gast.Del)):
            self.names.add(node.id)
        if node.annotation is not None:
            self.visit(node.annotation)

    def visit_AugAssign(self, node: gast.AugAssign) -> None:
        if isinstance(node.target, gast.Name):
            self.names.add(node.target.id)
        self.generic_visit(node)

    def visit_For(self, node: gast.For) -> None:
        self.generic_visit(node)
        extra = getattr(node, "sc_extra_test", None)  # set by the break/return passes
        if extra is not None:
            self.visit(extra)

    visit_AsyncFor = visit_For

    def visit_FunctionDef(self, node: gast.FunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        _visit_args_outer(self, node.args)
        if node.returns is not None:
            self.visit(node.returns)
        self.names |= free_reads(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: gast.Lambda) -> None:
        _visit_args_outer(self, node.args)
        self.names |= free_reads(node)

    def visit_ClassDef(self, node: gast.ClassDef) -> None:
        for n in list(node.bases) + list(node.keywords) + list(node.decorator_list):
            self.visit(n)
        # Conservative: a class body's reads all count (even of names the body binds first).
        self.names |= read_names(node.body)

    def _comprehension(self, node: gast.AST) -> None:
        first, *rest = node.generators
        self.visit(first.iter)
        inner = _Reader()
        for part in [first.target, *first.ifs]:
            inner.visit(part)
        for gen in rest:
            for part in [gen.target, gen.iter, *gen.ifs]:
                inner.visit(part)
        for part in ([node.key, node.value] if isinstance(node, gast.DictComp) else [node.elt]):
            inner.visit(part)
        bound = assigned_names([g.target for g in node.generators])
        self.names |= inner.names - bound

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def read_names(node_or_stmts: Code) -> set[str]:
    """Names read by the code: ``Name`` loads (and the target of ``x += ...``, ``del x``), plus
    the free names of nested functions, lambdas and comprehensions (read where they are
    defined), excluding the names those nested scopes bind themselves. A ``for`` node's
    ``sc_extra_test`` counts as part of the loop."""
    reader = _Reader()
    for n in _nodes(node_or_stmts):
        reader.visit(n)
    return reader.names


def free_reads(fn: gast.FunctionDef | gast.AsyncFunctionDef | gast.Lambda) -> set[str]:
    """Names of the enclosing scopes that the body of ``fn`` reads (``nonlocal`` names
    included, ``global`` names excluded); decorators and defaults are not part of it."""
    if isinstance(fn, gast.Lambda):
        return read_names(fn.body) - parameters(fn)
    globals_, nonlocals = declared(fn)
    local = (parameters(fn) | assigned_names(fn.body)) - nonlocals
    return ((read_names(fn.body) | nonlocals) - local) - globals_


def declared(fn: gast.FunctionDef | gast.AsyncFunctionDef) -> tuple[set[str], set[str]]:
    """The names ``fn`` itself declares ``global`` and ``nonlocal`` (not its nested
    functions)."""
    globals_: set[str] = set()
    nonlocals: set[str] = set()
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, gast.Global):
            globals_.update(node.names)
        elif isinstance(node, gast.Nonlocal):
            nonlocals.update(node.names)
        elif isinstance(node, (*_FUNCTIONS, gast.ClassDef, gast.Lambda)):
            continue
        else:
            todo.extend(gast.iter_child_nodes(node))
    return globals_, nonlocals
