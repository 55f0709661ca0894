"""Random programs (nested if/while/for with break/continue/return over ints or floats, with
bounded loops): called as plain Python on Python numbers and staged with ``tf.function`` on
tensors, they must return the same values.

Converted functions need source, so each program is written to a .py file and imported.
Float programs use small multiples of 1/4 and only + and -, so float32 and Python floats
agree exactly and no comparison can flip on rounding."""
from __future__ import annotations

import importlib.util
import itertools
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import stagecraft as tf

VARS = ("a", "b", "c")
_counter = itertools.count()


class _Gen:
    """Draws one program's statements; ``loops`` numbers the loop counters."""

    def __init__(self, draw, floats: bool):
        self.draw, self.floats, self.loops = draw, floats, 0

    def const(self) -> str:
        if self.floats:
            return repr(self.draw(st.integers(-8, 8)) / 4)
        return str(self.draw(st.integers(-5, 5)))

    def operand(self) -> str:
        return self.draw(st.sampled_from(VARS + ("x", "y")))

    def assign(self, in_loop_vars: tuple) -> str:
        target = self.draw(st.sampled_from(VARS))
        src = self.draw(st.sampled_from(VARS + ("x", "y") + in_loop_vars))
        if self.floats:  # exact in float32: small multiples of 1/4, no products
            form = self.draw(st.integers(0, 3))
            if form == 0:
                return f"{target} = {target} + {self.const()}"
            if form == 1:
                return f"{target} = {src} - {target}"
            if form == 2:
                return f"{target} = {src} + {self.const()}"
            return f"{target} = {self.const()}"
        form = self.draw(st.integers(0, 3))
        if form == 0:
            return f"{target} = ({target} + {src} * {self.const()}) % 97"
        if form == 1:
            return f"{target} = ({target} - {src} + {self.const()}) % 89"
        if form == 2:
            return f"{target} += {src} % 5"
        return f"{target} = {self.const()}"

    def cond(self, in_loop_vars: tuple) -> str:
        v = self.draw(st.sampled_from(VARS + ("x", "y") + in_loop_vars))
        op = self.draw(st.sampled_from([">", "<", ">=", "==", "!="]))
        simple = f"{v} {op} {self.const()}"
        form = self.draw(st.integers(0, 4))
        if form == 0:
            return f"{simple} and {self.operand()} < {self.const()}"
        if form == 1:
            return f"not ({simple}) or {self.operand()} > {self.const()}"
        if form == 2 and not self.floats:
            return f"{v} % 2 == 0"
        return simple

    def block(self, depth: int, loop_vars: tuple, in_loop: bool) -> list[str]:
        n = self.draw(st.integers(1, 3))
        return [line for _ in range(n) for line in self.stmt(depth, loop_vars, in_loop)]

    def stmt(self, depth: int, loop_vars: tuple, in_loop: bool) -> list[str]:
        kinds = ["assign", "assign"]
        if depth < 2:
            kinds += ["if", "while", "for"]
        if in_loop:
            kinds += ["break", "continue"]
        kinds += ["return"]
        kind = self.draw(st.sampled_from(kinds))
        if kind == "assign":
            return [self.assign(loop_vars)]
        if kind in ("break", "continue"):
            return [f"if {self.cond(loop_vars)}:", f"    {kind}"]
        if kind == "return":
            return [f"if {self.cond(loop_vars)}:", "    return a, b, c"]
        if kind == "if":
            out = [f"if {self.cond(loop_vars)}:"]
            out += ["    " + s for s in self.block(depth + 1, loop_vars, in_loop)]
            if self.draw(st.booleans()):
                out += ["else:"] + ["    " + s for s in self.block(depth + 1, loop_vars,
                                                                  in_loop)]
            return out
        k = self.loops
        self.loops += 1
        if kind == "while":
            counter = f"k{k}"
            # the bound depends on an input, so with tensor inputs the loop is staged
            bound = self.draw(st.sampled_from(["3", "x % 3 + 1" if not self.floats else "2",
                                               "y % 4" if not self.floats else "1"]))
            # (float programs do not read the int counters: int32 + float32 does not stage)
            inner = loop_vars if self.floats else loop_vars + (counter,)
            body = [f"{counter} += 1"] + self.block(depth + 1, inner, True)
            return [f"{counter} = 0", f"while {counter} < {bound}:"] + \
                ["    " + s for s in body]
        iterate = f"i{k}"
        bound = self.draw(st.sampled_from(["3", "x % 4" if not self.floats else "2"]))
        rng = self.draw(st.sampled_from([f"range({bound})", f"tf.range({bound})"]))
        if bound in ("2", "3"):
            # a Python range(3) is a Python loop, where a tensor-dependent break or return
            # is an error (test_errors.py): keep constant bounds staged
            rng = f"tf.range({bound})"
        body = self.block(depth + 1, loop_vars + (iterate,) if not self.floats else loop_vars,
                          True)
        return [f"for {iterate} in {rng}:"] + ["    " + s for s in body]


@st.composite
def programs(draw) -> tuple[str, bool]:
    floats = draw(st.booleans())
    gen = _Gen(draw, floats)
    body = gen.block(0, (), False)
    zero = "0.0" if floats else "0"
    lines = ["import stagecraft as tf", "", "", "def f(x, y):", "    a = x", "    b = y",
             f"    c = {zero}"] + ["    " + s for s in body] + ["    return a, b, c", ""]
    return "\n".join(lines), floats


def _load(directory, source: str):
    name = f"random_program_{next(_counter)}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(), data=st.data())
def test_random_program_python_and_staged_agree(program_dir, program, data):
    source, floats = program
    f = _load(program_dir, source)
    staged = tf.function(f)
    if floats:
        values = st.integers(-16, 16).map(lambda v: v / 4)
    else:
        values = st.integers(-20, 20)
    for _ in range(2):
        x, y = data.draw(values), data.draw(values)
        expected = f(x, y)
        dtype = tf.float32 if floats else tf.int32
        got = staged(tf.constant(x, dtype), tf.constant(y, dtype))
        got = [np.asarray(v.numpy()) for v in got]
        assert [float(v) for v in got] == [float(v) for v in expected], \
            f"x={x}, y={y}\n{textwrap.indent(source, '  ')}"


def test_generated_program_example_runs(program_dir):
    """A fixed program in the generated style (documents the shape of what is generated)."""
    source = textwrap.dedent("""\
        import stagecraft as tf


        def f(x, y):
            a = x
            b = y
            c = 0
            k0 = 0
            while k0 < x % 3 + 1:
                k0 += 1
                for i1 in tf.range(y % 4):
                    if a % 2 == 0:
                        continue
                    a = (a + i1 * 3) % 97
                    if b > 2:
                        break
                    b += a % 5
                if c > 4:
                    return a, b, c
                c += k0 % 5
            return a, b, c
    """)
    f = _load(program_dir, source)
    for x, y in [(5, 3), (-2, 7), (0, 0), (9, -4)]:
        got = tf.function(f)(tf.constant(x), tf.constant(y))
        assert [int(v) for v in got] == list(f(x, y))
