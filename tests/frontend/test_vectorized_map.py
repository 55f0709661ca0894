"""tf.vectorized_map as a batching transform: results equal map_fn's for many functions (eager
and staged), per-example gradients and Jacobians through a tape, no loop in the staged graph
when every op has a rule (equations counted), the fallback to a loop (logged, naming the op)
and the error when fallback_to_while_loop=False."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ir.graph import walk_eqns

RNG = np.random.default_rng(0)
X = tf.constant(RNG.normal(size=(5, 3, 4)))
V = tf.constant(RNG.normal(size=(5, 4)))
W = tf.constant(RNG.normal(size=(4, 2)))
IDX = tf.constant([2, 0, 3, 1, 1])
TABLE = tf.constant(RNG.normal(size=(4, 3)))

# name -> (fn of one element, elems)
CASES = {
    "elementwise_broadcast": (lambda m: tf.exp(m) * tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64) + 1.0, X),
    "reductions": (lambda m: (tf.reduce_sum(m, axis=0), tf.reduce_max(m, axis=-1),
                              tf.reduce_mean(m), tf.argmax(m, axis=1)), X),
    "matmul_unbatched_weights": (lambda m: tf.matmul(m, W), X),
    "matmul_both_batched": (lambda m: tf.matmul(m, m, transpose_b=True), X),
    "matvec": (lambda v: tf.linalg.matvec(tf.transpose(W), v), V),
    "reshape_transpose": (lambda m: tf.transpose(tf.reshape(m, [2, 6]))[:, ::-1], X),
    "concat_stack_tile": (lambda v: tf.concat([v, tf.tile(v[:2], [2]), tf.ones([1], v.dtype)],
                                              0), V),
    "slicing_and_expand": (lambda m: tf.expand_dims(m[1:, 2], 0) + tf.squeeze(m[:1, 1:3]), X),
    "gather_batched_indices": (lambda i: tf.gather(TABLE, i), IDX),
    "gather_batched_params": (lambda v: tf.gather(v, [3, 0]), V),
    "structure_in_and_out": (lambda d: {"s": d["a"] * tf.cast(d["b"], tf.float64), "t": d["b"]},
                             {"a": V, "b": IDX}),
    "softmax_and_norm": (lambda v: tf.nn.softmax(v) + tf.norm(v), V),
    "one_hot_and_cast": (lambda i: tf.cast(tf.one_hot(i, 4), tf.float64) * 2.0, IDX),
    "where_and_compare": (lambda v: tf.where(v > 0, v, tf.zeros_like(v)), V),
    "cumsum_and_broadcast_to": (lambda v: tf.broadcast_to(tf.cumsum(v), [2, 4]), V),
    "cond_batched_predicate": (lambda v: tf.cond(tf.reduce_sum(v) > 0, lambda: v * 2.0,
                                                 lambda: -v), V),
    "linalg_per_matrix": (lambda m: tf.linalg.det(tf.matmul(m, m, transpose_a=True)), X),
    "diag_band": (lambda v: tf.linalg.diag_part(tf.linalg.diag(v), k=(-1, 0)), V),
    "constant_result": (lambda v: tf.constant(3.0), V),
    "cond_shared_predicate": (lambda v: tf.cond(tf.reduce_sum(W) > 0, lambda: v + 1.0,
                                                lambda: v - 1.0), V),
    "conv_and_pool": (lambda m: tf.nn.max_pool2d(tf.nn.conv2d(
        tf.reshape(m, [1, 3, 4, 1]), tf.ones([2, 2, 1, 2], tf.float64), 1, "SAME"), 2, 1,
        "VALID"), X),
    "nested_function_and_variable": (lambda v: _scaled(v) + _VAR, V),
    "tensor_scatter": (lambda v: tf.tensor_scatter_nd_add(
        tf.tensor_scatter_nd_update(v, [[1], [3]], tf.constant([9.0, 8.0], tf.float64)),
        [[0]], v[:1]), V),
    "segment_reductions": (lambda v: (tf.math.unsorted_segment_sum(v, [0, 2, 2, 1], 3),
                                      tf.math.segment_max(v, [0, 0, 1, 1])), V),
    "gather_nd": (lambda v: tf.gather_nd(tf.reshape(v, [2, 2]), [[1, 0], [0, 1]]), V),
}

_VAR = tf.Variable(RNG.normal(size=(4,)))


@tf.function
def _scaled(v):
    return tf.nn.relu(v) * 3.0


def _check(got, want):
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)
        assert g.dtype == w.dtype


def _loops(fn, *args):
    graph = tf.function(fn).get_concrete_function(*args).graph
    return [e.op for e in walk_eqns(graph) if e.op == "while"]


def _vectorizes_like_map_fn(fn, elems, count_loops=True):
    """vectorized_map(fn) equals map_fn(fn) eagerly and staged, and stages without a loop."""
    want = tf.map_fn(fn, elems)
    _check(tf.vectorized_map(fn, elems, fallback_to_while_loop=False), want)
    staged = tf.function(lambda e: tf.vectorized_map(fn, e, fallback_to_while_loop=False))
    _check(staged(elems), want)
    if count_loops:
        assert _loops(lambda e: tf.vectorized_map(fn, e), elems) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_map_fn_eager_and_staged(name):
    _vectorizes_like_map_fn(*CASES[name], count_loops=False)


def test_no_loop_is_emitted_when_every_op_has_a_rule():
    fn = lambda e: tf.vectorized_map(lambda m: tf.reduce_sum(tf.matmul(m, W) ** 2), e)
    assert _loops(fn, X) == []
    # (the loop of map_fn, for comparison, is there)
    assert _loops(lambda e: tf.map_fn(lambda m: tf.reduce_sum(tf.matmul(m, W) ** 2), e), X)


def test_per_example_gradients_inside_fn():
    w = tf.Variable(RNG.normal(size=(4,)))

    def per_example(v):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.tanh(v * w) ** 2)
        return tape.gradient(loss, w)

    _vectorizes_like_map_fn(per_example, V)


def test_jacobian_rows_through_an_outer_tape():
    x = tf.constant(RNG.normal(size=(3,)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.sin(x) * tf.reduce_sum(x ** 2)
    # the Jacobian dy/dx by vectorizing over the one-hot output seeds
    jac = tf.vectorized_map(lambda seed: tape.gradient(y, x, output_gradients=seed),
                            tf.eye(3, dtype=tf.float64))
    xn = x.numpy()
    want = np.diag(np.cos(xn)) * np.sum(xn ** 2) + np.outer(np.sin(xn), 2 * xn)
    np.testing.assert_allclose(jac.numpy(), want, rtol=1e-12)


def test_gradient_through_vectorized_map_equals_map_fn():
    def loss(fn, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fn(lambda m: tf.reduce_logsumexp(tf.matmul(m, W), axis=0), x))
        return tape.gradient(y, x)

    np.testing.assert_allclose(loss(tf.vectorized_map, X).numpy(), loss(tf.map_fn, X).numpy(),
                               rtol=1e-12)


def test_an_op_without_a_rule_falls_back_to_a_loop_and_says_which(caplog):
    fn = lambda v: tf.random.stateless_normal([2], seed=[1, 2]) + tf.cast(tf.reduce_sum(
        tf.unique(tf.cast(v > 0, tf.int32))[0]), tf.float32)
    with caplog.at_level(logging.INFO, logger="stagecraft"):
        got = tf.vectorized_map(fn, V)
    assert "cannot be vectorized" in caplog.text and "'unique_index'" in caplog.text
    _check(got, tf.map_fn(fn, V))
    assert _loops(lambda e: tf.vectorized_map(fn, e), V)   # the loop is there
    with pytest.raises(ValueError, match="tf.vectorized_map: fn uses op '.*', which cannot be "
                                         "vectorized"):
        tf.vectorized_map(fn, V, fallback_to_while_loop=False)


def _python_if(v):
    if tf.reduce_sum(v) > 0:   # AutoGraph: a cond on a predicate that differs per element
        return v * 2.0
    return -v


def test_python_control_flow_in_fn_is_converted():
    _vectorizes_like_map_fn(_python_if, V)


def _counted(d):
    v, n = d
    i, acc = tf.constant(0), tf.zeros_like(v)
    while i < n:   # AutoGraph: a while loop whose trip count differs per element
        acc = acc + v * tf.cast(i, tf.float64)
        i += 1
    return acc


def test_loops_run_as_one_loop_over_the_batch():
    fixed = lambda v: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * v), (0, v))[1]
    _vectorizes_like_map_fn(fixed, V, count_loops=False)
    _vectorizes_like_map_fn(_counted, (V, IDX), count_loops=False)
    x = tf.constant(V)
    grads = []
    for mapper in (tf.vectorized_map, tf.map_fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(mapper(_counted, (x, IDX)))
        grads.append(tape.gradient(y, x).numpy())
    np.testing.assert_allclose(*grads, rtol=1e-12)


def test_each_element_runs_only_the_branch_it_takes():
    # an untaken branch would index past the table, or give NaN gradients through sqrt
    table = tf.constant([1.0, 2.0, 3.0])
    guarded = lambda i: tf.cond(i < 3, lambda: tf.gather(table, i), lambda: tf.constant(0.0))
    _vectorizes_like_map_fn(guarded, tf.constant([0, 5, 2, 3]), count_loops=False)

    def root(v):
        return tf.cond(v > 0, lambda: tf.sqrt(v), lambda: v * 0.5)

    x = tf.constant([4.0, -1.0, 0.25, -3.0], tf.float64)
    grads = []
    for mapper in (tf.vectorized_map, tf.map_fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(mapper(root, x))
        grads.append(tape.gradient(y, x).numpy())
    np.testing.assert_allclose(grads[0], grads[1])
    assert np.isfinite(grads[0]).all()
    _vectorizes_like_map_fn(root, tf.constant([-1.0, -2.0], tf.float64), count_loops=False)


def test_a_loop_body_that_could_fail_past_an_elements_end_falls_back():
    table = tf.constant([1.0, 2.0, 3.0])
    summed = lambda n: tf.while_loop(lambda i, a: i < n,
                                     lambda i, a: (i + 1, a + tf.gather(table, i)), (0, 0.0))[1]
    idx = tf.constant([0, 1, 3, 2])   # one more iteration for n < 3 would read table[3]
    _check(tf.vectorized_map(summed, idx, warn=False), tf.map_fn(summed, idx))
    with pytest.raises(ValueError, match="fn uses op 'gather'.*loop has ended"):
        tf.vectorized_map(summed, idx, fallback_to_while_loop=False)


def test_a_loop_that_grows_its_variables_falls_back():
    fn = lambda v: tf.while_loop(lambda a: tf.size(a) < 8, lambda a: (tf.concat([a, a], 0),),
                                 (v,), shape_invariants=[tf.TensorShape([None])])[0]
    _check(tf.vectorized_map(fn, V), tf.map_fn(fn, V))
    with pytest.raises(ValueError, match="fn uses op 'while'.*shape changes"):
        tf.vectorized_map(fn, V, fallback_to_while_loop=False)


def test_a_rule_refusing_its_case_when_run_falls_back():
    # reshape has a rule, but not for a target shape computed from each element's values
    fn = lambda v: tf.reshape(v, tf.stack([tf.cast(tf.reduce_sum(tf.ones_like(v)) / 2,
                                                   tf.int32), 2]))
    _check(tf.vectorized_map(fn, V, warn=False), tf.map_fn(fn, V))
    with pytest.raises(ValueError, match="fn uses op 'reshape'.*target shape differs"):
        tf.vectorized_map(fn, V, fallback_to_while_loop=False)


def test_random_draws_fall_back_with_a_message(caplog):
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        x = tf.vectorized_map(lambda v: v + tf.random.normal([4], dtype=tf.float64), V)
    assert x.shape == [5, 4] and "'random_normal'" in caplog.text
    with pytest.raises(ValueError, match="random draw"):
        tf.vectorized_map(lambda v: v + tf.random.normal([4], dtype=tf.float64), V,
                          fallback_to_while_loop=False)


def test_bad_elems_are_reported():
    with pytest.raises(ValueError, match="rank >= 1"):
        tf.vectorized_map(lambda x: x, tf.constant(1.0))
    with pytest.raises(ValueError, match="the same first dimension"):
        tf.vectorized_map(lambda d: d, (V, IDX[:3]))


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_batch_size_unknown_when_traced(backend):
    fns = [lambda m: tf.matmul(m, W), lambda m: tf.reshape(m, [-1]),
           lambda m: tf.reduce_sum(m) * tf.ones([2], tf.float64),
           lambda m: tf.cond(tf.reduce_sum(m) > 0, lambda: m, lambda: -m),
           lambda m: tf.linalg.diag_part(m, k=(0, 1))]

    @tf.function(backend=backend, input_signature=[tf.TensorSpec([None, 3, 4], tf.float64)])
    def f(e):
        return [tf.vectorized_map(fn, e, fallback_to_while_loop=False) for fn in fns]

    for got, fn in zip(f(X), fns):
        _check(got, tf.map_fn(fn, X))


def test_per_example_gradients_of_a_small_cnn():
    # (DP-SGD's use: per-example filter gradients become one grouped convolution)
    rng = np.random.default_rng(2)
    images = tf.constant(rng.normal(size=(4, 6, 6, 2)))
    k1, k2 = tf.Variable(rng.normal(size=(3, 3, 2, 3))), tf.Variable(rng.normal(size=(2, 2, 3, 4)))

    def per_example(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            h = tf.nn.avg_pool2d(tf.nn.relu(tf.nn.conv2d(x[None], k1, 1, "SAME")), 2, 2, "VALID")
            h = tf.nn.max_pool2d(tf.nn.conv2d(h, k2, 1, "VALID"), 2, 1, "VALID")
            loss = tf.reduce_sum(h ** 2)
        return tape.gradient(loss, [k1, k2, x])

    _vectorizes_like_map_fn(per_example, images)


def test_tape_jacobians_are_vectorized():
    x = tf.constant(RNG.normal(size=(3, 4)))

    def jacobians(pfor):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.tanh(tf.matmul(x, W)) * tf.reduce_sum(x, axis=1, keepdims=True)
        full = tape.jacobian(y, [x, W], experimental_use_pfor=pfor)
        per_example = tape.batch_jacobian(y, x, experimental_use_pfor=pfor)
        return [*full, per_example]

    for got, want in zip(jacobians(True), jacobians(False)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)

    def staged(v, pfor=True):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(v)
            y = tf.sin(v) * 2.0
        return tape.jacobian(y, v, experimental_use_pfor=pfor)

    def size(pfor):
        graph = tf.function(lambda v: staged(v, pfor)).get_concrete_function(x).graph
        return sum(1 for _ in walk_eqns(graph))

    assert _loops(staged, x) == []
    assert size(True) * 3 < size(False)   # one batched backward pass, not 12 unrolled ones
    np.testing.assert_allclose(tf.function(staged)(x).numpy(), staged(x).numpy())
