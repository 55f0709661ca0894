"""Clear errors for inputs that cannot become tensors and for invalid one_hot depths (issue 15,
item 5): each says what is wrong, with TensorFlow's wording where TensorFlow has one."""
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError


def first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


@pytest.mark.parametrize("value", [2**64, [1, 2**64], -2**64, [[0], [2**70]]])
def test_int_beyond_64_bits(value):
    with pytest.raises(ValueError) as e:
        tf.constant(value)
    assert "out-of-range integer" in first_line(e)
    assert "non-rectangular" not in first_line(e)


def test_none_is_an_unsupported_type():
    with pytest.raises(ValueError) as e:
        tf.constant(None)
    assert first_line(e).startswith("Attempt to convert a value (None) with an unsupported "
                                    "type (<class 'NoneType'>) to a Tensor")
    with pytest.raises(ValueError) as e:
        tf.constant([1.0, None])
    assert "(None) with an unsupported type" in first_line(e)


def test_generator_is_an_unsupported_type():
    with pytest.raises(ValueError) as e:
        tf.constant(i for i in range(3))
    assert "unsupported type (<class 'generator'>)" in first_line(e)
    assert "list(gen)" in first_line(e)


def test_ragged_still_says_non_rectangular():
    with pytest.raises(ValueError) as e:
        tf.constant([[1, 2], [3]])
    assert "non-rectangular" in first_line(e)


def test_one_hot_negative_depth_raises_eagerly_and_staged():
    with pytest.raises(InvalidArgumentError) as e:
        tf.one_hot([0, 1], depth=-3)
    assert "depth must be non-negative, got -3" in first_line(e)
    f = tf.function(lambda x: tf.one_hot(x, depth=-3), autograph=False)
    with pytest.raises(InvalidArgumentError) as e:
        f(tf.constant([0, 1]))
    assert "depth must be non-negative, got -3" in str(e.value)
    assert tf.one_hot([0, 1], depth=0).shape == (2, 0)  # zero is allowed, as in TensorFlow


def test_int_beyond_64_bits_converts_to_a_float_dtype_as_in_tensorflow():
    assert tf.constant(2**64, tf.float32).numpy() == float(2**64)
    assert tf.constant([1, 2**64], tf.float64).numpy().tolist() == [1.0, float(2**64)]
