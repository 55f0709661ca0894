"""``Model.save("x.keras")`` and ``keras.models.load_model``: round trips of Sequential and
Functional models (predictions identical, compile settings restored), and crafted files that
must give a clear ``ValueError`` naming the file, never run code or allocate without bound."""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

import stagecraft as tf


def trained_sequential():
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                                 tf.keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    model.fit(x, (x[:, 0] > 0).astype(np.int64), epochs=2, verbose=0)
    return model, x


def test_a_sequential_model_round_trips_with_its_compile_settings(tmp_path):
    model, x = trained_sequential()
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    assert [l.get_config() for l in again.layers] == [l.get_config() for l in model.layers]
    assert type(again.optimizer).__name__ == "Adam"
    assert float(again.optimizer.learning_rate) == pytest.approx(0.01)
    logs = again.evaluate(x, (x[:, 0] > 0).astype(np.int64), verbose=0, return_dict=True)
    assert sorted(logs) == ["accuracy", "loss"]
    assert getattr(tf.keras.models.load_model(path, compile=False), "_compiled", None) is None


def test_a_functional_model_with_shared_layers_round_trips(tmp_path):
    a, b = tf.keras.Input(shape=(2,), name="a"), tf.keras.Input(shape=(3,), name="b")
    shared = tf.keras.layers.Dense(4, name="shared")
    joined = tf.keras.layers.Concatenate(name="join")([shared(a), tf.keras.layers.Dense(4)(b)])
    model = tf.keras.Model([a, b], {"joined": joined, "again": shared(a)})
    path = str(tmp_path / "f.keras")
    model.save(path)
    again = tf.keras.models.load_model(path)
    x = [np.ones((2, 2), np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)]
    for key in ("joined", "again"):
        np.testing.assert_array_equal(again(x)[key].numpy(), model(x)[key].numpy())
    assert len(again.trainable_variables) == 4  # the shared layer is still shared


class Scale(tf.keras.layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def test_custom_layers_need_custom_objects(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(2,)), Scale(3.0)])
    path = str(tmp_path / "c.keras")
    model.save(path)
    with pytest.raises(ValueError) as e:
        tf.keras.models.load_model(path)
    assert str(e.value).startswith(f"{path}: not a loadable .keras file: Unknown Keras class "
                                   f"'Scale'")
    again = tf.keras.models.load_model(path, custom_objects={"Scale": Scale})
    x = np.ones((1, 2), np.float32)
    np.testing.assert_array_equal(again(x).numpy(), model(x).numpy())


def test_what_cannot_be_saved_says_why(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(2,)),
                                 tf.keras.layers.Lambda(lambda t: t * 2.0)])
    with pytest.raises(ValueError, match="wraps a Python function"):
        model.save(str(tmp_path / "l.keras"))
    with pytest.raises(ValueError, match="must end in .keras"):
        model.save(str(tmp_path / "l.h5"))
    with pytest.raises(ValueError, match="has not been built yet"):
        tf.keras.Sequential([tf.keras.layers.Dense(2)]).save(str(tmp_path / "u.keras"))


# ------------------------------------------------------------------ crafted files

def _saved(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
    path = tmp_path / "ok.keras"
    model.save(str(path))
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _write(tmp_path, members):
    path = tmp_path / "crafted.keras"
    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    path.write_bytes(blob.getvalue())
    return str(path)


def _with_config(members, edit):
    config = json.loads(members["config.json"])
    edit(config)
    return {**members, "config.json": json.dumps(config)}


@pytest.mark.parametrize("case,expected", [
    ("unknown class", "Unknown Keras class 'os.system'"),
    ("huge layer", "more weights than the file holds"),
    ("extra member", "holds members"),
    ("wrong metadata", "metadata.json is"),
    ("weight shape", "has shape [3, 5]"),
    ("bad reference", "invalid reference"),
    ("not a zip", "File is not a zip file"),
])
def test_crafted_files_are_refused_with_the_file_named(tmp_path, case, expected):
    members = _saved(tmp_path)
    if case == "unknown class":
        members = _with_config(members, lambda c: c["model"]["config"]["layers"][0].update(
            class_name="os.system"))
    elif case == "huge layer":
        members = _with_config(members, lambda c: c["model"]["config"]["layers"][0]["config"]
                               .update(units=10 ** 9))
    elif case == "extra member":
        members["payload.py"] = b"import os"
    elif case == "wrong metadata":
        members["metadata.json"] = b'{"format": "other", "version": 1}'
    elif case == "weight shape":
        arrays = {"w0": np.zeros((3, 5), np.float32), "w1": np.zeros(2, np.float32)}
        blob = io.BytesIO()
        np.savez(blob, **arrays)
        members["model.weights.npz"] = blob.getvalue()
    elif case == "bad reference":
        x = tf.keras.Input(shape=(2,))
        tf.keras.Model(x, tf.keras.layers.Dense(1)(x)).save(str(tmp_path / "fn.keras"))
        with zipfile.ZipFile(tmp_path / "fn.keras") as z:
            members = {n: z.read(n) for n in z.namelist()}
        members = _with_config(members, lambda c: c["model"]["config"].update(
            outputs={"node": 7, "index": 0}))
    if case == "not a zip":
        path = str(tmp_path / "junk.keras")
        open(path, "wb").write(b"not a zip at all")
    else:
        path = _write(tmp_path, members)
    with pytest.raises(ValueError) as e:
        tf.keras.models.load_model(path)
    first = str(e.value).splitlines()[0]
    assert first.startswith(f"{path}: not a loadable .keras file: ") and expected in first
