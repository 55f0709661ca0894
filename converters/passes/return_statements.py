"""Lowers ``return`` statements to a single exit: a ``do_return`` flag, a ``retval`` variable
and one final ``return retval``."""
from __future__ import annotations

import gast

from ..context import RUNTIME, Context
from ..templates import template
from .break_statements import (
    _LOOPS,
    _SCOPES,
    and_not_flag,
    block_fields,
    guarded,
    located,
    set_extra_test,
)

_FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef)
RETURN_VALUES = "return_values"  # ctx.notes key: the generated return-value variables


def _own_returns(stmts: list[gast.stmt]) -> list[gast.Return]:
    found: list[gast.Return] = []
    for s in stmts:
        if isinstance(s, gast.Return):
            found.append(s)
        for block in block_fields(s, loops=False):
            found += _own_returns(block)
    return found


def _nested_functions(stmts: list[gast.stmt]) -> list[gast.FunctionDef]:
    """Functions defined in this scope (methods of classes defined here included)."""
    found: list[gast.FunctionDef] = []
    for s in stmts:
        if isinstance(s, _FUNCTIONS):
            found.append(s)
        elif isinstance(s, gast.ClassDef):
            found += _nested_functions(s.body)
        else:
            for block in block_fields(s, loops=False):
                found += _nested_functions(block)
    return found


def _definitely_returns(stmts: list[gast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, gast.Return):
        return True
    return (isinstance(last, gast.If) and _definitely_returns(last.body)
            and _definitely_returns(last.orelse))


def _hoist(stmts: list[gast.stmt], done: int = 0) -> list[gast.stmt]:
    """When one branch of an ``if`` always returns, moves the statements after the ``if``
    into its other branch (so both branches assign the return value, which staged
    conditionals need), and drops statements that can never run. The first ``done``
    statements were already processed."""
    out: list[gast.stmt] = []
    for i, s in enumerate(stmts):
        if i >= done:
            for block in block_fields(s, loops=False):
                block[:] = _hoist(block)
        out.append(s)
        if isinstance(s, gast.Return):
            return out
        if isinstance(s, gast.If):
            in_body, in_else = _definitely_returns(s.body), _definitely_returns(s.orelse)
            if in_body and in_else:
                return out
            rest = stmts[i + 1:]
            if (in_body or in_else) and rest:
                branch = s.orelse if in_body else s.body
                branch[:] = _hoist(branch + rest, done=len(branch))
                return out
    return out


class _ReturnLowering:
    def __init__(self, ctx: Context, do_return: str, retval: str):
        self.ctx = ctx
        self.do_return = do_return
        self.retval = retval

    def assign(self, ret: gast.Return) -> list[gast.stmt]:
        # The value first: if evaluating it raises (and a `try` here catches that), the
        # function has not returned.
        value = ret.value if ret.value is not None else gast.Constant(None, None)
        stmts = located(template("retval = value\ndo_return = True", retval=self.retval,
                                 do_return=self.do_return), ret)
        stmts[0].value = value
        return stmts

    def block(self, stmts: list[gast.stmt]) -> tuple[list[gast.stmt], bool]:
        out: list[gast.stmt] = []
        for i, s in enumerate(stmts):
            if isinstance(s, gast.Return):
                out.extend(self.assign(s))
                return out, True  # anything after it is unreachable
            may_return = self.inner(s)
            out.append(s)
            if may_return:
                rest, _ = self.block(stmts[i + 1:])
                if rest:
                    out.append(guarded(self.do_return, rest))
                return out, True
        return out, False

    def inner(self, s: gast.stmt) -> bool:
        if isinstance(s, _SCOPES):
            return False
        if isinstance(s, _LOOPS):
            s.body, in_body = self.block(s.body)
            s.orelse, in_else = self.block(s.orelse)
            if in_body:
                if isinstance(s, gast.While):
                    s.test = and_not_flag(self.do_return, s.test, s.test)
                else:
                    set_extra_test(s, self.do_return)
                if s.orelse:  # the loop may end because of the flag: not a normal exit
                    s.orelse = [guarded(self.do_return, s.orelse)]
            return in_body or in_else
        may_return = False
        for block in block_fields(s, loops=False):
            new, returned = self.block(block)
            block[:] = new
            may_return = may_return or returned
        return may_return


def _drop_assignments(stmts: list[gast.stmt], name: str) -> list[gast.stmt]:
    out = []
    for s in stmts:
        if (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id == name):
            continue
        for block in block_fields(s, loops=False):
            block[:] = _drop_assignments(block, name)
        out.append(s)
    return out


def _convert_function(fn: gast.FunctionDef, ctx: Context) -> None:
    for nested in _nested_functions(fn.body):
        _convert_function(nested, ctx)
    returns = _own_returns(fn.body)
    if not returns or returns == [fn.body[-1]]:
        return  # keep simple functions simple
    body = list(fn.body)
    doc: list[gast.stmt] = []
    if (isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant)
            and isinstance(body[0].value.value, str)):
        doc, body = body[:1], body[1:]
    if not _definitely_returns(body):
        # Falling off the end returns None: say so, so that every path sets the return value.
        (implicit,) = located(template("return None"), body[-1])
        body.append(implicit)
    do_return, retval = ctx.namer.new("do_return"), ctx.namer.new("retval")
    ctx.notes.setdefault(RETURN_VALUES, set()).add(retval)
    body = _hoist(body)
    body, _ = _ReturnLowering(ctx, do_return, retval).block(body)
    if not any(isinstance(n, gast.Name) and n.id == do_return and isinstance(n.ctx, gast.Load)
               for s in body for n in gast.walk(s)):
        body = _drop_assignments(body, do_return)  # nothing tests the flag
        prefix = []
    else:
        prefix = template("do_return = False", do_return=do_return)
    prefix += template("retval = runtime.UndefinedReturnValue()", retval=retval,
                       runtime=RUNTIME)
    located(prefix, fn.body[0])
    final = located(template("return retval", retval=retval), fn.body[-1])
    fn.body = doc + prefix + body + final


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Gives ``node`` (and each nested function, as its own function) a single exit.

    ``do_return = False; retval = sc__.UndefinedReturnValue()`` first; ``return x`` becomes
    ``retval = x; do_return = True``; whatever follows a statement that may have returned is
    guarded by ``if not do_return:``; a loop that may return gets ``not do_return and <test>``
    (``while``) or ``not do_return`` in front of its ``sc_extra_test`` (``for``); the body
    ends with ``return retval``. When one branch of an ``if`` always returns, the statements
    after the ``if`` move into the other branch, and a function that may fall off its end
    gets an explicit ``return None``, so every path assigns ``retval``. A ``do_return`` that
    nothing tests is left out. A function whose only return is its last statement is
    unchanged.

        >>> import gast, astunparse
        >>> from stagecraft.converters.context import Context, Namer
        >>> fn = gast.parse('''
        ... def f(x):
        ...     if x > 0:
        ...         return x
        ...     return -x
        ... ''').body[0]
        >>> fn = convert(fn, Context("<doc>", "f", Namer.for_tree(fn)))
        >>> print(astunparse.unparse(gast.gast_to_ast(fn)).strip())
        def f(x):
            retval = sc__.UndefinedReturnValue()
            if (x > 0):
                retval = x
            else:
                retval = (- x)
            return retval
    """
    _convert_function(node, ctx)
    return node
