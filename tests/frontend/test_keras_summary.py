"""Model.summary(): TensorFlow 2 Keras's table, totals and the error before building."""
import pytest

import stagecraft as tf


def lines_of(model, **kwargs):
    out = []
    model.summary(print_fn=out.append, **kwargs)
    return out


def test_sequential_summary_table():
    tf.keras.backend.clear_session()
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)),
                                 tf.keras.layers.Dense(1, trainable=False)])
    assert lines_of(model) == [
        'Model: "sequential"',
        "_" * 65,
        "Layer (type)                 Output Shape              Param #   ",
        "=" * 65,
        "dense (Dense)                (None, 4)                 16        ",
        "_" * 65,
        "dense_1 (Dense)              (None, 1)                 5         ",
        "=" * 65,
        "Total params: 21",
        "Trainable params: 16",
        "Non-trainable params: 5",
        "_" * 65,
    ]


def test_subclassed_model_shows_multiple_and_thousands():
    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__(name="net")
            self.big = tf.keras.layers.Dense(100)

        def call(self, x):
            return self.big(x)

    model = Net()
    model(tf.ones([2, 20]))
    out = lines_of(model, line_length=80)
    assert out[0] == 'Model: "net"' and out[1] == "_" * 80
    assert out[4].split()[1:] == ["(Dense)", "multiple", "2100"]  # Keras: no separator here
    assert "Total params: 2,100" in out


def test_unbuilt_model_raises():
    with pytest.raises(ValueError) as e:
        tf.keras.Sequential([tf.keras.layers.Dense(2)]).summary()
    assert str(e.value).splitlines()[0] == (
        "This model has not yet been built. Build the model first by calling `build()` or by "
        "calling the model on a batch of data.")
