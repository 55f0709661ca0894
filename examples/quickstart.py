"""The paper's first listings, run imperatively: ops execute at once, tapes differentiate.

    python examples/quickstart.py
"""
import stagecraft as tf


# Imperative execution: `select` is an ordinary Python function of tensors.
def select(vector):
    A = tf.constant([[1.0, 0.0]])
    return tf.matmul(A, vector)


x = tf.constant([[2.0], [-2.0]])
print(select(x))  # stagecraft.Tensor([[2.]], shape=(1, 1), dtype=float32)

# Gradient tapes nest: the outer tape records the inner tape's gradient computation.
x = tf.constant(3.0)
with tf.GradientTape() as t1:
    with tf.GradientTape() as t2:
        t1.watch(x)
        t2.watch(x)
        y = x * x
    dy_dx = t2.gradient(y, x)  # 6.0
d2y_dx2 = t1.gradient(dy_dx, x)  # 2.0
print(dy_dx)
print(d2y_dx2)

# Variables are watched automatically when a tape is active.
v = tf.Variable(3.0)
with tf.GradientTape() as tape:
    y = v * v
print(tape.gradient(y, v))  # 6.0

# A tiny model: a Module owns its variables; one step of gradient descent.
class Linear(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable([[0.5], [-0.5]])
        self.b = tf.Variable([0.0])

    def __call__(self, inputs):
        return tf.matmul(inputs, self.w) + self.b


model = Linear()
inputs = tf.constant([[1.0, 2.0], [3.0, 4.0]])
targets = tf.constant([[1.0], [2.0]])
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(model(inputs) - targets))
grads = tape.gradient(loss, model.trainable_variables)
for var, g in zip(model.trainable_variables, grads):
    var.assign_sub(0.02 * g)
print("loss", float(loss), "->", float(tf.reduce_mean(tf.square(model(inputs) - targets))))
