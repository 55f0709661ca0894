"""Keras 3's Circle loss (Sun et al., 2020) for metric learning: embeddings of the same
label are pulled together and others pushed apart, each pair weighted by how far it is from
its optimum. ``keras.losses.circle`` and ``Circle``; the loss of an example whose pairs are
all satisfied is 0 and, as Keras masks them, leaves the mean."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras.basic_losses import LossFunctionWrapper, Reduction, reduce_masked
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops import stable_math_ops as _stable

__all__ = ["Circle", "circle"]

_NEG = -1e30  # log-space "excluded": finite, so an empty row gives 0, never NaN


def _pair_masks(labels: Tensor, ref_labels: Tensor, remove_diagonal: bool) -> tuple:
    """Keras's ``build_pos_neg_masks``: same-label pairs (without the diagonal) and the
    other pairs."""
    query = _a.reshape(labels, [-1, 1])
    keys = _a.reshape(ref_labels, [1, -1])
    positive = _m.equal(query, keys)
    negative = _m.logical_not(positive)
    if remove_diagonal:
        rows = _a.reshape(_a.range(0, _a.shape(query)[0]), [-1, 1])
        cols = _a.reshape(_a.range(0, _a.shape(keys)[1]), [1, -1])
        positive = _m.logical_and(positive, _m.not_equal(rows, cols))
    return positive, negative


def circle(y_true: Any, y_pred: Any, ref_labels: Any = None, ref_embeddings: Any = None,
           remove_diagonal: bool = True, gamma: float = 80.0, margin: float = 0.4) -> Tensor:
    """The Circle loss of each embedding in ``y_pred`` (``(batch, dim)``, L2-normalized)
    against ``ref_embeddings`` (default the batch itself) with integer labels:
    ``softplus(logsumexp(-gamma a_p (m - d_p)) + logsumexp(gamma a_n (1 - m - d_n)))`` over
    its positive and negative pairs, ``d`` the cosine distance, ``a_p = m + d_p`` and
    ``a_n = 1 + m - d_n`` held constant.

    >>> import stagecraft as tf
    >>> emb = tf.constant([[1., 0.], [1., 0.], [0., 1.]])
    >>> [round(v, 4) for v in tf.keras.losses.circle([0, 0, 1], emb).numpy().tolist()]
    [0.0, 0.0, 0.0]
    """
    y_pred = y_pred if isinstance(y_pred, Tensor) else convert_to_tensor(y_pred)
    labels = _m.cast(convert_to_tensor(y_true), _dt.int32)
    refs = y_pred if ref_embeddings is None else _m.cast(convert_to_tensor(ref_embeddings),
                                                         y_pred.dtype)
    ref_labels = labels if ref_labels is None else _m.cast(convert_to_tensor(ref_labels),
                                                           _dt.int32)
    distance = _m.maximum(_m.subtract(1.0, _m.matmul(y_pred, refs, transpose_b=True)), 0.0)
    positive, negative = _pair_masks(labels, ref_labels, remove_diagonal)
    pos_weights = _a.stop_gradient(_m.multiply(_m.add(margin, distance),
                                               _m.cast(positive, distance.dtype)))
    neg_weights = _a.stop_gradient(_m.multiply(_m.subtract(1.0 + margin, distance),
                                               _m.cast(negative, distance.dtype)))
    pos_logits = _m.multiply(-gamma, _m.multiply(pos_weights, _m.subtract(margin, distance)))
    neg_logits = _m.multiply(gamma, _m.multiply(neg_weights,
                                                _m.subtract(1.0 - margin, distance)))
    excluded = _m.add(_m.multiply(distance, 0.0), _NEG)
    p_loss = _stable.reduce_logsumexp(_m.where(positive, pos_logits, excluded), axis=1)
    n_loss = _stable.reduce_logsumexp(_m.where(negative, neg_logits, excluded), axis=1)
    return _m.softplus(_m.add(p_loss, n_loss))


class Circle(LossFunctionWrapper):
    """The Circle loss (see ``circle``), averaged over the examples with a positive loss
    (Keras masks the others out of the mean).

    >>> import stagecraft as tf
    >>> emb = tf.nn.l2_normalize(tf.constant([[1., 0.], [0., 1.], [1., 0.1]]), axis=1)
    >>> float(tf.keras.losses.Circle()([0, 0, 1], emb)) > 50  # same label, far apart
    True
    """

    def __init__(self, gamma: float = 80.0, margin: float = 0.4, remove_diagonal: bool = True,
                 reduction: str = Reduction.AUTO, name: str = "circle"):
        super().__init__(circle, reduction, name, gamma=gamma, margin=margin,
                         remove_diagonal=remove_diagonal)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        losses = self.call(y_true, y_pred)
        return reduce_masked(losses, _m.greater(losses, 0.0), self.reduction, sample_weight)
