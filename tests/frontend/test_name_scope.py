"""tf.name_scope and the scopes of tf.Module and Keras layers, as TensorFlow 2 names them."""
import pytest

import stagecraft as tf


def test_nested_scopes_prefix_variable_names():
    with tf.name_scope("outer") as outer:
        with tf.name_scope("inner") as inner:
            v = tf.Variable(1.0, name="w")
            assert tf.get_current_name_scope() == "outer/inner"
        u = tf.Variable(1.0)
    assert (outer, inner) == ("outer/", "outer/inner/")
    assert (v.name, u.name) == ("outer/inner/w:0", "outer/Variable:0")
    assert tf.Variable(1.0, name="w").name == "w:0"
    assert tf.get_current_name_scope() == ""


def test_empty_name_resets_and_trailing_slash_is_absolute():
    with tf.name_scope("outer"):
        with tf.name_scope("") as root:
            assert tf.Variable(1.0, name="a").name == "a:0"
        with tf.name_scope("x/y/") as absolute:
            assert tf.Variable(1.0, name="b").name == "x/y/b:0"
    assert (root, absolute) == ("", "x/y/")


def test_eager_scopes_are_not_made_unique():
    with tf.name_scope("s") as first:
        pass
    with tf.name_scope("s") as second:
        pass
    assert first == second == "s/"


def test_name_must_be_a_string():
    with pytest.raises(ValueError, match="^name for name_scope must be a string"):
        tf.name_scope(None)


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_scopes_inside_function(backend):
    seen = []

    @tf.function(backend=backend)
    def f(x):
        with tf.name_scope("block") as a:
            y = x * 2.0
        with tf.name_scope("block") as b:
            y = y + 1.0
        seen.append((a, b))
        return y

    assert float(f(tf.constant(1.0))) == 3.0
    assert seen == [("block/", "block_1/")]  # a graph makes repeated names unique


def test_invalid_scope_name_while_tracing():
    @tf.function(backend="reference")
    def f(x):
        with tf.name_scope("bad name"):
            return x

    with pytest.raises(ValueError, match="^'bad name' is not a valid scope name"):
        f(tf.constant(1.0))


def test_module_scope_is_fixed_at_construction():
    with tf.name_scope("outer"):
        m = tf.Module(name="mod")
        twin = tf.Module(name="mod")
    assert m.name_scope.name == twin.name_scope.name == "outer/mod/"
    with tf.name_scope("elsewhere"), m.name_scope:
        v = tf.Variable(1.0, name="v")
    assert v.name == "outer/mod/v:0"


def test_keras_layer_and_model_variable_names():
    tf.keras.backend.clear_session()
    dense = tf.keras.layers.Dense(2)
    dense(tf.ones([1, 3]))
    assert [w.name for w in dense.weights] == ["dense/kernel:0", "dense/bias:0"]

    class MyModel(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.inner = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.inner(x)

    model = MyModel()
    model(tf.ones([1, 2]))
    assert [w.name for w in model.weights] == ["my_model/dense_1/kernel:0",
                                              "my_model/dense_1/bias:0"]
    seq = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
    assert [w.name for w in seq.weights] == ["dense_2/kernel:0", "dense_2/bias:0"]
