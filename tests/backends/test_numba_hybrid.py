"""The Numba backend's hybrid plans (graphs above ``stagecraft.config.get_hybrid_threshold()``):
a sample of the op table against the reference interpreter, kernels shared by identical steps
(within a graph, across graphs and sizes), control flow and variables through the driver,
errors with the interpreter's messages, the background mode, ``show_compiled`` and the
threshold policy. Threshold 0 makes every graph of these tests hybrid."""
from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("numba")

import stagecraft as tf  # noqa: E402
from stagecraft import backends  # noqa: E402
from stagecraft.backends.numba_cpu import hybrid, tiered  # noqa: E402
from stagecraft.ir import OPS  # noqa: E402

from support.compare import BACKEND_TOL, assert_tensors_match  # noqa: E402
from support.op_examples import apply_all, cases, inputs  # noqa: E402

pytestmark = pytest.mark.backend("numba")


@pytest.fixture
def threshold():
    """Sets the hybrid threshold for the test (restored after it)."""
    saved = backends.hybrid_threshold()
    yield tf.config.set_hybrid_threshold
    tf.config.set_hybrid_threshold(saved)


@pytest.fixture
def all_hybrid(threshold):
    threshold(0)


def executable(f, *args):
    return f.get_concrete_function(*args).executable


# A sample of the op table (every op compiles kernels of its own: the full table runs through
# the whole-graph backend in test_numba_ops.py, and these steps reuse that code generator):
# kernel calls of each family, fused elementwise groups, ops the driver runs with NumPy. The
# rest of the sample (each permutation of transpose is a kernel of its own...) runs with
# --full-matrix.
SAMPLE = ["add", "conv", "conv_backprop_input", "gather", "max_pool", "reduce_max", "select",
          "strided_slice"]
MORE = ["cumsum", "reduce_mean", "reshape", "scatter_nd", "tanh", "transpose"]


@pytest.mark.parametrize("name", [n for n in SAMPLE if n in OPS] + [
    pytest.param(n, marks=pytest.mark.full_matrix) for n in MORE if n in OPS])
def test_hybrid_equals_reference_on_a_sample_of_the_op_table(name, all_hybrid):
    # Four examples of the first dtype: every step of another dtype is a kernel of its own
    # (the dtypes themselves are covered by the whole-graph tests, on the same generator).
    cs = [(name, d, ex) for d, ex in cases(name)]
    cs = [c for c in cs if c[1] == cs[0][1]][:4]
    flat = [x for _, _, ex in cs for x in inputs(ex)]
    expected = tf.function(apply_all(cs), backend="reference")(*flat)
    staged = tf.function(apply_all(cs), backend="numba")
    actual = staged(*flat)
    assert isinstance(executable(staged, *flat), hybrid.HybridExecutable)
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert_tensors_match(a, e, f"{name} output {k} (hybrid)", BACKEND_TOL)


def block(x, w):
    """A block: a fused elementwise group and a kernel call (which ends the group: two blocks
    in a row are four steps)."""
    return tf.math.cumsum(tf.tanh(x * w + 1.0), axis=1)


def test_identical_blocks_share_one_compiled_kernel(all_hybrid):
    one = tf.function(lambda x, w: block(x, w), backend="numba")
    two = tf.function(lambda x, w: block(block(x, w), w), backend="numba")
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    w = tf.constant(np.float32([0.5, 1.0, 1.5, 2.0]))
    np.testing.assert_allclose(two(x, w).numpy(), block(block(x, w), w).numpy(), rtol=1e-6)
    k1 = executable(one, x, w).plan.kernels()
    k2 = executable(two, x, w).plan.kernels()
    assert len(k2) == len(k1) == 2      # twice the steps, the same two kernels
    assert [k.key for k in k2] == [k.key for k in k1]
    assert all(a is b for a, b in zip(k1, k2))  # shared across graphs of the process
    # Sizes are run-time arguments: another shape, the same compiled functions.
    big = tf.constant(np.ones((5, 4), np.float32))
    assert [k.key for k in executable(one, big, w).plan.kernels()] == [k.key for k in k1]


def test_control_flow_runs_its_regions_as_plans(all_hybrid):
    @tf.function(backend="numba")
    def collatz(n, x):
        steps = tf.constant(0)
        while n != 1:
            n = tf.cond(n % 2 == 0, lambda: n // 2, lambda: 3 * n + 1)
            x = tf.tanh(x * 1.5)
            steps += 1
        return steps, x
    x = tf.constant(np.float32([0.1, -0.2, 0.3]))
    steps, y = collatz(tf.constant(27), x)
    ref_steps, ref_y = tf.function(collatz.python_function, backend="reference")(
        tf.constant(27), x)
    assert int(steps) == int(ref_steps) == 111
    assert_tensors_match(y, ref_y, "collatz x", BACKEND_TOL)
    plan = executable(collatz, tf.constant(27), x).plan
    assert any(s.regions for s in plan.steps)
    assert "-> kernel_" in tf.compiled_source(collatz, tf.constant(27), x)


def test_variables_are_read_and_assigned_in_order_also_in_regions(all_hybrid):
    v = tf.Variable([1.0, 2.0])
    n = tf.Variable(0, dtype=tf.int64)

    @tf.function(backend="numba")
    def step(x, k):
        first = v.read_value()
        for _ in tf.range(k):       # a while region assigning both variables
            v.assign_sub(0.5 * x)
            n.assign_add(1)
        return first, v.read_value() * 2.0

    x, k = tf.constant([2.0, 4.0]), tf.constant(2)
    first, last = step(x, k)
    np.testing.assert_array_equal(first.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(last.numpy(), [-2.0, -4.0])
    np.testing.assert_array_equal(v.numpy(), [-1.0, -2.0])
    step(x, tf.constant(1))
    assert int(n.numpy()) == 3 and n.numpy().dtype == np.int64
    assert v.numpy().dtype == np.float32
    assert isinstance(executable(step, x, k), hybrid.HybridExecutable)


def test_errors_are_the_interpreters_with_their_location(all_hybrid):
    def f(x, i):
        return tf.gather(tf.tanh(x), i)
    x, i = tf.constant([1.0, 2.0]), tf.constant([0, 5])
    with pytest.raises(tf.errors.InvalidArgumentError) as expected:
        tf.function(f, backend="reference")(x, i)
    with pytest.raises(tf.errors.InvalidArgumentError) as actual:
        tf.function(f, backend="numba")(x, i)
    assert str(actual.value) == str(expected.value)
    assert " at " in str(actual.value)


def test_background_mode_answers_from_the_interpreter_then_compiles(all_hybrid):
    saved = backends.compile_mode()
    tf.config.set_compile_mode("background")
    try:
        # A structure no other test compiles: its kernels are new to the worker.
        f = tf.function(lambda x: tf.math.cumprod(tf.sinh(x) * 0.25 + 2.0, axis=0) - 1.0,
                        backend="numba")
        x = tf.constant(np.linspace(0, 1, 7))
        first = f(x).numpy()
        exe = executable(f, x)
        assert isinstance(exe, hybrid.HybridExecutable) and exe.mode == "background"
        assert exe.wait(timeout=300)
        np.testing.assert_allclose(f(x).numpy(), first, rtol=1e-12)
        assert all(k.exe is not None for k in exe.plan.kernels())
    finally:
        tf.config.set_compile_mode(saved)


def test_the_threshold_picks_whole_graph_or_hybrid(threshold, caplog):
    f = tf.function(lambda x: tf.tanh(x) * 2.0 + x, backend="numba")   # 3 equations
    x = tf.constant([1.0, 2.0])
    threshold(3)
    assert isinstance(executable(f, x), tiered.SyncExecutable)
    threshold(2)
    g = tf.function(lambda x: tf.tanh(x) * 2.0 + x, backend="numba")
    exe = executable(g, x)
    assert isinstance(exe, hybrid.HybridExecutable)
    assert hybrid.equation_count(exe.graph) == 3
    with caplog.at_level(logging.INFO, logger="stagecraft"):
        np.testing.assert_allclose(g(x).numpy(), f(x).numpy(), rtol=1e-6)
    assert exe.source.startswith("# '<lambda>' has 3 equations, more than the hybrid threshold")
    assert tf.config.get_hybrid_threshold() == 2
    with pytest.raises(ValueError, match="^the hybrid threshold must be a number of "
                                         "equations"):
        tf.config.set_hybrid_threshold(-1)
