"""``ir.partition.split_graph``: what goes to each part, the residuals, and the splits it
refuses because running the known part first would change a stateful equation's effect."""
from __future__ import annotations

import numpy as np
import pytest

from stagecraft.backends.reference import run_graph
from stagecraft.ir import dtypes
from stagecraft.ir.graph import Graph, GraphBuilder
from stagecraft.ir.partition import SplitError, split_graph
from stagecraft.ir.types import TensorType
from stagecraft.ir.verify import verify

F32 = TensorType(dtypes.float32, ())


def _reader() -> Graph:
    """A region reading its reference parameter and scaling it by its other parameter."""
    b = GraphBuilder("scaled")
    ref, t = b.param(F32, "r", ref=True), b.param(F32, "t")
    (value,) = b.add("read", [ref], [F32])
    (out,) = b.add("multiply", [value, t], [F32])
    return b.build([out])


def test_parts_compute_the_graph_with_residuals_between_them():
    b = GraphBuilder("f")
    x, s = b.param(F32, "x"), b.param(F32, "s")
    (c,) = b.add("const", [], [F32], {"value": np.array(2.0, np.float32)})
    (y,) = b.add("multiply", [x, c], [F32])
    (e,) = b.add("exp", [y], [F32])
    (g,) = b.add("multiply", [s, e], [F32])
    (h,) = b.add("multiply", [g, c], [F32])
    graph = b.build([y, h])
    parts = split_graph(graph, unknown=[1], known_results=[0])
    verify(parts.known)
    verify(parts.unknown)
    assert [e.op for e in parts.known.eqns] == ["const", "multiply", "exp"]
    assert [e.op for e in parts.unknown.eqns] == ["const", "multiply", "multiply"]  # c copied
    assert parts.unknown_params == (1,) and parts.num_residuals == 1
    known = run_graph(parts.known, [np.float32(0.5)])
    (late,) = run_graph(parts.unknown, [np.float32(3.0), known[1]])
    assert float(known[0]) == 1.0
    np.testing.assert_allclose(late, 3.0 * np.exp(1.0) * 2.0, rtol=1e-6)
    # the unknown part defines its own values (a graph may call both parts)
    known_ids = {v.uid for e in parts.known.eqns for v in e.outputs}
    assert not known_ids & {v.uid for e in parts.unknown.eqns for v in e.outputs}


def _writes_then_reads_late() -> Graph:
    b = GraphBuilder("f")
    x, v, s = b.param(F32, "x"), b.param(F32, "v", ref=True), b.param(F32, "s")
    b.add("assign", [v, x], [], {"mode": "assign"})
    (r,) = b.add("call", [v, s], [F32], {"name": "scaled"}, regions=[_reader()])
    return b.build([x, r])


def test_an_unknown_equation_reading_a_variable_the_known_part_writes_is_refused():
    with pytest.raises(SplitError, match=r"uses variables \(v\) that the known part writes"):
        split_graph(_writes_then_reads_late(), unknown=[2], known_results=[0])
    parts = split_graph(_writes_then_reads_late(), unknown=[2], known_results=[0],
                        late_reads=[1])
    assert [e.op for e in parts.known.eqns] == ["assign"]
    assert parts.unknown_params == (1, 2)


def test_an_unknown_host_effect_before_a_known_one_is_refused():
    b = GraphBuilder("f")
    x, s = b.param(F32, "x"), b.param(F32, "s")
    attrs = {"template": (("v", 0),), "sep": " ", "end": "\n", "stream": "stderr",
             "summarize": 3}
    b.add("print", [s], [], attrs)
    b.add("print", [x], [], attrs)
    with pytest.raises(SplitError, match="host effect"):
        split_graph(b.build([x]), unknown=[1], known_results=[0])


def test_a_known_result_must_not_depend_on_the_unknown_parameters():
    b = GraphBuilder("f")
    x, s = b.param(F32, "x"), b.param(F32, "s")
    (y,) = b.add("add", [x, s], [F32])
    with pytest.raises(SplitError, match="result 0 of @f depends on the parameters left"):
        split_graph(b.build([y]), unknown=[1], known_results=[0])
