"""``tf.function``: tracing, the trace cache, input signatures, retracing warnings, concrete
functions, the variable-creation contract, pruning/ordering, composition and gradients
(checklist items 38-82 of the behavioural specification)."""
from __future__ import annotations

import collections
import logging

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.staging import trace_cache
from stagecraft.errors import InvalidArgumentError, OperatorNotAllowedInGraphError

# Staged tests of the staging and AutoGraph issues: compiled by Numba (what users get by
# default), and run again inside tf.device("/gpu:0") (marker cuda).
pytestmark = [pytest.mark.backend("numba"), pytest.mark.gpu_placements]


def _count(f):
    return f.experimental_get_tracing_count()


# ------------------------------------------------------------------ 38-50: the trace cache

def test_38_basic_call_and_tracing_count():
    @tf.function
    def f(x):
        return 2 * x

    assert int(f(tf.constant(4))) == 8
    assert _count(f) == 1
    assert isinstance(f, tf.Function)


def test_38_decorator_forms():
    g = tf.function(lambda x: x + 1)
    h = tf.function(autograph=False)(lambda x: x + 2)
    assert int(g(tf.constant(1))) == 2 and int(h(tf.constant(1))) == 3


def test_39_same_shape_dtype_different_values_no_retrace():
    @tf.function
    def f(x):
        return x * x

    assert float(f(tf.constant(2.0))) == 4.0
    assert float(f(tf.constant(3.0))) == 9.0
    assert _count(f) == 1


def test_40_new_shape_or_dtype_retraces():
    @tf.function
    def f(x):
        return x + x

    f(tf.constant([1.0, 2.0]))
    assert _count(f) == 1
    f(tf.constant([1.0, 2.0, 3.0]))
    assert _count(f) == 2
    np.testing.assert_array_equal(f(tf.constant([1, 2])).numpy(), [2, 4])
    assert _count(f) == 3
    f(tf.constant([5.0, 6.0]))
    assert _count(f) == 3


def test_41_python_ints_retrace_per_value():
    @tf.function
    def f(n):
        return tf.constant(n) * 2

    assert int(f(1)) == 2
    assert int(f(2)) == 4
    assert _count(f) == 2
    assert int(f(2)) == 4
    assert _count(f) == 2


def test_41_same_int_twice_one_trace():
    f = tf.function(lambda n: tf.constant(n))
    f(7)
    f(7)
    assert _count(f) == 1


def test_42_python_1_and_1_0_are_distinct_traces_documented_deviation():
    # TensorFlow shares one trace between 1, 1.0 and True (they compare equal); stagecraft keys
    # Python scalars by (type, value) and documents it in trace_cache's docstring.
    @tf.function
    def f(n):
        return tf.constant(n)

    a = f(1)
    b = f(1.0)
    assert _count(f) == 2
    assert a.dtype == tf.int32 and b.dtype == tf.float32
    f(True)
    assert _count(f) == 3
    doc = trace_cache.__doc__
    assert "(type, value)" in doc and "deviation" in doc


def test_43_numpy_arrays_keyed_like_tensors():
    @tf.function
    def f(x):
        return x * 2.0

    np.testing.assert_allclose(f(np.array([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(np.array([3.0, 5.0])).numpy(), [6.0, 10.0])
    assert _count(f) == 1


def test_44_variables_same_spec_share_trace_different_dtype_retraces():
    @tf.function
    def f(v):
        return v * 2

    v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
    assert float(f(v1)) == 2.0
    assert float(f(v2)) == 4.0
    assert _count(f) == 1
    assert float(f(tf.Variable(3.0, dtype=tf.float64))) == 6.0
    assert _count(f) == 2


def test_44_variables_passed_by_reference():
    @tf.function
    def f(v):
        return v + 0.0

    v = tf.Variable(1.0)
    f(v)
    v.assign(5.0)
    assert float(f(v)) == 5.0
    assert _count(f) == 1


def test_45_variable_aliasing_pattern():
    @tf.function
    def f(a, b):
        a.assign_add(1.0)
        return b + 0.0

    v, w = tf.Variable(1.0), tf.Variable(10.0)
    assert float(f(v, v)) == 2.0  # the read sees the assign: same variable
    assert float(f(v, w)) == 10.0
    assert _count(f) == 2


def test_46_same_object_mutated_uses_stale_value():
    class Config:
        scale = 2.0

    c = Config()

    @tf.function
    def f(x, cfg):
        return x * cfg.scale

    assert float(f(tf.constant(1.0), c)) == 2.0
    c.scale = 10.0
    assert float(f(tf.constant(1.0), c)) == 2.0
    assert _count(f) == 1


def test_47_new_instance_each_call_retraces():
    class Config:
        def __init__(self, s):
            self.scale = s

    @tf.function
    def f(x, cfg):
        return x * cfg.scale

    assert float(f(tf.constant(1.0), Config(2.0))) == 2.0
    assert float(f(tf.constant(1.0), Config(3.0))) == 3.0
    assert _count(f) == 2


def test_48_dict_key_order_irrelevant():
    @tf.function
    def f(d):
        return d["a"] - d["b"]

    assert float(f({"a": tf.constant(3.0), "b": tf.constant(1.0)})) == 2.0
    assert float(f({"b": tf.constant(1.0), "a": tf.constant(5.0)})) == 4.0
    assert _count(f) == 1


def test_48_list_vs_tuple_differ():
    f = tf.function(lambda xs: xs[0] + xs[1])
    f([tf.constant(1.0), tf.constant(2.0)])
    f((tf.constant(1.0), tf.constant(2.0)))
    assert _count(f) == 2


def test_49_tf_tracing_type_shared_across_instances():
    class Shape:
        def __init__(self, k):
            self.k = k

        def __tf_tracing_type__(self, context):
            return ("Shape", self.k)

    @tf.function
    def f(x, s):
        return x * s.k

    assert float(f(tf.constant(1.0), Shape(2))) == 2.0
    assert float(f(tf.constant(2.0), Shape(2))) == 4.0
    assert _count(f) == 1
    assert float(f(tf.constant(1.0), Shape(3))) == 3.0
    assert _count(f) == 2


def test_50_keyword_and_positional_canonicalised():
    @tf.function
    def f(a, b=2):
        return a * b

    assert float(f(tf.constant(1.0), b=2)) == 2.0
    assert float(f(tf.constant(1.0), 2)) == 2.0
    assert float(f(tf.constant(1.0))) == 2.0
    assert _count(f) == 1


def test_weakref_argument_rejected():
    import weakref

    class Obj:
        pass

    o = Obj()
    with pytest.raises(TypeError, match="weakref"):
        tf.function(lambda x, r: x)(tf.constant(1.0), weakref.ref(o))


def test_unhashable_non_weakrefable_argument_rejected():
    with pytest.raises(TypeError, match="Could not generate a generic TraceType"):
        tf.function(lambda x, s: x)(tf.constant(1.0), {1, 2} if False else bytearray(b"x"))


def test_closure_and_global_values_not_in_key():
    f = tf.function(lambda x: x + 1)
    g = tf.function(lambda x: x + 1)
    f(tf.constant(1))
    g(tf.constant(1))
    assert _count(f) == 1 and _count(g) == 1  # separate Functions never share traces


# ------------------------------------------------------------------ 51-56: input_signature

def test_51_input_signature_none_dim():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x * 2.0

    np.testing.assert_allclose(f(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(tf.constant([1.0, 2.0, 3.0, 4.0])).numpy(), [2, 4, 6, 8])
    assert _count(f) == 1


def test_52_input_signature_dtype_mismatch():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x

    with pytest.raises(TypeError, match="Can not cast"):
        f(tf.constant([1, 2]))
    assert _count(f) == 0


def test_53_input_signature_rank_mismatch():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x

    with pytest.raises(TypeError, match="Can not cast"):
        f(tf.constant([[1.0]]))


def test_54_input_signature_python_float_converted():
    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def f(x):
        return x + 1.0

    out = f(2.0)
    assert out.dtype == tf.float32 and float(out) == 3.0
    assert float(f(5)) == 6.0
    assert _count(f) == 1


def test_55_get_concrete_function_no_args_with_signature():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x * 3.0

    c = f.get_concrete_function()
    assert isinstance(c, tf.ConcreteFunction)
    np.testing.assert_allclose(c(tf.constant([1.0, 2.0])).numpy(), [3.0, 6.0])
    f(tf.constant([1.0]))
    assert _count(f) == 1
    assert f.get_concrete_function() is c


def test_input_signature_must_be_specs():
    with pytest.raises(TypeError):
        tf.function(lambda x: x, input_signature=tf.TensorSpec([], tf.float32))
    with pytest.raises(TypeError):
        tf.function(lambda x: x, input_signature=[1.0])


def test_input_signature_rejects_kwargs_function():
    def f(x, **kw):
        return x

    with pytest.raises(TypeError, match="kwargs"):
        tf.function(f, input_signature=[tf.TensorSpec([], tf.float32)])


def test_input_signature_extra_python_param_with_default():
    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def f(x, k=3.0):
        return x * k

    assert float(f(tf.constant(2.0))) == 6.0


def test_56_reduce_retracing():
    @tf.function(reduce_retracing=True)
    def f(x):
        return x + 1.0

    for n in (1, 2, 3):
        np.testing.assert_allclose(f(tf.ones([n])).numpy(), np.full(n, 2.0))
    assert _count(f) == 2
    c = f.get_concrete_function(tf.TensorSpec([5], tf.float32))
    assert c.inputs[0].shape.as_list() == [None]
    f(tf.ones([2, 2]))
    assert _count(f) == 3
    f(tf.ones([3, 3, 3]))
    assert _count(f) == 3


def test_56_experimental_relax_shapes_alias():
    f = tf.function(lambda x: x * 2.0, experimental_relax_shapes=True)
    for n in (1, 2, 3, 4):
        f(tf.ones([n]))
    assert _count(f) == 2


def test_56_reduce_retracing_ignored_with_signature():
    f = tf.function(lambda x: x, input_signature=[tf.TensorSpec([None], tf.float32)],
                    reduce_retracing=True)
    f(tf.ones([1]))
    f(tf.ones([2]))
    assert _count(f) == 1


# ------------------------------------------------------------------ 57-58: retracing warning

def _warnings(caplog):
    return [r for r in caplog.records
            if r.name == "stagecraft" and "triggered tf.function retracing" in r.getMessage()]


def test_57_retracing_warning_after_five_traced_calls(caplog):
    def body(n):
        return tf.constant(n)

    f = tf.function(body)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        for i in range(4):
            f(i)
        assert not _warnings(caplog)
        f(4)
    ws = _warnings(caplog)
    assert len(ws) == 1
    msg = ws[0].getMessage()
    assert ws[0].levelno == logging.WARNING
    assert "5 out of the last 5 calls to" in msg
    assert "reduce_retracing" in msg
    assert "'n'" in msg  # names the argument that changed


def test_58_at_most_two_warnings(caplog):
    def body(x):
        return tf.constant(x)

    f = tf.function(body)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        for i in range(12):
            f(i)
    msgs = [r.getMessage() for r in _warnings(caplog)]
    assert len(msgs) == 2
    assert "5 out of the last 5 calls" in msgs[0]
    assert "6 out of the last 6 calls" in msgs[1]


def test_retracing_warning_shared_by_code_object(caplog):
    def make():
        def g(x):
            return x + 1
        return g

    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        for i in range(5):
            tf.function(make())(tf.constant(i))
    assert len(_warnings(caplog)) == 1


def test_no_warning_for_cache_hits_or_get_concrete_function(caplog):
    def body(x):
        return x * 2

    f = tf.function(body)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        for i in range(6):
            f.get_concrete_function(i)
        for i in range(20):
            f(tf.constant(i))
    assert not _warnings(caplog)


def test_warning_names_shape_argument(caplog):
    def shapes(a, b):
        return a + 1.0

    f = tf.function(shapes)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        for n in range(1, 6):
            f(tf.constant(1.0), tf.ones([n]))
    (w,) = _warnings(caplog)
    assert "'b'" in w.getMessage()


# ------------------------------------------------------------------ 59-64: side effects

def test_59_python_print_once(capsys):
    @tf.function
    def f(x):
        print("tracing!")
        return x + 1

    for i in range(3):
        f(tf.constant(i))
    assert capsys.readouterr().out.count("tracing!") == 1


def test_60_tf_print_every_call(capfd):
    @tf.function
    def f(x):
        tf.print("value:", x)
        return x + 1

    for i in range(3):
        f(tf.constant(i))
    err = capfd.readouterr().err
    assert err.count("value:") == 3
    assert "value: 0" in err and "value: 2" in err


def test_61_list_append_once():
    log = []

    @tf.function
    def f(x):
        log.append(x)
        return x

    for _ in range(3):
        f(tf.constant(1.0))
    assert len(log) == 1


def test_62_closure_tensor_captured_by_value():
    c = tf.constant(2.0)

    @tf.function
    def f(x):
        return x * c

    assert float(f(tf.constant(1.0))) == 2.0
    c = tf.constant(100.0)  # noqa: F841 (the trace keeps the old tensor)
    assert float(f(tf.constant(1.0))) == 2.0
    assert _count(f) == 1


def test_62_large_closure_tensor_is_a_capture():
    big = tf.ones([40, 40])
    f = tf.function(lambda x: x + big)
    c = f.get_concrete_function(tf.TensorSpec([40, 40], tf.float32))
    assert len(c.captured_inputs) == 1 and c.captured_inputs[0] is big
    assert float(tf.reduce_sum(f(tf.zeros([40, 40])))) == 1600.0


def test_63_closure_variable_by_reference():
    v = tf.Variable(1.0)

    @tf.function
    def f(x):
        return x * v

    assert float(f(tf.constant(2.0))) == 2.0
    v.assign(5.0)
    assert float(f(tf.constant(2.0))) == 10.0
    assert _count(f) == 1


SCALE = 2


def test_64_global_python_value_frozen():
    global SCALE

    @tf.function
    def f(x):
        return x * SCALE

    assert int(f(tf.constant(3))) == 6
    SCALE = 100
    try:
        assert int(f(tf.constant(3))) == 6
        assert _count(f) == 1
    finally:
        SCALE = 2


# ------------------------------------------------------------------ 65-70: variable creation

def test_65_unconditional_variable_creation_fails_on_first_call():
    @tf.function
    def f(x):
        return tf.Variable(1.0) + x

    with pytest.raises(ValueError, match="only supports singleton tf.Variables created on the "
                                         "first call"):
        f(tf.constant(1.0))


def test_66_guarded_variable_creation_traces_twice(capsys):
    class M:
        def __init__(self):
            self.v = None

        @tf.function
        def __call__(self, x):
            print("trace")
            if self.v is None:
                self.v = tf.Variable(3.0)
            return self.v * x

    m = M()
    assert float(m(tf.constant(2.0))) == 6.0
    assert capsys.readouterr().out.count("trace") == 2
    assert _count(M.__call__.__get__(m)) == 2
    m.v.assign(4.0)
    assert float(m(tf.constant(2.0))) == 8.0
    assert capsys.readouterr().out.count("trace") == 0
    # a later retrace (new shape) works: creation is guarded
    np.testing.assert_allclose(m(tf.constant([1.0, 2.0])).numpy(), [4.0, 8.0])
    assert _count(M.__call__.__get__(m)) == 3


def test_66_function_level_guard():
    state = {}

    @tf.function
    def f(x):
        if "v" not in state:
            state["v"] = tf.Variable(10.0)
        state["v"].assign_add(x)
        return state["v"].read_value()

    assert float(f(tf.constant(1.0))) == 11.0
    assert _count(f) == 2
    assert float(f(tf.constant(1.0))) == 12.0
    assert float(state["v"]) == 12.0


def test_67_variable_on_non_first_call():
    holder = []

    @tf.function
    def f(x):
        if x.shape.rank == 1:
            holder.append(tf.Variable(1.0))
        return x * 2.0

    f(tf.constant(1.0))
    assert _count(f) == 1
    with pytest.raises(ValueError, match="Creating variables on a non-first call"):
        f(tf.constant([1.0]))


def test_retrace_after_creating_first_call_rejects_new_variable():
    @tf.function
    def f(x):
        if x.shape.rank == 0 and not hasattr(f, "_made"):
            f._made = tf.Variable(1.0)
        if x.shape.rank == 1:
            tf.Variable(2.0)
        return x

    f(tf.constant(1.0))
    with pytest.raises(ValueError, match="singleton"):
        f(tf.constant([1.0]))


def test_68_method_on_two_instances():
    class Layer(tf.Module):
        def __init__(self, init):
            super().__init__()
            self.init = init
            self.var = None

        @tf.function
        def __call__(self, x):
            if self.var is None:
                self.var = tf.Variable(self.init)
            return x * self.var

    m0, m1 = Layer(2.0), Layer(3.0)
    assert float(m0(tf.constant(1.0))) == 2.0
    assert float(m1(tf.constant(1.0))) == 3.0
    assert m0.var is not m1.var
    assert float(m0(tf.constant(2.0))) == 4.0
    assert Layer.__call__.__get__(m0) is Layer.__call__.__get__(m0)
    assert Layer.__call__.__get__(m0) is not Layer.__call__.__get__(m1)


def test_method_descriptor_does_not_keep_instance_alive():
    import gc
    import weakref

    class A:
        @tf.function
        def f(self, x):
            return x + 1

    a = A()
    a.f(tf.constant(1))
    r = weakref.ref(a)
    del a
    gc.collect()
    assert r() is None


def test_69_initializer_depending_on_argument():
    holder = []

    @tf.function
    def f(x):
        if not holder:
            holder.append(tf.Variable(2.0 * x))
        return holder[0] + x

    assert float(f(tf.constant(3.0))) == 9.0
    assert float(holder[0]) == 6.0
    assert float(f(tf.constant(1.0))) == 7.0


def test_70_run_functions_eagerly():
    log = []

    @tf.function
    def f(x):
        log.append(1)
        tf.Variable(1.0)  # new variables every call are fine here
        return x * 3

    tf.config.run_functions_eagerly(True)
    try:
        assert tf.config.functions_run_eagerly()
        outs = [int(f(tf.constant(i))) for i in range(3)]
        assert outs == [0, 3, 6]
        assert len(log) == 3
        assert _count(f) == 0
    finally:
        tf.config.run_functions_eagerly(False)
    assert not tf.config.functions_run_eagerly()


def test_70_run_functions_eagerly_body_sees_eager_tensors():
    seen = []

    @tf.function
    def f(x):
        seen.append(tf.executing_eagerly())
        return x.numpy() * 2

    tf.config.run_functions_eagerly(True)
    try:
        assert f(tf.constant(2.0)) == 4.0
    finally:
        tf.config.run_functions_eagerly(False)
    assert seen == [True]


# ------------------------------------------------------------------ 71-72: symbolic tensors

def test_71_leaked_symbolic_tensor():
    leak = []

    @tf.function
    def f(x):
        y = x * 2.0
        leak.append(y)
        return y

    f(tf.constant(1.0))
    with pytest.raises(TypeError, match="Graph tensor"):
        leak[0] + 1.0
    with pytest.raises((TypeError, AttributeError)):
        leak[0].numpy()


def test_71_leaked_tensor_in_other_trace():
    leak = []

    @tf.function
    def f(x):
        leak.append(x + 1.0)
        return x

    @tf.function
    def g(x):
        return x + leak[0]

    f(tf.constant(1.0))
    with pytest.raises((TypeError, ValueError), match="another graph"):
        g(tf.constant(1.0))


def test_72_bool_of_symbolic_tensor_autograph_false():
    @tf.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(OperatorNotAllowedInGraphError, match="as a Python `bool`"):
        f(tf.constant(1.0))
    assert issubclass(OperatorNotAllowedInGraphError, TypeError)


def test_72_iterating_and_len_of_symbolic_tensor():
    with pytest.raises(TypeError, match="Iterating over a symbolic"):
        tf.function(lambda x: [e for e in x], autograph=False)(tf.constant([1.0]))
    with pytest.raises(TypeError, match="len"):
        tf.function(lambda x: len(x), autograph=False)(tf.constant([1.0]))


def test_python_control_flow_on_static_values_is_unrolled():
    @tf.function
    def f(x):
        total = x
        for _ in range(x.shape[0]):
            total = total + 1.0
        return total

    np.testing.assert_allclose(f(tf.zeros([3])).numpy(), [3.0, 3.0, 3.0])


# ------------------------------------------------------------------ outputs

def test_outputs_nested_none_numbers_variables():
    v = tf.Variable(4.0)

    @tf.function
    def f(x):
        return {"a": (x, None), "b": [3, 2.5], "v": v}

    out = f(tf.constant(1.0))
    assert out["a"][1] is None
    assert float(out["a"][0]) == 1.0
    assert out["b"][0].dtype == tf.int32 and int(out["b"][0]) == 3
    assert out["b"][1].dtype == tf.float32
    assert isinstance(out["v"], tf.Tensor) and not isinstance(out["v"], tf.Variable)
    assert float(out["v"]) == 4.0


def test_output_of_wrong_type():
    with pytest.raises(TypeError, match="must return zero or more Tensors"):
        tf.function(lambda x: object())(tf.constant(1.0))


def test_returns_argument_unchanged():
    f = tf.function(lambda x, y: (y, x))
    a, b = f(tf.constant(1.0), tf.constant(2))
    assert float(a) == 2 and float(b) == 1.0


# ------------------------------------------------------------------ 73-75: pruning and order

def test_73_unused_stateless_op_pruned():
    @tf.function
    def f(x):
        tf.gather(x, 10)  # out of range, but unused: never executed
        return x + 1.0

    np.testing.assert_allclose(f(tf.constant([1.0, 2.0])).numpy(), [2.0, 3.0])


def test_73_used_out_of_range_gather_raises():
    @tf.function
    def f(x):
        return tf.gather(x, 10)

    with pytest.raises(InvalidArgumentError):
        f(tf.constant([1.0, 2.0]))


def test_run_time_shape_error_names_the_op_the_user_called():
    @tf.function
    def f(x, shape):
        return tf.reshape(x, shape)   # staged as reshape_dynamic: the shape is a tensor

    with pytest.raises(InvalidArgumentError) as e:
        f(tf.constant([1.0, 2.0, 3.0]), tf.constant([2, 2]))
    assert str(e.value).splitlines()[0].startswith("reshape: Input to reshape is a tensor ")


def test_73_unused_op_inside_cond_branch_pruned():
    @tf.function
    def f(x):
        def then():
            tf.gather(x, 10)
            return x * 2.0
        return tf.cond(x[0] > 0, then, lambda: x)

    np.testing.assert_allclose(f(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])


def test_74_unused_assign_and_print_run_in_order(capfd):
    v = tf.Variable(0.0)

    @tf.function
    def f(x):
        v.assign(x)
        tf.print("first", v)
        v.assign_add(1.0)
        tf.print("second", v)
        return tf.constant(0)

    f(tf.constant(5.0))
    f(tf.constant(7.0))
    assert float(v) == 8.0
    lines = [line.split() for line in capfd.readouterr().err.splitlines()]
    assert [(w, float(x)) for w, x in lines] == [("first", 5), ("second", 6), ("first", 7),
                                                 ("second", 8)]


def test_74_unused_check_numerics_style_assert_kept():
    @tf.function
    def f(x):
        tf.debugging.Assert(tf.reduce_all(x > 0), ["x must be positive"])
        return tf.constant(1)

    f(tf.constant(1.0))
    with pytest.raises(InvalidArgumentError, match="x must be positive"):
        f(tf.constant(-1.0))


def test_75_read_after_assign():
    v = tf.Variable(1.0)

    @tf.function
    def f():
        v.assign(2.0)
        a = v.read_value()
        v.assign_add(3.0)
        return a, v.read_value()

    a, b = f()
    assert float(a) == 2.0 and float(b) == 5.0


# ------------------------------------------------------------------ 76: composition

def test_76_nested_function_one_call_per_call_site():
    traces = []

    @tf.function
    def inner(x):
        traces.append(1)
        return x * x

    @tf.function
    def outer(x):
        return inner(x) + inner(x)

    assert float(outer(tf.constant(3.0))) == 18.0
    assert len(traces) == 1
    c = outer.get_concrete_function(tf.constant(1.0))
    ops = [e.op for e in c.graph.eqns]
    assert ops.count("call") == 2
    assert "multiply" not in ops  # not inlined
    assert float(outer(tf.constant(2.0))) == 8.0
    assert len(traces) == 1


def test_76_inner_function_creates_variable_during_outer_trace():
    class Inner:
        def __init__(self):
            self.v = None

        @tf.function
        def __call__(self, x):
            if self.v is None:
                self.v = tf.Variable(1.0)
            return x * self.v

    inner = Inner()

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    assert float(outer(tf.constant(2.0))) == 3.0
    inner.v.assign(10.0)
    assert float(outer(tf.constant(2.0))) == 21.0


# ------------------------------------------------------------------ 77-78: gradients

def test_77_gradient_through_function_equals_eager():
    def body(x, y):
        return tf.reduce_sum(tf.sin(x) * y + x * x)

    f = tf.function(body)
    x = tf.constant([0.5, 1.0, 2.0])
    y = tf.constant([1.0, -2.0, 3.0])
    with tf.GradientTape(persistent=True) as staged:
        staged.watch([x, y])
        out = f(x, y)
    with tf.GradientTape() as eager:
        eager.watch([x, y])
        ref = body(x, y)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    gs = staged.gradient(out, [x, y])
    ge = eager.gradient(ref, [x, y])
    for a, b in zip(gs, ge):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_77_one_tape_entry_for_the_call():
    f = tf.function(lambda x: tf.exp(x) * x + x)
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        f(x)
    entries = getattr(tape, "_entries", None) or getattr(tape, "_records", None)
    if entries is None:
        pytest.skip("tape does not expose its records")
    assert len(entries) == 1


def test_77_gradient_wrt_variable_read_in_function():
    v = tf.Variable(3.0)
    f = tf.function(lambda x: v * v * x)
    with tf.GradientTape() as tape:
        y = f(tf.constant(2.0))
    assert float(tape.gradient(y, v)) == 12.0


def test_78_second_order_through_function():
    f = tf.function(lambda x: x * x * x)
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert float(dy) == 12.0 and float(d2y) == 12.0


def test_78_tape_inside_function():
    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x * x
        return tape.gradient(y, x)

    assert float(grad(tf.constant(2.0))) == 12.0


def test_stop_gradient_inside_function():
    f = tf.function(lambda x: tf.stop_gradient(x) * 2.0)
    x = tf.constant(1.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    assert tape.gradient(y, x) is None
    assert float(tape.gradient(y, x, unconnected_gradients="zero")) == 0.0


def test_gradient_through_nested_functions():
    inner = tf.function(lambda x: tf.sin(x) * x)
    outer = tf.function(lambda x: inner(x) + inner(2.0 * x))
    x = tf.constant(0.7)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = outer(x)
    expected = (np.cos(0.7) * 0.7 + np.sin(0.7)) + 2 * (np.cos(1.4) * 1.4 + np.sin(1.4))
    np.testing.assert_allclose(float(tape.gradient(y, x)), expected, rtol=1e-5)


# ------------------------------------------------------------------ 79: failures

def test_79_runtime_failure_not_sticky():
    @tf.function
    def f(x):
        tf.debugging.Assert(tf.reduce_all(x > 0), ["bad"])
        return x * 2.0

    with pytest.raises(InvalidArgumentError):
        f(tf.constant(-1.0))
    assert float(f(tf.constant(2.0))) == 4.0


def test_trace_time_error_then_valid_call():
    @tf.function
    def f(x):
        return tf.matmul(x, x)

    with pytest.raises((InvalidArgumentError, TypeError, ValueError)):
        f(tf.ones([2, 3]))
    assert _count(f) == 0
    np.testing.assert_allclose(f(tf.ones([2, 2])).numpy(), np.full((2, 2), 2.0))


# ------------------------------------------------------------------ 80-82: ConcreteFunction

def test_80_get_concrete_function_then_matching_call_no_retrace():
    f = tf.function(lambda x: x + 1)
    c = f.get_concrete_function(tf.TensorSpec([2], tf.int32))
    assert _count(f) == 1
    np.testing.assert_array_equal(f(tf.constant([1, 2])).numpy(), [2, 3])
    assert _count(f) == 1
    assert f.get_concrete_function(tf.constant([5, 6])) is c


def test_80_concrete_identity_for_tensors_vs_python_values():
    f = tf.function(lambda x: x)
    assert f.get_concrete_function(tf.constant(1)) is f.get_concrete_function(tf.constant(2))
    assert f.get_concrete_function(1) is not f.get_concrete_function(2)


def test_get_concrete_function_does_not_run(capfd):
    v = tf.Variable(0.0)

    @tf.function
    def f(x):
        v.assign_add(1.0)
        tf.print("ran")
        return x

    f.get_concrete_function(tf.TensorSpec([], tf.float32))
    assert float(v) == 0.0
    assert "ran" not in capfd.readouterr().err


def test_81_concrete_python_value_fixed():
    @tf.function
    def f(x, b):
        return x * b

    c = f.get_concrete_function(tf.TensorSpec([], tf.float32), 2)
    assert float(c(tf.constant(3.0))) == 6.0
    assert float(c(tf.constant(3.0), 2)) == 6.0
    with pytest.raises(TypeError):
        c(tf.constant(3.0), 3)


def test_concrete_function_wrong_tensor_type():
    f = tf.function(lambda x: x)
    c = f.get_concrete_function(tf.TensorSpec([2], tf.float32))
    with pytest.raises(TypeError):
        c(tf.constant([1, 2]))
    with pytest.raises(TypeError):
        c(tf.constant([1.0, 2.0, 3.0]))


def test_concrete_function_keyword_call():
    @tf.function
    def f(a, b):
        return a - b

    c = f.get_concrete_function(tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.float32))
    assert float(c(b=tf.constant(1.0), a=tf.constant(3.0))) == 2.0


def test_82_graph_inputs_outputs_structure():
    big = tf.ones([40, 40])
    v = tf.Variable(2.0)

    @tf.function
    def f(x):
        return {"sum": x + tf.reduce_sum(big) * v, "pair": (x, x * 2.0)}

    c = f.get_concrete_function(tf.TensorSpec([], tf.float32))
    assert len(c.inputs) == 3  # placeholder, captured tensor, variable reference
    assert c.inputs[0].dtype == tf.float32 and c.inputs[0].shape.as_list() == []
    assert len(c.outputs) == 3
    so = c.structured_outputs
    assert set(so) == {"sum", "pair"} and isinstance(so["pair"], tuple)
    assert all(isinstance(t, tf.Tensor) for t in (so["sum"],) + so["pair"])
    assert c.variables == (v,) and c.trainable_variables == (v,)
    assert c.captured_inputs == [big]
    out = c(tf.constant(1.0))
    assert float(out["sum"]) == 3201.0 and float(out["pair"][1]) == 2.0


def test_graph_printing():
    @tf.function
    def f(x):
        return x * 2.0 + 1.0

    c = f.get_concrete_function(tf.TensorSpec([None, 3], tf.float32))
    text = str(c.graph)
    assert text.startswith("graph @")
    assert "multiply" in text and "add" in text
    assert c.pretty_printed_signature().startswith("graph @")
    assert "ConcreteFunction" in repr(c)


def test_function_attributes():
    def body(x):
        return x

    f = tf.function(body, jit_compile=False)
    assert f.python_function is body
    assert f.name == "body"
    assert f.input_signature is None
    assert list(f.function_spec.parameters) == ["x"]
    assert f.__name__ == "body"


def test_concurrent_calls_share_one_trace():
    import threading

    f = tf.function(lambda x: x * 2.0)
    results = []

    def worker():
        for _ in range(10):
            results.append(float(f(tf.constant(1.0))))

    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == [2.0] * 40
    assert _count(f) == 1


def test_namedtuple_argument():
    P = collections.namedtuple("P", "a b")
    f = tf.function(lambda p: p.a * p.b)
    assert float(f(P(tf.constant(2.0), tf.constant(3.0)))) == 6.0
    assert float(f(P(tf.constant(4.0), tf.constant(3.0)))) == 12.0
    assert _count(f) == 1


def test_method_on_unhashable_instance():
    import dataclasses

    @dataclasses.dataclass
    class Scaler:
        a: float = 2.0

        @tf.function
        def f(self, x):
            return x * self.a

    s1, s2 = Scaler(2.0), Scaler(3.0)
    assert float(s1.f(tf.constant(1.0))) == 2.0
    assert float(s2.f(tf.constant(1.0))) == 3.0
    assert s1.f is s1.f
    assert s1.f.experimental_get_tracing_count() == 1


def test_method_of_dead_instance_is_a_clear_error():
    class A:
        @tf.function
        def f(self, x):
            return x

    with pytest.raises(ReferenceError, match="no longer exists"):
        A().f(tf.constant(1.0))


def test_kwargs_key_order_irrelevant():
    @tf.function
    def f(**kw):
        return kw["a"] - kw["b"]

    assert float(f(a=tf.constant(3.0), b=tf.constant(1.0))) == 2.0
    assert float(f(b=tf.constant(1.0), a=tf.constant(5.0))) == 4.0
    assert _count(f) == 1


def test_gradient_wrt_variable_argument():
    v = tf.Variable(3.0)
    f = tf.function(lambda v, x: v * v * x)
    with tf.GradientTape() as tape:
        y = f(v, tf.constant(2.0))
    assert float(tape.gradient(y, v)) == 12.0


def test_gradient_through_function_called_in_cond_and_while():
    inner = tf.function(lambda x: x * x)

    @tf.function
    def f(x):
        y = tf.cond(x > 0, lambda: inner(x), lambda: -x)
        return tf.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, inner(s)), (0, y))[1]

    x = tf.constant(1.1, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(float(y), 1.1 ** 8, rtol=1e-12)
    np.testing.assert_allclose(float(tape.gradient(y, x)), 8 * 1.1 ** 7, rtol=1e-12)


def test_gradient_of_concat_with_unknown_sizes_in_function():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32),
                                  tf.TensorSpec([None], tf.float32)])
    def f(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            y = tf.reduce_sum(tf.concat([a, b], 0) * tf.range(5, dtype=tf.float32))
        return tape.gradient(y, [a, b])

    ga, gb = f(tf.ones([2]), tf.ones([3]))
    np.testing.assert_array_equal(ga.numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(gb.numpy(), [2.0, 3.0, 4.0])


def test_gradient_through_function_runs_side_effects_once(capfd):
    """The backward pass rematerializes the forward values without repeating its writes and
    prints (a regression: it used to apply assign_add a second time)."""
    v = tf.Variable(2.0)

    @tf.function
    def g(x):
        v.assign_add(1.0)
        tf.print("called")
        return x * v

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = g(x)
    dx, dv = tape.gradient(y, [x, v])
    assert (float(y), float(dx), float(dv), float(v)) == (9.0, 3.0, 3.0, 3.0)
    assert capfd.readouterr().err.count("called") == 1
