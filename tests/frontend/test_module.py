"""tf.Module reflection (semantics.md §3.4, checklist 88-90)."""
import uuid

import pytest

import stagecraft as tf

# Staged tests of the staging and AutoGraph issues: compiled by Numba (what users get by
# default), and run again inside tf.device("/gpu:0") (marker cuda).
pytestmark = [pytest.mark.backend("numba"), pytest.mark.gpu_placements]


class Top(tf.Module):
    def __init__(self):
        super().__init__()
        self.b = tf.Variable(1.0, name="b")
        self.a = tf.Variable(2.0, name="a")
        self.nt = tf.Variable(3.0, trainable=False, name="nt")
        self.z = tf.Module()
        self.z.w = tf.Variable(4.0, name="w")
        self.again = self.a


def same(xs, ys) -> bool:
    return len(xs) == len(ys) and all(x is y for x, y in zip(xs, ys))


def test_ordering_example():  # 88, 89
    m = Top()
    assert isinstance(m.variables, tuple)
    assert isinstance(m.trainable_variables, tuple)
    assert isinstance(m.non_trainable_variables, tuple)
    assert isinstance(m.submodules, tuple)
    assert same(m.variables, (m.a, m.b, m.nt, m.z.w))
    assert same(m.trainable_variables, (m.a, m.b, m.z.w))
    assert same(m.non_trainable_variables, (m.nt,))
    assert same(m.submodules, (m.z,))
    assert m.name == "top"


def test_variable_reachable_twice_listed_once():  # 89
    m = tf.Module()
    v = tf.Variable(1.0)
    m.x = v
    m.y = [v, v]
    m.sub = tf.Module()
    m.sub.v = v
    assert same(m.variables, (v,))


def test_properties_reflect_current_attributes():
    m = tf.Module()
    assert m.variables == ()
    m.v = tf.Variable(1.0)
    assert same(m.variables, (m.v,))
    del m.v
    assert m.variables == ()


def test_invalid_name():  # 90
    with pytest.raises(ValueError):
        tf.Module(name="not valid!")
    with pytest.raises(ValueError):
        tf.Module(name="1abc")


def test_explicit_valid_name():
    assert tf.Module(name="encoder_1").name == "encoder_1"


def test_default_name_snake_case():
    class MyDenseLayer(tf.Module):
        pass

    class HTTPHandler2(tf.Module):
        pass
    assert MyDenseLayer().name == "my_dense_layer"
    assert HTTPHandler2().name == "http_handler2"
    assert tf.Module().name == "module"


def test_name_scope_not_made_unique_eagerly():
    name = f"probe_{uuid.uuid4().hex}"  # never used before in this process
    first = tf.Module(name=name)
    second = tf.Module(name=name)
    assert first.name == second.name == name
    assert first.name_scope.name == f"{name}/"
    assert second.name_scope.name == f"{name}/"  # TF 2 eager: no suffix


def test_with_name_scope_decorator():
    class M(tf.Module):
        @tf.Module.with_name_scope
        def call(self, x):
            return x * 2.0
    m = M()
    assert float(m.call(tf.constant(2.0))) == 4.0
    assert M.call.__name__ == "call"


def test_submodules_nested_order():
    class L(tf.Module):
        def __init__(self, name):
            super().__init__(name=name)

    r = L("r")
    r.c = L("c")
    r.c.d = L("d")
    r.a = L("a")
    r.a.e = L("e")
    # own attributes sorted by name first (a, c), then each submodule's (e under a, d under c)
    assert [s.name for s in r.submodules] == ["a", "c", "e", "d"]
    assert same(r.submodules, (r.a, r.c, r.a.e, r.c.d))


def test_nested_variables_order():
    outer = tf.Module()
    outer.z_var = tf.Variable(1.0, name="z_var")
    outer.inner = tf.Module()
    outer.inner.deep = tf.Module()
    outer.inner.deep.v = tf.Variable(2.0, name="deep_v")
    outer.inner.u = tf.Variable(3.0, name="inner_u")
    assert same(outer.variables, (outer.z_var, outer.inner.u, outer.inner.deep.v))


def test_lists_and_dicts_tracked():
    m = tf.Module()
    m.layers = [tf.Variable(1.0, name="l0"), tf.Variable(2.0, name="l1")]
    m.table = {"y": tf.Variable(3.0, name="y"), "x": tf.Variable(4.0, name="x")}
    m.pair = (tf.Variable(5.0, name="p0"), [tf.Variable(6.0, name="p1")])
    expected = (m.layers[0], m.layers[1],              # 'layers' (list order)
                m.pair[0], m.pair[1][0],               # 'pair' (nested)
                m.table["x"], m.table["y"])            # 'table' (sorted keys)
    assert same(m.variables, expected)


def test_modules_in_lists_are_submodules():
    m = tf.Module()
    m.blocks = [tf.Module(name="b0"), tf.Module(name="b1")]
    m.blocks[1].w = tf.Variable(1.0)
    assert same(m.submodules, tuple(m.blocks))
    assert same(m.variables, (m.blocks[1].w,))


def test_trainable_variables_excludes_only_non_trainable():
    m = tf.Module()
    m.a = tf.Variable(1.0, trainable=False)
    m.b = tf.Variable(1)  # int but trainable
    assert same(m.trainable_variables, (m.b,))
    assert same(m.non_trainable_variables, (m.a,))
    assert same(m.variables, (m.a, m.b))


def test_self_reference_does_not_loop():
    m = tf.Module()
    m.me = m
    m.v = tf.Variable(1.0)
    assert m.submodules == ()
    assert same(m.variables, (m.v,))


def test_variables_created_in_name_scope_are_prefixed():
    class ScopedThing(tf.Module):
        @tf.Module.with_name_scope
        def __call__(self, x):
            if not hasattr(self, "w"):
                self.w = tf.Variable(tf.ones([2, 3]))
            return tf.matmul(x, self.w)

    m = ScopedThing()
    assert m(tf.ones([1, 2])).shape == (1, 3)
    scope = m.name_scope.name
    assert scope.startswith("scoped_thing")
    assert m.w.name == f"{scope}Variable:0"
    with m.name_scope:
        k = tf.Variable(1.0, name="k")
    assert k.name == f"{scope}k:0"
    assert tf.Variable(1.0, name="outside").name == "outside:0"
