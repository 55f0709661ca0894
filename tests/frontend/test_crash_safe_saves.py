"""Crash-safe overwrites (issue 15, item 3): a process killed at any write, fsync, rename or
delete of ``Checkpoint.write`` over an existing prefix, ``Checkpoint.save``,
``CheckpointManager.save`` or ``saved_model.save`` over an existing SavedModel leaves the path
restoring to exactly the old or the new values, and the next save leaves no temporary file and
no data file that no index names.

The kill is real: the save runs in a forked child whose k-th call of one of the instrumented
``os`` functions calls ``os._exit`` (no exception handler, no cleanup runs), for k = 1, 2, ...
until the save completes without reaching k.
"""
import os
import re
import time

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ir import durable
from stagecraft.state.checkpoint import format as fmt

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

OLD, NEW = [1.0, 2.0], [5.0, 6.0]
# Every syscall a save makes on files: creating, writing-out (fsync), renaming, exchanging,
# deleting. A kill "at" one of them happens just before it.
_POINTS = ("open", "fsync", "replace", "rename", "remove", "unlink", "rmdir", "mkdir")


def _run_killed(action, k: int) -> bool:
    """Runs ``action`` in a forked child killed at the k-th instrumented call; True when the
    child was killed, False when the action finished first."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            count = [0]

            def instrument(owner, name):
                real = getattr(owner, name)

                def wrapper(*args, **kwargs):
                    count[0] += 1
                    if count[0] == k:
                        os._exit(77)
                    return real(*args, **kwargs)
                setattr(owner, name, wrapper)

            for name in _POINTS:
                instrument(os, name)
            instrument(durable, "exchange")
            action()
        except BaseException:
            code = 1
        os._exit(code)
    deadline = time.monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(f"the save killed at point {k} hung")
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 77), f"the save failed (exit {code}) instead of being killed at {k}"
    return code == 77


def _values(path) -> list:
    w = tf.Variable([0.0, 0.0])
    tf.train.Checkpoint(v=w).read(path).expect_partial()
    return w.numpy().tolist()


def _leftovers(directory) -> list:
    """Temporary files/directories, and data files no index of the directory names."""
    names = os.listdir(directory)
    named = set()
    for n in names:
        if n.endswith(fmt.INDEX_SUFFIX):
            named.add(fmt.read_index(os.path.join(directory, n[:-len(fmt.INDEX_SUFFIX)]))
                      ["data_file"])
    return sorted(n for n in names if n.startswith(".") or
                  (re.search(r"\.data-", n) and n not in named))


def _every_kill(make_old, save_new, check, next_save, tmp_path) -> int:
    """For k = 1, 2, ...: a fresh directory holding the old version, the new save killed at
    point k, ``check`` of what the path holds, ``next_save`` and no leftovers. Returns how many
    kill points there were."""
    k = 0
    while True:
        k += 1
        d = tmp_path / f"k{k}"
        d.mkdir()
        make_old(str(d))
        if not _run_killed(lambda: save_new(str(d)), k):
            check(str(d), {"new"})
            return k - 1
        seen = check(str(d), {"old", "new"})
        next_save(str(d))
        assert _leftovers(str(d)) == [], f"kill at point {k} ({seen}): leftovers"
        assert k < 500, "too many kill points: the loop does not terminate"


def _state(values: list) -> str:
    assert values in (OLD, NEW), f"restored {values}, neither the old nor the new values"
    return "old" if values == OLD else "new"


def test_checkpoint_write_overwrite_killed_anywhere(tmp_path):
    v = tf.Variable(OLD)
    ckpt = tf.train.Checkpoint(v=v)

    def make_old(d):
        v.assign(OLD)
        ckpt.write(os.path.join(d, "p"))

    def save_new(d):
        v.assign(NEW)
        ckpt.write(os.path.join(d, "p"))

    def check(d, allowed):
        state = _state(_values(os.path.join(d, "p")))
        assert state in allowed
        return state

    def next_save(d):
        v.assign(NEW)
        ckpt.write(os.path.join(d, "p"))
        assert _values(os.path.join(d, "p")) == NEW

    assert _every_kill(make_old, save_new, check, next_save, tmp_path) >= 6


def test_checkpoint_save_killed_anywhere(tmp_path):
    v = tf.Variable(OLD)
    ckpt = tf.train.Checkpoint(v=v)

    def make_old(d):
        v.assign(OLD)
        ckpt.save_counter.assign(0)
        ckpt.save(os.path.join(d, "ckpt"))

    def save_new(d):
        v.assign(NEW)
        ckpt.save(os.path.join(d, "ckpt"))

    def check(d, allowed):
        state = _state(_values(tf.train.latest_checkpoint(d)))
        assert state in allowed
        return state

    def next_save(d):
        v.assign(NEW)
        path = ckpt.save(os.path.join(d, "ckpt"))  # ckpt-2 again: this process's counter is 1
        assert tf.train.latest_checkpoint(d) == path and _values(path) == NEW
        ckpt.save_counter.assign(1)

    assert _every_kill(make_old, save_new, check, next_save, tmp_path) >= 6


def test_checkpoint_manager_save_killed_anywhere(tmp_path):
    v = tf.Variable(OLD)
    ckpt = tf.train.Checkpoint(v=v)

    def make_old(d):
        v.assign(OLD)
        ckpt.save_counter.assign(0)
        tf.train.CheckpointManager(ckpt, d, max_to_keep=1).save()

    def save_new(d):
        v.assign(NEW)
        tf.train.CheckpointManager(ckpt, d, max_to_keep=1).save()  # deletes ckpt-1

    def check(d, allowed):
        latest = tf.train.CheckpointManager(ckpt, d, max_to_keep=1).latest_checkpoint
        state = _state(_values(latest))
        assert state in allowed
        return state

    def next_save(d):
        v.assign(NEW)
        manager = tf.train.CheckpointManager(ckpt, d, max_to_keep=1)
        path = manager.save()
        assert _values(path) == NEW and manager.checkpoints == [path]
        ckpt.save_counter.assign(1)

    assert _every_kill(make_old, save_new, check, next_save, tmp_path) >= 6


class _Scaled(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(OLD)

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
    def __call__(self, x):
        return x * self.w


def test_saved_model_overwrite_killed_anywhere(tmp_path):
    model = _Scaled()
    model(tf.constant([1.0, 1.0]))

    def make_old(d):
        model.w.assign(OLD)
        tf.saved_model.save(model, os.path.join(d, "m"))

    def save_new(d):
        model.w.assign(NEW)
        tf.saved_model.save(model, os.path.join(d, "m"))

    def check(d, allowed):
        loaded = tf.saved_model.load(os.path.join(d, "m"))
        state = _state(loaded.w.numpy().tolist())
        assert loaded(tf.constant([1.0, 1.0])).numpy().tolist() == \
            (OLD if state == "old" else NEW)
        assert state in allowed
        return state

    def next_save(d):
        model.w.assign(NEW)
        tf.saved_model.save(model, os.path.join(d, "m"))
        assert tf.saved_model.load(os.path.join(d, "m")).w.numpy().tolist() == NEW

    assert _every_kill(make_old, save_new, check, next_save, tmp_path) >= 6


@pytest.mark.parametrize("when", ["read_json", "read_arrays", "read_variables"])
def test_a_load_during_an_overwrite_gives_one_whole_version(tmp_path, monkeypatch, when):
    """A save over the directory in the middle of a load (after its fingerprint check, before
    the rest is read) makes the load start again on the new version: never a fingerprint
    error, never old functions with new values."""
    from stagecraft.state.saved_model import format as sm_format, loading
    model = _Scaled()
    model(tf.constant([1.0, 1.0]))
    path = str(tmp_path / "m")
    model.w.assign(OLD)
    tf.saved_model.save(model, path)
    target = loading if when == "read_variables" else sm_format
    original = getattr(target, when)
    overwrites = []

    def overwriting(*args, **kwargs):
        if not overwrites:
            overwrites.append(1)
            model.w.assign(NEW)
            tf.saved_model.save(model, path)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, when, overwriting)
    loaded = tf.saved_model.load(path)
    assert overwrites and loaded.w.numpy().tolist() == NEW
    assert loaded(tf.constant([1.0, 1.0])).numpy().tolist() == NEW


def test_a_load_that_keeps_being_overwritten_says_so(tmp_path, monkeypatch):
    from stagecraft.state.saved_model import format as sm_format
    model = _Scaled()
    model(tf.constant([1.0, 1.0]))
    path = str(tmp_path / "m")
    tf.saved_model.save(model, path)
    original = sm_format.read_json

    def always_overwriting(*args, **kwargs):
        tf.saved_model.save(model, path)
        return original(*args, **kwargs)

    monkeypatch.setattr(sm_format, "read_json", always_overwriting)
    with pytest.raises(sm_format.CorruptSavedModelError) as e:
        tf.saved_model.load(path)
    assert str(e.value) == (f"{path}: the SavedModel was replaced 5 times while it was being "
                            f"loaded; load it when no process is saving to it.")


def test_concurrent_writers_of_one_prefix_never_mix(tmp_path):
    """Two processes overwrite one prefix 30 times each with different values: every read in
    between sees one writer's whole checkpoint."""
    prefix = str(tmp_path / "p")
    fmt.write_bundle(prefix, {"who": -1}, {"x": np.full(1000, -1.0)})
    pids = []
    for who in (0, 1):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                for i in range(30):
                    fmt.write_bundle(prefix, {"who": who, "i": i},
                                     {"x": np.full(1000, who * 100.0 + i)})
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    reads, running = 0, set(pids)
    while running:
        doc, arrays = fmt.read_bundle(prefix)
        expected = -1.0 if doc["who"] == -1 else doc["who"] * 100.0 + doc["i"]
        assert np.all(arrays["x"] == expected), doc
        reads += 1
        for p in list(running):
            done, status = os.waitpid(p, os.WNOHANG)
            if done:
                running.discard(p)
                assert os.waitstatus_to_exitcode(status) == 0, "a writer failed"
    assert reads > 0
    fmt.write_bundle(prefix, {"who": "last"}, {})
    assert _leftovers(str(tmp_path)) == []


@pytest.mark.parametrize("use_manager", [False, True])
def test_save_whose_record_fails_leaves_no_unrecorded_checkpoint(tmp_path, monkeypatch,
                                                                 use_manager):
    v = tf.Variable(OLD)
    ckpt = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=3)

    def save():
        return manager.save() if use_manager else ckpt.save(str(tmp_path / "ckpt"))

    first = save()
    real_replace = os.replace

    def disk_full(src, dst):
        if os.path.basename(dst) == "checkpoint":
            raise OSError(28, "No space left on device (injected)")
        real_replace(src, dst)

    v.assign(NEW)
    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError, match="injected"):
        save()
    monkeypatch.undo()
    assert int(ckpt.save_counter.numpy()) == 1  # not counted
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-1.data-00000-of-00001",
                                            "ckpt-1.index"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == first
    second = save()
    assert second.endswith("ckpt-2") and _values(second) == NEW
