"""Liveness: for every statement of a function, the names that may be read after it runs.

A backward may-analysis over the structured AST (no CFG): ``if`` joins its branches, loops
iterate to a fixpoint at their head (test or ``sc_extra_test``, next-iteration reads),
``try`` makes its handlers live throughout its body. Written for the jump-free code that
break/continue/return lowering produces, it also handles ``break``/``continue``/``return``.

    >>> import gast
    >>> fn = gast.parse('''
    ... def f(n):
    ...     s = 0
    ...     for i in range(n):
    ...         t = 2 * i
    ...         s = s + t
    ...     return s
    ... ''').body[0]
    >>> info = analyze(fn)
    >>> loop = fn.body[1]
    >>> sorted(info.live_out[fn.body[0]]), sorted(info.loop_head[loop]), sorted(info.live_out[loop])
    (['n', 'range', 's'], ['s'], ['s'])
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import gast

from .activity import assigned_names, declared, free_reads, read_names, walrus_names

Names = set[str]


@dataclass
class Liveness:
    """Side table of one analysis run (recompute after any rewrite).

    ``live_in[s]``: names that may be read from the point just before ``s`` runs;
    ``live_out[s]``: names that may be read after ``s`` completes normally;
    ``loop_head[loop]``: names live at the head of each iteration (before the ``while`` test,
    or before the ``for`` loop's extra test and next-element fetch): what a staged loop must
    carry, together with ``live_out``."""

    live_in: dict[gast.stmt, Names] = field(default_factory=dict)
    live_out: dict[gast.stmt, Names] = field(default_factory=dict)
    loop_head: dict[gast.stmt, Names] = field(default_factory=dict)


def analyze(fn: gast.FunctionDef) -> Liveness:
    """Liveness for every statement of ``fn`` at any nesting depth, including the statements
    of nested functions (each analysed as its own function)."""
    result = Liveness()
    for node in gast.walk(fn):
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            _FunctionLiveness(node, result).run()
    return result


def live_after(fn: gast.FunctionDef) -> dict[gast.stmt, Names]:
    """For every statement of ``fn`` (any depth), the names that may be read after it."""
    return analyze(fn).live_out


def _local_functions(fn: gast.FunctionDef) -> dict[str, Names]:
    """Local names bound to a def/lambda/class of ``fn`` -> the names that calling it reads."""
    found: dict[str, Names] = {}
    todo: list[gast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            found.setdefault(node.name, set()).update(free_reads(node))
            continue
        if isinstance(node, gast.ClassDef):
            found.setdefault(node.name, set()).update(read_names(node.body))
            continue
        if isinstance(node, gast.Assign) and isinstance(node.value, gast.Lambda):
            for t in node.targets:
                if isinstance(t, gast.Name):
                    found.setdefault(t.id, set()).update(free_reads(node.value))
        if isinstance(node, gast.Lambda):
            continue
        todo.extend(gast.iter_child_nodes(node))
    return found


class _FunctionLiveness:
    def __init__(self, fn: gast.FunctionDef, result: Liveness):
        self.fn = fn
        self.result = result
        globals_, nonlocals = declared(fn)
        self.exit_live: Names = globals_ | nonlocals  # may be read once the function returns
        self.local_fns = _local_functions(fn)
        self.loops: list[tuple[Names, Names]] = []  # (break target, continue target)
        self.raises: list[Names] = []  # live at the innermost enclosing handler

    def run(self) -> None:
        self.block(self.fn.body, set(self.exit_live))

    # A read of a local function's name is a read of everything calling it reads: closures
    # bind late, so `def g(): return a` makes `a` live wherever `g` is.
    def gen(self, code: gast.AST | Iterable[gast.AST] | None) -> Names:
        if code is None:
            return set()
        names = read_names(code)
        todo = [n for n in names if n in self.local_fns]
        while todo:
            for extra in self.local_fns[todo.pop()] - names:
                names.add(extra)
                if extra in self.local_fns:
                    todo.append(extra)
        return names

    def block(self, stmts: list[gast.stmt], out: Names) -> Names:
        for s in reversed(stmts):
            self.result.live_out[s] = set(out)
            live = self.stmt(s, out)
            if self.raises:
                live = live | self.raises[-1]
            self.result.live_in[s] = set(live)
            out = live
        return set(out)

    def stmt(self, s: gast.stmt, out: Names) -> Names:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is not None:
            return method(s, out)
        kill = assigned_names(s) - walrus_names(s)
        return self.gen(s) | (out - kill)

    def stmt_Return(self, s: gast.Return, out: Names) -> Names:
        return self.gen(s.value) | self.exit_live

    def stmt_Raise(self, s: gast.Raise, out: Names) -> Names:
        target = self.raises[-1] if self.raises else self.exit_live
        return self.gen([n for n in (s.exc, s.cause) if n is not None]) | target

    def stmt_Break(self, s: gast.Break, out: Names) -> Names:
        return set(self.loops[-1][0]) if self.loops else set(out)

    def stmt_Continue(self, s: gast.Continue, out: Names) -> Names:
        return set(self.loops[-1][1]) if self.loops else set(out)

    def stmt_If(self, s: gast.If, out: Names) -> Names:
        return self.gen(s.test) | self.block(s.body, out) | self.block(s.orelse, out)

    def stmt_While(self, s: gast.While, out: Names) -> Names:
        orelse_in = self.block(s.orelse, out)
        test = self.gen(s.test)
        head: Names = set()
        while True:
            self.loops.append((out, head))
            body_in = self.block(s.body, head)
            self.loops.pop()
            new = test | body_in | orelse_in
            if new == head:
                break
            head = new
        self.result.loop_head[s] = set(head)
        return set(head)

    def stmt_For(self, s: gast.For, out: Names) -> Names:
        orelse_in = self.block(s.orelse, out)
        extra = getattr(s, "sc_extra_test", None)
        # The target's own reads (`for a[i] in ...` reads a and i) happen at each fetch.
        target_gen = self.gen(s.target)
        target_kill = assigned_names(s.target)
        fixed = target_gen | orelse_in
        if extra is not None:
            fixed |= self.gen(extra) | out  # a false extra test ends the loop like a break
        head: Names = set()
        while True:
            self.loops.append((out, head))
            body_in = self.block(s.body, head)
            self.loops.pop()
            new = fixed | (body_in - target_kill)
            if new == head:
                break
            head = new
        self.result.loop_head[s] = set(head)
        return self.gen(s.iter) | head

    stmt_AsyncFor = stmt_For

    def stmt_With(self, s: gast.With, out: Names) -> Names:
        items = [i.context_expr for i in s.items]
        targets = [i.optional_vars for i in s.items if i.optional_vars is not None]
        body_in = self.block(s.body, out)
        return self.gen(items) | self.gen(targets) | (body_in - assigned_names(targets))

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, s: gast.Try, out: Names) -> Names:
        outer_raise = self.raises[-1] if self.raises else self.exit_live
        after = out
        if s.finalbody:
            # Reached normally and by exceptions that then propagate further.
            after = self.block(s.finalbody, out | outer_raise)
        caught: Names = set(after) if s.finalbody else set()
        for h in s.handlers:
            h_in = self.block(h.body, after)
            if h.name is not None:
                h_in -= assigned_names(h.name)
            caught |= self.gen(h.type) | h_in
        orelse_in = self.block(s.orelse, after)
        self.raises.append(caught | outer_raise)  # handlers may not match
        body_in = self.block(s.body, orelse_in)
        self.raises.pop()
        return body_in | caught

    stmt_TryStar = stmt_Try

    def stmt_Match(self, s: gast.AST, out: Names) -> Names:
        live = self.gen(s.subject) | out  # no case may match
        for case in s.cases:
            body_in = self.block(case.body, out) - assigned_names(case.pattern)
            live |= self.gen(case.pattern) | self.gen(case.guard) | body_in
        return live
