"""Crafted and fuzzed SavedModels: loading untrusted files runs no code from them, never
crashes or hangs, and every bad field gives a CorruptSavedModelError (a ValueError) whose
first line names the file and the field.

The fingerprint is no defence against a crafted directory (whoever writes the files can
recompute it), so every case here rewrites ``fingerprint.json`` to match."""
from __future__ import annotations

import copy
import io
import json
import os
import random
import shutil
import subprocess
import sys
import zipfile
from typing import Any, Callable

import numpy as np
import pytest

import stagecraft as tf
from stagecraft import backends
from stagecraft.backends.codegen.source import Namer
from stagecraft.backends.codegen.source_emitter import comment_text
from stagecraft.saved_model import CorruptSavedModelError
from stagecraft.state.saved_model import format as fmt
from stagecraft.state.saved_model.functions import RestoredFunction

X = [1.0, 2.0, 3.0]
EXPECTED = [4.0, 8.0, 12.0]  # x * 3 + v with v = [1, 2, 3]


@pytest.fixture(autouse=True)
def _reference_backend(monkeypatch):
    """Loaded functions run on the interpreter: the checks under test come before any
    backend, and the interpreter keeps the many calls cheap."""
    monkeypatch.setattr(backends, "DEFAULT", "reference")


def _save_model(path: str) -> None:
    m = tf.Module()
    m.v = tf.Variable([1.0, 2.0, 3.0])
    m.f = tf.function(lambda x: x * 3.0 + m.v)
    m.f(tf.constant(X))
    sig = tf.function(lambda x: {"y": x * 2.0}, input_signature=[tf.TensorSpec([None])])
    m.sig = sig
    tf.saved_model.save(m, path, signatures=sig)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("crafted") / "model")
    _save_model(path)
    return path


def _craft(src: str, dst: str, edit: Callable[[dict], Any]) -> str:
    """A copy of the SavedModel ``src`` at ``dst`` with ``edit`` applied to its document and
    the fingerprint recomputed; returns the document's path."""
    shutil.copytree(src, dst)
    doc_path = os.path.join(dst, fmt.DOCUMENT)
    with open(doc_path, encoding="utf-8") as f:
        doc = json.load(f)
    edit(doc)
    fmt.write_text(doc_path, json.dumps(doc))
    _refingerprint(dst)
    return doc_path


def _refingerprint(path: str) -> None:
    with open(os.path.join(path, fmt.FINGERPRINT), encoding="utf-8") as f:
        files = list(json.load(f)["files"])
    fmt.write_fingerprint(path, files)


def _graph(doc: dict) -> dict:
    """The first concrete function's graph of ``f`` (x * 3.0 + v)."""
    return doc["concrete_functions"][0]["graph"]["graph"]


def _expect_field_error(path: str, doc_path: str, field: str) -> CorruptSavedModelError:
    with pytest.raises(CorruptSavedModelError) as info:
        tf.saved_model.load(path)
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"{doc_path}: corrupted SavedModel document: field {field}"), first
    return info.value


# ------------------------------------------------------------------- the exploit

def _payload(marker: str) -> str:
    """Source that creates ``marker`` if it ever runs, split over lines so that pasted into a
    ``#`` comment it escapes the comment and runs at module level."""
    return f"3\nopen({marker!r}, 'w').close()\n#"


def test_string_dim_with_newline_runs_no_code(model_dir, tmp_path):
    """The exploit of issue 15: a string dim holding a newline reached a ``#`` comment (and
    the shapes) of the generated module. Now the dim is refused before anything is built."""
    marker = str(tmp_path / "PWNED")
    payload = _payload(marker)

    def inject(doc):
        def walk(o):
            if isinstance(o, dict):
                if o.get("shape") == [3] and "dtype" in o:
                    o["shape"] = [payload]
                for v in o.values():
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
        walk(_graph(doc))
        doc["concrete_functions"][0]["args"]["list"][0]["tensor"]["shape"] = [None]

    path = str(tmp_path / "m")
    doc_path = _craft(model_dir, path, inject)
    err = _expect_field_error(path, doc_path, "concrete_functions[0].graph.params[0].type.shape[0]")
    assert "expected an integer" in str(err).splitlines()[0]
    assert not os.path.exists(marker)
    for backend in ("reference", "numba"):  # and nothing else made of the directory runs it
        try:
            tf.saved_model.load(path)
        except CorruptSavedModelError:
            pass
        assert not os.path.exists(marker), backend


@pytest.mark.parametrize("field", ["hint", "loc", "name"])
def test_strings_with_line_breaks_are_refused(model_dir, tmp_path, field):
    marker = str(tmp_path / "PWNED")
    payload = "y" + _payload(marker)

    def inject(doc):
        g = _graph(doc)
        if field == "name":
            g["name"] = payload
        else:
            g["eqns"][0][field if field == "loc" else "outputs"] = payload if field == "loc" \
                else [dict(g["eqns"][0]["outputs"][0], hint=payload)]

    path = str(tmp_path / "m")
    doc_path = _craft(model_dir, path, inject)
    where = {"hint": "eqns[0].outputs[0].hint", "loc": "eqns[0].loc", "name": "name"}[field]
    err = _expect_field_error(path, doc_path, f"concrete_functions[0].graph.{where}")
    assert "one printable line" in str(err)
    assert not os.path.exists(marker)


def test_names_that_are_not_paths_may_hold_separators(tmp_path):
    """Edge names are attribute names and dict keys, not file paths: keys such as 'a/b', '..'
    or '' load (only the SavedModel's own file paths must stay inside it)."""
    m = tf.Module()
    m.d = {"a/b": tf.Variable(1.0), "..": tf.Variable(2.0), "": tf.Variable(3.0)}
    m.f = tf.function(lambda: m.d["a/b"] + m.d[".."] + m.d[""])
    m.f()
    path = str(tmp_path / "m")
    tf.saved_model.save(m, path)
    loaded = tf.saved_model.load(path)
    assert float(loaded.f()) == 6.0 and sorted(loaded.d) == ["", "..", "a/b"]


def test_generated_source_cannot_be_escaped():
    """Defence in depth: whatever reaches the generator, comments stay one line and names are
    plain ASCII identifiers."""
    for text in ["a\nb", "a\rb", "a\u2028b", "a\x85b", "a\x00b", "a\x0cb", "a\u2029b"]:
        out = comment_text(text)
        assert out.isascii() and out.isprintable() and len(out.splitlines()) == 1, out
        compile("# " + out + "\nx = 1\n", "<t>", "exec")
    names = Namer()
    for hint in ["x\nimport os", "é", "ﬁ", "fi", "1x", "class", "a.b", "", None]:
        name = names.fresh(hint)
        assert name.isascii() and name.isidentifier(), name
    assert len(names.used) == 9  # "ﬁ" and "fi" (equal after NFKC) got distinct names


def test_odd_but_valid_strings_reach_the_numba_generator_safely(model_dir, tmp_path,
                                                               monkeypatch):
    """Strings that pass the schema (one printable line) may still hold quotes, ``#``,
    backslashes and non-ASCII letters; the generated module stays intact and computes the same
    result, and nothing else runs."""
    pytest.importorskip("numba")
    marker = str(tmp_path / "PWNED")
    odd = f"é\\N\"\"\"#'; open({marker!r}, 'w').close() # \\"

    def inject(doc):
        g = _graph(doc)
        g["name"] = odd
        g["params"][0]["hint"] = odd
        for e in g["eqns"]:
            e["loc"] = odd
            for o in e["outputs"]:
                o["hint"] = odd

    path = str(tmp_path / "m")
    _craft(model_dir, path, inject)
    monkeypatch.setattr(backends, "DEFAULT", "numba")
    loaded = tf.saved_model.load(path)
    assert loaded.f(tf.constant(X)).numpy().tolist() == EXPECTED
    assert not os.path.exists(marker)


# ------------------------------------------------------------- crafted field kinds

def _set(path_in_doc: tuple, value: Any) -> Callable[[dict], None]:
    def edit(doc):
        o = doc
        for k in path_in_doc[:-1]:
            o = o[k]
        o[path_in_doc[-1]] = value
    return edit


def _delete(path_in_doc: tuple) -> Callable[[dict], None]:
    def edit(doc):
        o = doc
        for k in path_in_doc[:-1]:
            o = o[k]
        del o[path_in_doc[-1]]
    return edit


def _cumsum(attrs: list) -> Callable[[dict], None]:
    """Makes the first equation a ``cumsum`` (an op with attributes) with ``attrs``."""
    def edit(doc):
        eqn = doc["concrete_functions"][0]["graph"]["graph"]["eqns"][0]
        eqn["op"], eqn["attrs"] = "cumsum", attrs
    return edit


G = ("concrete_functions", 0, "graph", "graph")
CF = ("concrete_functions", 0)
CASES = {
    # dims
    "negative dim": (_set(G + ("params", 0, "type", "shape", 0), -1),
                     "concrete_functions[0].graph.params[0].type.shape[0]"),
    "huge dim": (_set(G + ("params", 0, "type", "shape", 0), 2 ** 80),
                 "concrete_functions[0].graph.params[0].type.shape[0]"),
    "float dim": (_set(G + ("params", 0, "type", "shape", 0), 3.0),
                  "concrete_functions[0].graph.params[0].type.shape[0]"),
    "bool dim": (_set(G + ("params", 0, "type", "shape", 0), True),
                 "concrete_functions[0].graph.params[0].type.shape[0]"),
    "shape not a list": (_set(G + ("params", 0, "type", "shape"), "3"),
                         "concrete_functions[0].graph.params[0].type.shape"),
    "variable negative dim": (_set(("nodes", 1, "value_shape"), [-3]), "nodes[1].value_shape[0]"),
    "variable value shape does not fit": (_set(("nodes", 1, "value_shape"), [2]),
                                          "nodes[1].value_shape"),
    "graph format": (_set(CF + ("graph", "format"), "onnx"),
                     "concrete_functions[0].graph.format"),
    "graph version": (_set(CF + ("graph", "version"), "1"),
                      "concrete_functions[0].graph.version"),
    "ill-typed graph": (_set(G + ("params", 0, "type", "dtype"), "i32"),
                        "concrete_functions[0].graph: the graph of concrete function #0"),
    "variable unknown value shape": (_set(("nodes", 1, "value_shape"), None),
                                     "nodes[1].value_shape"),
    "argument dim": (_set(CF + ("args", "list", 0, "tensor", "shape"), ["3"]),
                     "concrete_functions[0].args.list[0].tensor.shape[0]"),
    "signature dim": (_set(("signatures", "serving_default", "inputs", 0, "shape"), [-1]),
                      "signatures['serving_default'].inputs[0].shape[0]"),
    # dtypes
    "unknown dtype": (_set(G + ("params", 0, "type", "dtype"), "f8"),
                      "concrete_functions[0].graph.params[0].type.dtype"),
    "dtype long name": (_set(("nodes", 1, "dtype"), "float32"), "nodes[1].dtype"),
    "dtype not a string": (_set(CF + ("args", "list", 0, "tensor", "dtype"), 1),
                           "concrete_functions[0].args.list[0].tensor.dtype"),
    "literal dtype": (_set(G + ("eqns", 0, "inputs", 1, "dtype"), "complex64"),
                      "concrete_functions[0].graph.eqns[0].inputs[1].dtype"),
    # ops and attributes
    "unknown op": (_set(G + ("eqns", 0, "op"), "os.system"),
                   "concrete_functions[0].graph.eqns[0].op"),
    "py_function op": (_set(G + ("eqns", 0, "op"), "py_function"),
                       "concrete_functions[0].graph.eqns[0].op"),
    "op not a string": (_set(G + ("eqns", 0, "op"), ["multiply"]),
                        "concrete_functions[0].graph.eqns[0].op"),
    "unknown attribute": (_set(G + ("eqns", 0, "attrs"), [["code", 1]]),
                          "concrete_functions[0].graph.eqns[0].attrs[0][0]"),
    "string attribute value": (_cumsum([["axis", "0\nimport os"]]),
                               "concrete_functions[0].graph.eqns[0].attrs[0][1]"),
    "unknown attribute encoding": (_cumsum([["axis", {"eval": "1"}]]),
                                   "concrete_functions[0].graph.eqns[0].attrs[0][1]"),
    "attribute list of strings": (_cumsum([["axis", {"tuple": [0, "x"]}]]),
                                  "concrete_functions[0].graph.eqns[0].attrs[0][1].tuple[1]"),
    "attribute given twice": (_cumsum([["axis", 0], ["axis", 0]]),
                              "concrete_functions[0].graph.eqns[0].attrs[1][0]"),
    "attribute scalar overflow": (_cumsum([["axis", {"scalar": 2 ** 40, "np": "int32"}]]),
                                  "concrete_functions[0].graph.eqns[0].attrs[0][1].scalar"),
    "attribute dtype": (_cumsum([["axis", {"dtype": "object"}]]),
                        "concrete_functions[0].graph.eqns[0].attrs[0][1].dtype"),
    "bad special float": (_set(G + ("eqns", 0, "inputs", 1, "literal"), {"float": "1e309"}),
                          "concrete_functions[0].graph.eqns[0].inputs[1].literal.float"),
    "string literal": (_set(G + ("eqns", 0, "inputs", 1, "literal"), "3.0"),
                       "concrete_functions[0].graph.eqns[0].inputs[1].literal"),
    "value used before defined": (_set(G + ("eqns", 0, "inputs", 0, "value"), 99),
                                  "concrete_functions[0].graph.eqns[0].inputs[0].value"),
    "value id twice": (_set(G + ("params", 1, "id"), 0),
                       "concrete_functions[0].graph.params[1].id"),
    "ref not a bool": (_set(G + ("params", 0, "ref"), "no"),
                       "concrete_functions[0].graph.params[0].ref"),
    # names and paths
    "edge name not a string": (_set(("nodes", 0, "children", 0, "name"), ["v"]),
                               "nodes[0].children[0].name"),
    "edge name with a control character": (_set(("nodes", 0, "children", 0, "name"), "v\x00"),
                                           "nodes[0].children[0].name"),
    "edge to missing node": (_set(("nodes", 0, "children", 0, "node"), 40),
                             "nodes[0].children[0].node"),
    "array name not in npz": (_set(CF + ("graph_arrays",), {"a0": "../../etc/passwd"}),
                              "concrete_functions[0].graph_arrays['a0']"),
    "parameter name not an identifier": (
        _set(("nodes", 2, "python_signature", 0, "name"), "x=__import__('os')"),
        "nodes[2].python_signature[0].name"),
    "namedtuple name": (_set(CF + ("outputs",), {"namedtuple": "a b", "fields": [], "items": []}),
                        "concrete_functions[0].outputs.namedtuple"),
    # wrong types and structure
    "nodes not a list": (_set(("nodes",), {"0": 1}), "nodes"),
    "no nodes": (_set(("nodes",), []), "nodes"),
    "unknown node kind": (_set(("nodes", 1, "kind"), "pickle"), "nodes[1].kind"),
    "root not an object": (_set(("nodes", 0, "kind"), "list"), "nodes[0].kind"),
    "trainable not a bool": (_set(("nodes", 1, "trainable"), 1), "nodes[1].trainable"),
    "num_inputs negative": (_set(CF + ("num_inputs",), -1), "concrete_functions[0].num_inputs"),
    "num_inputs string": (_set(CF + ("num_inputs",), "1"), "concrete_functions[0].num_inputs"),
    "variable index to a function": (_set(CF + ("variables",), [2]),
                                     "concrete_functions[0].variables[0]"),
    "concrete index out of range": (_set(("nodes", 2, "concrete_functions"), [5]),
                                    "nodes[2].concrete_functions[0]"),
    "missing key": (_delete(CF + ("graph_arrays",)), "concrete_functions[0]"),
    "extra key": (_set(("nodes", 1, "exec"), "print(1)"), "nodes[1]"),
    "missing graph key": (_delete(G + ("eqns",)), "concrete_functions[0].graph"),
    "slot negative": (_set(CF + ("outputs",), {"slot": -1}), "concrete_functions[0].outputs.slot"),
    "bad literal key": (_set(CF + ("kwargs",), {"dict": [[{"np": "object", "value": 1},
                                                         {"list": []}]]}),
                        "concrete_functions[0].kwargs.dict[0][0]"),
    "signature to missing function": (
        _set(("signatures", "serving_default", "concrete_function"), 9),
        "signatures['serving_default'].concrete_function"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_crafted_field_is_refused(model_dir, tmp_path, case):
    edit, field = CASES[case]
    path = str(tmp_path / "m")
    doc_path = _craft(model_dir, path, edit)
    err = _expect_field_error(path, doc_path, field)
    assert "save the SavedModel again" in str(err)


@pytest.mark.parametrize("text", ["", "{", "[]", "nul", '{"format": "stagecraft.saved_model"',
                                  '{"format": "stagecraft.saved_model", "version": 1}',
                                  "[" * 100000, "\xff\xfe"])
def test_truncated_or_garbled_json(model_dir, tmp_path, text):
    path = str(tmp_path / "m")
    shutil.copytree(model_dir, path)
    doc_path = os.path.join(path, fmt.DOCUMENT)
    fmt.write_text(doc_path, text)
    _refingerprint(path)
    with pytest.raises(CorruptSavedModelError) as info:
        tf.saved_model.load(path)
    assert str(info.value).splitlines()[0].startswith(f"{doc_path}: ")


def test_fingerprint_paths_stay_inside(model_dir, tmp_path):
    path = str(tmp_path / "m")
    shutil.copytree(model_dir, path)
    fp = os.path.join(path, fmt.FINGERPRINT)
    with open(fp, encoding="utf-8") as f:
        doc = json.load(f)
    doc["files"]["../../outside"] = "0" * 64
    fmt.write_text(fp, json.dumps(doc))
    with pytest.raises(CorruptSavedModelError, match=r"field files\['\.\./\.\./outside'\]"):
        tf.saved_model.load(path)


def _rewrite_arrays(path: str, edit: Callable[[dict], None]) -> None:
    arrays = fmt.read_arrays(os.path.join(path, fmt.ARRAYS))
    edit(arrays)
    fmt.write_arrays(os.path.join(path, fmt.ARRAYS), arrays)
    _refingerprint(path)


def test_array_sizes_must_match_declared_shapes(tmp_path):
    m = tf.Module()
    m.f = tf.function(lambda x: x + tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3)))
    m.f(tf.ones([2, 3]))
    path = str(tmp_path / "m")
    tf.saved_model.save(m, path)
    names = list(fmt.read_arrays(os.path.join(path, fmt.ARRAYS)))
    assert names
    _rewrite_arrays(path, lambda a: a.update({n: np.zeros(5, a[n].dtype) for n in names}))
    with pytest.raises(CorruptSavedModelError) as info:
        tf.saved_model.load(path)
    assert str(info.value).splitlines()[0].startswith(
        f"{os.path.join(path, fmt.DOCUMENT)}: corrupted SavedModel document: ")
    _rewrite_arrays(path, lambda a: a.update({n: np.zeros((2, 3), np.longdouble)
                                              for n in names}))
    with pytest.raises(CorruptSavedModelError, match="not one of the dtype table's"):
        tf.saved_model.load(path)
    # a dtype of the table, but not the constant's (complex data for a float32 constant)
    _rewrite_arrays(path, lambda a: a.update({n: np.zeros((2, 3), np.complex64)
                                              for n in names}))
    with pytest.raises(CorruptSavedModelError, match=r"the value is a complex64\[2, 3\] array "
                                                     r"but the output type is f32\[2,3\]"):
        tf.saved_model.load(path)


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=True)
    return buf.getvalue()


@pytest.mark.parametrize("kind", ["huge header shape", "decompression bomb", "object array",
                                  "not a zip", "truncated"])
def test_crafted_array_file_is_bounded_by_its_size(model_dir, tmp_path, kind):
    """The arrays file is read without unpickling and without allocating more than it holds:
    a header declaring a huge shape, a member that inflates past the file's size, an object
    array or garbage each give a CorruptSavedModelError naming the file."""
    path = str(tmp_path / "m")
    shutil.copytree(model_dir, path)
    npz = os.path.join(path, fmt.ARRAYS)
    if kind == "not a zip":
        with open(npz, "wb") as f:
            f.write(b"PK\x03\x04" + b"\0" * 64)
    elif kind == "truncated":
        with open(npz, "rb") as f:
            data = f.read()
        with open(npz, "wb") as f:
            f.write(data[:len(data) // 2])
    else:
        with zipfile.ZipFile(npz, "w", zipfile.ZIP_DEFLATED) as z:
            if kind == "huge header shape":
                z.writestr("cf0.a0.npy", _npy(np.zeros(3, np.float32)).replace(
                    b"(3,)", b"(4000000000000,)"))
            elif kind == "decompression bomb":
                z.writestr("cf0.a0.npy", _npy(np.zeros(20_000_000, np.float32)))
            else:
                z.writestr("cf0.a0.npy", _npy(np.array([1, "a"], dtype=object)))
    _refingerprint(path)
    with pytest.raises(CorruptSavedModelError) as info:
        tf.saved_model.load(path)
    assert str(info.value).splitlines()[0].startswith(f"{npz}: corrupted array file: ")


def test_captured_tensor_shape_must_fit_its_parameter(tmp_path):
    c = tf.constant([1.0, 2.0, 3.0])
    m = tf.Module()
    m.f = tf.function(lambda x: x + c)
    m.f(tf.constant(X))
    path = str(tmp_path / "m")
    tf.saved_model.save(m, path)
    names = [n for n in fmt.read_arrays(os.path.join(path, fmt.ARRAYS)) if "capture" in n]
    assert names
    _rewrite_arrays(path, lambda a: a.update({n: np.zeros(5, np.float32) for n in names}))
    with pytest.raises(CorruptSavedModelError, match="captured tensor of dtype float32 and "
                                                     "shape \\[5\\] does not fit"):
        tf.saved_model.load(path)


def test_damaged_binary_files_with_recomputed_fingerprint(model_dir, tmp_path):
    """Seeded byte damage to the arrays file and the variables checkpoint (fingerprint
    recomputed, as a crafter would): each load succeeds with the right result or raises a
    CorruptSavedModelError / DataLossError naming the damaged file."""
    files = [fmt.ARRAYS, fmt.VARIABLES_PREFIX + ".index",
             fmt.VARIABLES_PREFIX + ".data-00000-of-00001"]
    rng = random.Random(151)
    outcomes = {"refused": 0, "loaded": 0}
    for i in range(60):
        path = str(tmp_path / f"m{i}")
        shutil.copytree(model_dir, path)
        name = files[i % len(files)]
        target = os.path.join(path, name)
        with open(target, "rb") as f:
            data = bytearray(f.read())
        for _ in range(rng.choice((1, 4))):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[:rng.randrange(len(data))]
        with open(target, "wb") as f:
            f.write(bytes(data))
        _refingerprint(path)
        try:
            loaded = tf.saved_model.load(path)
        except (CorruptSavedModelError, tf.errors.DataLossError) as e:
            assert os.path.basename(target) in str(e).splitlines()[0], str(e)
            outcomes["refused"] += 1
        else:
            assert loaded.f(tf.constant(X)).numpy().tolist() == EXPECTED
            outcomes["loaded"] += 1
    assert outcomes["refused"] > 30, outcomes


# ------------------------------------------------------------------------- fuzz

_FUZZ_SCRIPT = r"""
import json, os, sys
sys.path.insert(0, sys.argv[4])
from test_saved_model_crafted import fuzz
print(json.dumps(fuzz(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[5]))))
"""


def _replacements(marker: str) -> list:
    return [None, True, False, 0, -1, 1, 3, 2 ** 31, 2 ** 70, -2 ** 70, 0.5, 1e308, "", "f32",
            "i64", "x", "..", "/", "../etc", "a\nb", f"3\nopen({marker!r},'w').close()\n#",
            [], [None], [3], [-1], {}, {"float": "nan"}, {"array": "cf0.a0"}, {"slot": 0}]


def _paths(o: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(o, dict):
        for k, v in o.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            out += _paths(v, prefix + (i,))
    return out


def _mutate(doc: dict, rng: random.Random, marker: str) -> dict:
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice((1, 1, 2, 3))):
        path = rng.choice(_paths(doc)[1:])
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        key, old = path[-1], parent[path[-1]]
        action = rng.random()
        if action < 0.15 and isinstance(parent, dict):
            del parent[key]
        elif action < 0.3 and isinstance(old, (int, float)) and not isinstance(old, bool):
            parent[key] = rng.choice((old + 1, old - 1, -old, old * 1000, float(old)))
        elif action < 0.4 and isinstance(old, list) and old:
            parent[key] = old[:-1] if rng.random() < 0.5 else old + [copy.deepcopy(old[0])]
        elif action < 0.5 and isinstance(old, dict):
            parent[key] = dict(old, **{rng.choice(("x", "list", "tuple", "spec")): 1})
        else:
            parent[key] = copy.deepcopy(rng.choice(_replacements(marker)))
    return doc


def fuzz(src: str, work: str, count: int, seed: int) -> dict:
    """Loads ``count`` mutations of ``src``'s document (seeded) and calls ``f`` on each one
    that loads; returns counts of outcomes and the unexpected ones."""
    backends.DEFAULT = "reference"
    with open(os.path.join(src, fmt.DOCUMENT), encoding="utf-8") as f:
        original = json.load(f)
    rng = random.Random(seed)
    marker = os.path.join(work, "PWNED")
    outcome = {"refused": 0, "loaded": 0, "renamed": 0, "call_refused": 0, "bad": []}
    for i in range(count):
        path = os.path.join(work, f"m{i}")
        doc = _mutate(original, rng, marker)
        shutil.copytree(src, path)
        doc_path = os.path.join(path, fmt.DOCUMENT)
        fmt.write_text(doc_path, json.dumps(doc))
        _refingerprint(path)
        try:
            loaded = tf.saved_model.load(path)
        except CorruptSavedModelError as e:
            outcome["refused"] += 1
            if not str(e).startswith(doc_path + ": ") and not str(e).startswith(path):
                outcome["bad"].append([i, "error does not name the file", str(e)[:300]])
        except Exception as e:  # noqa: BLE001 (any other exception is the finding)
            outcome["bad"].append([i, type(e).__name__, str(e)[:300]])
        else:
            outcome["loaded"] += 1
            f = getattr(loaded, "f", None)
            if not isinstance(f, RestoredFunction):  # the mutation moved or renamed it
                outcome["renamed"] += 1
            else:
                try:
                    out = f(tf.constant(X))
                    if out.shape != (3,) or out.dtype != tf.float32:
                        outcome["bad"].append([i, "wrong result", repr(out)])
                except (ValueError, TypeError, tf.errors.InvalidArgumentError):
                    outcome["call_refused"] += 1
                except Exception as e:  # noqa: BLE001
                    outcome["bad"].append([i, "call: " + type(e).__name__, str(e)[:300]])
        shutil.rmtree(path)
        if os.path.exists(marker):
            outcome["bad"].append([i, "CODE RAN", json.dumps(doc)[:300]])
            os.remove(marker)
    return outcome


def _run_fuzz(model_dir: str, tmp_path, count: int, seed: int, timeout: float) -> dict:
    env = dict(os.environ, STAGECRAFT_BACKEND="reference")
    proc = subprocess.run(
        [sys.executable, "-c", _FUZZ_SCRIPT, model_dir, str(tmp_path), str(count),
         os.path.dirname(__file__), str(seed)],
        capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]  # a crash shows here
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_fuzzed_documents(model_dir, tmp_path):
    out = _run_fuzz(model_dir, tmp_path, 200, seed=15, timeout=300)
    assert out["bad"] == [], out["bad"][:5]
    assert out["refused"] > 50 and out["refused"] + out["loaded"] == 200, out


@pytest.mark.full_matrix
def test_fuzzed_documents_full(model_dir, tmp_path):
    out = _run_fuzz(model_dir, tmp_path, 1500, seed=1515, timeout=1800)
    assert out["bad"] == [], out["bad"][:5]
    assert out["refused"] + out["loaded"] == 1500, out
