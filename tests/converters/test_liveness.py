"""Liveness over structured code: hand-checked cases, and a soundness property (overwriting
every name that is dead after a statement changes nothing) on random lowered programs."""
from __future__ import annotations

import copy

import gast
from hypothesis import HealthCheck, given, settings
from jump_lowering_support import (
    compile_source,
    compile_tree,
    convert_tree,
    outcome,
    own_statements,
    parse_def,
    programs,
    unparse,
)
from stagecraft.converters.analysis.activity import assigned_names, parameters
from stagecraft.converters.analysis.liveness import analyze, live_after


def _find(fn: gast.FunctionDef, text: str) -> gast.stmt:
    """The statement of ``fn`` whose source starts with ``text``."""
    for s in gast.walk(fn):
        if isinstance(s, gast.stmt) and unparse(s).startswith(text):
            return s
    raise LookupError(text)


def test_straight_line_and_final_return() -> None:
    fn = parse_def("""
        def f(x, y):
            a = x + 1
            b = a * 2
            y = b
            return y
    """)
    live = live_after(fn)
    assert [live[s] for s in fn.body] == [{"a"}, {"b"}, {"y"}, set()]
    info = analyze(fn)
    assert info.live_in[fn.body[0]] == {"x"}  # the parameter y is overwritten before use


def test_if_joins_branches() -> None:
    fn = parse_def("""
        def f(c, a, b):
            if c:
                r = a
            else:
                r = b
                a = 0
            return r + a
    """)
    info = analyze(fn)
    branch = fn.body[0]
    assert info.live_in[branch] == {"c", "a", "b"}
    assert info.live_out[_find(fn, "r = a")] == {"r", "a"}
    assert info.live_out[_find(fn, "a = 0")] == {"r", "a"}
    assert info.live_out[branch] == {"r", "a"}


def test_loop_carried_through_other_branch_of_next_iteration() -> None:
    fn = parse_def("""
        def f(n):
            for i in range(n):
                if i == 0:
                    a = 1
                else:
                    a = a + 1
            return 0
    """)
    info = analyze(fn)
    loop = fn.body[0]
    assert info.loop_head[loop] == {"a"}
    assert info.live_out[_find(fn, "a = 1")] == {"a"}
    assert info.live_out[loop] == set()


def test_while_test_and_body_reads() -> None:
    fn = parse_def("""
        def f(n):
            s = 0
            t = 5
            while n > 0:
                t = n
                s = s + t
                n = n - 1
            return s
    """)
    info = analyze(fn)
    loop = fn.body[2]
    assert info.loop_head[loop] == {"n", "s"}
    assert info.live_out[_find(fn, "t = 5")] == {"n", "s"}
    assert info.live_out[_find(fn, "s = (s + t)")] == {"n", "s"}
    assert info.live_out[loop] == {"s"}


def test_extra_test_is_read_at_the_loop_head() -> None:
    fn = parse_def("""
        def f(xs):
            brk = False
            for x in xs:
                if x:
                    brk = True
            return 1
    """)
    assert "brk" not in live_after(fn)[fn.body[0]]
    fn.body[1].sc_extra_test = gast.parse("not brk", mode="eval").body
    live = live_after(fn)
    assert live[fn.body[0]] == {"xs", "brk"}
    assert live[_find(fn, "brk = True")] == {"brk"}


def test_nested_def_reads_at_definition_and_wherever_it_is_used() -> None:
    fn = parse_def("""
        def f(a, b):
            def g():
                return a + c
            c = 1
            h = lambda: b
            r = g() + h()
            return r
    """)
    live = live_after(fn)
    # g late-binds c: c is live until the last use of g, not just until the def.
    assert live[fn.body[0]] == {"g", "a", "b"}
    assert live[_find(fn, "c = 1")] == {"g", "a", "c", "b"}
    assert live[_find(fn, "h = ")] == {"g", "h", "a", "b", "c"}
    assert live[_find(fn, "r = ")] == {"r"}
    # The nested function's statements are analysed too, as its own function.
    assert live[_find(fn, "return (a + c)")] == set()


def test_globals_and_nonlocals_are_live_at_exit() -> None:
    fn = parse_def("""
        def f():
            global total
            total = 1
            temp = 2
    """)
    live = live_after(fn)
    assert live[fn.body[1]] == {"total"} and live[fn.body[2]] == {"total"}


def test_try_handlers_are_live_throughout_body() -> None:
    fn = parse_def("""
        def f(x):
            a = 1
            try:
                b = x
                a = 2
            except E as e:
                return a + e
            return b
    """)
    live = live_after(fn)
    assert live[_find(fn, "a = 1")] == {"a", "x", "E"}
    assert live[_find(fn, "b = x")] == {"a", "b", "E"}


def test_break_and_continue_before_lowering() -> None:
    fn = parse_def("""
        def f(xs):
            s = 0
            for x in xs:
                if x:
                    continue
                if s:
                    break
                s = s + x
            return s
    """)
    info = analyze(fn)
    assert info.live_in[_find(fn, "continue")] == {"s"}
    assert info.live_in[_find(fn, "break")] == {"s"}
    assert info.loop_head[fn.body[1]] == {"s"}


def _poisoned(fn: gast.FunctionDef, points: dict[int, list[str]]) -> gast.FunctionDef:
    """A copy of ``fn`` that sets the given names to None right after its statements number
    ``i`` (in ``own_statements`` order) for each ``i: names`` of ``points``."""
    fn = copy.deepcopy(fn)
    stmts = list(own_statements(fn.body))
    for index, names in points.items():
        target = stmts[index]
        poison = [gast.Assign([gast.Name(n, gast.Store(), None, None)],
                              gast.Constant(None, None), None) for n in sorted(names)]
        for s in [fn] + stmts:
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if isinstance(block, list) and any(b is target for b in block):
                    at = next(i for i, b in enumerate(block) if b is target)
                    block[at + 1:at + 1] = poison
    return fn


_INPUTS = [(x, y) for x in (-3, 0, 2, 5) for y in (-1, 0, 3)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=programs())
def test_dead_names_can_be_overwritten(source: str) -> None:
    # Overwriting a dead name never changes the result, even at every point at once.
    original = compile_source(source)
    fn = convert_tree(gast.parse(source).body[0])
    live = live_after(fn)
    local = assigned_names(fn.body) | parameters(fn)
    expected = [outcome(original, x, y) for x, y in _INPUTS]
    points = {i: sorted(local - live[s]) for i, s in enumerate(own_statements(fn.body))
              if not isinstance(s, gast.Return) and local - live[s]}
    f = compile_tree(_poisoned(fn, points), owned=True)
    if [outcome(f, x, y) for x, y in _INPUTS] == expected:
        return
    stmts = list(own_statements(fn.body))
    for index, dead in points.items():  # find the statement with the wrong dead set
        f = compile_tree(_poisoned(fn, {index: dead}), owned=True)
        got = [outcome(f, x, y) for x, y in _INPUTS]
        assert got == expected, (unparse(stmts[index]), dead, unparse(fn))
    raise AssertionError(("only the combination fails", unparse(fn)))
