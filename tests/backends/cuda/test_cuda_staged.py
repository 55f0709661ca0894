"""Staged GPU graph functions (the ``"cuda"`` backend) against the reference backend: fused
elementwise kernels with broadcasting, reductions, matmul, gather, cond, while, variables,
gradients, host round trips, the generated source (one kernel per fusion group), the copies the
host function makes (predicates only), the disk cache, and every op of the op table.

A ``tf.function`` called under ``tf.device("/gpu:0")`` compiles with the ``"cuda"`` backend;
its results must equal ``backend="reference"`` on the CPU (dtype, shape, values; floats to the
last bits) and stay on the GPU. Under the simulator launches are tiny (see conftest.py).
"""
from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends import numba_cache
from stagecraft.backends.numba_cuda.staged.codegen import group_size
from stagecraft.backends.numba_cuda import memory
from stagecraft.backends.numba_cuda.staged import compile as compile_cuda
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.ops import Kind

from support.compare import assert_tensors_match
from support.op_examples import apply_all, as_list, dtypes_to_test, examples, inputs
from support.ptx import check_ptx_script

pytestmark = pytest.mark.cuda

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"


def assert_matches(actual, expected, where: str = "") -> None:
    assert_tensors_match(actual, expected, where, device=GPU)


def on_gpu(fn, *args):
    """``fn`` staged and called under the GPU scope, and the reference backend's results."""
    staged = tf.function(fn)
    with tf.device("/gpu:0"):
        actual = staged(*args)
    expected = tf.function(fn, backend="reference")(*args)
    for k, (a, e) in enumerate(zip(as_list(actual), as_list(expected))):
        assert_matches(a, e, f"output {k}")
    return staged


def gpu_source(staged) -> str:
    return tf.compiled_source(staged)


# ------------------------------------------------------------------ kernels and ops

def test_fused_chain_with_broadcasting():
    x = tf.constant(np.linspace(-1, 1, 6).reshape(2, 3), tf.float32)
    y = tf.constant([0.5, -1.0, 2.0], tf.float32)
    z = tf.constant([[1.0], [2.0]], tf.float32)
    n = tf.constant([[1, 2, 3], [4, 5, 6]], tf.int32)

    def f(x, y, z, n):
        a = tf.tanh(x * y + z) - y * 2.0
        b = tf.cast(n // 2, tf.float32) * a + tf.sqrt(tf.abs(z))
        return a, b, a > 0.0

    staged = on_gpu(f, x, y, z, n)
    assert "offset(i, shape, s" in gpu_source(staged)   # broadcast inputs read by strides


def test_unknown_dims_broadcast_at_run_time():
    def f(x, y):
        return tf.exp(x) * y - 1.0, tf.reduce_sum(x + y, axis=0)

    staged = tf.function(f, input_signature=[tf.TensorSpec([None, None], tf.float64),
                                             tf.TensorSpec([None], tf.float64)])
    x = tf.constant(np.arange(6.0).reshape(2, 3) / 5.0)
    for y in (tf.constant([1.0, -2.0, 0.5], tf.float64), tf.constant([3.0], tf.float64)):
        with tf.device("/gpu:0"):
            actual = staged(x, y)
        expected = tf.function(f, backend="reference")(x, y)
        for a, e in zip(actual, expected):
            assert_matches(a, e)
    with tf.device("/gpu:0"), pytest.raises(InvalidArgumentError, match="^multiply at .*"
                                                                       "broadcast"):
        staged(x, tf.constant([1.0, 2.0], tf.float64))


def test_reductions_matmul_and_gather():
    x = tf.constant(np.arange(12.0).reshape(3, 4) / 7.0)
    w = tf.constant(np.linspace(-1.0, 1.0, 8).reshape(4, 2))
    idx = tf.constant([2, 0, 2])

    def f(x, w, idx):
        h = tf.matmul(tf.exp(x * 0.1), w)
        return (tf.reduce_sum(h, axis=0), tf.reduce_max(x, axis=1, keepdims=True),
                tf.reduce_mean(x), tf.gather(h, idx), tf.argmax(x, axis=1))

    on_gpu(f, x, w, idx)


def test_cond_takes_either_branch():
    def f(x):
        if tf.reduce_sum(x) > 0.0:
            y = x * 2.0
        else:
            y = -x
        return y + 1.0

    for sign in (1.0, -1.0):
        on_gpu(f, tf.constant([1.0, 2.0, 3.0]) * sign)


def test_while_with_a_tensor_predicate():
    def f(x, n):
        i = tf.constant(0)
        while i < n:
            x = tf.sin(x) + 0.5
            i += 1
        return x, i

    on_gpu(f, tf.constant([0.1, 0.2, 0.3]), tf.constant(4))


def test_variables_assigned_inside_a_gpu_function():
    with tf.device("/gpu:0"):
        v = tf.Variable([1.0, 2.0, 3.0])
        s = tf.Variable(2, dtype=tf.int64)
    cpu_v = tf.Variable([1.0, 2.0, 3.0])

    @tf.function
    def f(x):
        v.assign_add(x)
        v.assign_sub(x * 0.5)
        s.assign(s * 3)
        cpu_v.assign(v + 1.0)   # a CPU variable gets a host copy
        return v * 2.0

    with tf.device("/gpu:0"):
        out = f(tf.constant([1.0, 1.0, 1.0]))
    assert out.device == GPU and out.numpy().tolist() == [3.0, 5.0, 7.0]
    assert v.device == GPU and v.numpy().tolist() == [1.5, 2.5, 3.5]
    assert s.numpy() == 6 and s.dtype == tf.int64
    assert cpu_v.device.endswith("CPU:0") and cpu_v.numpy().tolist() == [2.5, 3.5, 4.5]


def test_argument_dependent_initial_value_is_computed_on_the_gpu():
    created = []

    @tf.function
    def f(x):
        if not created:
            created.append(tf.Variable(x * 2.0))
        created[0].assign_add(x)
        return created[0].read_value() + x

    with tf.device("/gpu:0"):
        out = f(tf.constant([1.0, 2.0]))
    assert out.device == GPU and out.numpy().tolist() == [4.0, 8.0]
    assert created[0].device == GPU and created[0].numpy().tolist() == [3.0, 6.0]


def test_gradient_through_a_staged_gpu_function():
    w0 = np.linspace(-1.0, 1.0, 6).reshape(3, 2)

    def grads(device):
        w = tf.Variable(w0)
        x = tf.constant([[0.5, -0.25, 1.0]], tf.float64)
        f = tf.function(lambda x: tf.reduce_sum(tf.tanh(tf.matmul(x, w)) * x[:, :2]))
        with tf.device(device):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            return y, tape.gradient(y, [x, w])

    y_g, g_g = grads("/gpu:0")
    y_c, g_c = grads("/cpu:0")
    assert_matches(y_g, y_c)
    for a, e in zip(g_g, g_c):
        assert_matches(a, e)


def test_host_round_trips_print_and_py_function(capsys):
    def f(x):
        tf.print("x:", x)
        y = tf.py_function(lambda t: np.asarray(t) * 3.0, [x], tf.float32)
        return y + 1.0

    with tf.device("/gpu:0"):
        out = tf.function(f)(tf.constant([1.0, 2.0]))
    assert out.device == GPU and out.numpy().tolist() == [4.0, 7.0]
    assert capsys.readouterr().err == "x: [1 2]\n"


def test_integer_check_raises_like_the_cpu():
    f = tf.function(lambda a, b: a // b + 1)
    with tf.device("/gpu:0"):
        assert f(tf.constant([7, 8]), tf.constant([2, 3])).numpy().tolist() == [4, 3]
        with pytest.raises(InvalidArgumentError, match="^floordiv: Integer division by zero"):
            f(tf.constant([7, 8]), tf.constant([2, 0]))


# ------------------------------------------------------------------ generated code

def test_one_kernel_per_fusion_group_and_ir_comments():
    def f(x, y):
        a = tf.exp(x) * y + 1.0          # group 1
        s = tf.reduce_sum(a)             # eager library
        b = tf.tanh(a - s)               # group 2 (after the reduction)
        return tf.matmul(b, b, transpose_b=True) * 0.5   # matmul, then group 3

    x = tf.constant(np.ones((2, 3)), tf.float32)
    staged = on_gpu(f, x, x)
    with tf.device("/gpu:0"):
        graph = staged.get_concrete_function(x, x).optimized_graph
        source = gpu_source(staged)
    groups, i = 0, 0
    while i < len(graph.eqns):
        n = group_size(graph.eqns, i)
        groups += 1 if n else 0
        i += max(n, 1)
    assert groups == 3 and source.count("@cuda.jit") == 3
    assert source.count("    while nxt < o0.size:") == 3
    assert "# %1: f32[2,3] = multiply %0, %y" in source
    assert 'run("matmul"' in source and 'run("reduce_sum"' in source


def test_only_predicates_are_copied_to_the_host(monkeypatch):
    def f(x):
        i = tf.constant(0)
        while i < 3:                              # 4 tests
            x = tf.matmul(x, x) * 0.5
            i += 1
        if tf.reduce_max(x) > 100.0:              # 1 test
            x = x - 1.0
        return tf.reduce_sum(x, axis=1), i

    x = tf.constant([[0.5, 0.25], [0.0, 1.0]])
    with tf.device("/gpu:0"):
        xg = x.gpu()
        staged = tf.function(f)
        staged(xg)   # compiles and uploads the constants
        copies = []
        cls = type(xg._value)
        original = cls.copy_to_host
        monkeypatch.setattr(cls, "copy_to_host",
                            lambda self, *a, **k: copies.append(self.size) or
                            original(self, *a, **k))
        out, i = staged(xg)
        monkeypatch.undo()
    assert copies == [1] * 5
    expected, _ = tf.function(f, backend="reference")(x)
    assert_matches(out, expected)


def test_generated_module_is_disk_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(tmp_path))
    x = tf.constant([1.0, 2.0])
    graph = tf.function(lambda x: tf.sin(x) * x).get_concrete_function(x).optimized_graph
    first, second = compile_cuda(graph), compile_cuda(graph)
    assert first.path.parent == pathlib.Path(tmp_path).resolve()
    assert first.path == second.path and first.path.read_text() == first.source
    assert first.path.name in os.listdir(numba_cache.cache_dir())
    (y,) = second([memory.to_device(np.array([1.0, 2.0], np.float32))])
    np.testing.assert_allclose(memory.to_host(y), np.sin([1.0, 2.0]) * [1.0, 2.0], rtol=1e-6)


def test_compiled_source_shows_the_gpu_code_for_gpu_calls():
    f = tf.function(lambda x: x * 2.0)
    x = tf.constant([1.0])
    f(x)
    assert "@cuda.jit" not in tf.compiled_source(f, x)
    with tf.device("/gpu:0"):
        f(x)
        assert "@cuda.jit" in tf.compiled_source(f)


def test_backend_cuda_stages_every_call_on_the_gpu():
    f = tf.function(lambda x: tf.square(x) + 1.0, backend="cuda")
    out = f(tf.constant([1.0, 2.0]))   # no device scope, CPU input
    assert out.device == GPU and out.numpy().tolist() == [2.0, 5.0]


# ------------------------------------------------------------------ every op

RANDOM = sorted(n for n, op in OPS.items() if op.kind is Kind.RANDOM)
# Ops staged together (one trace, one call each side): the simulator's cost is per launch.
# Batches of at most BATCH ops: on a GPU each op's kernels compile for every sampled dtype,
# and the 80 elementwise ops in one function took over a minute there (workers share them).
BATCH = 20
BATCHES = {f"{kind.name}-{i // BATCH}": names[i:i + BATCH]
           for kind in Kind
           for names in [sorted(n for n, op in OPS.items() if op.kind is kind and n not in RANDOM)]
           for i in range(0, len(names), BATCH)}


def _dtypes(name: str) -> list:
    """Every sampled dtype (``dtypes_to_test``) for elementwise ops (their kernels are
    generated here); the first one for the others, whose kernels are the eager library's
    (tested per dtype in test_cuda_ops.py): what staging adds for them is the orchestration,
    and the simulator is slow."""
    dtypes = list(dtypes_to_test(name))
    return dtypes if OPS[name].kind is Kind.ELEMENTWISE else dtypes[:1]


def _cases(names: list) -> list:
    return [(name, d, ex) for name in names for d in _dtypes(name) for ex in examples(name, d)]


@pytest.mark.parametrize("kind", sorted(k for k, names in BATCHES.items() if names))
def test_every_op_staged_on_the_gpu_equals_reference(kind):
    cases = _cases(BATCHES[kind])
    flat = [x for _, _, ex in cases for x in inputs(ex)]
    fn = apply_all(cases)
    expected = tf.function(fn, backend="reference")(*flat)
    with tf.device("/gpu:0"):
        actual = tf.function(fn)(*flat)
    k = 0
    for name, d, ex in cases:
        for _ in range(OPS[name].num_outputs):
            assert_matches(actual[k], expected[k], f"{name}[{d.name}] {ex.attrs}")
            k += 1


def test_random_ops_staged_equal_the_eager_gpu_ops():
    # The GPU's random streams differ from NumPy's by design: staged must equal eager GPU.
    cases = _cases(RANDOM)
    flat = [x for _, _, ex in cases for x in inputs(ex)]
    fn = apply_all(cases)
    with tf.device("/gpu:0"):
        staged = tf.function(fn)(*flat)
        eager = fn(*flat)
    reference = tf.function(fn, backend="reference")(*flat)
    for s, e, r in zip(staged, eager, reference):
        assert s.device == GPU and s.dtype == r.dtype and s.shape == r.shape
        np.testing.assert_array_equal(s.numpy(), e.numpy())


def test_kernels_compile_for_a_gpu():
    """NVVM (numba-cuda[cu13], no GPU needed) compiles the generated kernels for an H100
    (sm_90), catching what the simulator, which runs them as Python, cannot."""
    check_ptx_script(os.path.join(os.path.dirname(__file__), "staged_ptx_check.py"))


def test_every_op_of_the_table_is_covered():
    assert sorted([*RANDOM, *(n for names in BATCHES.values() for n in names)]) == sorted(OPS)
