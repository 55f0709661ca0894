"""tf.train.Checkpoint semantics (semantics.md §4.1-4.4, checklist 91-100)."""
import gc
import logging
import os

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.state.checkpoint import graph as graph_lib
from stagecraft.errors import NotFoundError


class Layer(tf.Module):
    def __init__(self, value=(1.0, 2.0)):
        super().__init__()
        self.kernel = tf.Variable(list(value))


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.layer = Layer()
        self.scale = tf.Variable(3.0)


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def keys(path):
    return [k for k, _ in tf.train.list_variables(path)]


# ------------------------------------------------------------------------ save / write (91, 92)
def test_save_twice_numbers_files_and_updates_metadata(cwd):  # 91
    ckpt = tf.train.Checkpoint(step=tf.Variable(1))
    assert ckpt.save("d/ckpt") == "d/ckpt-1"
    assert ckpt.save("d/ckpt") == "d/ckpt-2"
    assert int(ckpt.save_counter.numpy()) == 2
    assert ckpt.save_counter.dtype == tf.int64 and not ckpt.save_counter.trainable
    assert tf.train.latest_checkpoint("d") == os.path.join("d", "ckpt-2")
    assert sorted(os.listdir("d")) == ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index",
                                       "ckpt-2.data-00000-of-00001", "ckpt-2.index"]
    assert open("d/checkpoint").read().splitlines() == [
        'model_checkpoint_path: "ckpt-2"', 'all_model_checkpoint_paths: "ckpt-1"',
        'all_model_checkpoint_paths: "ckpt-2"']


def test_write_exactly_at_prefix_without_counter_or_metadata(cwd):  # 92
    ckpt = tf.train.Checkpoint(step=tf.Variable(1))
    assert ckpt.write("p") == "p"
    assert sorted(os.listdir(".")) == ["p.data-00000-of-00001", "p.index"]
    assert "save_counter" not in ckpt._deps
    assert keys("p") == ["_CHECKPOINTABLE_OBJECT_GRAPH", "step/.ATTRIBUTES/VARIABLE_VALUE"]


def test_latest_checkpoint_none_without_metadata(tmp_path):
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert tf.train.latest_checkpoint(str(tmp_path / "absent")) is None


def test_save_and_write_inside_function_raise(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))

    @tf.function
    def save():
        ckpt.save(str(tmp_path / "c"))
        return 0

    with pytest.raises(NotImplementedError, match="Use Checkpoint.write"):
        save()

    @tf.function
    def write():
        ckpt.write(str(tmp_path / "c"))
        return 0

    with pytest.raises(NotImplementedError, match="inside a tf.function"):
        write()


# ------------------------------------------------------------------------- keys (96, 97)
def test_keys_of_model_with_alias_and_step(tmp_path):  # 96, 97 (the [v] example)
    m = tf.Module()
    m.layer = tf.Module()
    m.layer.kernel = tf.Variable([1.0, 2.0])
    m.alias = m.layer
    ckpt = tf.train.Checkpoint(model=m, step=tf.Variable(0))
    path = ckpt.save(str(tmp_path / "ckpt"))
    assert keys(path) == ["_CHECKPOINTABLE_OBJECT_GRAPH",
                          "model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                          "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
                          "step/.ATTRIBUTES/VARIABLE_VALUE"]


def test_shared_variable_stored_once_under_shortest_path(tmp_path):  # 97
    v = tf.Variable(5.0)
    m = tf.Module()
    m.deep = tf.Module()
    m.deep.inner = tf.Module()
    m.deep.inner.v = v
    m.short = v  # added later but shorter: breadth-first finds it first
    m.b = tf.Module()
    m.b.v = v
    path = tf.train.Checkpoint(model=m).write(str(tmp_path / "c"))
    assert keys(path) == ["_CHECKPOINTABLE_OBJECT_GRAPH", "model/short/.ATTRIBUTES/VARIABLE_VALUE"]


def test_equal_length_paths_pick_the_first_added(tmp_path):
    v = tf.Variable(5.0)
    m = tf.Module()
    m.zz = v
    m.aa = v
    path = tf.train.Checkpoint(model=m).write(str(tmp_path / "c"))
    assert keys(path)[1] == "model/zz/.ATTRIBUTES/VARIABLE_VALUE"


def test_key_escaping(tmp_path):
    m = tf.Module()
    m.layers = {"a.b/c": tf.Variable(1.0)}
    path = tf.train.Checkpoint(model=m).write(str(tmp_path / "c"))
    assert keys(path)[1] == "model/layers/a..b.Sc/.ATTRIBUTES/VARIABLE_VALUE"


def test_non_trackable_attributes_are_not_children():
    m = tf.Module()
    m.n, m.s, m.t, m.f = 3, "text", tf.constant(1.0), (lambda: 1)
    m.fn = tf.function(lambda x: x)
    m.v = tf.Variable(1.0)
    assert [name for name, _ in graph_lib.children(m)] == ["v"]


def test_private_attributes_are_tracked(tmp_path):
    m = tf.Module()
    m._hidden = tf.Variable(1.0)
    path = tf.train.Checkpoint(model=m).write(str(tmp_path / "c"))
    assert keys(path)[1] == "model/_hidden/.ATTRIBUTES/VARIABLE_VALUE"


def test_walk_gives_nodes_with_paths():
    m = Model()
    nodes = graph_lib.walk(m, [("step", tf.Variable(1))])
    assert [n.path for n in nodes] == [(), ("layer",), ("scale",), ("step",), ("layer", "kernel")]
    assert nodes[0].children == [("layer", 1), ("scale", 2), ("step", 3)]


def test_checkpoint_rejects_non_trackable_kwarg():
    with pytest.raises(ValueError, match=r"^Checkpoint: the value of x= is 3 \(int\), which is "
                                         r"not trackable"):
        tf.train.Checkpoint(x=3)


def test_checkpoint_root_conflicting_kwarg():
    m = Model()
    with pytest.raises(ValueError, match="root already has a child 'scale'"):
        tf.train.Checkpoint(root=m, scale=tf.Variable(1.0))
    tf.train.Checkpoint(root=m, scale=m.scale)  # the same object is no conflict


def test_checkpoint_root_children_are_top_level_edges(tmp_path):
    m = Model()
    path = tf.train.Checkpoint(root=m, step=tf.Variable(1)).save(str(tmp_path / "c"))
    assert keys(path) == ["_CHECKPOINTABLE_OBJECT_GRAPH",
                          "layer/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                          "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
                          "scale/.ATTRIBUTES/VARIABLE_VALUE", "step/.ATTRIBUTES/VARIABLE_VALUE"]
    fresh = Model()
    fresh.scale.assign(0.0)
    tf.train.Checkpoint(root=fresh).read(path).expect_partial()
    assert float(fresh.scale.numpy()) == 3.0


def test_attributes_set_on_checkpoint_later_are_tracked(tmp_path):
    ckpt = tf.train.Checkpoint()
    ckpt.v = tf.Variable(2.0)
    ckpt.note = "not saved"
    path = ckpt.write(str(tmp_path / "c"))
    assert keys(path)[1:] == ["v/.ATTRIBUTES/VARIABLE_VALUE"]
    assert ckpt.note == "not saved"


# --------------------------------------------------------------------- restore (93, 95, 98, 99)
def test_restore_into_new_objects(tmp_path):  # 93
    src = Model()
    src.layer.kernel.assign([7.0, 8.0])
    path = tf.train.Checkpoint(model=src).save(str(tmp_path / "c"))
    dst = Model()
    status = tf.train.Checkpoint(model=dst).restore(path)
    assert dst.layer.kernel.numpy().tolist() == [7.0, 8.0]
    assert status.assert_consumed() is status
    status.assert_existing_objects_matched().assert_nontrivial_match()


def test_restore_subset(tmp_path):  # 95
    src = tf.Module()
    src.l1, src.l2 = Layer((1.0, 1.0)), Layer((2.0, 2.0))
    path = tf.train.Checkpoint(model=src).save(str(tmp_path / "c"))
    dst = tf.Module()
    dst.l1 = Layer((0.0, 0.0))
    status = tf.train.Checkpoint(model=dst).restore(path)
    assert dst.l1.kernel.numpy().tolist() == [1.0, 1.0]
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match=r"^Unresolved object in checkpoint "
                                             r"\(root\)\.model\.l2\.kernel"):
        status.assert_consumed()
    status.expect_partial()


def test_python_variable_without_checkpoint_value_fails_both_asserts(tmp_path):
    path = tf.train.Checkpoint(model=Layer()).write(str(tmp_path / "c"))
    dst = Layer()
    dst.extra = tf.Variable(0.0)
    status = tf.train.Checkpoint(model=dst).read(path)
    for check in (status.assert_consumed, status.assert_existing_objects_matched):
        with pytest.raises(AssertionError, match="^Some Python objects were not bound"):
            check()


def test_restore_none_is_a_no_op_status():  # 98
    v = tf.Variable(1.0)
    status = tf.train.Checkpoint(v=v).restore(None)
    assert float(v.numpy()) == 1.0
    assert status.expect_partial() is status
    status.initialize_or_restore()
    for check in (status.assert_consumed, status.assert_existing_objects_matched,
                  status.assert_nontrivial_match):
        with pytest.raises(AssertionError, match=r"^No checkpoint specified \(save_path=None\)"):
            check()


def test_restore_missing_prefix_hints_at_suffix(cwd):  # 99
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    with pytest.raises(NotFoundError, match=r"^Could not find a checkpoint or SavedModel at "
                                            r"'missing-prefix'"):
        ckpt.restore("missing-prefix")
    ckpt.save("d/ckpt")
    ckpt.save("d/ckpt")
    with pytest.raises(NotFoundError, match=r"missing the '-<N>' suffix .* did you mean "
                                            r"'d/ckpt-2'"):
        ckpt.restore("d/ckpt")


def test_restore_saved_model_directory(tmp_path):
    src = Model()
    src.scale.assign(9.0)
    os.makedirs(tmp_path / "export" / "variables")
    tf.train.Checkpoint(root=src).write(str(tmp_path / "export" / "variables" / "variables"))
    dst = Model()
    tf.train.Checkpoint(root=dst).restore(str(tmp_path / "export")).expect_partial()
    assert float(dst.scale.numpy()) == 9.0


def test_read_versus_restore_and_save_counter(tmp_path):  # §4.4 last bullet
    written = tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "w"))
    status = tf.train.Checkpoint(v=tf.Variable(0.0)).restore(written)
    with pytest.raises(AssertionError, match="^Some Python objects were not bound"):
        status.assert_consumed()  # restore() made a save_counter the checkpoint lacks
    tf.train.Checkpoint(v=tf.Variable(0.0)).read(written).assert_consumed()

    saver = tf.train.Checkpoint(v=tf.Variable(1.0))
    saver.save(str(tmp_path / "s"))
    path = saver.write(str(tmp_path / "w2"))
    status = tf.train.Checkpoint(v=tf.Variable(0.0)).read(path)
    with pytest.raises(AssertionError, match=r"\(root\)\.save_counter"):
        status.assert_consumed()
    status.expect_partial()
    restored = tf.train.Checkpoint(v=tf.Variable(0.0))
    restored.restore(path).assert_consumed()
    assert int(restored.save_counter.numpy()) == 1


def test_restored_save_counter_continues_numbering(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    ckpt.save(str(tmp_path / "c"))
    path = ckpt.save(str(tmp_path / "c"))
    again = tf.train.Checkpoint(v=tf.Variable(0.0))
    again.restore(path)
    assert again.save(str(tmp_path / "c")).endswith("c-3")


def test_assert_nontrivial_match(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "c"))
    status = tf.train.Checkpoint(other=tf.Variable(0.0)).read(path).expect_partial()
    with pytest.raises(AssertionError, match="^Nothing except the root object matched"):
        status.assert_nontrivial_match()


# ------------------------------------------------------------- incompatible values (bad input)
def test_shape_mismatch_names_key_and_path_and_overwrites_nothing(tmp_path):
    src = tf.Module()
    src.a, src.b = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    dst = tf.Module()
    dst.a, dst.b = tf.Variable([0.0, 0.0]), tf.Variable([0.0, 0.0])
    with pytest.raises(ValueError) as info:
        tf.train.Checkpoint(model=dst).read(path)
    first = str(info.value).splitlines()[0]
    assert first.startswith("Received incompatible tensor with shape () when attempting to "
                            "restore variable with shape (2,)")
    assert "'model/b/.ATTRIBUTES/VARIABLE_VALUE'" in first and "(root).model.b" in first
    assert dst.a.numpy().tolist() == [0.0, 0.0]  # validated before anything was assigned


def test_dtype_mismatch(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable([1, 2])).write(str(tmp_path / "c"))
    with pytest.raises(ValueError, match=r"^Received incompatible tensor with dtype int32 when "
                                         r"attempting to restore variable with dtype float32"):
        tf.train.Checkpoint(v=tf.Variable([0.0, 0.0])).read(path)


def test_no_warning_after_a_failed_restore(tmp_path, caplog):
    path = tf.train.Checkpoint(v=tf.Variable([1, 2])).write(str(tmp_path / "c"))
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        with pytest.raises(ValueError):
            tf.train.Checkpoint(v=tf.Variable(0)).read(path)
        gc.collect()
    assert not caplog.records


@pytest.mark.parametrize("dtype,value", [
    (tf.bool, True), (tf.bool, [True, False]), (tf.int32, 7), (tf.int32, [[1, 2], [3, 4]]),
    (tf.int64, 2**40), (tf.int64, [1, -2]), (tf.float32, 1.5), (tf.float32, [0.5, 2.0]),
    (tf.float64, 0.1), (tf.float64, [[0.1, -2.5]])])
def test_every_dtype_round_trips(tmp_path, dtype, value):
    v = tf.Variable(value, dtype=dtype)
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "c"))
    w = tf.Variable(tf.zeros_like(v), dtype=dtype)
    tf.train.Checkpoint(v=w).read(path).assert_consumed()
    assert w.dtype == dtype
    np.testing.assert_array_equal(w.numpy(), v.numpy())
    got = tf.train.load_checkpoint(path).get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE")
    assert got.dtype == dtype.np
    np.testing.assert_array_equal(got, v.numpy())


# ------------------------------------------------------------------ deferred restoration (94)
def test_deferred_restore_on_attribute_assignment(tmp_path):  # 94, the [v] example
    layer = tf.Module()
    layer.kernel = tf.Variable([1, 2])
    holder = tf.Module()
    holder.layer = layer
    path = tf.train.Checkpoint(model=holder).save(str(tmp_path / "c"))

    fresh = tf.Module()
    status = tf.train.Checkpoint(model=fresh).restore(path)
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="Unresolved object"):
        status.assert_consumed()
    new_layer = tf.Module()
    fresh.layer = new_layer
    new_layer.kernel = tf.Variable([0, 0])
    assert new_layer.kernel.numpy().tolist() == [1, 2]
    status.assert_consumed()  # passes once the deferred objects exist


def test_deferred_restore_of_a_whole_subtree(tmp_path):
    path = tf.train.Checkpoint(model=Model()).save(str(tmp_path / "c"))
    holder = tf.Module()
    tf.train.Checkpoint(model=holder).restore(path)
    sub = Layer((0.0, 0.0))  # built before it is attached
    holder.layer = sub
    assert sub.kernel.numpy().tolist() == [1.0, 2.0]


def test_deferred_restore_into_nested_checkpoints(tmp_path):  # §4.3 example
    src = tf.train.Checkpoint(net=tf.train.Checkpoint(l1=tf.train.Checkpoint(
        bias=tf.Variable([1.0]), kernel=tf.Variable([[2.0]]))))
    path = src.save(str(tmp_path / "c"))
    fake_layer = tf.train.Checkpoint(bias=tf.Variable([0.0]))
    status = tf.train.Checkpoint(net=tf.train.Checkpoint(l1=fake_layer)).restore(path)
    assert fake_layer.bias.numpy().tolist() == [1.0]
    fake_layer.kernel = tf.Variable([[0.0]])
    assert fake_layer.kernel.numpy().tolist() == [[2.0]]
    status.assert_consumed()


def test_deferred_mismatch_raises_at_assignment_and_keeps_attribute_unset(tmp_path):
    src = tf.Module()
    src.w = tf.Variable([1.0, 2.0])
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    dst = tf.Module()
    tf.train.Checkpoint(model=dst).read(path).expect_partial()
    with pytest.raises(ValueError, match=r"^Received incompatible tensor with shape \(2,\)"):
        dst.w = tf.Variable(0.0)
    assert not hasattr(dst, "w")


def test_non_trackable_value_keeps_the_restore_pending(tmp_path):
    src = tf.Module()
    src.w = tf.Variable(1.0)
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    dst = tf.Module()
    tf.train.Checkpoint(model=dst).read(path)
    dst.w = None  # a placeholder, as in `self.w = None` before building
    dst.w = tf.Variable(0.0)
    assert float(dst.w.numpy()) == 1.0


def test_deferred_restore_of_variable_created_in_function(tmp_path):
    class Lazy(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        @tf.function
        def __call__(self, x):
            if self.w is None:
                self.w = tf.Variable(tf.zeros([2]))
            return x * self.w

    src = Lazy()
    src(tf.ones([2]))
    src.w.assign([3.0, 4.0])
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    dst = Lazy()
    tf.train.Checkpoint(model=dst).read(path)
    assert dst(tf.ones([2])).numpy().tolist() == [3.0, 4.0]


# ---------------------------------------------------------------- lists and dicts (100)
def test_list_and_dict_attributes_are_tracked(tmp_path):  # 100
    m = tf.Module()
    m.blocks = [tf.Variable(1.0), [tf.Variable(2.0)]]
    m.table = {"b": tf.Variable(3.0), "a": tf.Variable(4.0)}
    m.pair = (tf.Variable(5.0),)
    path = tf.train.Checkpoint(model=m).write(str(tmp_path / "c"))
    assert keys(path)[1:] == ["model/blocks/0/.ATTRIBUTES/VARIABLE_VALUE",
                              "model/blocks/1/0/.ATTRIBUTES/VARIABLE_VALUE",
                              "model/pair/0/.ATTRIBUTES/VARIABLE_VALUE",
                              "model/table/a/.ATTRIBUTES/VARIABLE_VALUE",
                              "model/table/b/.ATTRIBUTES/VARIABLE_VALUE"]


def test_restore_into_list_appended_later(tmp_path):  # 100
    src = tf.Module()
    src.blocks = [Layer((1.0, 1.0)), Layer((2.0, 2.0))]
    src.table = {"x": tf.Variable(5.0)}
    path = tf.train.Checkpoint(model=src).save(str(tmp_path / "c"))
    dst = tf.Module()
    dst.blocks = []
    dst.table = {}
    status = tf.train.Checkpoint(model=dst).restore(path)
    for _ in range(2):
        dst.blocks.append(Layer((0.0, 0.0)))
    dst.table["x"] = tf.Variable(0.0)
    assert [b.kernel.numpy().tolist() for b in dst.blocks] == [[1.0, 1.0], [2.0, 2.0]]
    assert float(dst.table["x"].numpy()) == 5.0
    status.assert_consumed()


def test_restore_into_list_extended_or_set_later(tmp_path):
    src = tf.Module()
    src.vs = [tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0)]
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    dst = tf.Module()
    dst.vs = [None]
    tf.train.Checkpoint(model=dst).read(path)
    dst.vs[0] = tf.Variable(0.0)
    dst.vs += [tf.Variable(0.0)]
    dst.vs.insert(2, tf.Variable(0.0))
    assert [float(v.numpy()) for v in dst.vs] == [1.0, 2.0, 3.0]


def test_tracked_containers_behave_like_lists_and_dicts():
    m = tf.Module()
    v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
    m.blocks = [v1]
    m.table = {"k": [v2]}
    assert isinstance(m.blocks, list) and isinstance(m.table, dict)
    assert m.blocks == [v1] and m.table == {"k": [v2]}
    assert isinstance(m.table["k"], list)
    assert tf.nest.flatten(m.table) == [v2]
    assert [id(x) for x in m.variables] == [id(v1), id(v2)]
    packed = tf.nest.pack_sequence_as(m.table, [3])
    assert packed == {"k": [3]}


def test_tracked_list_attribute_in_function():
    class Stack(tf.Module):
        def __init__(self):
            super().__init__()
            self.ws = [tf.Variable(2.0), tf.Variable(3.0)]

        @tf.function
        def __call__(self, x):
            for w in self.ws:
                x = x * w
            return x

    assert float(Stack()(tf.constant(1.0))) == 6.0


# -------------------------------------------------------------------- status warnings (§4.4)
def test_unused_values_warn_when_status_is_deleted(tmp_path, caplog):
    src = tf.Module()
    src.a, src.b = tf.Variable(1.0), tf.Variable(2.0)
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    dst = tf.Module()
    dst.a = tf.Variable(0.0)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        ckpt = tf.train.Checkpoint(model=dst)
        status = ckpt.read(path)
        del status, ckpt, dst
        gc.collect()
    messages = [r.getMessage() for r in caplog.records]
    assert any("not all checkpointed values were used" in m for m in messages)
    assert ("Value in checkpoint could not be found in the restored object: (root).model.b"
            in messages)


def test_expect_partial_silences_the_warnings(tmp_path, caplog):
    src = tf.Module()
    src.a, src.b = tf.Variable(1.0), tf.Variable(2.0)
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        dst = tf.Module()
        dst.a = tf.Variable(0.0)
        tf.train.Checkpoint(model=dst).read(path).expect_partial()
        del dst
        gc.collect()
    assert not caplog.records


# ---------------------------------------------------------------------- manager and readers
def test_checkpoint_manager_keeps_the_newest(tmp_path):
    v = tf.Variable(0.0)
    ckpt = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.checkpoints == []
    for i in range(4):
        v.assign(float(i))
        manager.save()
    names = [os.path.basename(p) for p in manager.checkpoints]
    assert names == ["ckpt-3", "ckpt-4"]
    assert manager.latest_checkpoint == str(tmp_path / "ckpt-4")
    assert tf.train.latest_checkpoint(str(tmp_path)) == manager.latest_checkpoint
    assert not os.path.exists(tmp_path / "ckpt-1.index")
    assert not os.path.exists(tmp_path / "ckpt-2.data-00000-of-00001")
    again = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(0.0)), str(tmp_path))
    assert again.checkpoints == manager.checkpoints
    assert manager.save(checkpoint_number=100).endswith("ckpt-100")
    w = tf.Variable(-1.0)
    tf.train.Checkpoint(v=w).restore(manager.latest_checkpoint)
    assert float(w.numpy()) == 3.0


def test_checkpoint_manager_rejects_bad_max_to_keep(tmp_path):
    with pytest.raises(ValueError, match="max_to_keep must be a positive int or None"):
        tf.train.CheckpointManager(tf.train.Checkpoint(), str(tmp_path), max_to_keep=0)


def test_list_variables_and_load_checkpoint(tmp_path):
    m = Model()
    ckpt = tf.train.Checkpoint(model=m)
    path = ckpt.save(str(tmp_path / "c"))
    assert tf.train.list_variables(str(tmp_path)) == tf.train.list_variables(path) == [
        ("_CHECKPOINTABLE_OBJECT_GRAPH", []),
        ("model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE", [2]),
        ("model/scale/.ATTRIBUTES/VARIABLE_VALUE", []),
        ("save_counter/.ATTRIBUTES/VARIABLE_VALUE", [])]
    reader = tf.train.load_checkpoint(str(tmp_path))
    assert reader.get_tensor("model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE").tolist() == [1.0, 2.0]
    assert reader.has_tensor("model/scale/.ATTRIBUTES/VARIABLE_VALUE")
    with pytest.raises(NotFoundError, match="^Key 'nope' not found in checkpoint"):
        reader.get_tensor("nope")
    os.makedirs(tmp_path / "empty_dir")
    with pytest.raises(NotFoundError, match="^No checkpoint found in directory"):
        tf.train.list_variables(str(tmp_path / "empty_dir"))
    with pytest.raises(NotFoundError, match="^No checkpoint at "):
        tf.train.load_checkpoint(str(tmp_path / "nothing-1"))


# -------------------------------------------------------------------------------- odds and ends
def test_checkpoint_kwarg_list_restored_on_append(tmp_path):
    path = tf.train.Checkpoint(vs=[tf.Variable(1.0), tf.Variable(2.0)]).write(str(tmp_path / "c"))
    ckpt = tf.train.Checkpoint(vs=[])
    ckpt.read(path)
    ckpt.vs.append(tf.Variable(0.0))
    ckpt.vs.extend([tf.Variable(0.0)])
    assert [float(v.numpy()) for v in ckpt.vs] == [1.0, 2.0]


def test_tracked_dict_in_place_union_restores(tmp_path):
    src = tf.Module()
    src.d = {"k": tf.Variable(4.0)}
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    dst = tf.Module()
    dst.d = {}
    tf.train.Checkpoint(model=dst).read(path)
    dst.d |= {"k": tf.Variable(0.0)}
    assert float(dst.d["k"].numpy()) == 4.0


def test_inconsistent_references_warn_and_keep_the_first(tmp_path, caplog):
    src = tf.Module()
    src.a = tf.Variable(1.0)
    src.b = src.a  # one node, two edges
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "c"))
    dst = tf.Module()
    dst.a, dst.b = tf.Variable(0.0), tf.Variable(0.0)  # now two different objects
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        tf.train.Checkpoint(model=dst).read(path).expect_partial()
    assert float(dst.a.numpy()) == 1.0 and float(dst.b.numpy()) == 0.0
    assert any("Inconsistent references when loading the checkpoint" in r.getMessage()
               for r in caplog.records)


def test_save_with_prefix_in_current_directory(cwd):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    assert ckpt.save("ckpt") == "ckpt-1"
    assert ckpt.save("ckpt") == "ckpt-2"
    assert open("checkpoint").read().splitlines() == [
        'model_checkpoint_path: "ckpt-2"', 'all_model_checkpoint_paths: "ckpt-1"',
        'all_model_checkpoint_paths: "ckpt-2"']
    assert tf.train.latest_checkpoint(".") == os.path.join(".", "ckpt-2")


def test_prefix_naming_a_directory_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="ends with a path separator"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path) + os.sep)


def test_non_string_dict_key_holding_a_variable_is_an_error(tmp_path):
    m = tf.Module()
    m.by_id = {3: tf.Variable(1.0)}
    with pytest.raises(ValueError, match="non-string key 3"):
        tf.train.Checkpoint(model=m).write(str(tmp_path / "c"))


def test_manager_saves_only_every_checkpoint_interval_steps(tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path),
                                         max_to_keep=None, step_counter=step,
                                         checkpoint_interval=3)
    saved = []
    for s in range(8):
        step.assign(s)
        saved.append(manager.save())
    assert [p is not None for p in saved] == [True, False, False, True, False, False, True,
                                              False]
    assert manager.save(check_interval=False) is not None  # forced
    with pytest.raises(ValueError, match="checkpoint_interval needs a step_counter"):
        tf.train.CheckpointManager(tf.train.Checkpoint(), str(tmp_path), checkpoint_interval=2)


def test_manager_keeps_one_checkpoint_every_n_hours(tmp_path, monkeypatch):
    from stagecraft.state.checkpoint import manager as manager_module
    clock = [1000.0]
    monkeypatch.setattr(manager_module.time, "time", lambda: clock[0])
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)),
                                         str(tmp_path), max_to_keep=1,
                                         keep_checkpoint_every_n_hours=1.0)
    written = {}
    monkeypatch.setattr(manager_module, "_written_at", lambda prefix: written[prefix])
    for hours in (0.5, 1.2, 1.5, 2.6):
        clock[0] = 1000.0 + 3600 * hours
        written[manager.save()] = clock[0]
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".index"))
    # ckpt-1 (0.5 h) is deleted, ckpt-2 (1.2 h: an hour after the start) is preserved,
    # ckpt-3 (1.5 h) is deleted, ckpt-4 is the one max_to_keep keeps.
    assert names == ["ckpt-2.index", "ckpt-4.index"]
    assert [p.rsplit("/", 1)[-1] for p in manager.checkpoints] == ["ckpt-4"]
