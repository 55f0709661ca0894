"""The Numba CPU backend as users meet it: default backend, generated source, control flow
compiled natively, variables, print/assert/py_function, errors, the disk cache across
processes, and threads."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

pytest.importorskip("numba")

import stagecraft as tf  # noqa: E402
from stagecraft.backends.numba_cpu import LoweringError, compile as numba_compile  # noqa: E402
from stagecraft.backends.numba_cpu.codegen import generate  # noqa: E402
from stagecraft.ir import dtypes as dt  # noqa: E402
from stagecraft.ir.graph import GraphBuilder  # noqa: E402
from stagecraft.ir.types import TensorType  # noqa: E402

pytestmark = pytest.mark.backend("numba")


def test_numba_is_the_default_backend():
    env = {k: v for k, v in os.environ.items() if k != "STAGECRAFT_BACKEND"}
    out = subprocess.run([sys.executable, "-c", "from stagecraft import backends; "
                          "print(backends.DEFAULT)"], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["numba"]
    f = tf.function(lambda x: x * 2)
    assert "def graph_fn(x):" in tf.compiled_source(f, tf.constant([1, 2], tf.int32))


def test_dtypes_follow_tensorflow_not_numba_promotion():
    @tf.function
    def f(a, b, c):
        return a + a, b * 2.0, c / c, a > 1
    a, b, c, d = f(tf.constant([1, 2], tf.int32), tf.constant(3.0), tf.constant([4], tf.int32))
    assert (a.dtype, b.dtype, c.dtype, d.dtype) == (tf.int32, tf.float32, tf.float64, tf.bool)
    np.testing.assert_array_equal(a.numpy(), [2, 4])
    assert b.numpy() == np.float32(6.0) and b.numpy().dtype == np.float32


def test_cond_and_while_are_native_control_flow_with_ir_comments():
    @tf.function
    def collatz(n):
        steps = tf.constant(0)
        while n != 1:
            n = tf.cond(n % 2 == 0, lambda: n // 2, lambda: 3 * n + 1)
            steps += 1
        return steps
    assert int(collatz(tf.constant(27))) == 111
    src = tf.compiled_source(collatz, tf.constant(27))
    assert "while True:" in src and "if not " in src and "# %" in src
    assert "objmode" not in src


def test_variables_are_read_and_assigned_in_order():
    v = tf.Variable([1.0, 2.0])
    n = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def step(x):
        before = v.read_value()
        v.assign_sub(0.5 * x)
        n.assign_add(1)
        return before, v.read_value()

    before, after = step(tf.constant([2.0, 4.0]))
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(after.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0])
    step(tf.constant([2.0, 4.0]))
    assert int(n.numpy()) == 2 and n.numpy().dtype == np.int64


def test_print_and_assert_run_in_compiled_code(capsys):
    @tf.function
    def f(x):
        tf.print("x =", x, output_stream=sys.stdout)
        tf.debugging.Assert(tf.reduce_all(x > 0), ["x must be positive"])
        return x + 1

    f(tf.constant([1, 2]))
    assert capsys.readouterr().out == "x = [1 2]\n"
    with pytest.raises(tf.errors.InvalidArgumentError, match="x must be positive"):
        f(tf.constant([-1, 2]))


def test_py_function_with_tensor_spec_runs_through_object_mode():
    calls = []

    def double(t):
        calls.append(1)
        return t * 2

    @tf.function
    def f(x):
        y = tf.py_function(double, [x], tf.TensorSpec([None], tf.float32))
        return y + 1.0

    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [3.0, 5.0])
    f(tf.constant([3.0, 4.0]))
    assert len(calls) == 2
    assert "objmode" in tf.compiled_source(f, tf.constant([1.0, 2.0]))


def test_unknown_ranks_run_on_the_reference_interpreter_and_say_so(caplog):
    f = tf.function(lambda x: x * 2, input_signature=[tf.TensorSpec(None, tf.float32)])
    with caplog.at_level("WARNING", logger="stagecraft"):
        np.testing.assert_array_equal(f(tf.constant([[1.0]])).numpy(), [[2.0]])
    assert "has an unknown rank" in caplog.text
    text = tf.compiled_source(f.get_concrete_function())
    assert text.startswith("# <lambda> runs on the reference interpreter")


def test_runtime_errors_are_invalid_argument_errors_naming_the_op():
    @tf.function
    def f(a, b):
        return a // b
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="^floordiv: Integer division by zero.\n  at .*test_numba_backend"):
        f(tf.constant([1, 2]), tf.constant([1, 0]))


def test_an_op_without_static_shapes_is_a_compile_time_error_naming_the_fallback():
    f = tf.function(lambda a, b: tf.matmul(a, b))
    spec = tf.TensorSpec([None, 2, 2], tf.float32)
    with pytest.raises(LoweringError, match="^matmul at .*backend=\"reference\""):
        f.get_concrete_function(spec, spec)(tf.ones([1, 2, 2]), tf.ones([1, 2, 2]))
    g = tf.function(lambda a, b: tf.matmul(a, b), backend="reference")
    assert g(tf.ones([1, 2, 2]), tf.ones([1, 2, 2])).shape == (1, 2, 2)


def test_threads_call_one_compiled_function_concurrently():
    @tf.function
    def f(x):
        return tf.reduce_sum(tf.tanh(x) * x)
    xs = [tf.constant(np.linspace(-1, 1, 1000) * k) for k in range(8)]
    expected = [float(f(x)) for x in xs]
    results = [None] * 8

    def work(i):
        for _ in range(50):
            results[i] = float(f(xs[i]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == expected


def test_non_contiguous_and_read_only_inputs_are_accepted():
    f = tf.function(lambda x: x + 1.0)
    base = np.arange(12.0).reshape(3, 4)
    view = base.T
    ro = np.arange(3.0)
    ro.setflags(write=False)
    np.testing.assert_array_equal(f(tf.constant(view)).numpy(), view + 1)
    np.testing.assert_array_equal(f(tf.constant(ro)).numpy(), ro + 1)


def test_a_new_process_reuses_the_compiled_code(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        import stagecraft as tf

        @tf.function
        def f(x):
            return tf.reduce_sum(tf.exp(x) * 3.0, axis=0)

        c = f.get_concrete_function(tf.constant(np.ones((2, 3), np.float32)))
        out = c(tf.constant(np.ones((2, 3), np.float32)))
        stats = c.executable.dispatcher.stats
        print(len(stats.cache_hits), len(stats.cache_misses), float(out[0]))
    """)
    path = tmp_path / "reuse.py"
    path.write_text(script)
    env = dict(os.environ, STAGECRAFT_CACHE_DIR=str(tmp_path / "cache"),
               STAGECRAFT_BACKEND="numba")
    runs = [subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(2)]
    assert runs[0][:2] == ["0", "1"]      # compiled and written
    assert runs[1][:2] == ["1", "0"]      # loaded from disk
    assert runs[0][2] == runs[1][2]


def test_a_graph_with_an_unknown_rank_cannot_be_generated():
    b = GraphBuilder("g")
    x = b.param(TensorType(dt.int32, None), "x")
    with pytest.raises(LoweringError, match="^The Numba backend needs the rank of every tensor, "
                                            "and the input 'x' has an unknown rank"):
        generate(b.build([x]))


def test_compile_a_graph_directly():
    b = GraphBuilder("g")
    x = b.param(TensorType(dt.int32, (2,)), "x")
    (y,) = b.add("add", [x, x], [x.type])
    (s,) = b.add("reduce_sum", [y], [TensorType(dt.int32, ())], {"axes": None, "keepdims": False})
    out = numba_compile(b.build([y, s]))([np.array([1, 2], np.int32)])
    assert out[0].dtype == np.int32 and out[1].dtype == np.int32 and int(out[1]) == 6


def test_code_numba_cannot_compile_is_an_internal_error_naming_the_graph_and_fallback():
    b = GraphBuilder("adder")
    x = b.param(TensorType(dt.int32, (2,)), "x")
    (y,) = b.add("add", [x, x], [x.type])
    exe = numba_compile(b.build([y]))
    with pytest.raises(tf.errors.InternalError,
                       match="^Numba could not compile the code generated for 'adder'"):
        exe([np.array(["a", "b"])])   # a type the generated code was never meant to take


def test_unrolled_python_loop_compiles_one_function_per_repeated_piece():
    w = tf.Variable(np.full((4, 4), 0.25, np.float32))
    b = tf.Variable(np.linspace(-1, 1, 4).astype(np.float32))

    def step(x):
        for _ in range(12):  # a Python loop: twelve copies of the body in the graph
            x = tf.tanh(tf.matmul(x, w) + b) * 0.5 + x
        return tf.reduce_sum(x, axis=1)

    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
    source = tf.compiled_source(tf.function(step), x)
    assert source.count("def _repeated_") == 1
    # Every step is in a call (one step or two per call, whichever saves more compile time),
    # but for the ends of the first and last, where the runs' alignment may cut a step; the
    # calls, each taking the one before's results, are rolled into a loop.
    graph_fn = source.split("def graph_fn")[1]
    assert re.search(r"# a piece repeated \d+ times in the graph", source)
    assert "each taking the results of the one before: a loop" in graph_fn
    assert graph_fn.count("np.tanh") <= 1
    expected = tf.function(step, backend="reference")(x)
    np.testing.assert_allclose(tf.function(step)(x).numpy(), expected.numpy(), rtol=1e-6)


def test_identical_loop_nests_share_one_kernel_and_single_ones_stay_inline():
    def f(xs, m):
        outs = []
        for x in xs:  # five copies of one loop nest, each cut off by a matmul
            outs.append(tf.exp(x) * 2.0 - 1.0)
            m = tf.matmul(m, m)
        return outs, tf.sqrt(m + 1.0)  # a loop nest used once: inline
    args = ([tf.constant([0.5 * k, 1.5]) for k in range(5)], tf.eye(2))
    source = tf.compiled_source(tf.function(f), *args)
    assert source.count("def _fused_") == 1 and source.count("= _fused_0(") == 5
    assert "np.sqrt" in source.split("def graph_fn")[1]
    got = tf.function(f)(*args)
    want = tf.function(f, backend="reference")(*args)
    for g, r in zip(got[0] + [got[1]], want[0] + [want[1]]):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6)


def _fill_rows(buf):
    ta = tf.TensorArray(tf.float32, size=4, element_shape=()).unstack(buf)
    i = tf.constant(0)
    while i < 4:  # a staged loop writing every row of a fixed-size TensorArray
        ta = ta.write(i, tf.cast(i, tf.float32) * 10.0 + ta.read(i))
        i += 1
    return ta.stack()


def test_tensor_array_rows_are_written_in_place_without_touching_the_input():
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    before = x.numpy().copy()
    source = tf.compiled_source(tf.function(_fill_rows), x)
    assert "K.row_update1(" in source and ", False)" in source  # in place, copied once
    np.testing.assert_array_equal(tf.function(_fill_rows)(x).numpy(), [1.0, 12.0, 23.0, 34.0])
    np.testing.assert_array_equal(x.numpy(), before)


@pytest.mark.parametrize("backend", ["numba", "reference"])
def test_tensor_array_write_out_of_range_raises(backend):
    @tf.function(backend=backend)
    def f(n):
        ta = tf.TensorArray(tf.float32, size=3, element_shape=())
        i = tf.constant(0)
        while i < n:
            ta = ta.write(i, 1.0)
            i += 1
        return ta.stack()
    np.testing.assert_array_equal(f(tf.constant(3)).numpy(), [1.0, 1.0, 1.0])
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        f(tf.constant(4))
    assert "row_update" in str(info.value).splitlines()[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_max_and_min_of_a_whole_elementwise_result_are_folded_into_its_loop(dtype):
    def f(x):
        return tf.reduce_max(tf.abs(x) * 2), tf.reduce_min(x - 1, axis=[0, 1]), x + 1
    x = np.array([[3, -7, 2], [5, 0, -1]], dtype)
    source = tf.compiled_source(tf.function(f), tf.constant(x))
    assert "K.max3" not in source and "K.min3" not in source
    cases = [x]
    if np.issubdtype(dtype, np.floating):
        cases.append(np.array([[1, np.nan, 2], [-np.inf, 0, 5]], dtype))
    for case in cases:
        got = tf.function(f)(tf.constant(case))
        want = tf.function(f, backend="reference")(tf.constant(case))
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_a_damaged_code_plan_is_regenerated_with_a_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(tmp_path))
    b = GraphBuilder("plan")
    x = b.param(TensorType(dt.float32, (3,)), "x")
    (y,) = b.add("multiply", [x, x], [x.type])
    graph = b.build([y])
    arg = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(numba_compile(graph)([arg])[0], arg * arg)
    (plan,) = tmp_path.glob("plan_*.json")
    plan.write_text("{not json")
    with caplog.at_level("WARNING", logger="stagecraft"):
        np.testing.assert_array_equal(numba_compile(graph)([arg])[0], arg * arg)
    assert caplog.text.count("is corrupted") == 1 and str(plan) in caplog.text
    from stagecraft.backends.numba_cache import unseal  # rewritten, sealed with its digest
    assert unseal(plan.read_bytes()).startswith(b'{"format": "stagecraft.numba_plan/2"')


def test_repeated_calls_take_the_generated_hot_path_with_the_same_results():
    """Second and later eager calls go through one generated entry per concrete function
    (tensors, captured arrays and variables in, boxed results out): captured tensors, a
    variable written back, a scalar and a tuple result, and a small uniform constant."""
    big = tf.constant(np.arange(2000, dtype=np.float32))  # captured, not embedded
    v = tf.Variable(0.0)

    @tf.function(backend="numba")
    def f(x):
        v.assign_add(tf.reduce_sum(x))
        buf = tf.zeros([8]) + x[0]
        return big[:3] * x[0], tf.reduce_sum(buf), v.read_value()

    @tf.function(backend="numba")
    def g(x):
        return x * 2.0

    for k in range(1, 4):
        x = tf.constant([float(k), 1.0])
        a, s, now = f(x)
        assert a.numpy().tolist() == [0.0, k, 2.0 * k] and a.dtype == tf.float32
        assert float(s) == 8.0 * k and s.shape == [] and s.dtype == tf.float32
        assert float(now) == float(v.numpy()) == sum(j + 1.0 for j in range(1, k + 1))
        assert g(x).numpy().tolist() == [2.0 * k, 2.0]
    assert f._fast and g._fast  # the hot-path entries exist
    assert len(f._fast) == 1 and len(g._fast) == 1
