"""Crafted and fuzzed checkpoint index files: every field is checked before use, so a
crafted index (with its CRC-32 recomputed, which anyone can do) gives a DataLossError whose
first line names the index file and the field, never another exception, a huge allocation or a
read outside the data file."""
from __future__ import annotations

import copy
import json
import os
import random
import zlib
from typing import Any, Callable

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.state.checkpoint import format as fmt
from stagecraft.ir.errors import DataLossError


@pytest.fixture
def prefix(tmp_path) -> str:
    m = tf.Module()
    m.kernel = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    m.step = tf.Variable(7, dtype=tf.int64)
    return tf.train.Checkpoint(model=m).write(str(tmp_path / "ckpt"))


def _restore(prefix: str) -> Any:
    m = tf.Module()
    m.kernel = tf.Variable(tf.zeros([2, 2]))
    m.step = tf.Variable(0, dtype=tf.int64)
    tf.train.Checkpoint(model=m).read(prefix).expect_partial()
    return m


def _rewrite_index(prefix: str, edit: Callable[[dict], None]) -> str:
    """Applies ``edit`` to the index content and recomputes its checksum; returns the path."""
    path = fmt.index_path(prefix)
    with open(path, encoding="utf-8") as f:
        body = json.load(f)
    edit(body["content"])
    body["checksum"] = zlib.crc32(fmt._canonical(body["content"]))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(body, f)
    return path


def _tensor(content: dict) -> dict:
    return content["tensors"]["model/kernel/.ATTRIBUTES/VARIABLE_VALUE"]


def _nodes(content: dict) -> list:
    return content["document"]["object_graph"]["nodes"]


KERNEL = "tensors['model/kernel/.ATTRIBUTES/VARIABLE_VALUE']"
CASES: dict[str, tuple[Callable[[dict], None], str]] = {
    "negative dim": (lambda c: _tensor(c).update(shape=[-2, 2]), f"{KERNEL}.shape[0]"),
    "huge dims": (lambda c: _tensor(c).update(shape=[2 ** 40, 2 ** 40]), f"{KERNEL}.length"),
    "string dim": (lambda c: _tensor(c).update(shape=["2\nimport os", 2]), f"{KERNEL}.shape[0]"),
    "dims disagree with length": (lambda c: _tensor(c).update(shape=[2, 3]), f"{KERNEL}.length"),
    "object dtype": (lambda c: _tensor(c).update(dtype="object"), f"{KERNEL}.dtype"),
    "dtype not a string": (lambda c: _tensor(c).update(dtype=["float32"]), f"{KERNEL}.dtype"),
    "offset past the data": (lambda c: _tensor(c).update(offset=10 ** 9), f"{KERNEL}.offset"),
    "offset in the header": (lambda c: _tensor(c).update(offset=0), f"{KERNEL}.offset"),
    "length past the data": (lambda c: _tensor(c).update(length=c["data_size"]),
                             f"{KERNEL}.length"),
    "crc not an int": (lambda c: _tensor(c).update(crc32="0"), f"{KERNEL}.crc32"),
    "missing tensor field": (lambda c: _tensor(c).pop("offset"), KERNEL),
    "extra tensor field": (lambda c: _tensor(c).update(pickle="x"), KERNEL),
    "data size huge": (lambda c: c.update(data_size=2 ** 70), "data_size"),
    "data size float": (lambda c: c.update(data_size=1e3), "data_size"),
    "write id": (lambda c: c.update(write_id="../../x"), "write_id"),
    "tensors not an object": (lambda c: c.update(tensors=[]), "tensors"),
    "document not an object": (lambda c: c.update(document="x"), "document"),
    "edge to a missing node": (lambda c: _nodes(c)[0]["children"][0].__setitem__(1, 99),
                               "document.object_graph.nodes[0].children[0][1]"),
    "edge name not a string": (lambda c: _nodes(c)[0]["children"][0].__setitem__(0, None),
                               "document.object_graph.nodes[0].children[0][0]"),
    "value key not in the checkpoint": (
        lambda c: [n["attributes"].update(VARIABLE_VALUE="nope") for n in _nodes(c)
                   if n["attributes"]][0],
        "document.object_graph.nodes["),
    "node not an object": (lambda c: _nodes(c).append([1]), "document.object_graph.nodes[4]"),
    "no nodes": (lambda c: c["document"]["object_graph"].update(nodes=[]),
                 "document.object_graph.nodes"),
    "bad slot entry": (lambda c: _nodes(c)[0].update(slot_variables=[[0, "m"]]),
                       "document.object_graph.nodes[0].slot_variables[0]"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_crafted_index_field_is_refused(prefix, case):
    edit, field = CASES[case]
    path = _rewrite_index(prefix, edit)
    with pytest.raises(DataLossError) as info:
        _restore(prefix)
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"Checkpoint index {path!r} field {field}"), first
    assert "restore an older checkpoint" in first


def test_data_file_outside_the_directory_is_refused(prefix):
    path = _rewrite_index(prefix, lambda c: c.update(data_file="../../etc/passwd"))
    with pytest.raises(DataLossError, match=f"^Checkpoint index {path!r} field 'data_file'"):
        _restore(prefix)


def test_reader_checks_the_index_too(prefix):
    _rewrite_index(prefix, lambda c: _tensor(c).update(shape=[-1]))
    with pytest.raises(DataLossError, match=r"field tensors\[.*\]\.shape\[0\]"):
        tf.train.list_variables(prefix)


def _mutate(content: dict, rng: random.Random) -> dict:
    content = copy.deepcopy(content)
    values = [None, True, -1, 0, 7, 2 ** 63, 1.5, "", "x", "../x", "float64", [], [3], {}]
    for _ in range(rng.choice((1, 2))):
        paths = []

        def walk(o: Any, at: tuple) -> None:
            paths.append(at)
            items = o.items() if isinstance(o, dict) else \
                enumerate(o) if isinstance(o, list) else ()
            for k, v in items:
                walk(v, at + (k,))
        walk(content, ())
        at = rng.choice(paths[1:])
        parent = content
        for k in at[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and rng.random() < 0.2:
            del parent[at[-1]]
        else:
            parent[at[-1]] = copy.deepcopy(rng.choice(values))
    return content


def test_fuzzed_index(prefix):
    """200 seeded mutations of the index: each restores correctly or raises DataLossError /
    ValueError (a restore that does not fit the objects) naming the checkpoint."""
    with open(fmt.index_path(prefix), encoding="utf-8") as f:
        original = json.load(f)["content"]
    rng = random.Random(15)
    outcomes = {"refused": 0, "restored": 0}
    for _ in range(200):
        mutated = _mutate(original, rng)
        _rewrite_index(prefix, lambda c: (c.clear(), c.update(copy.deepcopy(mutated))))
        try:
            m = _restore(prefix)
        except (DataLossError, ValueError) as e:
            assert prefix in str(e).splitlines()[0], str(e)
            outcomes["refused"] += 1
        else:
            outcomes["restored"] += 1
            assert m.kernel.shape == (2, 2) and m.kernel.dtype == tf.float32
            np.testing.assert_array_equal(int(m.step.numpy()) in (0, 7), True)
    assert outcomes["refused"] > 100, outcomes


def test_reader_dtype_map_of_complex_tensors(tmp_path):
    prefix = str(tmp_path / "raw")
    fmt.write_bundle(prefix, {}, {"x": np.zeros(2, np.complex128),
                                  "y": np.zeros(2, np.complex64)})
    reader = tf.train.load_checkpoint(prefix)
    assert reader.get_tensor("x").dtype == np.complex128
    assert reader.get_variable_to_dtype_map() == {"x": tf.complex128, "y": tf.complex64}


def test_object_names_are_not_paths(tmp_path):
    """Edge names and tensor keys come from attribute names and dict keys; odd but valid ones
    ('a/b', '..', a line break) restore, since they are never used as file paths."""
    def make(value: float) -> tf.Module:
        m = tf.Module()
        m.d = {"a\nb": tf.Variable(value), "..": tf.Variable(value), "x/y": tf.Variable(value)}
        return m
    path = tf.train.Checkpoint(m=make(1.0)).write(str(tmp_path / "c"))
    restored = make(0.0)
    tf.train.Checkpoint(m=restored).read(path).assert_consumed()
    assert [float(v) for v in restored.d.values()] == [1.0, 1.0, 1.0]
