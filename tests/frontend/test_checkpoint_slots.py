"""Optimizer slot variables in checkpoints, with a minimal optimizer implementing the protocol
(``_checkpoint_slots`` + ``slots.slot_created``), independent of stagecraft.keras."""
import numpy as np
import pytest

import stagecraft as tf
from stagecraft.state.checkpoint import slots

SLOT_KEY = "model/kernel/.OPTIMIZER_SLOT/opt/m/.ATTRIBUTES/VARIABLE_VALUE"


class FakeOptimizer:
    """Momentum-like: one slot 'm' per variable, created on the first step."""

    _TF_MODULE_IGNORED_PROPERTIES = frozenset({"_slot_table"})  # slots are saved via the protocol

    def __init__(self):
        self.iterations = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._slot_table = {}

    def _checkpoint_slots(self):
        return list(self._slot_table.values())

    def step(self, var, grad):
        key = (id(var), "m")
        if key not in self._slot_table:
            slot = tf.Variable(tf.zeros_like(var), trainable=False)
            self._slot_table[key] = (var, "m", slot)
            slots.slot_created(self, var, "m", slot)
        slot = self._slot_table[key][2]
        slot.assign(0.9 * slot + grad)
        var.assign_sub(0.1 * slot)
        self.iterations.assign_add(1)


def trained():
    model = tf.Module()
    model.kernel = tf.Variable([1.0, 2.0])
    opt = FakeOptimizer()
    opt.step(model.kernel, tf.constant([1.0, 1.0]))
    opt.step(model.kernel, tf.constant([1.0, 1.0]))
    return model, opt


def test_slot_saved_under_variable_and_optimizer_paths(tmp_path):
    model, opt = trained()
    path = tf.train.Checkpoint(model=model, opt=opt).write(str(tmp_path / "c"))
    assert [k for k, _ in tf.train.list_variables(path)] == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "model/kernel/.ATTRIBUTES/VARIABLE_VALUE", SLOT_KEY,
        "opt/iterations/.ATTRIBUTES/VARIABLE_VALUE"]
    np.testing.assert_allclose(tf.train.load_checkpoint(path).get_tensor(SLOT_KEY), [1.9, 1.9])


def test_slot_not_saved_without_its_variable(tmp_path):
    _, opt = trained()
    path = tf.train.Checkpoint(opt=opt).write(str(tmp_path / "c"))
    assert [k for k, _ in tf.train.list_variables(path)] == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "opt/iterations/.ATTRIBUTES/VARIABLE_VALUE"]


def test_restore_into_existing_slots(tmp_path):
    model, opt = trained()
    path = tf.train.Checkpoint(model=model, opt=opt).write(str(tmp_path / "c"))
    model2, opt2 = tf.Module(), FakeOptimizer()
    model2.kernel = tf.Variable([0.0, 0.0])
    opt2.step(model2.kernel, tf.constant([0.0, 0.0]))  # slots exist before the restore
    tf.train.Checkpoint(model=model2, opt=opt2).read(path).assert_consumed()
    np.testing.assert_allclose(opt2._slot_table[(id(model2.kernel), "m")][2].numpy(), [1.9, 1.9])
    assert int(opt2.iterations.numpy()) == 2


def test_slot_restore_deferred_until_slot_is_created(tmp_path):
    model, opt = trained()
    path = tf.train.Checkpoint(model=model, opt=opt).write(str(tmp_path / "c"))
    model2, opt2 = tf.Module(), FakeOptimizer()
    model2.kernel = tf.Variable([0.0, 0.0])
    status = tf.train.Checkpoint(model=model2, opt=opt2).read(path)
    assert slots.pending_count(opt2) == 1
    with pytest.raises(AssertionError, match=r"^Unresolved object in checkpoint \(root\)\.opt's "
                                             r"state 'm' for \(root\)\.model\.kernel"):
        status.assert_consumed()
    status.assert_existing_objects_matched()
    opt2.step(model2.kernel, tf.constant([0.0, 0.0]))  # creates the slot: restored, then used
    assert slots.pending_count(opt2) == 0
    np.testing.assert_allclose(opt2._slot_table[(id(model2.kernel), "m")][2].numpy(),
                               [0.9 * 1.9, 0.9 * 1.9])
    status.assert_consumed()


def test_slot_restore_waits_for_variable_and_optimizer_created_later(tmp_path):
    model, opt = trained()
    path = tf.train.Checkpoint(model=model, opt=opt).write(str(tmp_path / "c"))
    root = tf.train.Checkpoint()
    status = root.read(path)
    model2 = tf.Module()
    root.model = model2
    model2.kernel = tf.Variable([0.0, 0.0])
    opt2 = FakeOptimizer()
    root.opt = opt2
    assert slots.pending_count(opt2) == 1
    opt2.step(model2.kernel, tf.constant([0.0, 0.0]))
    status.assert_consumed()
    np.testing.assert_allclose(model2.kernel.numpy(), [0.539, 1.539], rtol=1e-6)


def test_slot_shape_mismatch_raises_when_slot_is_created(tmp_path):
    model, opt = trained()
    path = tf.train.Checkpoint(model=model, opt=opt).write(str(tmp_path / "c"))
    model2, opt2 = tf.Module(), FakeOptimizer()
    model2.kernel = tf.Variable([0.0, 0.0])
    tf.train.Checkpoint(model=model2, opt=opt2).read(path).expect_partial()
    var, slot = model2.kernel, tf.Variable([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"^Received incompatible tensor with shape \(2,\) when "
                                         r"attempting to restore variable with shape \(3,\)"):
        slots.slot_created(opt2, var, "m", slot)
