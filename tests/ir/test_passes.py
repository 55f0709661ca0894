"""Tests of the graph passes in ``stagecraft.ir.passes``.

Each pass gets before/after IR goldens on graphs traced from tiny ``tf.function``s; every
rewritten graph is checked with ``stagecraft.ir.verify.verify`` (or, while that module does
not exist, a small bind-before-use check) and, where it has tensor inputs only, run with the
reference backend before and after on random inputs.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.reference import run_graph
from stagecraft.ir import OPS, dtypes
from stagecraft.ir.graph import (Eqn, Graph, GraphBuilder, Literal, Value, const_value,
                                 walk_eqns)
from stagecraft.ir.passes import (DEFAULT_PIPELINE, PassManager, eliminate_common_subexpressions,
                                  eliminate_dead_code, eliminate_dead_loop_vars,
                                  eliminate_unused_operands, fold_constant_cond, fold_constants,
                                  merge_equal_loop_vars, optimize, simplify_algebra)
from stagecraft.ir.passes.fold_constants import MAX_FOLDED_ELEMENTS
from stagecraft.ir.passes.simplify_algebra import BY_OP, REWRITES
from stagecraft.ir.types import TensorType

F32 = TensorType(dtypes.float32, ())
V3 = tf.TensorSpec([3], tf.float32)


# ------------------------------------------------------------------------- helpers

def _fallback_verify(graph: Graph) -> None:
    """Bind-before-use and single definition (used only until ``ir/verify.py`` exists)."""
    defined: set[int] = set()

    def check(g: Graph) -> None:
        local = {p.uid for p in g.params}
        defined.update(local)
        for e in g.eqns:
            for x in e.inputs:
                assert isinstance(x, Literal) or x.uid in local, f"{x!r} used before definition"
            for r in e.regions:
                check(r)
            for o in e.outputs:
                assert o.uid not in local, f"{o!r} defined twice"
                local.add(o.uid)
        for r in g.results:
            assert isinstance(r, Literal) or r.uid in local, f"result {r!r} undefined"

    check(graph)


def _verifier():
    try:
        from stagecraft.ir.verify import verify
    except ImportError:
        return _fallback_verify
    return verify


def verify(graph: Graph) -> None:
    _verifier()(graph)


def graph_of(fn, *specs) -> Graph:
    return tf.function(fn).get_concrete_function(*specs).graph


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def apply(pass_fn, graph: Graph) -> Graph:
    """Runs ``pass_fn``, checks the result, and checks a second run reports no change."""
    changed, out = pass_fn(graph)
    verify(out)
    assert changed == (out is not graph)
    again, out2 = pass_fn(out)
    assert not again and out2 is out, "a pass must reach its own fixpoint in one run"
    return out


def assert_same_results(before: Graph, after: Graph, seed: int = 0, trials: int = 3) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        args = [rng.standard_normal([d or 3 for d in p.type.shape]).astype(p.type.dtype.np)
                if p.type.dtype.is_floating else
                rng.integers(-5, 5, [d or 3 for d in p.type.shape]).astype(p.type.dtype.np)
                for p in before.params]
        want = run_graph(before, args)
        got = run_graph(after, args)
        assert len(want) == len(got)
        for w, g in zip(want, got):
            g, w = np.asarray(g), np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)  # bit-exact (NaNs compare equal)
            assert np.array_equal(np.signbit(g), np.signbit(w))


# --------------------------------------------------------------------- dead code

def test_dce_golden_keeps_stateful_equations_in_order():
    v = tf.Variable(np.zeros(3, np.float32))

    def f(x):
        tf.exp(x)  # unused
        v.assign(x * 2.0)
        tf.print(x)
        tf.py_function(lambda t: t * 3, [x], tf.float32)  # unused output, still runs
        tf.sin(x)  # unused
        v.assign_add(x)
        return x + 1.0

    after = apply(eliminate_dead_code, graph_of(f, V3))
    assert str(after) == golden("""
        graph @f(%x: f32[3], %Variable: ref f32[3]) -> (f32[3]) {
          %0: f32[3] = multiply %x, 2.0:f32
          assign[mode='assign'] %Variable, %0
          print[end='\\n', sep=' ', stream='stderr', summarize=3, template=(('t',),)] %x
          %1: f32[*] = py_function[Tout=(f32,), fn=python('_array_function.<locals>.run')] %x
          assign[mode='add'] %Variable, %x
          %2: f32[3] = add %x, 1.0:f32
          return %2
        }""")
    assert [e.op for e in after.eqns] == ["multiply", "assign", "print", "py_function", "assign",
                                          "add"]


def test_dce_inside_regions_keeps_arity():
    def f(x):
        def then():
            tf.exp(x)  # unused inside the branch
            return x * 2.0
        return tf.cond(x[0] > 0, then, lambda: x)

    before = graph_of(f, V3)
    after = apply(eliminate_dead_code, before)
    assert str(after) == golden("""
        graph @f(%x: f32[3]) -> (f32[3]) {
          %0: f32[] = strided_slice[spec=(('index', 0),)] %x
          %1: bool[] = greater %0, 0.0:f32
          %2: f32[3] = cond %1, %x
            then(%x.1: f32[3]) {
              %3: f32[3] = multiply %x.1, 2.0:f32
              yield %3
            }
            else(%x.2: f32[3]) {
              yield %x.2
            }
          return %2
        }""")
    assert_same_results(before, after)


def test_dce_keeps_random_and_control_flow_containing_state():
    def f(x):
        tf.random.normal([3])  # unused: the draw goes, its site's state still advances

        def body(i):
            tf.print(i)
            return i + 1
        tf.while_loop(lambda i: i < 2, body, (tf.constant(0),))  # unused outputs, prints
        return x

    after = apply(eliminate_dead_code, graph_of(f, V3))
    ops = [e.op for e in after.eqns]
    assert "random_normal" not in ops and "while" in ops
    assert ops[:2] == ["read", "const"] and "assign" in ops  # the seed's read and advance
    assert any(e.op == "print" for e in walk_eqns(after))


# -------------------------------------------------------------------- constants

def test_fold_constants_golden():
    def f(x):
        c = tf.constant([1.0, 2.0, 3.0]) * 3.0 + tf.constant(1.0)
        return x + c

    before = graph_of(f, V3)
    assert str(before) == golden("""
        graph @f(%x: f32[3]) -> (f32[3]) {
          %0: f32[3] = const[value=array([1.0, 2.0, 3.0], f32)]
          %1: f32[3] = multiply %0, 3.0:f32
          %2: f32[] = const[value=array(1.0, f32)]
          %3: f32[3] = add %1, %2
          %4: f32[3] = add %x, %3
          return %4
        }""")
    after = apply(fold_constants, before)
    assert str(after) == golden("""
        graph @f(%x: f32[3]) -> (f32[3]) {
          %0: f32[3] = const[value=array([1.0, 2.0, 3.0], f32)]
          %1: f32[3] = const[value=array([3.0, 6.0, 9.0], f32)]
          %2: f32[] = const[value=array(1.0, f32)]
          %3: f32[3] = const[value=array([4.0, 7.0, 10.0], f32)]
          %4: f32[3] = add %x, %3
          return %4
        }""")
    assert_same_results(before, after)
    assert str(apply(eliminate_dead_code, after)) == golden("""
        graph @f(%x: f32[3]) -> (f32[3]) {
          %0: f32[3] = const[value=array([4.0, 7.0, 10.0], f32)]
          %1: f32[3] = add %x, %0
          return %1
        }""")


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64, tf.float32, tf.float64])
def test_fold_constants_keeps_exact_dtype(dtype):
    def f():
        a = tf.constant(7, dtype) // tf.constant(2, dtype) + tf.constant(1, dtype)
        return a * a, tf.cast(a, tf.float32), tf.reduce_sum(tf.fill([2, 3], a))

    before = graph_of(f)
    after = optimize(before)
    verify(after)
    assert {e.op for e in after.eqns} == {"const"}
    values = {e.outputs[0].uid: const_value(e) for e in after.eqns}
    (a2, cast, total) = [values[r.uid] for r in after.results]
    assert a2.dtype == dtype.np and cast.dtype == np.float32 and total.dtype == dtype.np
    assert a2.tolist() == 16 and cast.tolist() == 4.0 and total.tolist() == 24
    assert_same_results(before, after)


def test_fold_constants_skips_random_large_and_failing_ops():
    def f():
        r = tf.random.uniform([2]) * tf.constant(2.0)          # random: never folded
        big = tf.fill([MAX_FOLDED_ELEMENTS + 1], tf.constant(1.0))  # over the size limit
        bad = tf.constant(1) // tf.constant(0)                 # raises: left for run time
        return r, big, bad

    after = apply(fold_constants, graph_of(f))
    ops = [e.op for e in after.eqns]
    assert ops.count("random_uniform") == 1  # its seed is read from its state
    assert "fill" in ops and "floordiv" in ops
    assert all(const_value(e).size <= MAX_FOLDED_ELEMENTS for e in after.eqns if e.op == "const")


def test_fold_constants_folds_outputs_of_unknown_size():
    # range's output type is i32[?]: the folded value has a known size, its type stays as it
    # was (so nothing downstream changes), and no backend sizes it from device values
    def f(x):
        n = tf.maximum(tf.constant(5) - tf.constant(2), 0)
        return tf.gather(x, tf.range(0, n, 1) * 0)

    before = graph_of(f, V3)
    assert "range" in [e.op for e in before.eqns]
    after = apply(fold_constants, before)
    assert [e.op for e in after.eqns if e.op != "const"] == ["gather"]
    (gather,) = [e for e in after.eqns if e.op == "gather"]
    (index,) = [e for e in after.eqns if e.outputs[0] is gather.inputs[1]]
    assert str(index.outputs[0].type) == "i32[?]" and const_value(index).tolist() == [0, 0, 0]
    assert_same_results(before, after)


def test_fold_constants_folds_ops_of_types_alone():
    # zeros_like/ones_like/shape (value_free in the op table) need only their operands' types
    def f(x, big):
        return (tf.zeros_like(x), tf.ones_like(tf.exp(x)), tf.shape(x * 2.0),
                tf.zeros_like(big))

    big = tf.TensorSpec([MAX_FOLDED_ELEMENTS + 1], tf.float32)
    before = graph_of(f, V3, big)
    after = apply(fold_constants, before)
    values = {e.outputs[0].uid: const_value(e) for e in after.eqns if e.op == "const"}
    zeros, ones, shape, _ = after.results
    assert values[zeros.uid].tolist() == [0.0] * 3 and values[ones.uid].tolist() == [1.0] * 3
    assert values[shape.uid].tolist() == [3] and after.results[3].uid not in values
    assert_same_results(before, after)


def test_fold_constants_inside_regions():
    def f(x):
        return tf.cond(x[0] > 0, lambda: x * (tf.constant(2.0) + 1.0), lambda: x)

    before = graph_of(f, V3)
    after = apply(fold_constants, before)
    then = [e for e in after.eqns if e.op == "cond"][0].regions[0]
    assert [e.op for e in then.eqns] == ["const", "const", "multiply"]
    assert const_value(then.eqns[1]).tolist() == 3.0
    assert_same_results(before, after)


# --------------------------------------------------------------- common subexpr

def test_cse_golden():
    def f(x):
        a = tf.exp(x) + tf.constant([1.0, 2.0, 3.0])
        b = tf.exp(x) + tf.constant([1.0, 2.0, 3.0])
        return a * b + tf.sin(x) * tf.sin(x)

    before = graph_of(f, V3)
    after = apply(eliminate_common_subexpressions, before)
    assert str(after) == golden("""
        graph @f(%x: f32[3]) -> (f32[3]) {
          %0: f32[3] = exp %x
          %1: f32[3] = const[value=array([1.0, 2.0, 3.0], f32)]
          %2: f32[3] = add %0, %1
          %3: f32[3] = multiply %2, %2
          %4: f32[3] = sin %x
          %5: f32[3] = multiply %4, %4
          %6: f32[3] = add %3, %5
          return %6
        }""")
    assert_same_results(before, after)


def test_cse_never_merges_random_draws_or_reads_across_a_write():
    v = tf.Variable(np.ones(3, np.float32))

    def f(x):
        r1 = tf.random.normal([3], seed=1)
        r2 = tf.random.normal([3], seed=1)
        a = v.read_value()
        v.assign_add(x)
        b = v.read_value()
        return r1 + r2, a + b

    after = apply(eliminate_common_subexpressions, graph_of(f, V3))
    ops = [e.op for e in after.eqns]
    assert ops.count("random_normal") == 2 and ops.count("read") == 4  # 2 seeds, a and b


def test_cse_merges_reads_with_no_write_between():
    v = tf.Variable(np.ones(3, np.float32))

    def f(x):
        return tf.exp(v * x) + tf.exp(v * x)   # each use reads v

    before = graph_of(f, V3)
    after = apply(eliminate_common_subexpressions, before)
    ops = [e.op for e in after.eqns]
    assert [e.op for e in before.eqns].count("read") == 2
    assert ops.count("read") == 1 and ops.count("exp") == 1
    x = tf.constant([0.5, -1.0, 2.0])
    np.testing.assert_allclose(tf.function(f)(x).numpy(), f(x).numpy(), rtol=1e-6)


@pytest.mark.parametrize("between", ["assign", "py_function", "cond", "nested py_function"])
def test_cse_keeps_reads_apart_when_something_may_write_between(between):
    v = tf.Variable(np.ones(3, np.float32))
    w = tf.Variable(np.zeros(3, np.float32))

    def bump(x):
        w.assign_add(x)          # Python may write any variable (here another one)
        return x

    def f(x):
        a = v.read_value()
        if between == "assign":
            v.assign_add(x)
        elif between == "py_function":
            tf.py_function(bump, [x], tf.float32)
        elif between == "cond":
            tf.cond(tf.reduce_sum(x) > 0, lambda: v.assign_add(x), lambda: v.assign_sub(x))
        else:
            tf.cond(tf.reduce_sum(x) > 0, lambda: tf.py_function(bump, [x], tf.float32),
                    lambda: x)
        return a + v.read_value()

    after = apply(eliminate_common_subexpressions, graph_of(f, V3))
    assert [e.op for e in after.eqns].count("read") == 2


def test_cse_tells_signed_zeros_and_dtypes_apart():
    b = GraphBuilder("f")
    x = b.param(F32, "x")
    outs = [b.add("add", [x, lit], [F32])[0] for lit in
            (Literal.of(0.0, dtypes.float32), Literal.of(-0.0, dtypes.float32),
             Literal.of(0.0, dtypes.float32))]
    consts = [b.add("const", [], [F32], {"value": np.array(v, np.float32)})[0]
              for v in (0.0, -0.0, 0.0)]
    after = apply(eliminate_common_subexpressions, b.build(outs + consts))
    assert [e.op for e in after.eqns] == ["add", "add", "const", "const"]
    assert after.results[2] is after.results[0] and after.results[5] is after.results[3]


# --------------------------------------------------------------- algebra

def test_simplify_algebra_golden():
    def f(x):
        a = tf.negative(tf.negative(x)) * 1.0
        b = (a - 0.0) / 1.0
        c = tf.cast(b, tf.float32) + (-0.0)
        return c + 0.0  # not exact for -0.0: stays

    before = graph_of(f, V3)
    after = apply(simplify_algebra, before)
    after = apply(eliminate_dead_code, after)
    assert str(after) == golden("""
        graph @f(%x: f32[3]) -> (f32[3]) {
          %0: f32[3] = add %x, 0.0:f32
          return %0
        }""")
    assert_same_results(before, after)


def _binary_graph(op: str, dtype, other, x_shape=(3,)) -> Graph:
    b = GraphBuilder("f")
    x = b.param(TensorType(dtype, x_shape), "x")
    if isinstance(other, np.ndarray):
        (y,) = b.add("const", [], [TensorType(dtype, other.shape)], {"value": other})
    else:
        y = Literal.of(other, dtype)
    out_shape = np.broadcast_shapes(tuple(d or 1 for d in x_shape), np.shape(other))
    out_shape = x_shape if out_shape == tuple(d or 1 for d in x_shape) else out_shape
    (z,) = b.add(op, [x, y], [TensorType(dtype, tuple(out_shape))])
    return b.build([z])


@pytest.mark.parametrize("op, dtype, other, simplified", [
    ("add", dtypes.float32, 0.0, False),             # -0.0 + 0.0 == +0.0
    ("add", dtypes.float32, -0.0, True),
    ("add", dtypes.int32, 0, True),
    ("subtract", dtypes.float32, 0.0, True),
    ("subtract", dtypes.float32, -0.0, False),       # -0.0 - -0.0 == +0.0
    ("multiply", dtypes.float32, 1.0, True),
    ("multiply", dtypes.float32, 0.0, False),        # NaN, inf, -0.0
    ("divide", dtypes.float32, 1.0, True),
    ("floordiv", dtypes.float32, 1.0, False),        # floors
    ("floordiv", dtypes.int64, 1, True),
    ("pow", dtypes.float64, 1.0, True),
    ("multiply", dtypes.float32, np.ones(3, np.float32), True),
    ("multiply", dtypes.float32, np.ones((2, 3), np.float32), False),  # broadcasts x
    ("add", dtypes.float32, np.array([-0.0, 0.0, -0.0], np.float32), False),
])
def test_simplify_algebra_exactness(op, dtype, other, simplified):
    before = _binary_graph(op, dtype, other)
    after = apply(simplify_algebra, before)
    assert (after.results[0] is before.params[0]) == simplified
    if isinstance(other, np.ndarray):
        return
    # The rewrite is done exactly when `x op other` is bit-identical to `x` (specials included).
    if dtype.is_floating:
        x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5, 3e38], dtype.np)
    else:
        x = np.arange(-4, 5, dtype=dtype.np)
    b = GraphBuilder("g")
    xs = b.param(TensorType(dtype, x.shape), "x")
    g = b.build(b.add(op, [xs, Literal.of(other, dtype)], [TensorType(dtype, x.shape)]))
    with np.errstate(all="ignore"):
        (y,) = run_graph(g, [x])
    identical = (y.dtype == x.dtype and np.array_equal(y, x, equal_nan=True)
                 and np.array_equal(np.signbit(y), np.signbit(x)))
    assert identical == simplified


def test_simplify_unknown_dims_do_not_hide_broadcasting():
    # x: f32[?] times ones(3): the result may be longer than x when x has one element.
    before = _binary_graph("multiply", dtypes.float32, np.ones(3, np.float32), x_shape=(None,))
    after = apply(simplify_algebra, before)
    assert after.results[0] is not before.params[0]
    # ones(1) can never grow x
    before = _binary_graph("multiply", dtypes.float32, np.ones(1, np.float32), x_shape=(None,))
    after = apply(simplify_algebra, before)
    assert after.results[0] is before.params[0]


def test_simplify_cast_identity_and_select():
    def f(x):
        y = tf.identity(tf.cast(x, tf.float32))
        return tf.where(tf.constant(True), y, x * 2.0), tf.cast(x, tf.int32)

    before = graph_of(f, V3)
    after = optimize(before)
    verify(after)
    assert str(after) == golden("""
        graph @f(%x: f32[3]) -> (f32[3], i32[3]) {
          %0: i32[3] = cast[dtype=i32] %x
          return %x, %0
        }""")
    assert_same_results(before, after)


def test_rewrites_are_named_tagged_and_keyed_by_ops_of_the_table():
    names = [r.fn.__name__ for r in REWRITES]
    assert len(names) == len(set(names)) and "add_zero_to_identity" in names
    assert all("algebra" in r.tags and r.fn.__doc__ for r in REWRITES)
    assert all(r.ops and set(r.ops) <= set(OPS) for r in REWRITES)
    assert BY_OP["reshape"] == BY_OP["broadcast_to"] and len(BY_OP["add"]) == 1
    before = graph_of(lambda x: tf.cast(x, tf.float32) * 1.0, V3)
    after = simplify_algebra(before, tags={"cast"})[1]
    assert [e.op for e in after.eqns] == ["multiply"]


# --------------------------------------------------------------- cond folding

@pytest.mark.parametrize("taken", [True, False])
def test_fold_constant_cond_inlines_the_right_branch(taken):
    def f(x):
        p = tf.constant(3) > tf.constant(2 if taken else 4)
        return tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)

    before = graph_of(f, V3)
    after = apply(fold_constant_cond, apply(fold_constants, before))
    assert "cond" not in [e.op for e in after.eqns]
    after = apply(eliminate_dead_code, after)
    op, lit = ("multiply", "2.0") if taken else ("subtract", "1.0")
    assert str(after) == golden(f"""
        graph @f(%x: f32[3]) -> (f32[3]) {{
          %0: f32[3] = {op} %x, {lit}:f32
          return %0
        }}""")
    assert_same_results(before, after)


def _cond_graph(pred, then_yields_param: bool, with_print: bool = False) -> Graph:
    def branch(op):
        b = GraphBuilder("branch")
        x = b.param(F32, "x")
        if with_print:
            b.add("print", [x], [], {"template": (("t",),), "sep": " ", "end": "\n",
                                     "stream": "stderr", "summarize": 3})
        return b.build([x] if then_yields_param else b.add(op, [x], [F32]))

    b = GraphBuilder("f")
    x = b.param(F32, "x")
    (before,) = b.add("exp", [x], [F32])
    (y,) = b.add("cond", [pred, Literal.of(2.0, dtypes.float32)], [F32],
                 regions=[branch("exp"), branch("log")])
    (z,) = b.add("add", [y, before], [F32])
    return b.build([z, y])


def test_fold_constant_cond_literal_predicate_and_yielded_literal():
    g = _cond_graph(Literal.of(True, dtypes.bool_), then_yields_param=True)
    after = apply(fold_constant_cond, g)
    assert str(after) == golden("""
        graph @f(%x: f32[]) -> (f32[], f32[]) {
          %0: f32[] = exp %x
          %1: f32[] = const[value=array(2.0, f32)]
          %2: f32[] = add %1, %0
          return %2, %1
        }""")
    assert_same_results(g, after)


def test_fold_constant_cond_keeps_stateful_branch_order():
    g = _cond_graph(Literal.of(False, dtypes.bool_), then_yields_param=False, with_print=True)
    after = apply(fold_constant_cond, g)
    assert [e.op for e in after.eqns] == ["exp", "print", "log", "add"]
    # the inlined equations are copies: the original region is untouched
    assert all(e.outputs[0] not in g.eqns[1].regions[1].eqns[-1].outputs
               for e in after.eqns if e.outputs)


def test_fold_constant_cond_leaves_dynamic_predicates():
    g = graph_of(lambda x: tf.cond(x[0] > 0, lambda: x, lambda: -x), V3)
    changed, after = fold_constant_cond(g)
    assert not changed and after is g


# --------------------------------------------------------------- manager

def test_pass_manager_reaches_fixpoint_and_verifies_after_every_pass():
    calls = []

    def counting_verify(g):
        calls.append(g)
        verify(g)

    def f(x):
        p = tf.reduce_sum(tf.constant([1.0, -2.0])) > tf.constant(0.0)
        y = tf.cond(p, lambda: tf.exp(x) * 1.0, lambda: x * (tf.constant(3.0) - 2.0))
        return y + tf.exp(x)

    before = graph_of(f, V3)
    pm = PassManager(DEFAULT_PIPELINE, verify=counting_verify)
    changed, after = pm(before)
    assert changed
    assert len(calls) >= 1 + 2 * len(DEFAULT_PIPELINE) and len(calls) % len(DEFAULT_PIPELINE) == 1
    assert str(after) == golden("""
        graph @f(%x: f32[3]) -> (f32[3]) {
          %0: f32[3] = exp %x
          %1: f32[3] = add %x, %0
          return %1
        }""")
    assert_same_results(before, after)
    assert pm(after) == (False, after)


def test_pass_manager_names_the_failing_pass_and_bounds_iterations():
    def breaks(g):
        return True, Graph(g.name, g.params, (), g.results)  # results now undefined

    def bad_verify(g):
        if not g.eqns:
            raise AssertionError("no equations")

    g = graph_of(lambda x: x * 2.0, V3)
    with pytest.raises(AssertionError) as info:
        PassManager([breaks], verify=bad_verify)(g)
    assert "breaks" in "".join(getattr(info.value, "__notes__", []))

    count = []

    def always_changes(g):
        count.append(1)
        return True, g
    PassManager([always_changes], max_iterations=3)(g)
    assert len(count) == 3


def test_optimize_preserves_semantics_of_control_flow():
    def f(x):
        i, y = tf.while_loop(lambda i, y: i < 3,
                             lambda i, y: (i + 1, y * tf.constant(1.0) + tf.exp(y) * 0.5),
                             (tf.constant(0), x))
        z = tf.cond(tf.reduce_sum(y) > 0, lambda: y - 0.0, lambda: -(-y))
        return z + tf.exp(x) - tf.exp(x), i

    before = graph_of(f, V3)
    after = PassManager(DEFAULT_PIPELINE, verify=verify)(before)[1]
    assert sum(1 for _ in walk_eqns(after)) < sum(1 for _ in walk_eqns(before))
    assert_same_results(before, after, trials=5)


# --------------------------------------------------------------- frontend wiring

def test_concrete_function_compiles_the_optimized_graph():
    f = tf.function(lambda x: x * (tf.constant(2.0) - 1.0) + tf.exp(x) * 0.0)
    c = f.get_concrete_function(V3)
    assert "subtract" in str(c.graph)  # the traced graph is kept as traced
    assert str(c.optimized_graph) == golden("""
        graph @<lambda>(%x: f32[3]) -> (f32[3]) {
          %0: f32[3] = exp %x
          %1: f32[3] = multiply %0, 0.0:f32
          %2: f32[3] = add %x, %1
          return %2
        }""")
    assert c.optimized_graph is c.optimized_graph
    x = np.array([1.0, -np.inf, 0.5], np.float32)
    got = c(tf.constant(x)).numpy()
    want = x * 1.0 + np.exp(x) * 0.0
    np.testing.assert_array_equal(got, want)  # exp(-inf) * 0.0 is 0; inf*0 would be NaN


# ------------------------------------------------------------------ dead loop variables

def _loop_with_dead_carries(x, w):
    def body(i, acc, unused, chained):
        return i + 1, acc + x * w, unused + tf.reduce_sum(x), chained * 2.0 + unused
    return tf.while_loop(lambda i, *_: i < 4, body, (0, tf.zeros([3]), 0.0, 1.0))[1]


def test_dead_loop_vars_drops_carries_only_feeding_themselves():
    g = graph_of(_loop_with_dead_carries, V3, V3)
    out = apply(eliminate_dead_loop_vars, g)
    (loop,) = [e for e in out.eqns if e.op == "while"]
    assert loop.params["carry"] == 2  # the counter and acc; `unused` and `chained` are gone
    assert not any(e.op == "reduce_sum" for e in walk_eqns(out))
    assert_same_results(g, out)


def test_dead_loop_vars_keeps_carries_read_by_cond_or_live_results():
    def f(x):
        def body(i, s, t):
            return i + 1, s + t, t * 2.0  # t feeds s, which is returned
        return tf.while_loop(lambda i, s, t: s < 10.0, body, (0, x, 1.0))[1]
    g = graph_of(f, tf.TensorSpec([], tf.float32))
    out = apply(eliminate_dead_loop_vars, g)
    (loop,) = [e for e in out.eqns if e.op == "while"]
    # The counter is dead (unused after the loop, unread by cond); t feeds s and s is read by
    # cond and returned, so both stay.
    assert loop.params["carry"] == 2
    assert [o.type for o in loop.outputs] == [F32, F32]
    assert_same_results(g, out)


# ------------------------------------------------------------------ equal loop variables

def optimize_without(skipped, graph: Graph) -> Graph:
    """``graph`` through the default pipeline less the pass ``skipped``."""
    return PassManager([p for p in DEFAULT_PIPELINE if p is not skipped])(graph)[1]


def test_merge_equal_loop_vars_merges_a_gradients_counter_with_the_loops_own():
    # reverse mode adds a counter (indexing the stacks) beside the loop's own t: both count
    # from 0 by 1, one written with a literal 1, the other with a constant
    g = optimize_without(merge_equal_loop_vars, graph_of(_rnn_gradient, *RNN_SPECS))
    forward = _loops(g)[0]
    out = apply(merge_equal_loop_vars, g)
    merged = _loops(out)[0]
    assert merged.params["carry"] == forward.params["carry"] - 1
    assert [o.type for o in merged.outputs] == [o.type for o in forward.outputs][1:]
    assert_same_results(g, out)
    assert_same_results(g, optimize(g))


def _counters(steps, inits, draw=False):
    def f(x):
        def noise():   # (a draw of its own for each counter)
            return tf.cast(tf.random.uniform([], 0, 1) < 2.0, tf.int32) if draw else 0

        def body(*c):
            return tuple(k + s + noise() for k, s in zip(c[:-1], steps)) + (c[-1] + x,)
        return tf.while_loop(lambda *c: c[0] < 4, body, tuple(inits) + (x,))
    return graph_of(f, tf.TensorSpec([], tf.float32))


@pytest.mark.parametrize("steps, inits, carry", [
    ((1, 1, 1), (0, 0, 0), 2),     # three equal counters: one stays (and the sum)
    ((1, 2), (0, 0), 3),           # different steps
    ((1, 1), (0, 1), 3),           # different starts
])
def test_merge_equal_loop_vars_needs_equal_starts_and_steps(steps, inits, carry):
    g = apply(eliminate_common_subexpressions, _counters(steps, inits))
    out = apply(merge_equal_loop_vars, g) if carry < len(steps) + 1 else g
    assert merge_equal_loop_vars(g)[0] == (carry < len(steps) + 1)
    assert _loops(out)[0].params["carry"] == carry
    assert_same_results(g, out)


def test_merge_equal_loop_vars_never_merges_through_a_stateful_op():
    # each counter adds its own draw: two draws are two values, however alike their equations
    g = apply(eliminate_common_subexpressions, _counters((1, 1), (0, 0), draw=True))
    assert merge_equal_loop_vars(g) == (False, g)


# ------------------------------------------------------------------ unused operands

def _rnn_gradient(x, w):
    """d(sum h_T)/dw for h = tanh(x_t * w + h) over 3 steps: reverse mode hands the backward
    loop every stack the forward loop fills, and the backward body reads few of them."""
    with tf.GradientTape() as tape:
        tape.watch(w)
        h = tf.while_loop(lambda t, h: t < 3,
                          lambda t, h: (t + 1, tf.tanh(tf.gather(x, t) * w + h)),
                          (0, tf.zeros([2])))[1]
        loss = tf.reduce_sum(h)
    return tape.gradient(loss, w)


RNN_SPECS = (tf.TensorSpec([3, 2], tf.float32), tf.TensorSpec([2], tf.float32))


def _loops(graph: Graph) -> list[Eqn]:
    return [e for e in graph.eqns if e.op == "while"]


def _region_reads(region: Graph) -> set[int]:
    return ({x.uid for e in region.eqns for x in e.inputs if isinstance(x, Value)}
            | {r.uid for r in region.results if isinstance(r, Value)})


def test_unused_operands_drops_the_loop_invariants_no_region_reads():
    g = apply(eliminate_dead_code, graph_of(_rnn_gradient, *RNN_SPECS))
    forward, backward = _loops(g)
    out = apply(eliminate_unused_operands, g)
    new_forward, new_backward = _loops(out)
    assert new_forward is forward   # (its carried values are eliminate_dead_loop_vars')
    n = backward.params["carry"]
    assert new_backward.params["carry"] == n and new_backward.outputs == backward.outputs
    assert new_backward.inputs[:n] == backward.inputs[:n]
    assert len(new_backward.inputs) < len(backward.inputs)
    # what stays is read by a region, and nothing read was dropped
    cond, body = new_backward.regions
    reads = _region_reads(cond) | _region_reads(body)
    assert all(cond.params[k].uid in reads or body.params[k].uid in reads
               for k in range(n, len(cond.params)))
    old_cond, old_body = backward.regions
    old_reads = _region_reads(old_cond) | _region_reads(old_body)
    read_operands = [x for k, x in enumerate(backward.inputs) if k >= n and (
        old_cond.params[k].uid in old_reads or old_body.params[k].uid in old_reads)]
    assert list(new_backward.inputs[n:]) == read_operands
    assert_same_results(g, out)


def test_optimize_stops_a_forward_loop_filling_stacks_its_gradient_never_reads():
    g = graph_of(_rnn_gradient, *RNN_SPECS)
    without = PassManager([p for p in DEFAULT_PIPELINE if p is not eliminate_unused_operands])(g)[1]
    out = PassManager(DEFAULT_PIPELINE, verify=verify)(g)[1]
    before, after = _loops(without)[0], _loops(out)[0]
    assert after.params["carry"] < before.params["carry"]

    def stack_writes(loop: Eqn) -> int:
        return sum(e.op == "row_update" for e in loop.regions[1].eqns)
    assert 0 < stack_writes(after) < stack_writes(before)
    assert_same_results(g, out, trials=5)


def _with_operand(graph: Graph, op: str, extra: Value) -> Graph:
    """``graph`` with ``extra`` passed to its (only) ``op`` equation as one more operand,
    which each region takes as a new parameter and does not read."""
    def widen(e: Eqn) -> Eqn:
        if e.op != op:
            return e
        regions = tuple(Graph(r.name, r.params + (Value(extra.type, ref=extra.ref),), r.eqns,
                              r.results)
                        for r in e.regions)
        return Eqn(e.op, e.inputs + (extra,), e.outputs, e.attrs, regions)
    return Graph(graph.name, graph.params, tuple(widen(e) for e in graph.eqns), graph.results)


def test_unused_operands_drops_a_cond_operand_neither_branch_reads_and_keeps_the_others():
    def f(x, y):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - y)
    g = graph_of(f, V3, V3)
    (cond,) = [e for e in g.eqns if e.op == "cond"]
    widened = _with_operand(g, "cond", g.params[1])
    verify(widened)
    out = apply(eliminate_unused_operands, widened)
    (new,) = [e for e in out.eqns if e.op == "cond"]
    # x (read by both branches) and y (read by the else branch only) stay; the extra goes
    assert new.inputs == cond.inputs
    assert apply(eliminate_unused_operands, g) is g
    assert_same_results(widened, out)


def test_unused_operands_drops_an_unread_variable_passed_to_a_loop():
    v = tf.Variable(np.ones(3, np.float32))

    def f(x):
        return tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y + v), (0, x))[1]
    g = graph_of(f, V3)
    (loop,) = _loops(g)
    ref = next(x for x in loop.inputs if isinstance(x, Value) and x.ref)
    widened = _with_operand(g, "while", ref)   # (the same variable again, unread)
    verify(widened)
    out = apply(eliminate_unused_operands, widened)
    assert _loops(out)[0].inputs == loop.inputs
