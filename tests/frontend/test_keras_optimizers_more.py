"""tf.keras optimizers Adadelta, Ftrl, Lion, Lamb and Adafactor against NumPy references
of their update rules, eager (float64) and staged (float32); schedules, serialization
(issue 18)."""
import numpy as np
import pytest

import stagecraft as tf

opts = tf.keras.optimizers
RNG = np.random.default_rng(3)
W0 = [RNG.normal(size=(2, 3)), RNG.normal(size=(3,))]
GRADS = [[RNG.normal(size=(2, 3)), RNG.normal(size=(3,))] for _ in range(4)]


def f32(x):
    """A hyperparameter as the float32 variable TensorFlow keeps it in."""
    return float(np.float32(x))


def run(opt, dtype=np.float64, staged=False):
    """Applies GRADS to fresh variables; returns their values after each step."""
    vs = [tf.Variable(w.astype(dtype)) for w in W0]

    def step(g0, g1):
        opt.apply_gradients([(g0, vs[0]), (g1, vs[1])])
    if staged:
        step = tf.function(step)
    out = []
    for g in GRADS:
        step(*[tf.constant(x.astype(dtype)) for x in g])
        out.append([v.numpy().copy() for v in vs])
    return vs, out


def adadelta_ref(lr=0.001, rho=0.95, eps=1e-7):
    lr, rho = f32(lr), f32(rho)
    state = [[w.copy(), np.zeros_like(w), np.zeros_like(w)] for w in W0]
    for gs in GRADS:
        for s, g in zip(state, gs):
            w, acc, acc_up = s
            acc = rho * acc + (1 - rho) * g * g
            update = np.sqrt(acc_up + eps) / np.sqrt(acc + eps) * g
            acc_up = rho * acc_up + (1 - rho) * update * update
            s[:] = [w - lr * update, acc, acc_up]
        yield [s[0] for s in state]


def ftrl_ref(lr=0.001, power=-0.5, init=0.1, l1=0.0, l2=0.0, shrinkage=0.0, beta=0.0):
    lr, power, l1 = f32(lr), f32(power), f32(l1)
    l2 = f32(l2) + f32(beta) / (2 * lr)
    state = [[w.copy(), np.full_like(w, init), np.zeros_like(w)] for w in W0]
    for gs in GRADS:
        for s, g in zip(state, gs):
            w, n, z = s
            g_shrunk = g + 2 * shrinkage * w
            n_new = n + g * g
            z = z + g_shrunk - (n_new ** -power - n ** -power) / lr * w
            quadratic = n_new ** -power / lr + 2 * l2
            w = np.where(np.abs(z) > l1, (np.sign(z) * l1 - z) / quadratic, 0.0)
            s[:] = [w, n_new, z]
        yield [s[0] for s in state]


def lion_ref(lr=0.001, b1=0.9, b2=0.99):
    lr, b1, b2 = f32(lr), f32(b1), f32(b2)
    state = [[w.copy(), np.zeros_like(w)] for w in W0]
    for gs in GRADS:
        for s, g in zip(state, gs):
            w, m = s
            s[:] = [w - lr * np.sign(b1 * m + (1 - b1) * g), b2 * m + (1 - b2) * g]
        yield [s[0] for s in state]


def lamb_ref(lr=0.001, b1=0.9, b2=0.999, eps=1e-7):
    lr, b1, b2 = f32(lr), f32(b1), f32(b2)
    state = [[w.copy(), np.zeros_like(w), np.zeros_like(w)] for w in W0]
    for t, gs in enumerate(GRADS, 1):
        for s, g in zip(state, gs):
            w, m, v = s
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            u = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
            ratio = np.linalg.norm(w) / np.linalg.norm(u)
            s[:] = [w - lr * ratio * u, m, v]
        yield [s[0] for s in state]


def adafactor_ref(lr=0.001, decay=-0.8, eps1=1e-30, eps2=1e-3, clip=1.0):
    lr = f32(lr)
    state = [[w.copy(), np.zeros(w.shape[:-1]), np.zeros(w.shape[-1:]), np.zeros_like(w)]
             if w.ndim >= 2 else [w.copy(), None, None, np.zeros_like(w)] for w in W0]
    for t, gs in enumerate(GRADS, 1):
        rho = min(lr, 1 / np.sqrt(t))
        beta = 1 - t ** decay
        for s, g in zip(state, gs):
            w, r, c, v = s
            alpha = max(eps2, np.sqrt(np.mean(w * w))) * rho
            g2 = g * g + eps1
            if w.ndim >= 2:
                r = beta * r + (1 - beta) * g2.mean(-1)
                c = beta * c + (1 - beta) * g2.mean(-2)
                v = np.outer(r / r.mean(), c)
            else:
                v = beta * v + (1 - beta) * g2
            u = g / np.sqrt(v)
            u = u / max(1.0, np.sqrt(np.mean(u * u)) / clip)
            s[:] = [w - alpha * u, r, c, v]
        yield [s[0] for s in state]


CASES = {
    "adadelta": (lambda: opts.Adadelta(learning_rate=0.5, rho=0.8), lambda: adadelta_ref(
        0.5, 0.8), ["accum_grad", "accum_var"]),
    "ftrl": (lambda: opts.Ftrl(0.1, l1_regularization_strength=0.01,
                               l2_regularization_strength=0.02, beta=0.1),
             lambda: ftrl_ref(0.1, l1=0.01, l2=0.02, beta=0.1), ["accumulator", "linear"]),
    "ftrl_shrinkage_power": (
        lambda: opts.Ftrl(0.1, learning_rate_power=-0.7, initial_accumulator_value=0.5,
                          l2_shrinkage_regularization_strength=0.05),
        lambda: ftrl_ref(0.1, power=-0.7, init=0.5, shrinkage=0.05), ["accumulator", "linear"]),
    "lion": (lambda: opts.Lion(0.01, beta_1=0.8), lambda: lion_ref(0.01, 0.8), ["m"]),
    "lamb": (lambda: opts.Lamb(0.01), lambda: lamb_ref(0.01), ["m", "v"]),
    "adafactor": (lambda: opts.Adafactor(0.1, clip_threshold=0.5),
                  lambda: adafactor_ref(0.1, clip=0.5), ["r", "c", "v"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy_reference_eager(name):
    make, ref, slots = CASES[name]
    opt = make()
    _, got = run(opt)
    for step, want in zip(got, ref()):
        for g, w in zip(step, want):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    assert opt.get_slot_names() == slots and int(opt.iterations) == len(GRADS)


@pytest.mark.parametrize("name", ["adafactor", "ftrl", "lamb"])
def test_staged_float32_matches_reference(name):
    make, ref, _ = CASES[name]
    _, got = run(make(), np.float32, staged=True)
    for g, w in zip(got[-1], list(ref())[-1]):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def test_adafactor_factored_slots_have_row_and_column_shapes():
    opt = opts.Adafactor()
    vs, _ = run(opt)
    assert opt.get_slot(vs[0], "r").shape == [2] and opt.get_slot(vs[0], "c").shape == [3]
    with pytest.raises(KeyError):
        opt.get_slot(vs[1], "r")  # a vector keeps only v


def test_serialize_round_trip_with_schedule():
    schedule = opts.schedules.CosineDecayRestarts(0.1, 5, t_mul=1.0, m_mul=0.5)
    opt = opts.Ftrl(learning_rate=schedule, l1_regularization_strength=0.1)
    again = opts.deserialize(opts.serialize(opt))
    assert type(again) is opts.Ftrl and type(again.learning_rate) is type(schedule)
    assert again.learning_rate.get_config() == schedule.get_config()
    assert again.get_config()["l1_regularization_strength"] == f32(0.1)
    for name in ["adadelta", "adafactor", "ftrl", "lion", "lamb"]:
        o = opts.get(name)
        assert opts.get(opts.serialize(o)).get_config() == o.get_config()


def test_cosine_decay_restarts_matches_numpy():
    s = opts.schedules.CosineDecayRestarts(2.0, 4, t_mul=2.0, m_mul=0.5, alpha=0.1)
    for step in [0, 3, 4, 7, 11, 12, 27, 30]:
        # periods [0, 4), [4, 12), [12, 28), ...
        i = int(np.floor(np.log2(step / 4 + 1)))
        start, length = 4 * (2 ** i - 1), 4 * 2 ** i
        frac = (step - start) / length
        want = 2.0 * (0.9 * 0.5 * 0.5 ** i * (1 + np.cos(np.pi * frac)) + 0.1)
        np.testing.assert_allclose(float(s(step)), want, rtol=1e-5)


def test_errors_name_the_problem():
    with pytest.raises(ValueError) as e:
        opts.Lion(beta_1=0.0)
    assert str(e.value).startswith("Lion: beta_1 must be in (0, 1]; got 0.0.")
    with pytest.raises(ValueError) as e:
        opts.Ftrl(learning_rate_power=0.5)
    assert str(e.value).startswith("Ftrl: learning_rate_power must be less than or equal")
    with pytest.raises(ValueError) as e:
        opts.deserialize({"class_name": "Sophia", "config": {}})
    assert str(e.value).startswith("Unknown optimizer: 'Sophia'. Valid names are")
    with pytest.raises(ValueError) as e:
        opts.schedules.deserialize({"class_name": "Warmup", "config": {}})
    assert str(e.value).startswith("Unknown learning rate schedule 'Warmup'")


@pytest.mark.parametrize("staged", [False, True], ids=["eager", "staged"])
def test_loss_scale_optimizer_skips_overflows_and_adapts_the_scale(staged):
    opt = opts.LossScaleOptimizer(opts.SGD(0.5), initial_scale=4.0, dynamic_growth_steps=2)
    var = tf.Variable([1.0, 2.0])
    step = tf.function(lambda g: opt.apply_gradients([(g, var)])) if staged else \
        (lambda g: opt.apply_gradients([(g, var)]))
    grads = [[4.0, 8.0], [8.0, 8.0], [np.inf, 1.0], [np.nan, 0.0], [2.0, 2.0], [2.0, 2.0]]
    w, scale, counter = np.array([1.0, 2.0]), 4.0, 0
    for g in grads:
        step(tf.constant(g, tf.float32))
        g = np.array(g)
        if np.isfinite(g).all():
            w = w - 0.5 * g / scale
            counter += 1
            if counter == 2:
                scale, counter = scale * 2, 0
        else:
            scale, counter = scale / 2, 0
        np.testing.assert_allclose(var.numpy(), w, rtol=1e-6)
        assert float(opt.dynamic_scale) == scale and int(opt.step_counter) == counter
    assert int(opt.iterations) == 4  # skipped steps do not count
    assert float(opt.scale_loss(tf.constant(3.0))) == 3.0 * scale
    again = opts.deserialize(opts.serialize(opt))
    assert type(again.inner_optimizer) is opts.SGD and again.dynamic_growth_steps == 2
    opt.learning_rate = 0.25
    assert float(opt.inner_optimizer.learning_rate) == 0.25


@pytest.mark.parametrize("name", ["adadelta", "adafactor", "ftrl", "lion", "lamb"])
def test_fit_with_each_new_optimizer_lowers_the_loss(name):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
    # Adadelta's steps start at sqrt(epsilon): TF's default 1e-7 barely moves in 20 steps.
    config = {"adadelta": {"learning_rate": 1.0, "epsilon": 1e-2},
              "adafactor": {"learning_rate": 0.1}, "ftrl": {"learning_rate": 0.5},
              "lion": {"learning_rate": 0.05}, "lamb": {"learning_rate": 0.05}}[name]
    model.compile(optimizer=opts.get({"class_name": name, "config": config}), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=5, verbose=0).history["loss"]
    assert history[-1] < 0.7 * history[0], history


def test_cosine_decay_with_warmup_matches_numpy_and_drives_an_optimizer():
    s = opts.schedules.CosineDecay(0.1, 20, alpha=0.2, warmup_target=0.5, warmup_steps=5)
    for step in [0, 1, 4, 5, 12, 25, 40]:
        if step < 5:
            want = 0.1 + (0.5 - 0.1) * step / 5
        else:
            t = min(step - 5, 20) / 20
            want = 0.5 * (0.8 * 0.5 * (1 + np.cos(np.pi * t)) + 0.2)
        np.testing.assert_allclose(float(s(step)), want, rtol=1e-5)
    again = opts.schedules.deserialize(opts.schedules.serialize(s))
    assert again.get_config() == s.get_config()
    var = tf.Variable(0.0)
    sgd = opts.SGD(learning_rate=s)
    step = tf.function(lambda: sgd.apply_gradients([(tf.constant(-1.0), var)]))
    for _ in range(3):
        step()
    np.testing.assert_allclose(float(var), 0.1 + 0.18 + 0.26, rtol=1e-5)  # lr at steps 0, 1, 2
