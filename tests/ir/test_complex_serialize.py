"""Complex literals and constants in the textual IR and the graph format: printed and parsed
back, saved and loaded (computing the same), and crafted documents with complex values where
the dtype is real rejected with the field named; checkpoints keep complex variables."""
from __future__ import annotations

import json

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends import get_backend
from stagecraft.ir import serialize
from stagecraft.ir.parser import parse


@tf.function
def _f(z):
    return tf.signal.fft(z * (2 + 1j)) + tf.constant(np.array([1j, 2], np.complex64)), \
        tf.math.real(z * np.complex64(3 - 1j))


_Z = tf.constant(np.array([1 + 2j, 3], np.complex64))


def _graph():
    return _f.get_concrete_function(_Z).graph


def test_complex_literals_print_and_parse_back():
    g = _graph()
    assert "complex(2.0, 1.0)" in str(g)
    assert str(parse(str(g))) == str(g)


def test_saved_graph_with_complex_values_computes_the_same(tmp_path):
    g = _graph()
    text, arrays = serialize.dumps(g)
    assert serialize.loads(text, arrays).to_text(locs=True) == g.to_text(locs=True)
    serialize.save(g, tmp_path / "g.npz")
    run = get_backend(None).compile(serialize.load(tmp_path / "g.npz"))
    for got, want in zip(run([_Z.numpy()]), _f(_Z)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)


def _literal_fields(doc):
    """Every {"literal": ..., "dtype": ...} operand of the document."""
    if isinstance(doc, dict):
        if "literal" in doc:
            yield doc
        for v in doc.values():
            yield from _literal_fields(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _literal_fields(v)


def test_complex_literal_of_a_real_dtype_is_rejected():
    text, arrays = serialize.dumps(_graph())
    doc = json.loads(text)
    operand = next(d for d in _literal_fields(doc) if isinstance(d["literal"], dict))
    operand["dtype"] = "f32"
    with pytest.raises(ValueError, match=r"^field graph\.eqns\[\d+\]\.inputs\[1\]\.literal: "
                                         r"expected a number or a bool \(complex only"):
        serialize.loads(json.dumps(doc), arrays)


def test_malformed_complex_value_is_rejected():
    text, arrays = serialize.dumps(_graph())
    extra = text.replace('{"complex": [', '{"complex": [1.0, ', 1)
    with pytest.raises(ValueError, match=r"\.complex: a list of 3 items is longer than the 2"):
        serialize.loads(extra, arrays)
    doc = json.loads(text)
    operand = next(d for d in _literal_fields(doc) if isinstance(d["literal"], dict))
    operand["literal"]["complex"][0] = True
    with pytest.raises(ValueError, match=r"\.complex: expected \[real, imag\] numbers"):
        serialize.loads(json.dumps(doc), arrays)


def test_checkpoint_keeps_complex_variables(tmp_path):
    v = tf.Variable(tf.constant([1 + 2j, 3 - 1j], tf.complex128))
    ckpt = tf.train.Checkpoint(v=v)
    path = ckpt.save(str(tmp_path / "ckpt"))
    v.assign(tf.zeros([2], tf.complex128))
    ckpt.restore(path)
    assert v.dtype == tf.complex128 and v.numpy().tolist() == [1 + 2j, 3 - 1j]


def test_saved_model_with_complex_signature(tmp_path):
    class Scale(tf.Module):
        def __init__(self):
            self.w = tf.Variable(tf.constant([[1 + 1j]], tf.complex128))

        @tf.function(input_signature=[tf.TensorSpec([1, 1], tf.complex128)])
        def __call__(self, x):
            return tf.matmul(x, self.w) * (2 - 1j)

    tf.saved_model.save(Scale(), str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded(tf.constant([[1j]])).numpy().tolist() == [[-1 + 3j]]
