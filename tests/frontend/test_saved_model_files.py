"""SavedModel files: loading in a fresh process without the model's source (reference and
Numba backends), atomic saves under fault injection, clear errors for damaged / missing /
future-version files, and no code (pickle, eval) run while loading."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ir.errors import NotFoundError
from stagecraft.saved_model import CorruptSavedModelError
from stagecraft.state.saved_model import format as fmt
from stagecraft.state.saved_model import objects


class Net(tf.Module):
    def __init__(self):
        super().__init__()
        self.kernel = tf.Variable([[1.0, -1.0], [0.5, 2.0]])
        self.layers = [tf.Variable([0.1, 0.2])]
        self.count = tf.Variable(0, dtype=tf.int64, trainable=False)

    @tf.function
    def __call__(self, x):
        y = tf.matmul(x, self.kernel) + self.layers[0]
        n = tf.constant(0)
        while n < 2:  # a loop and a branch, staged by AutoGraph
            y = tf.nn.relu(y) if tf.reduce_max(y) > 1.0 else y * 2.0
            n += 1
        self.count.assign_add(1)
        return y

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def score(self, x):
        return tf.reduce_sum(self(x), axis=1)


def _save(tmp_path, name="net"):
    net = Net()
    x = tf.constant([[1.0, 2.0], [-3.0, 0.5]])
    net(x)
    path = str(tmp_path / name)
    tf.saved_model.save(net, path, signatures=net.score)
    return net, x, path


# The fresh process imports stagecraft only: no test module, no Net class.
_SCRIPT = """
import json, sys
import stagecraft as tf
loaded = tf.saved_model.load(sys.argv[1])
x = tf.constant([[1.0, 2.0], [-3.0, 0.5]])
out = {"call": loaded(x).numpy().tolist(),
       "score": loaded.score(x).numpy().tolist(),
       "sig": loaded.signatures["serving_default"](x=x)["output_0"].numpy().tolist(),
       "kernel": loaded.kernel.numpy().tolist(),
       "type": type(loaded).__name__}
loaded.kernel.assign([[0.0, 0.0], [0.0, 0.0]])
loaded.layers[0].assign([5.0, 5.0])
out["after_assign"] = loaded(x).numpy().tolist()
out["count"] = int(loaded.count.numpy())
try:
    loaded.score(tf.constant([[1, 2]]))
except TypeError as e:
    out["type_error"] = str(e).splitlines()[0]
out["has_net"] = any("Net" in dir(m) for m in list(sys.modules.values()) if m is not None
                     and getattr(m, "__name__", "").startswith("test"))
from stagecraft import backends
out["backend"] = backends.DEFAULT
out["executable"] = type(loaded.__call__.concrete_functions[0].executable).__module__
print(json.dumps(out))
"""


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_load_in_fresh_process_without_source(tmp_path, backend):
    net, x, path = _save(tmp_path)
    env = dict(os.environ, STAGECRAFT_BACKEND=backend)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, path], capture_output=True,
                          text=True, cwd=str(tmp_path), env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = net(x).numpy()
    np.testing.assert_allclose(out["call"], expected, rtol=1e-6)
    np.testing.assert_allclose(out["score"], expected.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(out["sig"], expected.sum(axis=1), rtol=1e-6)
    assert out["kernel"] == net.kernel.numpy().tolist()
    assert out["type"] == "UserObject" and out["has_net"] is False
    np.testing.assert_allclose(out["after_assign"], [[5.0, 5.0], [5.0, 5.0]])  # relu(0x + 5)
    assert out["count"] == 1 + 4  # saved value 1, then four calls in the fresh process
    assert out["type_error"].startswith("Binding inputs to tf.function score failed")
    assert out["backend"] == backend
    assert out["executable"].startswith(f"stagecraft.backends.{backend}")


def test_no_pickle_or_eval_when_loading(tmp_path, monkeypatch):
    _, x, path = _save(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("loading a SavedModel must not unpickle anything")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    loaded = tf.saved_model.load(path)
    assert loaded(x).shape.as_list() == [2, 2]
    package = os.path.dirname(tf.saved_model.__file__)
    for name in os.listdir(package):
        if name.endswith(".py"):
            with open(os.path.join(package, name), encoding="utf-8") as f:
                text = f.read()
            for banned in ("import pickle", "eval(", "exec(", "allow_pickle=True"):
                assert banned not in text, f"{name} contains {banned!r}"


def test_npz_object_arrays_are_refused(tmp_path):
    path = str(tmp_path / "a.npz")
    np.savez(path, bad=np.array([{"a": 1}], dtype=object))
    with pytest.raises(CorruptSavedModelError, match="a.npz: corrupted array file"):
        fmt.read_arrays(path)


# -------------------------------------------------------------------- atomic save

def _no_temporaries(tmp_path):
    return [n for n in os.listdir(tmp_path) if ".tmp-" in n or ".old-" in n] == []


@pytest.mark.parametrize("where", ["variables", "fingerprint"])
def test_failed_save_leaves_nothing(tmp_path, monkeypatch, where):
    net = Net()
    net(tf.constant([[1.0, 1.0]]))

    def boom(*args, **kwargs):
        raise OSError("disk full (injected)")

    target = (objects, "write_variables") if where == "variables" else \
        (fmt, "write_fingerprint")
    monkeypatch.setattr(*target, boom)
    with pytest.raises(OSError, match="injected"):
        tf.saved_model.save(net, str(tmp_path / "net"))
    assert not os.path.exists(tmp_path / "net")
    assert _no_temporaries(tmp_path)


def test_failed_overwrite_keeps_previous_savedmodel(tmp_path, monkeypatch):
    net, x, path = _save(tmp_path)
    before = tf.saved_model.load(path)(x).numpy()
    net.kernel.assign([[9.0, 9.0], [9.0, 9.0]])

    def boom(*args, **kwargs):
        raise RuntimeError("killed mid-save (injected)")

    monkeypatch.setattr(fmt, "write_arrays", boom)
    with pytest.raises(RuntimeError, match="injected"):
        tf.saved_model.save(net, path)
    np.testing.assert_allclose(tf.saved_model.load(path)(x).numpy(), before)
    assert _no_temporaries(tmp_path)
    monkeypatch.undo()
    tf.saved_model.save(net, path)  # a successful overwrite replaces it
    assert tf.saved_model.load(path).kernel.numpy().tolist() == [[9.0, 9.0], [9.0, 9.0]]
    assert _no_temporaries(tmp_path)


# --------------------------------------------------------------- damaged files

def test_missing_directory(tmp_path):
    with pytest.raises(NotFoundError) as e:
        tf.saved_model.load(str(tmp_path / "nowhere"))
    assert str(e.value).splitlines()[0].startswith(
        f"SavedModel file does not exist at: {tmp_path / 'nowhere' / 'saved_model.json'}")


@pytest.mark.parametrize("name", ["saved_model.json", "saved_model.npz",
                                  os.path.join("variables", "variables.data-00000-of-00001"),
                                  os.path.join("variables", "variables.index")])
def test_corrupted_file_is_named(tmp_path, name):
    _, _, path = _save(tmp_path)
    file = os.path.join(path, name)
    with open(file, "r+b") as f:
        data = bytearray(f.read())
        data[len(data) // 2] ^= 0xFF
        f.seek(0)
        f.write(data)
    with pytest.raises(CorruptSavedModelError) as e:
        tf.saved_model.load(path)
    assert str(e.value).splitlines()[0].startswith(
        f"{file}: corrupted file: its SHA-256 does not match the one recorded in "
        f"fingerprint.json")


def test_truncated_and_missing_parts(tmp_path):
    _, _, path = _save(tmp_path)
    npz = os.path.join(path, "saved_model.npz")
    with open(npz, "r+b") as f:
        f.truncate(10)
    with pytest.raises(CorruptSavedModelError, match="saved_model.npz: corrupted file"):
        tf.saved_model.load(path)
    os.remove(npz)
    with pytest.raises(NotFoundError) as e:
        tf.saved_model.load(path)
    assert str(e.value).startswith(f"{npz}: file of the SavedModel is missing")
    os.remove(os.path.join(path, "fingerprint.json"))
    with pytest.raises(NotFoundError, match="fingerprint.json"):
        tf.saved_model.load(path)


def _rewrite_document(path, edit):
    doc_path = os.path.join(path, fmt.DOCUMENT)
    with open(doc_path, encoding="utf-8") as f:
        doc = json.load(f)
    edit(doc)
    fmt.write_text(doc_path, json.dumps(doc))
    files = list(json.load(open(os.path.join(path, fmt.FINGERPRINT)))["files"])
    fmt.write_fingerprint(path, files)  # consistent checksums: only the content is wrong
    return doc_path


def test_future_version_and_wrong_format(tmp_path):
    _, _, path = _save(tmp_path)
    doc_path = _rewrite_document(path, lambda d: d.update(version=99))
    with pytest.raises(CorruptSavedModelError) as e:
        tf.saved_model.load(path)
    assert str(e.value).splitlines()[0] == (
        f"{doc_path}: SavedModel document format version 99 is not supported: this "
        f"stagecraft reads version(s) 1. It was written by a newer stagecraft; upgrade "
        f"stagecraft to load it.")
    _rewrite_document(path, lambda d: d.update(version=1, format="something.else"))
    with pytest.raises(CorruptSavedModelError, match="not a stagecraft SavedModel document"):
        tf.saved_model.load(path)


def test_inconsistent_document_is_reported(tmp_path):
    _, _, path = _save(tmp_path)

    def drop_variables(doc):
        for cf in doc["concrete_functions"]:
            cf["variables"] = cf["variables"][:-1]

    doc_path = _rewrite_document(path, drop_variables)
    with pytest.raises(CorruptSavedModelError) as e:
        tf.saved_model.load(path)
    assert str(e.value).startswith(f"{doc_path}: corrupted SavedModel document: concrete "
                                   f"function #0")
    _rewrite_document(path, lambda d: d["nodes"][0].pop("children"))
    with pytest.raises(CorruptSavedModelError, match=r"corrupted SavedModel document: field "
                                                     r"nodes\[0\]: the object lacks the key"):
        tf.saved_model.load(path)



def test_variables_checkpoint_must_cover_every_variable(tmp_path):
    _, _, path = _save(tmp_path)

    def add_variable(doc):
        doc["nodes"].append({"kind": "variable", "dtype": "f32", "shape": [], "value_shape": [],
                             "trainable": True, "name": "extra", "children": []})
        doc["nodes"][0]["children"].append({"name": "extra", "node": len(doc["nodes"]) - 1})

    _rewrite_document(path, add_variable)
    with pytest.raises(CorruptSavedModelError) as e:
        tf.saved_model.load(path)
    assert str(e.value).startswith(
        f"{os.path.join(path, 'variables', 'variables')}.index: the SavedModel's variables "
        f"checkpoint does not match its object graph")


def test_ill_typed_graph_is_refused(tmp_path):
    _, _, path = _save(tmp_path)

    def retype(doc):
        graph = doc["concrete_functions"][0]["graph"]["graph"]
        graph["params"][0]["type"]["dtype"] = "i32"  # x: f32 -> i32, its uses no longer type

    _rewrite_document(path, retype)
    with pytest.raises(CorruptSavedModelError, match=r"field concrete_functions\[0\]\.graph: "
                                                     r"the graph of concrete function #0 .* is "
                                                     r"invalid"):
        tf.saved_model.load(path)
