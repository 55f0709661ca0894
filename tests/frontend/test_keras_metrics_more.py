"""Regression errors, top-k accuracy, Precision/Recall/AUC and the Huber loss against NumPy
references of Keras's formulas (weighted, accumulated over several updates, reset)."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf

rng = np.random.default_rng(0)
Y = (rng.random(200) > 0.4).astype(np.float32)
P = np.clip(Y * 0.3 + rng.random(200) * 0.7, 0, 1).astype(np.float32)
W = rng.random(200).astype(np.float32)


def confusion(y, p, w, threshold):
    pred = p > threshold
    tp = float(np.sum(w * (pred & (y > 0.5))))
    fp = float(np.sum(w * (pred & (y <= 0.5))))
    fn = float(np.sum(w * (~pred & (y > 0.5))))
    tn = float(np.sum(w * (~pred & (y <= 0.5))))
    return tp, fp, fn, tn


@pytest.mark.parametrize("weighted", [False, True])
def test_precision_recall_accumulate_like_numpy(weighted):
    w = W if weighted else np.ones_like(W)
    precision, recall = tf.keras.metrics.Precision(), tf.keras.metrics.Recall(thresholds=0.6)
    for part in (slice(0, 120), slice(120, 200)):  # two updates accumulate
        kwargs = {"sample_weight": W[part]} if weighted else {}
        precision.update_state(Y[part], P[part], **kwargs)
        recall.update_state(Y[part], P[part], **kwargs)
    tp, fp, _, _ = confusion(Y, P, w, 0.5)
    assert float(precision.result()) == pytest.approx(tp / (tp + fp), rel=1e-5)
    tp, _, fn, _ = confusion(Y, P, w, 0.6)
    assert float(recall.result()) == pytest.approx(tp / (tp + fn), rel=1e-5)
    precision.reset_state()
    assert float(precision.result()) == 0.0  # no predictions: divide_no_nan


def test_auc_is_the_trapezoid_over_keras_thresholds():
    auc = tf.keras.metrics.AUC(num_thresholds=50)
    auc.update_state(Y, P)
    n = 50
    thresholds = [-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7]
    rates = []
    for t in thresholds:
        tp, fp, fn, tn = confusion(Y, P, np.ones_like(Y), t)
        rates.append((fp / (fp + tn), tp / (tp + fn)))
    fpr, tpr = np.array(rates).T
    expected = np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2)
    assert float(auc.result()) == pytest.approx(expected, rel=1e-5)
    sklearn = pytest.importorskip("sklearn.metrics")
    exact = tf.keras.metrics.AUC(num_thresholds=1000)
    exact.update_state(Y, P)
    assert float(exact.result()) == pytest.approx(sklearn.roc_auc_score(Y, P), abs=2e-3)


def test_top_k_and_regression_metrics():
    logits = rng.normal(size=(50, 6)).astype(np.float32)
    labels = rng.integers(0, 6, 50)
    ranks = (logits > logits[np.arange(50), labels][:, None]).sum(axis=1)
    top3 = tf.keras.metrics.SparseTopKCategoricalAccuracy(k=3)
    assert float(top3(labels, logits)) == pytest.approx(np.mean(ranks < 3))
    onehot = np.eye(6, dtype=np.float32)[labels]
    assert float(tf.keras.metrics.TopKCategoricalAccuracy(k=2)(onehot, logits)) == \
        pytest.approx(np.mean(ranks < 2))
    a, b = rng.normal(size=(8, 3)).astype(np.float32), rng.normal(size=(8, 3)).astype(np.float32)
    assert float(tf.keras.metrics.RootMeanSquaredError()(a, b)) == \
        pytest.approx(np.sqrt(np.mean((a - b) ** 2)), rel=1e-5)
    assert float(tf.keras.metrics.MeanAbsoluteError()(a, b)) == \
        pytest.approx(np.mean(np.abs(a - b)), rel=1e-5)


def test_huber_matches_numpy_and_metrics_compile_by_name():
    a, b = rng.normal(size=(8, 3)) * 2, rng.normal(size=(8, 3))
    e = np.abs(a - b)
    ref = np.where(e <= 1.5, 0.5 * e ** 2, 1.5 * (e - 0.75)).mean(-1)
    np.testing.assert_allclose(tf.keras.losses.huber(a, b, delta=1.5).numpy(), ref, rtol=1e-12)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy",
                  metrics=["accuracy", "precision", "recall", "auc"])
    logs = model.evaluate(np.ones((4, 2), np.float32), np.array([[0.], [1.], [1.], [1.]]),
                          verbose=0, return_dict=True)
    assert sorted(logs) == ["accuracy", "auc", "loss", "precision", "recall"]
