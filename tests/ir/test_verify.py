"""``ir.verify``: accepts what tracing produces, rejects hand-broken graphs with a message whose
first line says what is wrong, followed by the printed IR around the failure."""
from __future__ import annotations

import dataclasses

import pytest

import ir_graphs
import stagecraft as tf
from ir_graphs import F32, t
from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import InternalError, VerificationError
from stagecraft.ir.graph import Eqn, Graph, GraphBuilder, Literal, Value
from stagecraft.ir.verify import verify

I32 = dt.int32


def _first_line(graph: Graph) -> str:
    with pytest.raises(VerificationError) as info:
        verify(graph)
    return str(info.value).splitlines()[0]


def _replace_eqn(graph: Graph, i: int, **changes) -> Graph:
    eqns = list(graph.eqns)
    eqns[i] = dataclasses.replace(eqns[i], **changes)
    return dataclasses.replace(graph, eqns=tuple(eqns))


def _index(graph: Graph, op: str) -> int:
    return next(i for i, e in enumerate(graph.eqns) if e.op == op)


# ------------------------------------------------------------------ accepted

@pytest.mark.parametrize("name", sorted(ir_graphs.TRACED))
def test_traced_graphs_verify(name: str) -> None:
    verify(ir_graphs.TRACED[name]())


def test_gradient_graphs_verify() -> None:
    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, tf.sin(s) * x),
                              (0, x))[1]
            z = tf.cond(tf.reduce_sum(y) > 0.0, lambda: y * y, lambda: -y)
        return tape.gradient(z, x)
    verify(f.get_concrete_function(tf.constant([0.5, 1.0])).graph)


def test_verification_error_is_an_internal_error() -> None:
    assert issubclass(VerificationError, InternalError)


# ------------------------------------------------------------------ rejected

def test_use_before_definition() -> None:
    b = GraphBuilder("f")
    x = b.param(t(F32, 2), "x")
    (a,) = b.add("negative", [x], [t(F32, 2)])
    (c,) = b.add("exp", [a], [t(F32, 2)])
    g = b.build([c])
    broken = dataclasses.replace(g, eqns=(g.eqns[1], g.eqns[0]))
    assert _first_line(broken) == "'exp' at line 2: uses %1 before its definition"


def test_undefined_value() -> None:
    b = GraphBuilder("f")
    x = b.param(t(F32, 2), "x")
    stray = Value(t(F32, 2), "stray")
    b.add("add", [x, stray], [t(F32, 2)])
    assert _first_line(b.build([x])).startswith(
        "'add' at line 2: uses an undefined value (Value(f32[2], hint='stray')), which is not "
        "defined in this graph")


def test_region_using_an_outer_value() -> None:
    b = GraphBuilder("f")
    x = b.param(t(F32, 2), "x")
    p = b.param(t(dt.bool_), "p")
    then = GraphBuilder("then")
    (y,) = then.add("negative", [x], [t(F32, 2)])  # x belongs to the enclosing graph
    other = GraphBuilder("else")
    (out,) = b.add("cond", [p], [t(F32, 2)], regions=[then.build([y]), other.build([x])])
    assert _first_line(b.build([out])) == (
        "'negative' at line 4: region 'then' uses %x, which is defined outside the region "
        "(regions are closed: pass it in as a region parameter)")


def test_traced_region_made_to_use_an_outer_value() -> None:
    g = ir_graphs.cond()
    k = _index(g, "cond")
    cond = g.eqns[k]
    then = cond.regions[0]
    inner = dataclasses.replace(then.eqns[0], inputs=(g.params[0],) + then.eqns[0].inputs[1:])
    then = dataclasses.replace(then, eqns=(inner,) + then.eqns[1:])
    broken = _replace_eqn(g, k, regions=(then, cond.regions[1]))
    assert "region 'then' uses %x, which is defined outside the region" in _first_line(broken)


def test_wrong_inferred_type() -> None:
    g = ir_graphs.elementwise()
    e = g.eqns[0]
    bad = Value(t(F32, 3))
    broken = _replace_eqn(g, 0, outputs=(bad,))
    assert _first_line(broken) == (
        f"'{e.op}' at line 2: output types (f32[3]) differ from the op's inference (f32[2])")


def test_infer_rejects_operands() -> None:
    b = GraphBuilder("f")
    x = b.param(t(F32, 2), "x")
    (y,) = b.add("add", [x, Literal(1, t(I32))], [t(F32, 2)])
    assert _first_line(b.build([y])).startswith(
        "'add' at line 2: the op's inference rejects operand types (f32[2], i32[]): add:")


def test_while_body_yields_too_few_values() -> None:
    g = ir_graphs.while_loop()
    k = _index(g, "while")
    cond, body = g.eqns[k].regions
    broken = _replace_eqn(g, k, regions=(cond, dataclasses.replace(body,
                                                                   results=body.results[:1])))
    line = g.to_text().splitlines().index(next(
        s for s in g.to_text().splitlines() if " = while[" in s)) + 1
    assert _first_line(broken) == (
        f"'while' at line {line}: region 'body' yields (i32[]) but the equation expects "
        f"(i32[], f32[2])")


def test_while_carry_disagrees_with_outputs() -> None:
    g = ir_graphs.while_loop()
    k = _index(g, "while")
    broken = _replace_eqn(g, k, attrs=(("carry", 1),))
    assert _first_line(broken).endswith("carries 1 value(s) but has 2 output(s)")


def test_while_region_parameter_count() -> None:
    g = ir_graphs.while_loop()
    k = _index(g, "while")
    cond, body = g.eqns[k].regions
    broken = _replace_eqn(g, k, regions=(dataclasses.replace(cond, params=cond.params[:2]),
                                         body))
    assert _first_line(broken).endswith(
        "region 'cond' has 2 parameter(s) but the equation passes 4 operand(s)")


def test_while_cond_must_yield_a_bool() -> None:
    g = ir_graphs.while_loop()
    k = _index(g, "while")
    cond, body = g.eqns[k].regions
    broken = _replace_eqn(g, k, regions=(dataclasses.replace(cond, results=cond.params[:1]),
                                         body))
    assert _first_line(broken).endswith("region 'cond' must yield one bool scalar, yields (i32[])")


def test_cond_region_parameters_must_match_operands() -> None:
    g = ir_graphs.cond()
    k = _index(g, "cond")
    then, other = g.eqns[k].regions
    params = (Value(t(F32, 3), "x"),) + then.params[1:]
    broken = _replace_eqn(g, k, regions=(dataclasses.replace(then, params=params), other))
    assert _first_line(broken).endswith(
        "region 'then' parameter 0 (%x.1) is f32[3], expected f32[2]")


def test_cond_results_must_match_outputs() -> None:
    g = ir_graphs.cond()
    k = _index(g, "cond")
    then, other = g.eqns[k].regions
    broken = _replace_eqn(g, k, regions=(then, dataclasses.replace(other, results=())))
    assert _first_line(broken).endswith(
        "region 'else' yields () but the equation expects (f32[2])")


def test_call_results_must_match_outputs() -> None:
    g = ir_graphs.nested_call()
    k = _index(g, "call")
    broken = _replace_eqn(g, k, outputs=(Value(t(F32, None)),))
    assert _first_line(broken).endswith(
        "region 'fn' yields (f32[2]) but the equation expects (f32[?])")


def test_references_only_flow_into_variable_ops() -> None:
    b = GraphBuilder("f")
    v = b.param(t(F32, 2), "v", ref=True)
    (y,) = b.add("negative", [v], [t(F32, 2)])
    assert _first_line(b.build([y])) == (
        "'negative' at line 2: operand 0 (%v) is a variable reference; only read, assign, "
        "cond, while and call take references")


def test_references_cannot_be_returned() -> None:
    b = GraphBuilder("f")
    v = b.param(t(F32, 2), "v", ref=True)
    assert _first_line(b.build([v])) == (
        "'return' at line 2: result 0 (%v) is a variable reference; graphs and regions return "
        "tensors (read the variable first)")


def test_read_needs_a_reference() -> None:
    b = GraphBuilder("f")
    x = b.param(t(F32, 2), "x")
    (y,) = b.add("read", [x], [t(F32, 2)])
    assert _first_line(b.build([y])) == (
        "'read' at line 2: operand 0 (%x) must be a variable reference")


def test_double_definition() -> None:
    b = GraphBuilder("f")
    x = b.param(t(F32, 2), "x")
    (y,) = b.add("negative", [x], [t(F32, 2)])
    b.eqns.append(Eqn("negative", (x,), (y,)))
    assert _first_line(b.build([y])) == (
        "'negative' at line 3: %1 is defined twice (each value has one definition)")


def test_unknown_op() -> None:
    b = GraphBuilder("f")
    x = b.param(t(F32, 2), "x")
    (y,) = b.add("frobnicate", [x], [t(F32, 2)])
    assert _first_line(b.build([y])) == (
        "'frobnicate' at line 2: unknown op 'frobnicate' (neither in the op table nor a "
        "structural op)")


def test_const_value_must_match_its_type() -> None:
    import numpy as np
    b = GraphBuilder("f")
    (c,) = b.add("const", [], [t(F32, 3)], {"value": np.zeros(2, np.float32)})
    assert _first_line(b.build([c])) == (
        "'const' at line 2: the value is a float32[2] array but the output type is f32[3]")


def test_message_shows_five_lines_around_the_failure() -> None:
    b = GraphBuilder("f")
    x = b.param(t(F32, 2), "x")
    for _ in range(8):
        (x,) = b.add("negative", [x], [t(F32, 2)])
    (bad,) = b.add("exp", [x], [t(F32, 3)])
    for _ in range(8):
        (bad,) = b.add("negative", [bad], [t(F32, 3)])
    with pytest.raises(VerificationError) as info:
        verify(b.build([bad]))
    lines = str(info.value).splitlines()
    assert lines[0] == ("'exp' at line 10: output types (f32[3]) differ from the op's inference "
                        "(f32[2])")
    assert lines[1] == "in graph @f:"
    context = lines[2:]
    assert len(context) == 11
    assert context[0] == "   5 |   %3: f32[2] = negative %2"
    assert context[5] == "> 10 |   %8: f32[3] = exp %7"
    assert context[10] == "  15 |   %13: f32[3] = negative %12"


def test_every_trace_in_the_suite_is_checked() -> None:
    """tests/conftest.py turns on stagecraft.config.enable_checks: each traced graph is
    verified and round-tripped."""
    assert tf.config.checks_enabled()


@pytest.fixture
def _broken_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracing builds its graphs with the equations in reverse order: %1 used before it is
    defined (an invariant of every graph)."""
    from stagecraft.staging.func_graph import FuncGraph
    build = FuncGraph.build

    def reversed_build(self, results):
        graph = build(self, results)
        return dataclasses.replace(graph, eqns=tuple(reversed(graph.eqns)))
    monkeypatch.setattr(FuncGraph, "build", reversed_build)


def test_enable_checks_reports_a_broken_trace(_broken_traces) -> None:
    def f(x):
        return tf.exp(-x)
    with pytest.raises(VerificationError) as info:
        tf.function(f, backend="reference")(tf.constant([1.0]))
    lines = str(info.value).splitlines()
    assert lines[0] == "'exp' at line 2: uses %1 before its definition"
    assert lines[1] == "in graph @f:"


def test_without_checks_a_broken_trace_is_not_verified(_broken_traces) -> None:
    def f(x):
        return tf.exp(-x)
    tf.config.enable_checks(False)
    try:
        concrete = tf.function(f, backend="reference").get_concrete_function(tf.constant([1.0]))
    finally:
        tf.config.enable_checks(True)
    assert [e.op for e in concrete.graph.eqns] == ["exp", "negative"]   # traced, unchecked


def test_enable_checks_reports_a_graph_that_does_not_round_trip(monkeypatch) -> None:
    from stagecraft.ir import parser
    import importlib
    verify_module = importlib.import_module("stagecraft.ir.verify")
    # A parser that loses the graph's name: the text printed back differs.
    monkeypatch.setattr(verify_module, "parse",
                        lambda text: parser.parse(text.replace("graph @f(", "graph @g(", 1)))

    def f(x):
        return x + 1.0
    with pytest.raises(VerificationError, match="^graph @f does not print and parse back"):
        tf.function(f, backend="reference")(tf.constant([1.0]))

@pytest.mark.parametrize("value,expected", [("1", "True"), ("0", "False")])
def test_enable_checks_from_the_environment(value: str, expected: str) -> None:
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c",
                          "import stagecraft as tf; print(tf.config.checks_enabled())"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "STAGECRAFT_ENABLE_CHECKS": value})
    assert out.stdout.strip() == expected
