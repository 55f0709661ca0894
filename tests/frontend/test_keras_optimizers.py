"""tf.keras optimizers: closed-form updates, slots and the checkpoint slot protocol, and
training steps eager vs staged (issue 6, item 3)."""
import logging

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.state.checkpoint import slots as checkpoint_slots

keras = tf.keras

STEPS = 4
GRADS = [np.array([[0.5, -1.0], [2.0, 0.25]]) * (k + 1) ** 0.5 * (-1) ** k for k in range(STEPS)]


def first_line(excinfo) -> str:
    return str(excinfo.value).splitlines()[0]


def run(opt, dtype, staged=False):
    """Applies GRADS to a fresh variable; returns its value after each step."""
    var = tf.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], dtype.np))

    def step(g):
        opt.apply_gradients([(g, var)])
    if staged:
        step = tf.function(step)
    out = []
    for g in GRADS:
        step(tf.constant(g.astype(dtype.np)))
        out.append(var.numpy().copy())
    return var, out


def f32(x):
    """A hyperparameter as the float32 variable TensorFlow keeps it in."""
    return float(np.float32(x))


DTYPES = [tf.float32, tf.float64]
TOL = {tf.float32: dict(rtol=2e-6, atol=1e-6), tf.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "staged"])
def test_sgd_plain(dtype, staged):
    lr = 0.1
    opt = keras.optimizers.SGD(learning_rate=lr)
    var, got = run(opt, dtype, staged)
    w = np.array([[1.0, -2.0], [0.5, 3.0]])
    for k, g in enumerate(GRADS):
        w = w - f32(lr) * g
        np.testing.assert_allclose(got[k], w, **TOL[dtype])
    assert opt.get_slot_names() == [] and opt._checkpoint_slots() == []
    assert int(opt.iterations) == STEPS and opt.iterations.dtype == tf.int64


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("nesterov", [False, True], ids=["momentum", "nesterov"])
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "staged"])
def test_sgd_momentum(dtype, nesterov, staged):
    lr, mu = 0.05, 0.9
    opt = keras.optimizers.SGD(learning_rate=lr, momentum=mu, nesterov=nesterov)
    var, got = run(opt, dtype, staged)
    w = np.array([[1.0, -2.0], [0.5, 3.0]])
    velocity = np.zeros_like(w)
    for k, g in enumerate(GRADS):
        velocity = f32(mu) * velocity - f32(lr) * g
        w = w + (f32(mu) * velocity - f32(lr) * g if nesterov else velocity)
        np.testing.assert_allclose(got[k], w, **TOL[dtype])
    slot = opt.get_slot(var, "momentum")
    np.testing.assert_allclose(slot.numpy(), velocity, **TOL[dtype])
    assert slot.dtype == dtype and not slot.trainable and slot.shape == var.shape
    assert opt.get_slot_names() == ["momentum"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("amsgrad", [False, True], ids=["adam", "amsgrad"])
@pytest.mark.parametrize("staged", [False, True], ids=["eager", "staged"])
def test_adam(dtype, amsgrad, staged):
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-7
    opt = keras.optimizers.Adam(learning_rate=lr, amsgrad=amsgrad)
    var, got = run(opt, dtype, staged)
    w = np.array([[1.0, -2.0], [0.5, 3.0]])
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    vhat = np.zeros_like(w)
    for k, g in enumerate(GRADS):
        t = k + 1
        lr_t = f32(lr) * np.sqrt(1 - f32(b2) ** t) / (1 - f32(b1) ** t)
        m = f32(b1) * m + (1 - f32(b1)) * g
        v = f32(b2) * v + (1 - f32(b2)) * g * g
        vhat = np.maximum(vhat, v)
        w = w - lr_t * m / (np.sqrt(vhat if amsgrad else v) + eps)
        tol = TOL[dtype] if dtype == tf.float32 else dict(rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[k], w, **tol)
    np.testing.assert_allclose(opt.get_slot(var, "m").numpy(), m, rtol=1e-5)
    np.testing.assert_allclose(opt.get_slot(var, "v").numpy(), v, rtol=1e-5)
    assert opt.get_slot_names() == (["m", "v", "vhat"] if amsgrad else ["m", "v"])
    assert int(opt.iterations) == STEPS


def test_default_hyperparameters():
    sgd = keras.optimizers.SGD()
    assert sgd.get_config() == {"name": "SGD", "learning_rate": f32(0.01), "momentum": 0.0,
                                "nesterov": False}
    adam = keras.optimizers.Adam()
    config = adam.get_config()
    assert config["learning_rate"] == f32(0.001) and config["beta_1"] == f32(0.9)
    assert config["beta_2"] == f32(0.999) and config["epsilon"] == 1e-7
    assert not config["amsgrad"]


def test_learning_rate_callable_schedule_and_assignment():
    var = tf.Variable(0.0)
    opt = keras.optimizers.SGD(learning_rate=lambda: 0.5)
    opt.apply_gradients([(tf.constant(1.0), var)])
    assert float(var) == -0.5
    # a schedule is called with the step count (0 on the first step)
    opt = keras.optimizers.SGD(learning_rate=lambda step: 1.0 / (tf.cast(step, tf.float32) + 1))
    var.assign(0.0)
    opt.apply_gradients([(tf.constant(1.0), var)])
    opt.apply_gradients([(tf.constant(1.0), var)])
    assert float(var) == -1.5
    # assigning a number to a hyperparameter assigns its variable: a traced step sees it
    opt = keras.optimizers.SGD(learning_rate=0.5)
    lr_var = opt.learning_rate
    step = tf.function(lambda: opt.apply_gradients([(tf.constant(1.0), var)]))
    var.assign(0.0)
    step()
    opt.learning_rate = 0.25
    step()
    assert opt.learning_rate is lr_var and float(var) == -0.75


def test_none_gradients_are_skipped_with_a_warning(caplog):
    a, b = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b")
    opt = keras.optimizers.SGD(learning_rate=1.0)
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        opt.apply_gradients([(None, a), (tf.constant(1.0), b)])
    assert float(a) == 1.0 and float(b) == 1.0 and int(opt.iterations) == 1
    assert "Gradients do not exist for variables ['a:0']" in caplog.text


def test_all_none_gradients_is_an_error():
    a = tf.Variable(1.0, name="a")
    opt = keras.optimizers.Adam()
    with pytest.raises(ValueError) as e:
        opt.apply_gradients([(None, a)])
    assert first_line(e) == (
        "No gradients provided for any variable: ['a:0']. Check that the loss is computed from "
        "the variables inside the GradientTape block and that nothing in between leaves the "
        "tape (NumPy, Python floats, tf.stop_gradient).")
    assert int(opt.iterations) == 0 and opt._checkpoint_slots() == []


def test_bad_apply_gradients_arguments():
    opt = keras.optimizers.SGD()
    with pytest.raises(TypeError) as e:
        opt.apply_gradients([(tf.constant(1.0), tf.constant(2.0))])
    assert first_line(e).startswith("apply_gradients: the second element of pair 0 must be a "
                                    "tf.Variable, got Tensor.")
    with pytest.raises(TypeError) as e:
        opt.apply_gradients([(tf.constant(1.0, tf.float64), tf.Variable(1.0, name="w"))])
    assert first_line(e).startswith("apply_gradients: the gradient of variable w:0 has dtype "
                                    "float64 but the variable is float32.")
    with pytest.raises(ValueError) as e:
        keras.optimizers.SGD(momentum=1.5)
    assert first_line(e).startswith("SGD: `momentum` must be between [0, 1].")
    with pytest.raises(TypeError) as e:
        keras.optimizers.Adam(decay=1e-4)
    assert first_line(e).startswith("Adam: unexpected keyword argument(s) decay.")
    with pytest.raises(ValueError) as e:
        keras.optimizers.Adam(clipnorm=-1.0)
    assert first_line(e).startswith("Adam: clipnorm must be a positive number; got -1.0.")


def test_minimize():
    v = tf.Variable(3.0)
    opt = keras.optimizers.SGD(0.25)
    opt.minimize(lambda: v * v, [v])
    assert float(v) == 1.5
    with tf.GradientTape() as tape:
        loss = v * v
    opt.minimize(loss, lambda: [v], tape=tape)
    assert float(v) == 0.75
    with pytest.raises(ValueError) as e:
        opt.minimize(v * v, [v])
    assert first_line(e).startswith("minimize: `tape` is required when a `Tensor` loss is "
                                    "passed.")


# ---------------------------------------------------------------------- slots

def test_checkpoint_slots_lists_every_slot_in_creation_order():
    a, b = tf.Variable([1.0, 2.0]), tf.Variable(3.0, dtype=tf.float64)
    adam = keras.optimizers.Adam()
    adam.apply_gradients([(tf.constant([1.0, 1.0]), a), (tf.constant(1.0, tf.float64), b)])
    slots = adam._checkpoint_slots()
    assert [(var is x, name) for (var, name, _), x in zip(slots, [a, b, a, b])] == \
        [(True, "m"), (True, "m"), (True, "v"), (True, "v")]
    for var, name, slot in slots:
        assert slot is adam.get_slot(var, name)
        assert slot.dtype == var.dtype and slot.shape == var.shape and not slot.trainable
    # the optimizer's variables: iterations then the slots, each once
    assert len(adam.variables) == 5 and adam.variables[0] is adam.iterations
    assert [id(s) for _, _, s in slots] == [id(v) for v in adam.variables[1:]]
    assert adam.trainable_variables == ()
    # plain module reflection (and so checkpoint attribute edges) never sees a slot
    reflected = tf.Module.variables.fget(adam)
    assert not {id(s) for _, _, s in slots} & {id(v) for v in reflected}
    assert {k for k, v in vars(adam).items() if isinstance(v, tf.Variable)} == \
        {"iter", "learning_rate", "beta_1", "beta_2"}
    adam.apply_gradients([(tf.constant([1.0, 1.0]), a)])  # no new slots on later steps
    assert len(adam._checkpoint_slots()) == 4


def test_sgd_edges():
    sgd = keras.optimizers.SGD(momentum=0.5)
    assert {k for k, v in vars(sgd).items() if isinstance(v, tf.Variable)} == \
        {"iter", "learning_rate", "momentum"}
    assert sgd.iter is sgd.iterations and sgd.iterations.dtype == tf.int64
    assert not sgd.iterations.trainable


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "staged"])
def test_slot_created_is_called_for_each_new_slot(monkeypatch, staged):
    calls = []

    def record(optimizer, variable, slot_name, slot_variable):
        calls.append((optimizer, variable, slot_name, slot_variable, tf.executing_eagerly()))
    monkeypatch.setattr(checkpoint_slots, "slot_created", record)
    a, b = tf.Variable(1.0), tf.Variable([2.0, 3.0])
    opt = keras.optimizers.SGD(momentum=0.9)

    def step():
        opt.apply_gradients([(tf.constant(1.0), a), (tf.constant([1.0, 1.0]), b)])
    if staged:
        step = tf.function(step)
    step()
    step()
    assert [(o is opt, v is x, name) for (o, v, name, _, _), x in zip(calls, [a, b])] == \
        [(True, True, "momentum"), (True, True, "momentum")]
    assert len(calls) == 2
    assert [c[3] for c in calls] == [s for _, _, s in opt._checkpoint_slots()]
    assert all(c[4] for c in calls)  # called eagerly, even while tracing


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "staged"])
def test_deferred_slot_restore_fills_the_new_slot(staged):
    v = tf.Variable(1.0)
    opt = keras.optimizers.SGD(learning_rate=1.0, momentum=0.5)
    checkpoint_slots.defer_slot_restore(opt, v, "momentum", lambda slot: slot.assign(-4.0))

    def step():
        opt.apply_gradients([(tf.constant(1.0), v)])
    if staged:
        step = tf.function(step)
    step()
    # the restored velocity -4 was used by the first step: m = 0.5 * -4 - 1 = -3
    assert float(opt.get_slot(v, "momentum")) == -3.0 and float(v) == -2.0
    assert checkpoint_slots.pending_count(opt) == 0


def test_slots_not_created_on_a_second_trace():
    v = tf.Variable([1.0, 2.0])
    opt = keras.optimizers.Adam()

    @tf.function
    def step(g):
        opt.apply_gradients([(g, v)])
    step(tf.constant([1.0, 1.0]))
    assert step.experimental_get_tracing_count() == 2
    assert len(opt._checkpoint_slots()) == 2 and int(opt.iterations) == 1
    step(tf.constant([2.0, 2.0]))
    assert step.experimental_get_tracing_count() == 2 and len(opt._checkpoint_slots()) == 2
    assert int(opt.iterations) == 2


def test_new_variable_on_a_later_trace_is_an_error():
    v, w = tf.Variable(1.0), tf.Variable(2.0)
    opt = keras.optimizers.SGD(momentum=0.9)
    opt.apply_gradients([(tf.constant(1.0), v)])  # v's slot exists before tracing

    @tf.function
    def step(use_w):
        opt.apply_gradients([(tf.constant(1.0), w if use_w else v)])
    step(False)
    with pytest.raises(ValueError) as e:
        step(True)  # would create w's momentum slot on a non-first trace
    assert first_line(e).startswith("Creating variables on a non-first call to a function "
                                    "decorated with tf.function is not allowed")


# -------------------------------------------------------- training: eager vs staged

class MLP(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(
            8, activation="relu", kernel_initializer=keras.initializers.GlorotUniform(seed=1))
        self.out = keras.layers.Dense(
            3, kernel_initializer=keras.initializers.GlorotUniform(seed=2))

    def call(self, inputs, training=None):
        return self.out(self.hidden(inputs))


def train(staged, backend=None, optimizer=None, steps=4):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(16, 4)).astype(np.float32))
    y = tf.constant(rng.integers(0, 3, size=(16,)).astype(np.int32))
    model = MLP()
    opt = optimizer or keras.optimizers.Adam(learning_rate=0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    if staged:
        step = tf.function(step, backend=backend)
    losses = [float(step(x, y)) for _ in range(steps)]
    if staged:
        assert step.experimental_get_tracing_count() == 2
    return losses, [v.numpy() for v in model.trainable_variables], opt


@pytest.mark.parametrize("backend", [None, "reference"])
@pytest.mark.parametrize("make_opt", [lambda: keras.optimizers.Adam(0.01),
                                      lambda: keras.optimizers.SGD(0.1, momentum=0.9,
                                                                   nesterov=True)],
                         ids=["adam", "sgd"])
def test_training_eager_and_staged_agree(backend, make_opt):
    eager_losses, eager_weights, _ = train(False, optimizer=make_opt())
    staged_losses, staged_weights, opt = train(True, backend, optimizer=make_opt())
    assert eager_losses[-1] < eager_losses[0]
    np.testing.assert_allclose(staged_losses, eager_losses, rtol=1e-6)
    for a, b in zip(eager_weights, staged_weights):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)
    assert int(opt.iterations) == 4


def test_training_step_compiled_with_numba():
    eager_losses, eager_weights, _ = train(False)
    staged_losses, staged_weights, opt = train(True, "numba")
    np.testing.assert_allclose(staged_losses, eager_losses, rtol=1e-5)
    for a, b in zip(eager_weights, staged_weights):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
    assert len(opt._checkpoint_slots()) == 8 and int(opt.iterations) == 4
