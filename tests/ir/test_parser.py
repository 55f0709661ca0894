"""``ir.parse``: the exact round trip ``str(parse(str(g))) == str(g)`` on traced and built
graphs, what the parsed values hold, and the parser's error messages."""
from __future__ import annotations


import numpy as np
import pytest

import ir_graphs
import stagecraft as tf
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import IRParseError
from stagecraft.ir.graph import GraphBuilder, Literal, walk_eqns
from stagecraft.ir.parser import parse
from stagecraft.ir.placeholders import DigestArray, PythonRef
from stagecraft.ir.types import TensorType
from stagecraft.ir.verify import verify

from support.op_examples import dtypes_to_test, examples


def _round_trip(g) -> object:
    text = str(g)
    parsed = parse(text)
    assert str(parsed) == text
    return parsed


@pytest.mark.parametrize("name", sorted(ir_graphs.TRACED))
def test_traced_graphs_round_trip(name: str) -> None:
    g = ir_graphs.TRACED[name]()
    parsed = _round_trip(g)
    verify(parsed)
    assert parse(str(parsed)).name == g.name


@pytest.mark.parametrize("name", sorted(ir_graphs.TRACED))
def test_round_trip_with_locations(name: str) -> None:
    g = ir_graphs.TRACED[name]()
    text = g.to_text(locs=True)
    assert "  # " in text
    assert parse(text).to_text(locs=True) == text


def test_odd_attrs_literals_and_names_round_trip() -> None:
    g = ir_graphs.odd_attrs_and_literals()
    parsed = _round_trip(g)
    attrs = dict(parsed.eqns[6].attrs)
    assert attrs["nested"] == ((1, (2, (3,))), [], (), [dt.int32, None])
    assert attrs["mapping"] == {"a": (1, 2), 3: [dt.bool_]}
    assert attrs["scalar"] == np.float32(0.25) and type(attrs["scalar"]) is np.float32
    assert np.isnan(attrs["nan"]) and attrs["dtype"] is dt.float64
    assert attrs["empty"].dtype == np.float32 and attrs["bools"].shape == (2, 1)
    template = dict(parsed.eqns[5].attrs)["template"]
    assert template[0] == ("s", "it's \"quoted\"\n\ttab #hash")
    assert [p.ref for p in parsed.params] == [False, True, False]
    assert parsed.params[1].type == TensorType(dt.float32, None)
    assert parsed.eqns[7].loc is None  # str() leaves locations out
    assert parse(g.to_text(locs=True)).eqns[7].loc == "model.py:12"


def test_parsed_literals_keep_value_and_type() -> None:
    parsed = parse(str(ir_graphs.odd_attrs_and_literals()))
    lits = [x for e in parsed.eqns for x in e.inputs if isinstance(x, Literal)]
    values = [x.value for x in lits]
    assert np.isnan(values[0]) and values[1:] == [float("-inf"), float("inf"), -3, True, False]
    assert [x.type.dtype.short for x in lits] == ["f32", "f32", "f32", "i64", "bool", "bool"]
    assert parsed.results[2].value == 2.5


def test_hints_come_back_and_numbers_stay_unnamed() -> None:
    parsed = parse(str(ir_graphs.elementwise()))
    assert [p.hint for p in parsed.params] == ["x", "y"]
    assert all(o.hint is None for e in parsed.eqns for o in e.outputs)


def test_unsafe_hints_print_as_one_token() -> None:
    b = GraphBuilder("f")
    x = b.param(TensorType(dt.float32, ()), "a b/c:0")
    y = b.param(TensorType(dt.float32, ()), "a_b_c_0")
    text = str(b.build([x, y]))
    assert text.splitlines()[0] == \
        "graph @f(%a_b_c_0: f32[], %a_b_c_0.1: f32[]) -> (f32[], f32[]) {"
    assert str(parse(text)) == text


def test_large_constant_parses_to_zeros_with_its_digest() -> None:
    g = ir_graphs.constants()
    parsed = _round_trip(g)
    big = dict(parsed.eqns[2].attrs)["value"]
    assert isinstance(big, DigestArray) and big.shape == (5, 8) and big.dtype == np.float64
    assert not big.any()
    assert big.digest in str(g)
    assert (big + 1).digest is None  # derived arrays print their own digest


def test_small_constants_parse_exactly() -> None:
    parsed = parse(str(ir_graphs.constants()))
    small = dict(parsed.eqns[0].attrs)["value"]
    np.testing.assert_array_equal(small, np.array([[1.5, -2.0], [np.inf, np.nan]], np.float32))
    assert small.dtype == np.float32
    empty = dict(parsed.eqns[5].attrs)["value"]
    assert empty.shape == (0, 3) and empty.dtype == np.int32  # restored from the output type


def test_py_function_callable_becomes_a_placeholder() -> None:
    @tf.function
    def f(x):
        return tf.py_function(lambda a: a * 2.0, [x], tf.float32)
    g = f.get_concrete_function(tf.constant([1.0])).graph
    parsed = _round_trip(g)
    fn = dict(parsed.eqns[0].attrs)["fn"]
    assert isinstance(fn, PythonRef)
    with pytest.raises(TypeError, match="parsed from IR text"):
        fn(1.0)


def test_regions_are_rebuilt_closed() -> None:
    parsed = parse(str(ir_graphs.everything()))
    cond = next(e for e in parsed.eqns if e.op == "cond")
    assert [r.name for r in cond.regions] == ["then", "else"]
    assert [p.ref for p in cond.regions[0].params] == [False, True]
    call = next(e for e in parsed.eqns if e.op == "call")
    assert call.regions[0].name == "<lambda>"
    loop = next(e for e in parsed.eqns if e.op == "while")
    assert [r.name for r in loop.regions] == ["cond", "body"]
    assert sum(1 for e in walk_eqns(parsed) if e.op == "cond") == 2


def test_shared_callee_prints_twice_and_round_trips() -> None:
    g = ir_graphs.nested_call()
    calls = [e for e in g.eqns if e.op == "call"]
    assert calls[0].regions[0] is calls[1].regions[0]
    parsed = _round_trip(g)
    pcalls = [e for e in parsed.eqns if e.op == "call"]
    assert pcalls[0].regions[0] is not pcalls[1].regions[0]


def _op_graphs():
    for op in OPS.values():
        for d in dtypes_to_test(op.name):
            for k, ex in enumerate(examples(op.name, d)):
                yield pytest.param(op, ex, id=f"{op.name}-{d.short}-{k}")


@pytest.mark.parametrize("op,example", list(_op_graphs()))
def test_every_op_example_round_trips(op, example) -> None:
    """One equation per op example (its attributes as the op table's tests use them)."""
    b = GraphBuilder(op.name)
    params = []
    for x in example.inputs:
        a = np.asarray(x)
        params.append(b.param(TensorType(dt.from_numpy(a.dtype), a.shape)))
    try:
        out_types = op.infer([p.type for p in params], **example.attrs)
    except Exception:  # noqa: BLE001 (examples may rely on scalar adoption; not our subject)
        pytest.skip("infer rejects the example's NumPy types")
    outs = b.add(op.name, params, out_types, example.attrs)
    g = b.build(list(outs))
    verify(_round_trip(g))


# ------------------------------------------------------------------------ errors

@pytest.mark.parametrize("text,first_line", [
    ("", "line 1: empty text; expected 'graph @name(...) -> (...) {'"),
    ("graph f() -> () {\n  return\n}", "line 1: expected 'graph @name(params) -> (types) {'"),
    ("graph @f(%x: f32[2]) -> (f32[2]) {\n  return %y\n}",
     "line 2: %y is used but not defined before this line"),
    ("graph @f(%x: f32[2]) -> (f32[2]) {\n  %x: f32[2] = negative %x\n  return %x\n}",
     "line 2: %x is defined twice (names are unique in a printout)"),
    ("graph @f(%x: f33[2]) -> (f32[2]) {\n  return %x\n}", "line 1: unknown dtype 'f33'"),
    ("graph @f(%x: f32[2]) -> (f32[2]) {\n  return %x\n", "line 2: unexpected end of text "
     "(a block is not closed)"),
    ("graph @f(%x: f32[2]) -> (f32[3]) {\n  return %x\n}",
     "line 1: the header's result types (f32[3]) differ from the returned values' (f32[2])"),
    ("graph @f(%x: f32[2]) -> (f32[2]) {\n  %0: f32[2] = add %x, 1.0\n  return %0\n}",
     "line 2: unexpected end of line"),
    ("graph @f(%x: f32[2]) -> (f32[2]) {\n  %0: f32[2] = f[a=wat] %x\n  return %0\n}",
     "line 2: unknown name 'wat' in a value"),
    ("graph @f(%x: f32[2]) -> (f32[2]) {\n  %0: f32[2] = neg $x\n  return %0\n}",
     "line 2: unexpected character '$' at column 20"),
    ("graph @f(%x: f32[2]) -> (f32[2]) {\n  yield %x\n}", "line 2: expected 'return' here, "
     "found 'yield'"),
])
def test_parse_errors_name_the_line(text: str, first_line: str) -> None:
    with pytest.raises(IRParseError) as info:
        parse(text)
    assert str(info.value).splitlines()[0] == first_line


def test_parse_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse("nonsense")
