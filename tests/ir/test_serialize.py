"""``ir.serialize``: versioned JSON plus ``.npz`` arrays; loading gives an identical printout,
keeps constant data, and rejects unknown versions and Python callables clearly."""
from __future__ import annotations

import json

import numpy as np
import pytest

import ir_graphs
import stagecraft as tf
from stagecraft.backends import get_backend
from stagecraft.ir import dtypes, serialize
from stagecraft.ir.graph import Graph, GraphBuilder, const_value
from stagecraft.ir.parser import parse
from stagecraft.ir.placeholders import DigestArray
from stagecraft.ir.types import TensorType
from stagecraft.ir.verify import verify


@pytest.mark.parametrize("name", sorted(ir_graphs.TRACED))
def test_dumps_loads_prints_identically(name: str) -> None:
    g = ir_graphs.TRACED[name]()
    text, arrays = serialize.dumps(g)
    loaded = serialize.loads(text, arrays)
    assert str(loaded) == str(g)
    assert loaded.to_text(locs=True) == g.to_text(locs=True)
    verify(loaded)


@pytest.mark.parametrize("suffix", ["", ".npz"])
@pytest.mark.parametrize("name", ["constants", "everything", "variables"])
def test_save_load_directory_and_single_file(tmp_path, name: str, suffix: str) -> None:
    g = ir_graphs.TRACED[name]()
    path = tmp_path / f"graph{suffix}"
    serialize.save(g, path)
    assert path.is_dir() == (suffix == "")
    assert str(serialize.load(path)) == str(g)
    assert str(serialize.load(str(path))) == str(g)


def test_document_is_versioned_json_and_arrays_hold_constants() -> None:
    g = ir_graphs.constants()
    text, arrays = serialize.dumps(g)
    doc = json.loads(text)
    assert doc["format"] == "stagecraft.graph" and doc["version"] == 1
    assert all(isinstance(a, np.ndarray) and a.dtype != object for a in arrays.values())
    loaded = serialize.loads(text, arrays)
    for e, f in zip(g.eqns, loaded.eqns):
        if e.op == "const":
            np.testing.assert_array_equal(const_value(e), const_value(f))
            assert const_value(e).dtype == const_value(f).dtype
            assert const_value(e).shape == const_value(f).shape


def test_loaded_graph_computes_the_same(tmp_path) -> None:
    big = np.linspace(-1.0, 1.0, 50).astype(np.float32)

    @tf.function
    def f(x):
        y = tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * tf.constant(big), lambda: x)
        return tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + 1.0), (0, y))[1]
    x = tf.constant(np.arange(50, dtype=np.float32))
    g = f.get_concrete_function(x).graph
    serialize.save(g, tmp_path / "g.npz")
    run = get_backend(None).compile(serialize.load(tmp_path / "g.npz"))
    np.testing.assert_allclose(run([x.numpy()])[0], f(x).numpy())


def test_digest_placeholders_survive_serialization() -> None:
    parsed = parse(str(ir_graphs.constants()))
    loaded = serialize.loads(*serialize.dumps(parsed))
    assert str(loaded) == str(parsed)
    assert isinstance(const_value(loaded.eqns[2]), DigestArray)


def test_literals_and_odd_attributes_survive() -> None:
    odd = ir_graphs.odd_attrs_and_literals()
    # Loading accepts only the ops of the op table (and the structural ones): the 'custom'
    # equation, which shows every attribute encoding, round-trips only through dumps.
    g = Graph(odd.name, odd.params, tuple(e for e in odd.eqns if e.op != "custom"),
              odd.results)
    text, arrays = serialize.dumps(g)
    json.loads(text)  # strict JSON: nan and inf are encoded, not written as NaN/Infinity
    assert "NaN" not in text and "Infinity" not in text
    assert serialize.loads(text, arrays).to_text(locs=True) == g.to_text(locs=True)
    text, arrays = serialize.dumps(odd)
    assert "NaN" not in text and "Infinity" not in text
    with pytest.raises(ValueError, match=r"^field graph\.eqns\[6\]\.op: unknown op str 'custom'"):
        serialize.loads(text, arrays)


def test_unknown_version_is_rejected() -> None:
    text, arrays = serialize.dumps(ir_graphs.elementwise())
    doc = json.loads(text)
    doc["version"] = 99
    with pytest.raises(ValueError) as info:
        serialize.loads(json.dumps(doc), arrays)
    assert str(info.value).splitlines()[0] == (
        "Unsupported stagecraft.graph version 99: this stagecraft reads version(s) 1. Save the "
        "graph again with this version, or upgrade stagecraft.")


def test_other_documents_are_rejected() -> None:
    with pytest.raises(ValueError, match="^Not a stagecraft graph document: expected format"):
        serialize.loads(json.dumps({"format": "onnx", "version": 1}), {})
    with pytest.raises(ValueError, match="^Not a stagecraft graph document: invalid JSON"):
        serialize.loads("{", {})


def test_missing_array_is_reported() -> None:
    text, _ = serialize.dumps(ir_graphs.constants())
    with pytest.raises(ValueError, match=r"^field graph\.eqns\[0\]\.attrs\[0\]\[1\]\.array: "
                                         r"array .a0. is missing"):
        serialize.loads(text, {})


def test_py_function_cannot_be_serialized() -> None:
    @tf.function
    def f(x):
        return tf.py_function(lambda a: a * 2.0, [x], tf.float32) + 1.0
    g = f.get_concrete_function(tf.constant([1.0])).graph
    with pytest.raises(ValueError) as info:
        serialize.dumps(g)
    assert str(info.value).startswith(
        "Cannot serialize the 'py_function' equation: its attribute 'fn' is the Python callable")


def test_load_never_unpickles(tmp_path) -> None:
    path = tmp_path / "evil.npz"
    np.savez(path, __graph_json__=np.frombuffer(b"{}", np.uint8),
             a0=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match=f"^{path}: array file member 'a0.npy': dtype object "
                                         f"is not allowed"):
        serialize.load(path)


def test_empty_graph_round_trips(tmp_path) -> None:
    g = GraphBuilder("nothing").build([])
    serialize.save(g, tmp_path / "d")
    assert str(serialize.load(tmp_path / "d")) == str(g) == \
        "graph @nothing() -> () {\n  return \n}"


def test_every_attribute_has_a_kind() -> None:
    """Loading checks each attribute's value against ``ATTR_KINDS``: every attribute of the
    op table and of the structural ops must have an entry (else it could not be loaded)."""
    from stagecraft.ir import OPS
    names = {a for op in OPS.values() for a in op.attrs}
    names |= {a for attrs in serialize.STRUCTURAL_ATTRS.values() for a in attrs}
    assert names <= set(serialize.ATTR_KINDS), sorted(names - set(serialize.ATTR_KINDS))


def test_attribute_of_the_wrong_kind_is_refused() -> None:
    b = GraphBuilder("f")
    x = b.param(TensorType(dtypes.float32, (3,)), "x")
    (y,) = b.add("cumsum", [x], [x.type], {"axis": 0, "exclusive": False, "reverse": False})
    text, arrays = serialize.dumps(b.build([y]))
    serialize.loads(text, arrays)  # as written it loads
    for bad in (1.5, "0", {"tuple": [0, None]}, {"dtype": "f32"}, 2 ** 70):
        doc = json.loads(text)
        doc["graph"]["eqns"][0]["attrs"][0][1] = bad
        with pytest.raises(ValueError, match=r"^field graph\.eqns\[0\]\.attrs\[0\]\[1\]: "):
            serialize.loads(json.dumps(doc), arrays)


def test_every_op_table_example_round_trips() -> None:
    """The attribute kinds accept every attribute the op table's own examples use."""
    from stagecraft.ir import OPS
    rng = np.random.default_rng(0)
    count = 0
    for name, op in sorted(OPS.items()):
        for d in op.test_dtypes or op.dtypes:
            for ex in op.examples(rng, d):
                b = GraphBuilder(name)
                types = [TensorType(dtypes.from_numpy(np.asarray(a).dtype), np.shape(a))
                         for a in ex.inputs]
                params = [b.param(t, f"a{i}") for i, t in enumerate(types)]
                outs = b.add(name, params, list(op.infer(types, **ex.attrs)), dict(ex.attrs))
                g = b.build(list(outs))
                assert str(serialize.loads(*serialize.dumps(g))) == str(g), name
                count += 1
    assert count > 200
