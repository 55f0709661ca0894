"""tf.saved_model.save / load: object tree, variables, traced functions (dispatch, control flow,
gradients), signatures, errors at save time, fresh-process loading (checklist items 101-102)."""
from __future__ import annotations

import collections
import os

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.saved_model import RestoredFunction, UserObject


class Model(tf.Module):
    """A small model: variables in attributes, a list and a dict, a traced method with
    control flow and one with an input_signature."""

    def __init__(self):
        super().__init__()
        self.w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
        self.b = tf.Variable([0.5, -0.5], name="b")
        self.blocks = [tf.Variable(2.0, name="s")]
        self.table = {"steps": tf.Variable(0, dtype=tf.int64, trainable=False, name="steps")}

    @tf.function
    def __call__(self, x, scale=1.0):
        y = tf.matmul(x, self.w) + self.b
        if tf.reduce_sum(y) > 0.0:
            y = y * self.blocks[0] * scale
        else:
            y = -y
        return y

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def count_up(self, x):
        i = tf.constant(0)
        while i < 3:
            x = x + self.b[0]
            i += 1
        self.table["steps"].assign_add(1)
        return {"x": x, "i": i}


def _trained(tmp_path):
    m = Model()
    m(tf.constant([[1.0, 1.0]]))
    m(tf.constant([[1.0, 1.0], [-5.0, -5.0]]), scale=2.0)
    path = str(tmp_path / "model")
    tf.saved_model.save(m, path)
    return m, path


# ------------------------------------------------------------------- round trip

def test_layout_and_same_process_round_trip(tmp_path):
    m, path = _trained(tmp_path)
    assert sorted(os.listdir(path)) == ["assets", "fingerprint.json", "saved_model.json",
                                        "saved_model.npz", "variables"]
    assert sorted(os.listdir(os.path.join(path, "variables"))) == [
        "variables.data-00000-of-00001", "variables.index"]
    assert os.listdir(os.path.join(path, "assets")) == []
    loaded = tf.saved_model.load(path)
    assert isinstance(loaded, UserObject) and not isinstance(loaded, Model)
    assert isinstance(loaded.__call__, RestoredFunction)
    x1, x2 = tf.constant([[1.0, 1.0]]), tf.constant([[1.0, 1.0], [-5.0, -5.0]])
    np.testing.assert_allclose(loaded(x1).numpy(), m(x1).numpy())
    np.testing.assert_allclose(loaded(x2, scale=2.0).numpy(), m(x2, scale=2.0).numpy())
    np.testing.assert_allclose(loaded(x2, 2.0).numpy(), m(x2, 2.0).numpy())
    out, ref = loaded.count_up(tf.constant([1.0, 2.0])), m.count_up(tf.constant([1.0, 2.0]))
    assert sorted(out) == ["i", "x"]
    np.testing.assert_allclose(out["x"].numpy(), ref["x"].numpy())
    assert int(out["i"]) == 3


def test_variables_restored_assignable_and_seen_by_functions(tmp_path):
    m, path = _trained(tmp_path)
    loaded = tf.saved_model.load(path)
    assert loaded.w.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert loaded.b.dtype == tf.float32 and loaded.w.shape.as_list() == [2, 2]
    assert loaded.table["steps"].dtype == tf.int64 and not loaded.table["steps"].trainable
    assert loaded.blocks[0].trainable and float(loaded.blocks[0]) == 2.0
    loaded.w.assign([[0.0, 0.0], [0.0, 1.0]])
    loaded.blocks[0].assign(10.0)
    np.testing.assert_allclose(loaded(tf.constant([[1.0, 1.0]])).numpy(), [[5.0, 5.0]])
    loaded.count_up(tf.constant([0.0]))
    assert int(loaded.table["steps"]) == 1  # an assign inside a loaded function
    assert m.w.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]  # the original is untouched


def test_shared_variable_stays_shared(tmp_path):
    m = tf.Module()
    m.v = tf.Variable([1.0])
    m.alias = [m.v]
    m.f = tf.function(lambda: m.v * 2.0)
    m.f()
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded.alias[0] is loaded.v
    loaded.alias[0].assign([4.0])
    assert loaded.f().numpy().tolist() == [8.0]


def test_plain_user_object_root_nested_modules_and_kwargs(tmp_path):
    class Holder:  # not a tf.Module: an object holding trackables
        pass

    h = Holder()
    h.enc = tf.Module()
    h.enc.k = tf.Variable(3.0)

    @tf.function
    def f(x, *, shift):
        return x * h.enc.k + shift

    h.f = f
    f(tf.constant(1.0), shift=tf.constant(1.0))
    tf.saved_model.save(h, str(tmp_path / "h"))
    loaded = tf.saved_model.load(str(tmp_path / "h"))
    assert float(loaded.f(tf.constant(2.0), shift=tf.constant(0.5))) == 6.5
    assert float(loaded.enc.k) == 3.0


def test_namedtuple_and_nested_outputs(tmp_path):
    Pair = collections.namedtuple("Pair", ["a", "b"])
    m = tf.Module()
    m.v = tf.Variable(2.0)
    m.f = tf.function(lambda x: (Pair(x * m.v, [x, None]), {"k": x + 1.0}))
    m.f(tf.constant(1.0))
    tf.saved_model.save(m, str(tmp_path / "m"))
    out = tf.saved_model.load(str(tmp_path / "m")).f(tf.constant(3.0))
    pair, extra = out
    assert type(pair).__name__ == "Pair" and pair._fields == ("a", "b")
    assert float(pair.a) == 6.0 and float(pair.b[0]) == 3.0 and pair.b[1] is None
    assert float(extra["k"]) == 4.0


def test_gradients_and_composition_through_a_loaded_function(tmp_path):
    _, path = _trained(tmp_path)
    loaded = tf.saved_model.load(path)
    x = tf.constant([[1.0, 1.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(loaded(x))
    gw, gs = tape.gradient(y, [loaded.w, loaded.blocks[0]])
    np.testing.assert_allclose(gw.numpy(), [[2.0, 2.0], [2.0, 2.0]])
    np.testing.assert_allclose(float(gs), float(tf.reduce_sum(tf.matmul(x, loaded.w) + loaded.b)))

    @tf.function
    def outer(x):
        return loaded(x) + 1.0

    np.testing.assert_allclose(outer(x).numpy(), loaded(x).numpy() + 1.0)


# --------------------------------------------------------------------- dispatch

def test_dispatch_between_traced_signatures(tmp_path):
    m = tf.Module()
    m.f = tf.function(lambda x: x * 2)
    m.f(tf.constant([1.0, 2.0]))
    m.f(tf.constant([1, 2, 3]))
    m.f(tf.constant([[1.0]]))
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded.f(tf.constant([3.0, 4.0])).numpy().tolist() == [6.0, 8.0]
    r = loaded.f(tf.constant([1, 1, 1]))
    assert r.dtype == tf.int32 and r.numpy().tolist() == [2, 2, 2]
    assert loaded.f(np.array([[5.0]], np.float32)).numpy().tolist() == [[10.0]]
    assert len(loaded.f.concrete_functions) == 3


def test_dispatch_picks_most_specific_relaxed_trace(tmp_path):
    m = tf.Module()
    m.f = tf.function(lambda x: tf.reduce_sum(x), reduce_retracing=True)
    for n in (1, 2, 3):
        m.f(tf.ones([n]))
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert float(loaded.f(tf.ones([7]))) == 7.0  # served by the relaxed (None,) trace
    assert float(loaded.f(tf.ones([1]))) == 1.0


def test_no_matching_concrete_function(tmp_path):
    _, path = _trained(tmp_path)
    loaded = tf.saved_model.load(path)
    with pytest.raises(ValueError) as e:
        loaded(tf.constant([[1, 1]]))
    first = str(e.value).splitlines()[0]
    assert first == ("Could not find matching concrete function to call loaded from the "
                     "SavedModel (function '__call__'). Got:")
    assert "Option 2:" in str(e.value) and "scale" not in first
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded(tf.constant([[1.0, 1.0]]), scale=5.0)  # a Python value never traced


def test_wrong_argument_types_to_signature_function(tmp_path):
    _, path = _trained(tmp_path)
    loaded = tf.saved_model.load(path)
    with pytest.raises(TypeError) as e:
        loaded.count_up(tf.constant([1, 2]))
    assert str(e.value).startswith("Binding inputs to tf.function count_up failed due to: "
                                   "Can not cast TensorSpec(shape=(2,), dtype=stagecraft.int32")
    with pytest.raises(TypeError, match="Binding inputs to tf.function count_up failed"):
        loaded.count_up(tf.constant([[1.0]]))
    assert loaded.count_up([1.0, 2.0])["x"].shape.as_list() == [2]  # converted, as TF does


# ---------------------------------------------------------------- save errors

def test_never_traced_function_is_an_error_at_save(tmp_path):
    m = Model()  # __call__ never called; count_up has an input_signature (traced at save)
    with pytest.raises(ValueError) as e:
        tf.saved_model.save(m, str(tmp_path / "m"))
    assert str(e.value).splitlines()[0].startswith(
        "saved_model.save: the tf.function 'root.__call__' was never traced and has no "
        "input_signature")
    assert "input_signature=[tf.TensorSpec" in str(e.value)
    assert not os.path.exists(tmp_path / "m")


def test_function_with_only_input_signature_is_traced_at_save(tmp_path):
    m = Model()
    m(tf.constant([[1.0, 1.0]]))
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded.count_up(tf.constant([0.0]))["x"].numpy(), [1.5])


def test_py_function_is_an_error_at_save(tmp_path):
    def double(t):
        return t * 2.0

    m = tf.Module()
    m.inner = tf.Module()
    m.inner.f = tf.function(lambda x: tf.py_function(double, [x], tf.float32))
    m.inner.f(tf.constant(1.0))
    with pytest.raises(ValueError) as e:
        tf.saved_model.save(m, str(tmp_path / "m"))
    first = str(e.value).splitlines()[0]
    assert first.startswith("saved_model.save: the tf.function 'root.inner.f' calls "
                            "tf.py_function 'test_py_function_is_an_error_at_save.<locals>."
                            "double'")
    assert "cannot be saved" in first
    assert not os.path.exists(tmp_path / "m")


def test_untracked_variable_is_an_error_at_save(tmp_path):
    hidden = tf.Variable(1.0, name="hidden")
    m = tf.Module()
    m.f = tf.function(lambda x: x + hidden)
    m.f(tf.constant(1.0))
    with pytest.raises(ValueError, match="uses the variable 'hidden:0'.*not reachable"):
        tf.saved_model.save(m, str(tmp_path / "m"))


def test_untrackable_object_and_non_savedmodel_target(tmp_path):
    with pytest.raises(ValueError, match="expected a trackable object"):
        tf.saved_model.save(3, str(tmp_path / "m"))
    with pytest.raises(ValueError, match="expected a trackable object"):
        tf.saved_model.save(tf.function(lambda x: x), str(tmp_path / "m"))
    other = tmp_path / "data"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    m = tf.Module()
    m.v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="exists and is not a SavedModel"):
        tf.saved_model.save(m, str(other))
    assert (other / "notes.txt").read_text() == "keep me"


def test_object_argument_cannot_be_saved(tmp_path):
    class Config:
        pass

    m = tf.Module()
    m.f = tf.function(lambda x, c: x + 1.0)
    config = Config()  # alive: a trace whose key object died is dropped (nothing to save)
    m.f(tf.constant(1.0), config)
    with pytest.raises(ValueError, match="keys by identity"):
        tf.saved_model.save(m, str(tmp_path / "m"))


# ------------------------------------------------------------------ signatures

def test_signatures_dict_outputs_and_keyword_calls(tmp_path):
    m = Model()
    m(tf.constant([[1.0, 1.0]]))
    plain = m.__call__.get_concrete_function(tf.TensorSpec([None, 2], tf.float32))
    tf.saved_model.save(m, str(tmp_path / "m"),
                        signatures={"serving_default": m.count_up, "predict": plain})
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert sorted(loaded.signatures) == ["predict", "serving_default"]
    out = loaded.signatures["serving_default"](x=tf.constant([1.0]))
    assert sorted(out) == ["i", "x"]
    pred = loaded.signatures["predict"](x=tf.constant([[1.0, 1.0], [2.0, 2.0]]))
    assert list(pred) == ["output_0"]
    np.testing.assert_allclose(pred["output_0"].numpy(),
                               m(tf.constant([[1.0, 1.0], [2.0, 2.0]])).numpy())
    with pytest.raises(TypeError, match="takes keyword arguments only"):
        loaded.signatures["predict"](tf.constant([[1.0, 1.0]]))
    with pytest.raises(TypeError, match="missing \\['x'\\], unexpected \\['y'\\]"):
        loaded.signatures["predict"](y=tf.constant([[1.0, 1.0]]))
    with pytest.raises(TypeError) as e:
        loaded.signatures["predict"](x=tf.constant([[1, 1]]))
    assert str(e.value).startswith("Binding inputs to tf.function predict failed due to: "
                                   "Can not cast")


def test_single_signature_default_key_and_bad_signatures(tmp_path):
    m = Model()
    m(tf.constant([[1.0, 1.0]]))
    tf.saved_model.save(m, str(tmp_path / "m"), signatures=m.count_up)
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert list(loaded.signatures) == ["serving_default"]
    with pytest.raises(ValueError, match="has no input_signature"):
        tf.saved_model.save(m, str(tmp_path / "n"), signatures=m.__call__)
    with pytest.raises(ValueError, match="must be a ConcreteFunction"):
        tf.saved_model.save(m, str(tmp_path / "n"), signatures={"a": 3})


def test_signature_inputs_named_by_tensorspec_names(tmp_path):
    m = tf.Module()
    m.v = tf.Variable(2.0)
    m.f = tf.function(lambda x, y: {"prod": x * y * m.v},
                      input_signature=[tf.TensorSpec([None], tf.float32, name="features"),
                                       tf.TensorSpec([], tf.float32, name="weight")])
    m.f(tf.constant([1.0]), tf.constant(1.0))  # traced by a call: the names come from the specs
    tf.saved_model.save(m, str(tmp_path / "m"), signatures=m.f)
    sig = tf.saved_model.load(str(tmp_path / "m")).signatures["serving_default"]
    assert sorted(sig.structured_input_signature[1]) == ["features", "weight"]
    out = sig(features=tf.constant([1.0, 2.0]), weight=tf.constant(3.0))
    assert out["prod"].numpy().tolist() == [6.0, 12.0]
    assert tf.saved_model.load(str(tmp_path / "m")).f.get_concrete_function()(
        features=tf.constant([1.0]), weight=tf.constant(1.0))["prod"].numpy().tolist() == [2.0]


def test_structured_and_variable_arguments(tmp_path):
    m = tf.Module()
    m.a = tf.Variable([1.0, 2.0])
    m.c = tf.Variable([3.0, 4.0])

    @tf.function
    def f(v, pair, opts, training=False):
        out = v * pair[0] + opts["k"]
        if training:
            out = out * 10.0
        return out

    m.f = f
    args = (tf.constant(2.0), 1), {"k": tf.constant(1.0)}
    f(m.a, *args)
    f(m.a, *args, training=True)
    tf.saved_model.save(m, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded.f(loaded.a, *args).numpy().tolist() == [3.0, 5.0]
    assert loaded.f(loaded.c, *args, True).numpy().tolist() == [70.0, 90.0]  # any variable
    with pytest.raises(ValueError) as e:
        loaded.f(loaded.c, (tf.constant(2.0), 2), {"k": tf.constant(1.0)})
    assert "VariableSpec(shape=(2,), dtype=stagecraft.float32, trainable=True)" in str(e.value)
    assert loaded.signatures == {}


def test_loaded_model_can_be_saved_again(tmp_path):
    m = Model()
    x = tf.constant([[1.0, 1.0]])
    m(x)
    tf.saved_model.save(m, str(tmp_path / "a"), signatures=m.count_up)
    first = tf.saved_model.load(str(tmp_path / "a"))
    first.b.assign([1.0, 1.0])
    tf.saved_model.save(first, str(tmp_path / "b"), signatures=first.signatures)
    second = tf.saved_model.load(str(tmp_path / "b"))
    assert second.b.numpy().tolist() == [1.0, 1.0]
    np.testing.assert_allclose(second(x).numpy(), first(x).numpy())
    np.testing.assert_allclose(
        second.signatures["serving_default"](x=tf.constant([0.0]))["x"].numpy(), [3.0])


def test_variable_created_by_the_signature_trace_is_saved(tmp_path):
    class Lazy(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = None

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def __call__(self, x):
            if self.v is None:
                self.v = tf.Variable([1.0, 2.0])
            return x * self.v

    tf.saved_model.save(Lazy(), str(tmp_path / "m"))  # the trace at save creates self.v
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded(tf.constant([3.0, 3.0])).numpy().tolist() == [3.0, 6.0]
    assert loaded.v.numpy().tolist() == [1.0, 2.0]


def test_save_inside_a_function_is_refused(tmp_path):
    m = tf.Module()
    m.v = tf.Variable(1.0)

    @tf.function
    def f():
        tf.saved_model.save(m, str(tmp_path / "m"))
        return m.v + 1.0

    with pytest.raises(NotImplementedError, match="saved_model.save\\(\\) inside a tf.function"):
        f()


def test_loaded_graphs_print_like_the_traced_ones(tmp_path):
    m, path = _trained(tmp_path)
    loaded = tf.saved_model.load(path)
    original = [e.concrete for e in m.__call__._entries]
    restored = loaded.__call__.concrete_functions
    assert [str(c.graph) for c in restored] == [str(c.graph) for c in original]
    assert [c.graph.to_text(locs=True) for c in restored] == \
        [c.graph.to_text(locs=True) for c in original]
