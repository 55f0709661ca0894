"""``py_function``, ``init_scope`` and ``tf.print`` (checklist items 103-106): what runs at
trace time and what runs at every call."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError

# Staged tests of the staging and AutoGraph issues: compiled by Numba (what users get by
# default), and run again inside tf.device("/gpu:0") (marker cuda).
pytestmark = [pytest.mark.backend("numba"), pytest.mark.gpu_placements]


# ----------------------------------------------------------------------------- py_function

def test_py_function_eager():
    seen = []

    def body(x):
        seen.append(x)
        return x * 2

    out = tf.py_function(body, [tf.constant(3.0)], tf.float32)
    # An eager tensor (on the GPU under the test's GPU scope, like the constant).
    assert float(out) == 6.0 and len(seen) == 1 and isinstance(seen[0], tf.Tensor)
    assert seen[0]._value is not None


def test_103_py_function_runs_every_call_with_eager_tensors():
    calls = []

    def body(x):
        calls.append(x)
        assert x._value is not None  # an eager tensor, not a symbolic one
        return x.numpy() + 1.0

    @tf.function
    def f(x):
        return tf.py_function(body, [x], tf.float32) * 2.0

    assert not calls or len(calls) == 0
    assert float(f(tf.constant(1.0))) == 4.0
    assert float(f(tf.constant(2.0))) == 6.0
    assert float(f(tf.constant(3.0))) == 8.0
    assert len(calls) == 3
    assert [float(c) for c in calls] == [1.0, 2.0, 3.0]
    assert all(isinstance(c, tf.Tensor) for c in calls)
    assert f.experimental_get_tracing_count() == 1


def test_py_function_body_executes_eagerly_and_may_use_python_control_flow():
    def body(x):
        assert tf.executing_eagerly()
        if float(x) > 0:  # plain Python on the value
            return x
        return -x

    f = tf.function(lambda x: tf.py_function(body, [x], tf.float32))
    assert float(f(tf.constant(-5.0))) == 5.0
    assert float(f(tf.constant(4.0))) == 4.0


def test_py_function_takes_and_returns_scalars_in_staged_code():
    """Compiled code passes scalars to the host as Python/NumPy scalars and expects 0-d
    results back: both become 0-d arrays on the way (they were an AttributeError and a
    "rank 1 where rank 0" error on the Numba backend)."""
    seen = []

    def count(n):
        seen.append(n.shape)
        return n + 1

    @tf.function
    def f(n):
        return tf.py_function(count, [n], tf.TensorSpec([], tf.int64)) * 2

    assert int(f(tf.constant(3, tf.int64))) == 8 and seen == [tf.TensorShape([])]


def test_py_function_tout_forms():
    f = tf.function(lambda x: tf.py_function(lambda a: (a, a + 1), [x], [tf.int32, tf.int32]))
    out = f(tf.constant(1))
    assert isinstance(out, list) and [int(o) for o in out] == [1, 2]
    assert tf.py_function(lambda: None, [], []) == []
    g = tf.function(lambda x: tf.py_function(lambda: None, [], []))
    assert g(tf.constant(1)) == []


def test_py_function_unknown_output_shape():
    @tf.function
    def f(x):
        y = tf.py_function(lambda a: a, [x], tf.float32)
        assert y.shape.rank is None
        return y

    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [1.0, 2.0])


def test_py_function_wrong_dtype_or_count_is_runtime_error():
    f = tf.function(lambda x: tf.py_function(lambda a: tf.constant(1), [x], tf.float32))
    with pytest.raises(InvalidArgumentError):
        f(tf.constant(1.0))
    g = tf.function(lambda x: tf.py_function(lambda a: (a, a), [x], [tf.float32]))
    with pytest.raises(InvalidArgumentError):
        g(tf.constant(1.0))


def test_py_function_is_stateful_never_pruned_and_ordered():
    log = []
    v = tf.Variable(0.0)

    @tf.function
    def f(x):
        tf.py_function(lambda a: log.append(("py1", float(a))) or a, [x], tf.float32)
        v.assign(x * 10.0)
        tf.py_function(lambda: log.append(("py2", float(v))) or tf.constant(0.0), [],
                       tf.float32)
        return tf.constant(0)

    f(tf.constant(1.0))
    f(tf.constant(2.0))
    assert log == [("py1", 1.0), ("py2", 10.0), ("py1", 2.0), ("py2", 20.0)]


def _log_huber(x, m):
    if tf.abs(x) <= m:
        return x ** 2
    return m ** 2 * (1 - 2 * tf.math.log(m) + tf.math.log(x ** 2))


def test_104_gradient_through_py_function_eager():
    x = tf.constant(1.0)
    m = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch([x, m])
        y = tf.py_function(func=_log_huber, inp=[x, m], Tout=tf.float32)
    dy_dx = t.gradient(y, x)
    assert float(dy_dx) == 2.0


def test_104_gradient_through_py_function_in_function():
    @tf.function
    def f(x, m):
        return tf.py_function(func=_log_huber, inp=[x, m], Tout=tf.float32)

    x = tf.constant(1.0)
    m = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch([x, m])
        y = f(x, m)
    dx, dm = t.gradient(y, [x, m])
    assert float(y) == 1.0
    assert float(dx) == 2.0
    assert float(dm) == 0.0
    # the other branch of the Python control flow: x=3 > m=2
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x, m)
    np.testing.assert_allclose(float(t.gradient(y, x)), 4.0 * 2 / 3.0, rtol=1e-6)


def test_gradient_through_py_function_inside_tape_in_function():
    @tf.function
    def grad(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.py_function(lambda a: a * a * a, [x], tf.float32)
        return t.gradient(y, x)

    assert float(grad(tf.constant(2.0))) == 12.0


def test_py_function_integer_input_gets_none_gradient():
    x = tf.constant(2.0)
    n = tf.constant(3)

    @tf.function
    def f(x, n):
        return tf.py_function(lambda a, b: a * tf.cast(b, tf.float32), [x, n], tf.float32)

    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x, n)
    assert float(t.gradient(y, x)) == 3.0


# ------------------------------------------------------------------------------ init_scope

def test_105_init_scope_runs_once_at_trace_time_eagerly():
    counter = tf.Variable(0)
    seen = []

    @tf.function
    def f(x):
        with tf.init_scope():
            seen.append(tf.executing_eagerly())
            counter.assign_add(1)
            eager_value = counter.read_value()
            assert eager_value._value is not None  # a concrete value, not symbolic
        assert not tf.executing_eagerly()
        return x + counter.read_value()

    outs = [int(f(tf.constant(0))) for _ in range(3)]
    assert outs == [1, 1, 1]
    assert int(counter) == 1
    assert seen == [True]


def test_105_init_scope_not_recorded_by_tapes():
    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        with tf.init_scope():
            y = x * x
    assert t.gradient(y, x) is None


def test_105_executing_eagerly_inside_init_scope_in_trace():
    @tf.function
    def f():
        with tf.init_scope():
            inside = tf.executing_eagerly()
        return tf.constant(inside)

    assert bool(f())


def test_106_init_scope_with_trace_tensor_is_type_error():
    @tf.function
    def f(x):
        with tf.init_scope():
            return x + 1.0

    with pytest.raises(TypeError, match="Graph tensor"):
        f(tf.constant(1.0))


def test_init_scope_creates_variable_for_the_function():
    holder = []

    @tf.function
    def f(x):
        if not holder:
            with tf.init_scope():
                holder.append(tf.Variable(5.0))
        return holder[0] * x

    assert float(f(tf.constant(2.0))) == 10.0
    assert float(f(tf.constant(3.0))) == 15.0


# -------------------------------------------------------------------------------- tf.print

def test_print_eager_writes_stderr(capfd):
    tf.print("x:", tf.constant([1, 2, 3]))
    out = capfd.readouterr()
    assert out.err == "x: [1 2 3]\n" and out.out == ""


def test_print_runs_every_call_in_function(capfd):
    @tf.function
    def f(x):
        tf.print("got", x)
        return x * 2

    for i in range(3):
        f(tf.constant(i))
    out = capfd.readouterr()
    assert out.err.splitlines() == ["got 0", "got 1", "got 2"]
    assert out.out == ""


def test_print_to_stdout_sep_end(capfd):
    @tf.function
    def f(x):
        tf.print("a", x, "b", output_stream=sys.stdout, sep="|", end="!\n")
        return x

    f(tf.constant(7))
    assert capfd.readouterr().out == "a|7|b!\n"


def test_print_summarize():
    import io
    buf = io.StringIO()
    tf.print(tf.range(10), output_stream=buf, summarize=2)
    assert buf.getvalue() == "[0 1 ... 8 9]\n"


def test_print_in_function_rejects_other_streams():
    import io
    f = tf.function(lambda x: tf.print(x, output_stream=io.StringIO()))
    with pytest.raises(ValueError, match="output_stream"):
        f(tf.constant(1))


def test_print_variable_value_each_call(capfd):
    v = tf.Variable(1)

    @tf.function
    def f():
        v.assign_add(1)
        tf.print(v)
        return tf.constant(0)

    f()
    f()
    assert capfd.readouterr().err.split() == ["2", "3"]
