"""Activity analysis: names bound and read, scope-aware."""
from __future__ import annotations

import gast
import pytest
from jump_lowering_support import parse_def
from stagecraft.converters.analysis.activity import (
    assigned_names,
    declared,
    free_reads,
    read_names,
)


def _body(source: str) -> list[gast.stmt]:
    return gast.parse(source).body


@pytest.mark.parametrize("source, names", [
    ("x = 1", {"x"}),
    ("a, (b, *c) = t", {"a", "b", "c"}),
    ("[p, q] = t", {"p", "q"}),
    ("x += 1", {"x"}),
    ("x: int = 1", {"x"}),
    ("y: int", {"y"}),
    ("o.attr = 1\nd[k] = 2", set()),
    ("for i, j in z:\n    k = i", {"i", "j", "k"}),
    ("with m as (u, v), n as w:\n    pass", {"u", "v", "w"}),
    ("try:\n    pass\nexcept E as e:\n    f = 1", {"e", "f"}),
    ("import os.path, numpy as np\nfrom m import a, b as c\nfrom n import *",
     {"os", "np", "a", "c"}),
    ("def g(a, b=1):\n    inner = a", {"g"}),
    ("class K(Base):\n    attr = 1\n    def m(self): pass", {"K"}),
    ("h = lambda t: (u := t)", {"h"}),
    ("s = [v for v in r if (w := v)]", {"s"}),
    ("if (n := f()) > 1:\n    m = 2\nelse:\n    o = 3", {"n", "m", "o"}),
    ("while c:\n    d = 1\nelse:\n    e = 2", {"d", "e"}),
    ("del x, y[0]", {"x"}),
    ("global gl\ngl = 1", {"gl"}),
])
def test_assigned_names(source: str, names: set) -> None:
    assert assigned_names(_body(source)) == names


@pytest.mark.parametrize("source, names", [
    ("x = y + z", {"y", "z"}),
    ("x += 1", {"x"}),
    ("o.attr = v\nd[k] = w", {"o", "v", "d", "k", "w"}),
    ("for i in r:\n    s = s + i", {"r", "s", "i"}),
    ("def g(a, b=dflt) -> R:\n    c = a + free\n    return c + b", {"dflt", "R", "free"}),
    ("@deco\ndef g():\n    nonlocal n\n    n = 1", {"deco", "n"}),
    ("def g():\n    global q\n    return q", set()),
    ("def g():\n    def h():\n        return deep + gl\n    gl = 1\n    return h", {"deep"}),
    ("h = lambda t, u=ud: t + u + free", {"ud", "free"}),
    ("s = [v * k for v in r if v > lim]", {"k", "r", "lim"}),
    ("s = {a: b for a, b in pairs for b2 in a}", {"pairs"}),
    ("s = [[w for w in v] for v in r]", {"r"}),
    ("g = (v + first for v in it)", {"it", "first"}),
    ("del x", {"x"}),
    ("with m(a) as t:\n    t.go(b)", {"m", "a", "t", "b"}),
    ("class K(Base):\n    attr = glob\n    def m(self):\n        return other", {"Base", "glob", "other"}),
])
def test_read_names(source: str, names: set) -> None:
    assert read_names(_body(source)) == names


def test_read_names_counts_for_extra_test() -> None:
    (loop,) = _body("for x in xs:\n    pass")
    loop.sc_extra_test = gast.parse("not brk", mode="eval").body
    assert read_names(loop) == {"xs", "brk"}
    assert read_names(gast.parse("x + y", mode="eval").body) == {"x", "y"}


def test_declared_only_own_scope() -> None:
    fn = parse_def("""
        def f():
            global a, b
            if c:
                nonlocal d
            def g():
                global e
                nonlocal h
            class K:
                global k
    """)
    assert declared(fn) == ({"a", "b"}, {"d"})


def test_free_reads_of_a_function() -> None:
    fn = parse_def("""
        def f(a, *args, k=1, **kw):
            global g
            nonlocal n
            b = a + args[0] + kw[k] + outer + g
            n = b
    """)
    assert free_reads(fn) == {"outer", "n"}
