"""tf.keras.losses beyond the basic ones: values against NumPy references written from
Keras's formulas, reductions, masking, gradients, a staged check and serialization
(issue 18)."""
import numpy as np
import pytest
from scipy import special

import stagecraft as tf

L = tf.keras.losses
EPS = 1e-7
RNG = np.random.default_rng(7)
P = special.softmax(RNG.normal(size=(4, 3)), -1)          # probabilities
Q = special.softmax(RNG.normal(size=(4, 3)), -1)
ONEHOT = np.eye(3)[[0, 2, 1, 2]]
SIGNED = np.where(RNG.random((4, 3)) > 0.5, 1.0, -1.0)
REAL = RNG.normal(size=(4, 3))
POS = RNG.random((4, 3)) + 0.1


def hinge_ref(t, p):
    return np.maximum(1 - t * p, 0).mean(-1)


def bce_terms(t, p):
    p = np.clip(p, EPS, 1 - EPS)
    return -(t * np.log(p + EPS) + (1 - t) * np.log(1 - p + EPS))


def binary_focal_ref(t, p, gamma=2.0, alpha=0.25, balance=False):
    p_t = t * p + (1 - t) * (1 - p)
    out = (1 - p_t) ** gamma * bce_terms(t, p)
    if balance:
        out = out * (t * alpha + (1 - t) * (1 - alpha))
    return out.mean(-1)


def cat_focal_ref(t, p, gamma=2.0, alpha=0.25):
    p = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
    return (alpha * (1 - p) ** gamma * -t * np.log(p)).sum(-1)


def unit(x):
    return x / np.sqrt(np.maximum((x * x).sum(-1, keepdims=True), 1e-12))


BINARY = (RNG.random((4, 3)) > 0.5).astype(float)
CASES = {
    "hinge": (L.hinge, SIGNED, REAL, hinge_ref),
    "hinge_01_labels": (L.hinge, BINARY, REAL, lambda t, p: hinge_ref(2 * t - 1, p)),
    "squared_hinge": (L.squared_hinge, SIGNED, REAL,
                      lambda t, p: (np.maximum(1 - t * p, 0) ** 2).mean(-1)),
    "categorical_hinge": (L.categorical_hinge, ONEHOT, REAL, lambda t, p: np.maximum(
        ((1 - t) * p).max(-1) - (t * p).sum(-1) + 1, 0)),
    "log_cosh": (L.logcosh, REAL, Q, lambda t, p: np.log(np.cosh(p - t)).mean(-1)),
    "poisson": (L.poisson, POS, Q, lambda t, p: (p - t * np.log(p + EPS)).mean(-1)),
    "kld": (L.KLD, P, Q, lambda t, p: (t * np.log(t / p)).sum(-1)),
    "cosine_similarity": (L.cosine_similarity, REAL, POS,
                          lambda t, p: -(unit(t) * unit(p)).sum(-1)),
    "mape": (L.MAPE, REAL, POS, lambda t, p: 100 * np.abs((t - p) / np.abs(t)).mean(-1)),
    "msle": (L.MSLE, POS, Q, lambda t, p: ((np.log1p(p) - np.log1p(t)) ** 2).mean(-1)),
    "binary_focal": (L.binary_focal_crossentropy, BINARY, Q, binary_focal_ref),
    "binary_focal_balanced_logits": (
        lambda t, p: L.binary_focal_crossentropy(t, p, apply_class_balancing=True, gamma=1.5,
                                                 from_logits=True),
        BINARY, REAL, lambda t, p: binary_focal_ref(t, special.expit(p), 1.5, balance=True)),
    "categorical_focal": (L.categorical_focal_crossentropy, ONEHOT, P, cat_focal_ref),
    "categorical_focal_logits": (
        lambda t, p: L.categorical_focal_crossentropy(t, p, from_logits=True, alpha=0.5),
        ONEHOT, REAL, lambda t, p: cat_focal_ref(t, special.softmax(p, -1), alpha=0.5)),
    "generalized_ce": (lambda t, p: L.categorical_generalized_cross_entropy(t, p, q=0.7),
                       np.array([0, 2, 1, 2]), P,
                       lambda t, p: (1 - p[np.arange(4), t] ** 0.7) / 0.7),
    "dice": (lambda t, p: L.dice(t, p, axis=-1), BINARY, Q, lambda t, p: 1 - 2 * (t * p).sum(
        -1) / (t.sum(-1) + p.sum(-1) + EPS)),
    "tversky": (lambda t, p: L.tversky(t, p, alpha=0.7, beta=0.3, axis=-1), BINARY, Q,
                lambda t, p: 1 - (t * p).sum(-1) / ((t * p).sum(-1) + 0.7 * ((1 - t) * p).sum(
                    -1) + 0.3 * (t * (1 - p)).sum(-1) + EPS)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients(name):
    fn, y_true, y_pred, ref = CASES[name]
    got = fn(tf.constant(y_true), tf.constant(y_pred)).numpy()
    np.testing.assert_allclose(got, ref(y_true, y_pred), rtol=1e-6, atol=1e-9)
    x = tf.constant(y_pred)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(fn(tf.constant(y_true), x))
    grad = tape.gradient(loss, x).numpy()
    eps, want = 1e-6, np.zeros_like(y_pred)
    for i in range(y_pred.size):
        d = np.zeros(y_pred.size)
        d[i] = eps
        d = d.reshape(y_pred.shape)
        want.flat[i] = (ref(y_true, y_pred + d).sum() - ref(y_true, y_pred - d).sum()) / (2 * eps)
    np.testing.assert_allclose(grad, want, rtol=1e-4, atol=1e-6)


CLASSES = [(L.Hinge(), L.hinge), (L.SquaredHinge(), L.squared_hinge),
           (L.CategoricalHinge(), L.categorical_hinge), (L.LogCosh(), L.log_cosh),
           (L.Poisson(), L.poisson), (L.KLDivergence(), L.kl_divergence),
           (L.CosineSimilarity(), L.cosine_similarity),
           (L.MeanAbsolutePercentageError(), L.mape), (L.MeanSquaredLogarithmicError(), L.msle),
           (L.BinaryFocalCrossentropy(), L.binary_focal_crossentropy),
           (L.CategoricalFocalCrossentropy(), L.categorical_focal_crossentropy)]


@pytest.mark.parametrize("obj,fn", CLASSES, ids=lambda o: type(o).__name__)
def test_classes_reduce_like_keras(obj, fn):
    t, p = tf.constant(P), tf.constant(Q)
    per = fn(t, p).numpy()
    w = np.array([0.5, 2.0, 0.0, 1.0])
    np.testing.assert_allclose(float(obj(t, p)), per.mean(), rtol=1e-6)
    np.testing.assert_allclose(float(obj(t, p, sample_weight=w)), (per * w).mean(), rtol=1e-6)
    config = obj.get_config()
    for reduction, want in [("sum", (per * w).sum()), ("none", per * w),
                            ("mean_with_sample_weight", (per * w).sum() / w.sum())]:
        other = type(obj).from_config({**config, "reduction": reduction})
        np.testing.assert_allclose(other(t, p, sample_weight=w).numpy(), want, rtol=1e-6)
    assert type(obj).from_config(config).get_config() == config


def test_sparse_categorical_crossentropy_ignore_class_masks_the_mean():
    labels = np.array([0, -1, 2, -1])
    logits = REAL
    per = -special.log_softmax(logits, -1)[np.arange(4), np.maximum(labels, 0)]
    valid = labels != -1
    loss = L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
    np.testing.assert_allclose(float(loss(labels, logits)), per[valid].mean(), rtol=1e-6)
    summed = L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1,
                                             reduction="sum")
    np.testing.assert_allclose(float(summed(labels[:, None], logits)), per[valid].sum(),
                               rtol=1e-6)
    assert loss.get_config()["ignore_class"] == -1
    x = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(x)
        value = loss(labels, x)
    grad = tape.gradient(value, x).numpy()
    assert np.all(grad[~valid] == 0) and np.all(np.abs(grad[valid]) > 0)


def test_staged_matches_eager():
    objs = [L.Huber(), L.LogCosh(), L.BinaryFocalCrossentropy(from_logits=True),
            L.CategoricalFocalCrossentropy(), L.KLDivergence(), L.Dice(),
            L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)]

    @tf.function
    def f(t, p, labels):
        return [o(labels if i == len(objs) - 1 else t, p) for i, o in enumerate(objs)]
    t, p, labels = tf.constant(P), tf.constant(Q), tf.constant([1, -1, 0, 2])
    for o, got in zip(objs, f(t, p, labels)):
        want = o(labels if o is objs[-1] else t, p)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_get_serialize_deserialize():
    for name in ["hinge", "squared_hinge", "categorical_hinge", "logcosh", "poisson", "kld",
                 "kullback_leibler_divergence", "mape", "msle", "cosine_similarity"]:
        fn = L.get(name)
        assert callable(fn) and L.deserialize(L.serialize(fn)) is fn
    assert isinstance(L.get("Poisson"), L.Poisson)
    focal = L.BinaryFocalCrossentropy(gamma=3.0, apply_class_balancing=True, name="f")
    again = L.get(L.serialize(focal))
    assert type(again) is L.BinaryFocalCrossentropy and again.get_config() == focal.get_config()


def test_errors_name_the_problem():
    with pytest.raises(ValueError) as e:
        L.deserialize({"class_name": "Nope", "config": {}})
    assert str(e.value).splitlines()[0].startswith("Unknown loss class 'Nope': known classes")
    with pytest.raises(ValueError) as e:
        L.serialize(lambda t, p: t)
    assert "neither a Loss object nor a built-in loss function" in str(e.value)
    with pytest.raises(ValueError) as e:
        L.Hinge(reduction="average")
    assert str(e.value).startswith("Invalid Reduction Key: 'average'")
    with pytest.raises(ValueError) as e:
        L.CategoricalGeneralizedCrossEntropy(q=0.0)
    assert "q must be in (0, 1]" in str(e.value)


def ctc_brute_force(labels, logits):
    """-log of the summed probability of every path that collapses to ``labels``."""
    import itertools
    probs = special.softmax(logits, -1)
    t_len, classes = probs.shape
    total = 0.0
    for path in itertools.product(range(classes), repeat=t_len):
        merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        if [c for c in merged if c != 0] == list(labels):
            total += np.prod([probs[t, c] for t, c in enumerate(path)])
    return -np.log(total)


def test_ctc_matches_brute_force_with_gradients_and_staged():
    logits = RNG.normal(size=(4, 5, 3))
    y_true = np.array([[1, 2, -1], [1, 1, -1], [2, -1, -1], [-1, -1, -1]])
    want = [ctc_brute_force([c for c in row if c != -1], lg) for row, lg in zip(y_true, logits)]
    got = L.ctc(tf.constant(y_true), tf.constant(logits)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9)
    np.testing.assert_allclose(float(L.CTC()(y_true, logits)), np.mean(want), rtol=1e-9)
    x = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(L.ctc(tf.constant(y_true), x))
    grad = tape.gradient(loss, x).numpy()
    eps = 1e-6
    for index in [(0, 0, 1), (1, 2, 0), (2, 4, 2), (3, 1, 1)]:
        d = np.zeros_like(logits)
        d[index] = eps
        numeric = (sum(ctc_brute_force([c for c in r if c != -1], lg) for r, lg in
                       zip(y_true, logits + d)) -
                   sum(ctc_brute_force([c for c in r if c != -1], lg) for r, lg in
                       zip(y_true, logits - d))) / (2 * eps)
        np.testing.assert_allclose(grad[index], numeric, rtol=1e-5, atol=1e-7)
    staged = tf.function(lambda t, p: L.ctc(t, p))(tf.constant(y_true), x)
    np.testing.assert_allclose(staged.numpy(), got, rtol=1e-12)


def circle_ref(labels, emb, gamma=80.0, m=0.4):
    d = np.maximum(1 - emb @ emb.T, 0)
    pos = (labels[:, None] == labels[None, :]) & ~np.eye(len(labels), dtype=bool)
    neg = labels[:, None] != labels[None, :]

    def lse(x, mask):
        return np.array([special.logsumexp(r[k]) if k.any() else -np.inf
                         for r, k in zip(x, mask)])
    p = lse(-gamma * (m + d) * (m - d), pos)
    n = lse(gamma * (1 + m - d) * (1 - m - d), neg)
    return np.logaddexp(0, p + n)


def test_circle_loss_matches_numpy_and_masks_the_mean():
    emb = RNG.normal(size=(6, 4))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    labels = np.array([0, 0, 1, 1, 2, 0])
    want = circle_ref(labels, emb, gamma=8.0)
    got = L.circle(labels, tf.constant(emb), gamma=8.0).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    loss = L.Circle(gamma=8.0)
    np.testing.assert_allclose(float(loss(labels, emb)), want[want > 0].mean(), rtol=1e-6)
    x = tf.constant(emb)
    with tf.GradientTape() as tape:
        tape.watch(x)
        value = loss(labels, x)
    assert np.isfinite(tape.gradient(value, x).numpy()).all()
    assert L.get("circle") is L.circle and L.deserialize(L.serialize(loss)).get_config() == \
        loss.get_config()
