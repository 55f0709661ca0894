"""The checkpoint file format: atomic writes under fault injection, clear errors for truncated,
corrupted, foreign and future files, and no pickle anywhere."""
import json
import os
import pathlib
import pickle

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.state.checkpoint import format as fmt
from stagecraft.state.checkpoint.format import DataLossError


def first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


@pytest.fixture
def saved(tmp_path):
    """A directory with ckpt-1 (v == 1.0), recorded as the latest checkpoint."""
    v = tf.Variable([1.0, 2.0])
    ckpt = tf.train.Checkpoint(v=v)
    path = ckpt.save(str(tmp_path / "ckpt"))
    return tmp_path, ckpt, v, path


def restored_value(path):
    w = tf.Variable([0.0, 0.0])
    tf.train.Checkpoint(v=w).restore(path).expect_partial()
    return w.numpy().tolist()


# ------------------------------------------------------------------------- bundles
def test_write_and_read_bundle_round_trip(tmp_path):
    arrays = {"f": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False]),
              "i": np.array(-3, dtype=np.int64), "big": np.arange(3, dtype=">i4"),
              "empty": np.zeros((0, 2), np.float64)}
    fmt.write_bundle(str(tmp_path / "p"), {"any": ["json", 1]}, arrays)
    doc, back = fmt.read_bundle(str(tmp_path / "p"))
    assert doc == {"any": ["json", 1]}
    assert sorted(back) == sorted(arrays)
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype.newbyteorder("=") and back[k].shape == a.shape
        np.testing.assert_array_equal(back[k], a)
        assert back[k].flags.writeable


def test_index_is_documented_json(tmp_path):
    fmt.write_bundle(str(tmp_path / "p"), {}, {"x": np.ones(2, np.float32)})
    body = json.loads((tmp_path / "p.index").read_text())
    assert body["format"] == "stagecraft-checkpoint" and body["version"] == 1
    entry = body["content"]["tensors"]["x"]
    assert set(entry) == {"dtype", "shape", "offset", "length", "crc32"}
    assert entry == {**entry, "dtype": "float32", "shape": [2], "length": 8}
    data = (tmp_path / "p.data-00000-of-00001").read_bytes()
    assert data[:8] == b"SCKPDATA"
    assert data[entry["offset"]:entry["offset"] + 8] == np.ones(2, "<f4").tobytes()


def test_unsupported_dtype_is_rejected_and_nothing_written(tmp_path):
    with pytest.raises(TypeError, match="^Cannot checkpoint 's': dtype <U1 is not supported"):
        fmt.write_bundle(str(tmp_path / "p"), {}, {"s": np.array(["a"])})
    assert os.listdir(tmp_path) == []


def test_loading_never_unpickles(saved, monkeypatch):
    _, _, _, path = saved

    def forbidden(*args, **kwargs):
        raise AssertionError("pickle used while loading a checkpoint")

    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(np, "load", forbidden)
    assert restored_value(path) == [1.0, 2.0]
    tf.train.load_checkpoint(path).get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE")


def test_checkpoint_sources_do_not_mention_pickle():
    root = pathlib.Path(tf.__file__).parent / "checkpoint"
    for source in root.glob("*.py"):
        text = source.read_text()
        assert "import pickle" not in text and "allow_pickle" not in text, source


# ------------------------------------------------------------------------ fault injection
@pytest.mark.parametrize("step", ["index", "fsync"])
def test_failure_mid_save_keeps_previous_checkpoint(saved, monkeypatch, step):
    tmp_path, ckpt, v, path = saved
    v.assign([5.0, 6.0])
    real_replace = os.replace

    def failing_replace(src, dst):
        if dst.endswith(".index"):
            raise OSError("disk full (injected)")
        real_replace(src, dst)

    def failing_fsync(fd):
        raise OSError("I/O error (injected)")

    if step == "fsync":
        monkeypatch.setattr(os, "fsync", failing_fsync)
    else:
        monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="injected"):
        ckpt.save(str(tmp_path / "ckpt"))
    monkeypatch.undo()

    assert int(ckpt.save_counter.numpy()) == 1  # the failed save is not counted
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    assert restored_value(path) == [1.0, 2.0]
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert leftovers == []
    assert not fmt.bundle_exists(str(tmp_path / "ckpt-2"))
    assert ckpt.save(str(tmp_path / "ckpt")).endswith("ckpt-2")  # the next save succeeds
    assert restored_value(str(tmp_path / "ckpt-2")) == [5.0, 6.0]


def test_failure_while_serializing_writes_nothing(saved, monkeypatch):
    tmp_path, ckpt, _, path = saved
    before = sorted(os.listdir(tmp_path))

    def broken(*args, **kwargs):
        raise RuntimeError("serialization failed (injected)")

    monkeypatch.setattr(fmt, "_write_index", broken)
    with pytest.raises(RuntimeError, match="injected"):
        ckpt.save(str(tmp_path / "ckpt"))
    assert sorted(os.listdir(tmp_path)) == before
    assert restored_value(path) == [1.0, 2.0]


def test_overwrite_interrupted_before_the_index_keeps_the_old_version(saved, monkeypatch):
    tmp_path, ckpt, v, _ = saved
    prefix = str(tmp_path / "same")
    ckpt.write(prefix)
    v.assign([7.0, 8.0])
    real_replace = os.replace

    def no_index(src, dst):
        if dst.endswith(".index"):
            raise OSError("killed (injected)")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", no_index)
    with pytest.raises(OSError):
        ckpt.write(prefix)
    monkeypatch.undo()
    assert restored_value(prefix) == [1.0, 2.0]  # the old version, whole


# --------------------------------------------------------------------- damaged files
def test_truncated_data_file(saved):
    _, _, _, path = saved
    data = fmt.data_path(path)
    with open(data, "r+b") as fh:
        fh.truncate(os.path.getsize(data) - 3)
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info).startswith(f"Checkpoint data file '{data}' is truncated:")


def test_corrupted_data_file(saved):
    _, _, _, path = saved
    data = fmt.data_path(path)
    raw = bytearray(open(data, "rb").read())
    raw[-1] ^= 0xFF
    open(data, "wb").write(bytes(raw))
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info).startswith(f"Checkpoint data file '{data}' is corrupted (checksum "
                                       f"mismatch for tensor ")


def test_missing_data_file(saved):
    _, _, _, path = saved
    os.remove(fmt.data_path(path))
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info).startswith(f"Checkpoint data file '{fmt.data_path(path)}' is missing")


def test_truncated_index(saved):
    _, _, _, path = saved
    index = fmt.index_path(path)
    text = open(index, "rb").read()
    open(index, "wb").write(text[: len(text) // 2])
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info).startswith(f"Checkpoint index '{index}' is truncated or corrupted "
                                       f"(invalid JSON")


def test_empty_index(saved):
    _, _, _, path = saved
    open(fmt.index_path(path), "wb").close()
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info).startswith(f"Checkpoint index '{fmt.index_path(path)}' is empty "
                                       f"(truncated)")


def test_edited_index(saved):
    _, _, _, path = saved
    index = fmt.index_path(path)
    body = json.loads(open(index).read())
    key = next(iter(body["content"]["tensors"]))
    body["content"]["tensors"][key]["shape"] = [1, 2]
    open(index, "w").write(json.dumps(body))
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info) == (f"Checkpoint index '{index}' is corrupted (checksum mismatch): "
                                f"its contents were changed after it was written.")


def test_wrong_format_index(saved):
    _, _, _, path = saved
    index = fmt.index_path(path)
    open(index, "wb").write(b"\x00\x01TensorFlow sstable bytes")
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info).startswith(f"Checkpoint index '{index}' is not a stagecraft "
                                       f"checkpoint (wrong format: it is not JSON)")
    open(index, "w").write(json.dumps({"format": "other", "version": 1}))
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info) == (f"Checkpoint index '{index}' is not a stagecraft checkpoint "
                                f"(wrong format: 'other' instead of 'stagecraft-checkpoint').")


def test_future_version_index(saved):
    _, _, _, path = saved
    index = fmt.index_path(path)
    body = json.loads(open(index).read())
    body["version"] = 99
    open(index, "w").write(json.dumps(body))
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info).startswith(f"Checkpoint index '{index}' has format version 99, but "
                                       f"this stagecraft reads versions 1 to 1")


def test_wrong_format_data_file(saved):
    _, _, _, path = saved
    data = fmt.data_path(path)
    raw = bytearray(open(data, "rb").read())
    raw[:8] = b"NOTMAGIC"
    open(data, "wb").write(bytes(raw))
    with pytest.raises(DataLossError) as info:
        restored_value(path)
    assert first_line(info).startswith(f"Checkpoint data file '{data}' is not a stagecraft "
                                       f"checkpoint data file (wrong format")


def test_bundle_without_object_graph(tmp_path):
    fmt.write_bundle(str(tmp_path / "p"), {"other": 1}, {})
    with pytest.raises(DataLossError, match="has no object graph"):
        tf.train.Checkpoint().read(str(tmp_path / "p"))


_KILLED_MID_SAVE = """
import os, sys
import stagecraft as tf
from stagecraft.state.checkpoint import format as fmt
v = tf.Variable([1.0, 2.0])
ckpt = tf.train.Checkpoint(v=v)
ckpt.save(sys.argv[1])
v.assign([5.0, 6.0])
real = os.replace
def die_before_index(src, dst):
    if dst.endswith(".index"):
        os._exit(17)  # the process dies: no exception handler, no cleanup
    real(src, dst)
os.replace = die_before_index
ckpt.save(sys.argv[1])
"""


def test_process_killed_mid_save_leaves_previous_checkpoint(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "kill.py"
    script.write_text(_KILLED_MID_SAVE)
    prefix = str(tmp_path / "ckpt")
    proc = subprocess.run([sys.executable, str(script), prefix], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 17, proc.stderr
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-1"
    assert restored_value(prefix + "-1") == [1.0, 2.0]
    assert not fmt.bundle_exists(prefix + "-2")
