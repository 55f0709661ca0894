"""tf.debugging's assertions: each passes on good input and raises TF's error (first line
checked) on bad input, eagerly and inside a staged function."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

D = tf.debugging
BINARY = [  # (assert, x, y that pass, y that fails, the failing condition)
    (D.assert_equal, [1, 2], [1, 2], [1, 3], "=="),
    (D.assert_none_equal, [1, 2], [3, 4], [3, 2], "!="),
    (D.assert_less, [1, 2], [2, 3], [2, 2], "<"),
    (D.assert_less_equal, [1, 2], [1, 2], [1, 1], "<="),
    (D.assert_greater, [3, 4], [2, 3], [2, 4], ">"),
    (D.assert_greater_equal, [3, 4], [3, 4], [3, 5], ">="),
]
SIGN = [  # (assert, passing x, failing x, condition)
    (D.assert_positive, [1.0, 2.0], [1.0, 0.0], ">"),
    (D.assert_negative, [-1.0], [-1.0, 0.0], "<"),
    (D.assert_non_negative, [0.0, 2.0], [-1.0], ">="),
    (D.assert_non_positive, [0.0, -2.0], [1.0], "<="),
]


def staged(check):
    @tf.function
    def run(*args):
        check(*args)
        return tf.constant(0)
    return run


@pytest.mark.parametrize("check,x,good,bad,sym", BINARY, ids=lambda v: getattr(v, "__name__", ""))
def test_binary_asserts(check, x, good, bad, sym):
    x = tf.constant(x)
    check(x, tf.constant(good))
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        check(x, tf.constant(bad))
    assert str(e.value).splitlines()[0] == f"Condition x {sym} y did not hold."
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        check(x, tf.constant(bad), message="my check")
    assert str(e.value).splitlines()[:2] == ["my check", f"Condition x {sym} y did not hold."]
    run = staged(lambda a, b: check(a, b, message="staged check"))
    run(x, tf.constant(good))
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        run(x, tf.constant(bad))
    assert str(e.value).splitlines()[:2] == [
        "staged check", f"Condition x {sym} y did not hold element-wise."]


def test_the_eager_message_lists_the_differing_values():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        D.assert_less(tf.constant([1, 5, 7]), tf.constant([2, 2, 2]))
    lines = str(e.value).splitlines()
    assert lines[1:7] == ["Indices of first 2 different values:", "[[1]", " [2]]",
                          "Corresponding x values:", "[5 7]", "Corresponding y values:"]


@pytest.mark.parametrize("check,good,bad,sym", SIGN, ids=lambda v: getattr(v, "__name__", ""))
def test_sign_asserts(check, good, bad, sym):
    check(tf.constant(good))
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"^Condition x {sym} y"):
        check(tf.constant(bad))
    staged(check)(tf.constant(good))
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"Condition x {sym} y"):
        staged(check)(tf.constant(bad))


def test_assert_near_uses_tf_default_tolerances():
    D.assert_near(tf.constant([1.0]), tf.constant([1.0 + 1e-6]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="^x and y not equal to tolerance"):
        D.assert_near(tf.constant([1.0]), tf.constant([1.0 + 1e-5]))
    D.assert_near(tf.constant([1.0]), tf.constant([1.1]), atol=0.2)


def test_rank_asserts_are_static_when_the_rank_is_known():
    D.assert_rank(tf.zeros([2, 3]), 2)
    D.assert_rank_at_least(tf.zeros([2, 3]), 1)
    D.assert_rank_in(tf.zeros([2]), [1, 3])
    with pytest.raises(ValueError, match=r"^Tensor must have rank 2\. Received rank 1"):
        D.assert_rank(tf.zeros([2]), 2)
    with pytest.raises(ValueError, match=r"^Tensor must have rank at least 3"):
        D.assert_rank_at_least(tf.zeros([2]), 3)
    with pytest.raises(ValueError, match=r"^Tensor must have rank in \[2, 3\]"):
        D.assert_rank_in(tf.zeros([2]), [2, 3])


def test_rank_asserts_run_when_the_rank_is_unknown():
    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def f(x):
        D.assert_rank(x, 2, message="need a matrix")
        return tf.reduce_sum(x)
    assert float(f(tf.ones([2, 2]))) == 4.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="^need a matrix"):
        f(tf.ones([3]))


def test_dtype_and_scalar_asserts():
    D.assert_type(tf.constant(1.0), tf.float32)
    with pytest.raises(TypeError, match="^tensor must be of type int32; got float32"):
        D.assert_type(tf.constant(1.0), tf.int32)
    D.assert_integer(tf.constant(1))
    with pytest.raises(TypeError, match="^Expected integer type; got dtype float32"):
        D.assert_integer(tf.constant(1.0))
    assert D.assert_same_float_dtype([tf.constant(1.0, tf.float64)]) == tf.float64
    with pytest.raises(ValueError, match="^Expected dtype float32 for all tensors; got float64"):
        D.assert_same_float_dtype([tf.constant(1.0), tf.constant(1.0, tf.float64)])
    assert int(D.assert_scalar(tf.constant(3))) == 3
    with pytest.raises(ValueError, match=r"^Expected scalar shape, saw shape: \(2,\)"):
        D.assert_scalar(tf.zeros([2]))
    assert D.is_numeric_tensor(tf.constant(1)) and not D.is_numeric_tensor(tf.constant(True))
    with pytest.raises(TypeError, match='^Expected argument \'values\' to be a "proper"'):
        D.assert_proper_iterable("abc")


def test_assert_shapes_binds_symbols_across_tensors():
    D.assert_shapes([(tf.zeros([2, 3]), ("N", 3)), (tf.zeros([2]), ("N",)),
                     (tf.zeros([5, 2, 3]), ("...", "N", ".")), (tf.constant(1.0), ())])
    with pytest.raises(ValueError, match="^Specified by tensor 1 of assert_shapes: dimension 0 "
                                         "must have size 2"):
        D.assert_shapes([(tf.zeros([2, 3]), ("N", 3)), (tf.zeros([4]), ("N",))])
    with pytest.raises(ValueError, match="^Specified by tensor 0 of assert_shapes: expected "
                                         "rank 2"):
        D.assert_shapes([(tf.zeros([2]), ("N", 3))])

    @tf.function(input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([None])])
    def f(x, y):
        D.assert_shapes([(x, ("N", 3)), (y, ("N",))])
        return tf.reduce_sum(x) + tf.reduce_sum(y)
    assert float(f(tf.ones([2, 3]), tf.ones([2]))) == 8.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="^Specified by tensor 1"):
        f(tf.ones([2, 3]), tf.ones([3]))


@pytest.mark.parametrize("value,kind", [(np.nan, "NaN"), (np.inf, "Inf")])
def test_check_numerics(value, kind):
    x = tf.constant([1.0, 2.0])
    assert D.check_numerics(x, "ok").numpy().tolist() == [1.0, 2.0]
    bad = tf.constant([1.0, value])
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"^x is bad : Tensor had {kind}"):
        D.check_numerics(bad, "x is bad")
    f = tf.function(lambda t: D.assert_all_finite(t * 2, "doubled"))
    assert f(x).numpy().tolist() == [2.0, 4.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"^doubled : Tensor had {kind}"):
        f(bad)
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(D.check_numerics(v * v, "sq"))
    assert tape.gradient(y, v).numpy().tolist() == [2.0, 4.0]


def test_top_level_names():
    tf.assert_equal(tf.constant(1), 1)
    tf.assert_less(tf.constant(1), 2)
    tf.assert_greater(tf.constant(3), 2)
    tf.assert_rank(tf.zeros([1]), 1)
    tf.Assert(tf.constant(True), ["never"])
