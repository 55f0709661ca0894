"""``tf.image``'s non-max suppression family: greedy selection of boxes by descending score,
suppressing (or, for soft-NMS, down-weighting) the boxes that overlap a selected one by more
than the threshold. One batched ``while_loop`` (eager or staged) selects a box per row and
step into buffers the size of the box count; ``non_max_suppression`` returns the first
``count`` entries, so its size is known only when it runs (like ``tf.where``), the padded
variant returns fixed-size rows and the valid counts."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.image_common import static_float, static_int
from stagecraft.ops.indexing_ops import top_k
from stagecraft.ops.manip_ops import pad
from stagecraft.staging.while_loop import while_loop

Similarity = Callable[[Tensor], Tensor]  # chosen index per row [b] -> similarity [b, n]


def _iou(boxes: Tensor) -> Similarity:
    """Intersection over union of the chosen box of each row with every box of that row (0
    where either box has no area); ``boxes`` [b, n, 4] as [y1, x1, y2, x2], either order."""
    y1, x1, y2, x2 = _a.unstack(boxes, num=4, axis=-1)
    ymin, xmin, ymax, xmax = (_m.minimum(y1, y2), _m.minimum(x1, x2), _m.maximum(y1, y2),
                              _m.maximum(x1, x2))
    area = _m.multiply(_m.subtract(ymax, ymin), _m.subtract(xmax, xmin))

    def similarity(i: Tensor) -> Tensor:
        def at(t: Tensor) -> Tensor:
            return _a.gather(t, _a.expand_dims(i, 1), axis=1, batch_dims=1)  # [b, 1]
        zero = _a.zeros_like(area)
        h = _m.maximum(_m.subtract(_m.minimum(ymax, at(ymax)), _m.maximum(ymin, at(ymin))), zero)
        w = _m.maximum(_m.subtract(_m.minimum(xmax, at(xmax)), _m.maximum(xmin, at(xmin))), zero)
        inter = _m.multiply(h, w)
        union = _m.subtract(_m.add(area, at(area)), inter)
        valid = _m.logical_and(_m.greater(area, zero), _m.greater(at(area), zero))
        return _m.where(valid, _m.divide(inter, _m.where(valid, union, _a.ones_like(union))),
                        zero)
    return similarity


def _greedy(scores: Tensor, limit: Any, similar: Similarity, threshold: Any,
            score_threshold: Any, soft_sigma: float = 0.0,
            inclusive: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """Per row of ``scores`` [b, n]: (count [b], chosen indices [b, n], their scores [b, n]).
    Each step takes the highest live score (ties: lower index), drops every box whose
    similarity s to it is >= threshold (> with ``inclusive=False``) and, for soft-NMS,
    multiplies the other live scores by ``exp(-0.5 / soft_sigma * s^2)``; boxes at or below
    score_threshold leave."""
    limit = _m.cast(limit, "int32")
    thr = _m.cast(threshold, "float32")
    floor = _m.cast(score_threshold, "float32")
    decay = -0.5 / soft_sigma if soft_sigma > 0 else 0.0
    slots = _a.expand_dims(_a.range(_a.shape(scores)[1], dtype="int32"), 0)   # [1, n]
    minus_inf = _a.fill(_a.shape(scores), float("-inf"))

    def step_rows(count: Tensor, alive: Tensor) -> Tensor:
        return _m.logical_and(_m.less(count, limit), _m.reduce_any(alive, axis=1))

    def more(count: Tensor, alive: Tensor, current: Tensor, chosen: Tensor,
             kept: Tensor) -> Tensor:
        return _m.reduce_any(step_rows(count, alive))

    def pick(count: Tensor, alive: Tensor, current: Tensor, chosen: Tensor,
             kept: Tensor) -> tuple:
        live = _m.where(alive, current, minus_inf)
        i = _m.argmax(live, axis=1, output_type="int32")                      # [b]
        best = _m.reduce_max(live, axis=1, keepdims=True)                      # [b, 1]
        moving = step_rows(count, alive)
        here = _m.logical_and(_m.equal(slots, _a.expand_dims(count, 1)),
                              _a.expand_dims(moving, 1))
        chosen = _m.where(here, _a.expand_dims(i, 1) + _a.zeros_like(chosen), chosen)
        kept = _m.where(here, best + _a.zeros_like(kept), kept)
        s = similar(i)
        if decay:
            weight = _m.exp(_m.multiply(_m.square(s), decay))
            current = _m.where(_a.expand_dims(moving, 1), _m.multiply(current, weight), current)
        gone = _m.logical_or(_m.logical_or(_m.equal(slots, _a.expand_dims(i, 1)),
                                           (_m.greater_equal if inclusive else _m.greater)(s,
                                                                                           thr)),
                             _m.less_equal(current, floor))
        alive = _m.logical_and(alive, _m.logical_not(_m.logical_and(
            gone, _a.expand_dims(moving, 1))))
        return _m.add(count, _m.cast(moving, "int32")), alive, current, chosen, kept

    alive = _m.greater(scores, floor)
    start = (_a.zeros(_a.shape(scores)[:1], "int32"), alive, scores,
             _a.zeros(_a.shape(scores), "int32"), _a.zeros_like(scores))
    count, _, _, chosen, kept = while_loop(more, pick, start)
    return count, chosen, kept


def _inputs(api: str, boxes: Any, scores: Any, iou_threshold: Any,
            batched: bool = False) -> tuple[Tensor, Tensor]:
    boxes = _m.cast(convert_to_tensor(boxes), "float32")
    scores = _m.cast(convert_to_tensor(scores), "float32")
    rank = boxes.shape.rank
    if rank is None or rank < 2 or (rank != 2 and not batched) or boxes.shape[-1] not in (4,
                                                                                          None):
        want = "[..., num_boxes, 4]" if batched else "[num_boxes, 4]"
        raise ValueError(f"{api}: boxes must have shape {want}, got {boxes.shape}.")
    if scores.shape.rank != rank - 1:
        raise ValueError(f"{api}: scores must have shape {boxes.shape[:-1]} (one per box), "
                         f"got {scores.shape}.")
    nb, ns = boxes.shape.as_list()[-2], scores.shape.as_list()[-1]
    if nb is not None and ns is not None and nb != ns:
        raise ValueError(f"{api}: scores has {ns} entries but boxes has {nb} boxes.")
    _check_iou(api, iou_threshold)
    return boxes, scores


def _check_iou(api: str, iou_threshold: Any) -> None:
    iou = static_float(iou_threshold, api, "iou_threshold")
    if iou is not None and not 0.0 <= iou <= 1.0:
        raise InvalidArgumentError(f"{api}: iou_threshold must be in [0, 1], got {iou}.")


def non_max_suppression(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any = 0.5,
                        score_threshold: Any = float("-inf"), name: str | None = None) -> Tensor:
    """The int32 indices of at most ``max_output_size`` boxes ([num_boxes, 4] as
    [y1, x1, y2, x2], either corner order), chosen greedily by descending ``scores`` (ties:
    lower index first) among those scoring above ``score_threshold``, skipping boxes whose
    IoU with an already chosen box reaches ``iou_threshold`` (as TF 2's kernel, which compares
    with >=, so ``iou_threshold=0`` suppresses even disjoint boxes).

    >>> import stagecraft as tf
    >>> boxes = [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]
    >>> tf.image.non_max_suppression(boxes, [0.9, 0.8, 0.7], 3).numpy().tolist()
    [0, 2]
    """
    return non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold,
                                           score_threshold)[0]


def non_max_suppression_with_scores(boxes: Any, scores: Any, max_output_size: Any,
                                    iou_threshold: Any = 0.5,
                                    score_threshold: Any = float("-inf"),
                                    soft_nms_sigma: float = 0.0,
                                    name: str | None = None) -> tuple[Tensor, Tensor]:
    """``non_max_suppression`` that also returns the chosen boxes' scores; with
    ``soft_nms_sigma > 0`` it is soft-NMS: instead of dropping the boxes that overlap a chosen
    one, it multiplies their scores by ``exp(-iou^2 / (2 soft_nms_sigma))`` (and drops them
    once they fall to ``score_threshold``), so the returned scores are the decayed ones.

    >>> import stagecraft as tf
    >>> boxes = [[0, 0, 1, 1], [0, 0.5, 1, 1.5]]
    >>> i, s = tf.image.non_max_suppression_with_scores(boxes, [0.9, 0.8], 2, 1.0,
    ...                                                 soft_nms_sigma=0.5)
    >>> i.numpy().tolist(), [round(float(v), 4) for v in s]
    ([0, 1], [0.9, 0.7159])
    """
    api = "tf.image.non_max_suppression"
    boxes, scores = _inputs(api, boxes, scores, iou_threshold)
    sigma = static_float(soft_nms_sigma, api, "soft_nms_sigma")
    if sigma is None or sigma < 0:
        raise InvalidArgumentError(f"{api}: soft_nms_sigma must be a non-negative number known "
                                   f"when traced, got {soft_nms_sigma}.")
    count, chosen, kept = _greedy(_a.expand_dims(scores, 0), max_output_size,
                                  _iou(_a.expand_dims(boxes, 0)), iou_threshold,
                                  score_threshold, sigma)
    return chosen[0, :count[0]], kept[0, :count[0]]


def non_max_suppression_overlaps(overlaps: Any, scores: Any, max_output_size: Any,
                                 overlap_threshold: Any = 0.5,
                                 score_threshold: Any = float("-inf"),
                                 name: str | None = None) -> Tensor:
    """``non_max_suppression`` with the pairwise overlaps given as a [num_boxes, num_boxes]
    matrix instead of computed from boxes.

    >>> import stagecraft as tf
    >>> overlaps = [[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]]
    >>> tf.image.non_max_suppression_overlaps(overlaps, [0.5, 0.8, 0.7], 3).numpy().tolist()
    [1, 2]
    """
    api = "tf.image.non_max_suppression_overlaps"
    overlaps = _m.cast(convert_to_tensor(overlaps), "float32")
    scores = _m.cast(convert_to_tensor(scores), "float32")
    if overlaps.shape.rank != 2 or scores.shape.rank != 1:
        raise ValueError(f"{api}: overlaps must be [num_boxes, num_boxes] and scores "
                         f"[num_boxes], got {overlaps.shape} and {scores.shape}.")

    def similar(i: Tensor) -> Tensor:
        return _a.gather(overlaps, i)
    count, chosen, _ = _greedy(_a.expand_dims(scores, 0), max_output_size, similar,
                               overlap_threshold, score_threshold)
    return chosen[0, :count[0]]


def non_max_suppression_padded(boxes: Any, scores: Any, max_output_size: Any,
                               iou_threshold: Any = 0.5, score_threshold: Any = float("-inf"),
                               pad_to_max_output_size: bool = False, name: str | None = None,
                               sorted_input: bool = False, canonicalized_coordinates: bool = False,
                               tile_size: int = 512) -> tuple[Tensor, Tensor]:
    """``non_max_suppression`` over boxes [..., num_boxes, 4] (batches need
    ``pad_to_max_output_size=True``): (indices, valid counts). Padded rows hold
    ``max_output_size`` indices, zeros after the valid ones. ``sorted_input``,
    ``canonicalized_coordinates`` and ``tile_size`` are TF's speed hints; the selection does
    not depend on them.

    >>> import stagecraft as tf
    >>> boxes = [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]
    >>> idx, n = tf.image.non_max_suppression_padded(boxes, [0.9, 0.8, 0.7], 4,
    ...                                              pad_to_max_output_size=True)
    >>> idx.numpy().tolist(), int(n)
    ([0, 2, 0, 0], 2)
    """
    api = "tf.image.non_max_suppression_padded"
    boxes, scores = _inputs(api, boxes, scores, iou_threshold, batched=True)
    if not pad_to_max_output_size and boxes.shape.rank > 2:
        raise ValueError(f"{api}: pad_to_max_output_size must be True for batched input "
                         f"(boxes of shape {boxes.shape}).")
    lead = boxes.shape.as_list()[:-2]
    n = boxes.shape.as_list()[-2]
    flat_boxes = _a.reshape(boxes, [-1, -1 if n is None else n, 4])
    flat_scores = _a.reshape(scores, [-1, -1 if n is None else n])
    count, chosen, _ = _greedy(flat_scores, max_output_size, _iou(flat_boxes), iou_threshold,
                               score_threshold)
    if not pad_to_max_output_size:
        return chosen[0, :count[0]], count[0]
    m = static_int(max_output_size, api, "max_output_size (with pad_to_max_output_size)")
    if n is None:
        raise ValueError(f"{api}: the number of boxes must be known when traced to pad to "
                         f"max_output_size, got boxes of shape {boxes.shape}.")
    rows = chosen[:, :m] if m <= n else pad(chosen, [[0, 0], [0, m - n]])
    if None in lead:
        rows = _a.reshape(rows, _a.concat([_a.shape(boxes)[:-2], [m]], 0))
        return rows, _a.reshape(count, _a.shape(boxes)[:-2])
    return _a.reshape(rows, lead + [m]), _a.reshape(count, lead)


def combined_non_max_suppression(boxes: Any, scores: Any, max_output_size_per_class: int,
                                 max_total_size: int, iou_threshold: Any = 0.5,
                                 score_threshold: Any = float("-inf"),
                                 pad_per_class: bool = False, clip_boxes: bool = True,
                                 name: str | None = None) -> tuple:
    """Per image and class, greedy NMS (at most ``max_output_size_per_class`` boxes, a box
    suppressed when its IoU with a chosen one exceeds ``iou_threshold``), then the best
    ``max_total_size`` of all classes by score. ``boxes`` [batch, num_boxes, q, 4] (q = 1:
    shared by all classes, else one box per class), ``scores`` [batch, num_boxes,
    num_classes]. Returns (boxes [batch, n, 4], scores [batch, n], classes [batch, n] as
    floats, valid_detections [batch]), zero-padded; n is max_total_size, or with
    ``pad_per_class`` min(max_output_size_per_class * num_classes, max_total_size).
    ``clip_boxes`` clips the boxes to [0, 1].

    >>> import stagecraft as tf
    >>> boxes = [[[[0, 0, 1, 1]], [[0, 0.1, 1, 1.1]], [[0, 2, 1, 3]]]]
    >>> scores = [[[0.9, 0.1], [0.8, 0.7], [0.2, 0.6]]]
    >>> b, s, c, n = tf.image.combined_non_max_suppression(boxes, scores, 2, 3, clip_boxes=False)
    >>> [round(float(v), 2) for v in s[0]], c[0].numpy().tolist(), n.numpy().tolist()
    ([0.9, 0.7, 0.6], [0.0, 1.0, 1.0], [3])
    """
    api = "tf.image.combined_non_max_suppression"
    b = _m.cast(convert_to_tensor(boxes), "float32")
    sc = _m.cast(convert_to_tensor(scores), "float32")
    bd, sd = b.shape.as_list() if b.shape.rank == 4 else None, sc.shape.as_list()
    if bd is None or bd[3] != 4 or sc.shape.rank != 3 or None in bd[1:] or None in sd[1:]:
        raise ValueError(f"{api}: boxes must be [batch, num_boxes, q, 4] and scores [batch, "
                         f"num_boxes, num_classes] with known sizes after the batch, got "
                         f"{b.shape} and {sc.shape}.")
    n, q, k = bd[1], bd[2], sd[2]
    if sd[1] != n or q not in (1, k):
        raise ValueError(f"{api}: scores {sc.shape} must have one row per box of {b.shape}, and "
                         f"q (boxes.shape[2]) must be 1 or num_classes ({k}).")
    _check_iou(api, iou_threshold)
    per_class = min(int(max_output_size_per_class), n)
    total = int(max_total_size)
    out_n = min(int(max_output_size_per_class) * k, total) if pad_per_class else total
    class_boxes = _a.tile(b, [1, 1, k, 1]) if q == 1 and k > 1 else b        # [batch, n, k, 4]
    rows_boxes = _a.reshape(_a.transpose(class_boxes, [0, 2, 1, 3]), [-1, n, 4])
    rows_scores = _a.reshape(_a.transpose(sc, [0, 2, 1]), [-1, n])          # [batch * k, n]
    count, chosen, kept = _greedy(rows_scores, per_class, _iou(rows_boxes), iou_threshold,
                                  score_threshold, inclusive=False)
    valid = _m.less(_a.range(per_class, dtype="int32"), _a.expand_dims(count, 1))
    flat_scores = _a.reshape(_m.where(valid, kept[:, :per_class], float("-inf")),
                             [-1, k * per_class])
    picked = _a.gather(rows_boxes, chosen[:, :per_class], axis=1, batch_dims=1)
    flat_boxes = _a.reshape(picked, [-1, k * per_class, 4])
    best = min(out_n, k * per_class)
    top_scores, order = top_k(flat_scores, best)
    found = _m.greater(top_scores, float("-inf"))
    out_boxes = _a.gather(flat_boxes, order, axis=1, batch_dims=1)
    if clip_boxes:
        out_boxes = _m.clip_by_value(out_boxes, 0.0, 1.0)
    out_boxes = _m.where(_a.expand_dims(found, 2), out_boxes, 0.0)
    out_scores = _m.where(found, top_scores, 0.0)
    out_classes = _m.where(found, _m.cast(_m.floordiv(order, per_class), "float32"), 0.0)
    if best < out_n:
        out_boxes = pad(out_boxes, [[0, 0], [0, out_n - best], [0, 0]])
        out_scores, out_classes = (pad(t, [[0, 0], [0, out_n - best]])
                                   for t in (out_scores, out_classes))
    return (out_boxes, out_scores, out_classes,
            _m.reduce_sum(_m.cast(found, "int32"), axis=1))


__all__ = ["non_max_suppression", "non_max_suppression_with_scores",
           "non_max_suppression_overlaps", "non_max_suppression_padded",
           "combined_non_max_suppression"]
