"""TensorArray eagerly and as a loop variable of a staged while_loop."""
import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError

# Staged tests of the staging and AutoGraph issues: compiled by Numba (what users get by
# default), and run again inside tf.device("/gpu:0") (marker cuda).
pytestmark = [pytest.mark.backend("numba"), pytest.mark.gpu_placements]


def test_eager_write_read_stack_size():
    ta = tf.TensorArray(tf.float32, size=3)
    ta = ta.write(0, 1.0).write(2, 3.0).write(1, 2.0)
    assert ta.stack().numpy().tolist() == [1.0, 2.0, 3.0]
    assert float(ta.read(1)) == 2.0 and int(ta.size()) == 3


def test_eager_fixed_size_rejects_writes_past_the_end_with_a_fix():
    ta = tf.TensorArray(tf.int32, size=1)
    with pytest.raises(InvalidArgumentError, match="not resizeable.*dynamic_size=True"):
        ta.write(3, 1)


def test_eager_dynamic_size_grows_and_unread_index_raises():
    ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True).write(2, 5)
    assert int(ta.size()) == 3
    with pytest.raises(InvalidArgumentError, match="has not been written"):
        ta.read(0)


def test_write_checks_dtype():
    with pytest.raises(TypeError, match="cannot write a float32 value"):
        tf.TensorArray(tf.int32, size=1).write(0, tf.constant(1.0))


def test_staged_loop_accumulates_into_a_tensor_array():
    @tf.function
    def squares(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[])
        _, ta = tf.while_loop(lambda i, ta: i < n,
                              lambda i, ta: (i + 1, ta.write(i, tf.cast(i * i, tf.float32))),
                              (tf.constant(0), ta))
        return ta.stack(), ta.size()

    values, size = squares(tf.constant(4))
    assert values.numpy().tolist() == [0.0, 1.0, 4.0, 9.0] and int(size) == 4
    values, _ = squares(tf.constant(2))
    assert values.numpy().tolist() == [0.0, 1.0]
    assert squares.experimental_get_tracing_count() == 1


def test_staged_unstack_then_read_by_tensor_index():
    @tf.function
    def pick(x, i):
        return tf.TensorArray(tf.float32, size=3).unstack(x).read(i)

    assert float(pick(tf.constant([4.0, 5.0, 6.0]), tf.constant(2))) == 6.0


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_staged_fixed_size_without_element_shape_takes_its_rows_at_the_first_write(backend):
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))

    def doubling(x):
        ta = tf.TensorArray(tf.float32, size=3)   # element shape unknown until the write
        for i in range(3):
            x = x * 2.0
            ta = ta.write(i, x)
        return ta.stack()

    def one_row(x):
        ta = tf.TensorArray(tf.float32, size=4).write(2, x)
        return ta.stack(), ta.size()

    for f in (doubling, one_row):
        got, want = tf.function(f, backend=backend)(x), f(x)
        for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
