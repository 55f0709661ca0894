"""The control-flow pass alone: exact output for small snippets (if/while/for become operator
calls over body functions with explicit carried state)."""
from __future__ import annotations

import gast

from pass_snippets import after, convert_one, expect
from stagecraft.converters.passes import control_flow


def test_if_carries_the_modified_live_variable():
    assert after(control_flow, """
        def f(x):
            y = 0
            if x > 0:
                y = x
            return y
    """) == expect("""
        def f(x):
            y = sc__.Undefined('y')
            y = 0

            def if_body():
                nonlocal y
                y = x

            def else_body():
                nonlocal y
                pass

            def get_state():
                return (y,)

            def set_state(vars_):
                nonlocal y
                (y,) = vars_
            sc__.if_stmt((x > 0), if_body, else_body, get_state, set_state, ('y',), 'f.py:4')
            return y
    """)


def test_branch_locals_not_used_after_are_not_carried():
    assert after(control_flow, """
        def f(x):
            if x > 0:
                tmp = 1
            else:
                tmp = 2
            return x
    """) == expect("""
        def f(x):
            tmp = sc__.Undefined('tmp')

            def if_body():
                nonlocal tmp
                tmp = 1

            def else_body():
                nonlocal tmp
                tmp = 2

            def get_state():
                return ()

            def set_state(vars_):
                pass
            sc__.if_stmt((x > 0), if_body, else_body, get_state, set_state, (), 'f.py:3')
            return x
    """)


def test_while_carries_loop_head_reads_not_temporaries():
    assert after(control_flow, """
        def f(n):
            s = 0
            i = 0
            while i < n:
                t = i * 2
                s = s + t
                i += 1
            return s
    """) == expect("""
        def f(n):
            i = sc__.Undefined('i')
            s = sc__.Undefined('s')
            t = sc__.Undefined('t')
            s = 0
            i = 0

            def loop_test():
                return (i < n)

            def loop_body():
                nonlocal i, s, t
                t = (i * 2)
                s = (s + t)
                i += 1

            def get_state():
                return (i, s)

            def set_state(vars_):
                nonlocal i, s
                (i, s) = vars_
            sc__.while_stmt(loop_test, loop_body, get_state, set_state, ('i', 's'), 'f.py:5')
            return s
    """)


def test_for_iterate_is_not_carried_unless_used_after():
    assert after(control_flow, """
        def f(xs):
            s = 0
            for x in xs:
                s += x
            return s
    """) == expect("""
        def f(xs):
            s = sc__.Undefined('s')
            x = sc__.Undefined('x')
            s = 0

            def loop_body(itr):
                nonlocal s, x
                x = itr
                s += x

            def get_state():
                return (s,)

            def set_state(vars_):
                nonlocal s
                (s,) = vars_
            sc__.for_stmt(xs, None, loop_body, get_state, set_state, ('s',), 'f.py:4')
            return s
    """)
    out = after(control_flow, """
        def f(xs):
            for x in xs:
                pass
            return x
    """)
    assert "sc__.for_stmt(xs, None, loop_body, get_state, set_state, ('x',), 'f.py:3')" in out


def test_item_assignment_carries_the_item_as_a_composite_symbol():
    out = after(control_flow, """
        def f(x):
            d = {}
            if x > 0:
                d['k'] = x
            return d
    """)
    assert "sc__.if_stmt((x > 0), if_body, else_body, get_state, set_state, (\"d['k']\",), " \
        "'f.py:4')" in out
    assert "sc__.ldu((lambda : d['k']), \"d['k']\")" in out
    assert "sc__.set_item((lambda : d), 'k', composite)" in out
    assert "nonlocal d" not in out


def test_item_assignment_with_a_computed_key_carries_the_container():
    out = after(control_flow, """
        def f(x, i):
            d = [0, 0]
            if x > 0:
                d[i + 1] = x
            return d
    """)
    assert "set_state, ('d',), 'f.py:4')" in out


def test_global_container_items_are_composites_without_nonlocal():
    out = after(control_flow, """
        def f(x):
            if x > 0:
                CACHE['k'] = x
                LOG.append(x)
            return x
    """)
    assert "nonlocal" not in out
    assert "(\"CACHE['k']\",)" in out


def test_attribute_assignment_is_a_composite_symbol():
    out = after(control_flow, """
        def f(self, x):
            while x > 0:
                self.count = self.count + 1
                x = x - 1
            return x
    """)
    assert "('x', 'self.count')" in out
    assert "sc__.set_attr((lambda : self), 'count', composite)" in out


def test_items_of_a_container_made_in_the_block_are_not_state():
    out = after(control_flow, """
        def f(x):
            if x > 0:
                d = {}
                d['k'] = x
            else:
                d = {'k': x}
            return d
    """)
    assert "('d',)" in out


def test_variable_read_by_other_branch_but_dead_after_is_restored():
    out = after(control_flow, """
        def f(x):
            flag = False
            if x > 0:
                flag = True
            else:
                while not flag:
                    flag = True
            return x
    """)
    assert "set_state_1, (), 'f.py:4', restore=('flag',))" in out


def test_nested_statements_and_functions_are_converted():
    fn = convert_one(control_flow, """
        def f(x):
            def g(y):
                if y > 0:
                    y = -y
                return y
            while x > 0:
                if x > 5:
                    x = x - 2
                x = x - 1
            return g(x)
    """)
    calls = [n.func.attr for n in gast.walk(fn) if isinstance(n, gast.Call)
             and isinstance(n.func, gast.Attribute)]
    assert sorted(calls) == ["Undefined", "if_stmt", "if_stmt", "while_stmt"]


def test_every_local_starts_undefined_but_not_params_or_globals():
    out = after(control_flow, """
        def f(x, *args, **kw):
            global G
            G = 1
            a = x
            for b in args:
                a = b
            return a
    """)
    assert out.splitlines()[1:3] == ["    a = sc__.Undefined('a')", "    b = sc__.Undefined('b')"]
    assert "Undefined('G')" not in out and "Undefined('x')" not in out
