"""set_loop_options: moved from the loop body onto the loop, honoured by staged loops."""
import gast
import pytest

import stagecraft as tf
from stagecraft.converters.context import Context, Namer
from stagecraft.converters.passes import directives
from stagecraft.errors import ConversionError


def _convert(src):
    return directives.convert(gast.parse(src).body[0], Context("f.py", "f", Namer(set())))


def test_directive_is_moved_onto_its_loop():
    fn = _convert("def f(x):\n    for i in x:\n        set_loop_options(maximum_iterations=2)\n"
                  "        y = i\n")
    loop = fn.body[0]
    assert [k.arg for k in loop.sc_loop_options] == ["maximum_iterations"]
    assert isinstance(loop.body[0], gast.Assign)


def test_directive_must_come_first_and_use_known_keywords():
    with pytest.raises(ConversionError, match="must be the first statement"):
        _convert("def f(x):\n    while x:\n        x = 0\n        set_loop_options(swap_memory=1)\n")
    with pytest.raises(ConversionError, match="unknown loop option"):
        _convert("def f(x):\n    while x:\n        set_loop_options(unrolling=2)\n")


def test_shape_invariants_let_a_staged_while_grow_a_tensor():
    @tf.function
    def f(n):
        x = tf.constant([1])
        i = 0
        while i < n:
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(x, tf.TensorShape([None]))])
            x = tf.concat([x, x], 0)
            i += 1
        return x

    assert f(tf.constant(3)).numpy().tolist() == [1] * 8


def test_maximum_iterations_bounds_a_staged_for():
    @tf.function
    def g(n):
        s = 0
        for i in tf.range(n):
            tf.autograph.experimental.set_loop_options(maximum_iterations=3)
            s += i
        return s

    assert int(g(tf.constant(10))) == 3


def test_directive_is_a_no_op_in_python_loops():
    @tf.function
    def h(x):
        for _ in range(2):
            tf.autograph.experimental.set_loop_options(maximum_iterations=1)
            x = x + 1
        return x

    assert int(h(tf.constant(0))) == 2
