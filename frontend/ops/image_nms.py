"""``tf.image.non_max_suppression``: greedy selection of boxes by descending score, dropping
every box that overlaps a selected one by more than ``iou_threshold``. One ``while_loop``
(eager or staged) selects a box per step into a buffer the size of the box count; the result
is the buffer's first ``count`` entries, so its size is known only when it runs (like
``tf.where`` or ``tf.boolean_mask``)."""
from __future__ import annotations

from typing import Any

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.image_common import static_float
from stagecraft.staging.while_loop import while_loop


def _corners(boxes: Tensor) -> tuple:
    y1, x1, y2, x2 = _a.unstack(boxes, num=4, axis=1)
    return _m.minimum(y1, y2), _m.minimum(x1, x2), _m.maximum(y1, y2), _m.maximum(x1, x2)


def _iou_with(i: Tensor, corners: tuple, area: Tensor) -> Tensor:
    """Intersection over union of box ``i`` with every box (0 where either area is 0)."""
    ymin, xmin, ymax, xmax = corners
    zero = _a.zeros_like(area)
    h = _m.maximum(_m.subtract(_m.minimum(ymax, _a.gather(ymax, i)),
                               _m.maximum(ymin, _a.gather(ymin, i))), zero)
    w = _m.maximum(_m.subtract(_m.minimum(xmax, _a.gather(xmax, i)),
                               _m.maximum(xmin, _a.gather(xmin, i))), zero)
    inter = _m.multiply(h, w)
    area_i = _a.gather(area, i)
    union = _m.subtract(_m.add(area, area_i), inter)
    valid = _m.logical_and(_m.greater(area, zero), _m.greater(area_i, zero))
    return _m.where(valid, _m.divide(inter, _m.where(valid, union, _a.ones_like(union))), zero)


def non_max_suppression(boxes: Any, scores: Any, max_output_size: Any, iou_threshold: Any = 0.5,
                        score_threshold: Any = float("-inf"), name: str | None = None) -> Tensor:
    """The int32 indices of at most ``max_output_size`` boxes ([num_boxes, 4] as
    [y1, x1, y2, x2], either corner order), chosen greedily by descending ``scores`` (ties:
    lower index first) among those scoring above ``score_threshold``, skipping boxes whose
    IoU with an already chosen box exceeds ``iou_threshold``.

    >>> import stagecraft as tf
    >>> boxes = [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]
    >>> tf.image.non_max_suppression(boxes, [0.9, 0.8, 0.7], 3).numpy().tolist()
    [0, 2]
    """
    api = "tf.image.non_max_suppression"
    boxes = _m.cast(convert_to_tensor(boxes), "float32")
    scores = _m.cast(convert_to_tensor(scores), "float32")
    if boxes.shape.rank != 2 or boxes.shape.as_list()[1] not in (4, None):
        raise ValueError(f"{api}: boxes must have shape [num_boxes, 4], got {boxes.shape}.")
    if scores.shape.rank != 1:
        raise ValueError(f"{api}: scores must be 1-D [num_boxes], got {scores.shape}.")
    nb, ns = boxes.shape.as_list()[0], scores.shape.as_list()[0]
    if nb is not None and ns is not None and nb != ns:
        raise ValueError(f"{api}: scores has {ns} entries but boxes has {nb} boxes.")
    iou = static_float(iou_threshold, api, "iou_threshold")
    if iou is not None and not 0.0 <= iou <= 1.0:
        raise InvalidArgumentError(f"{api}: iou_threshold must be in [0, 1], got {iou}.")
    limit = _m.cast(max_output_size, "int32")
    iou_t = _m.cast(iou_threshold, "float32")
    corners = _corners(boxes)
    area = _m.multiply(_m.subtract(corners[2], corners[0]), _m.subtract(corners[3], corners[1]))
    slots = _a.range(_a.size(scores), dtype="int32")
    minus_inf = _a.fill(_a.shape(scores), float("-inf"))

    def more(count: Tensor, alive: Tensor, chosen: Tensor) -> Tensor:
        return _m.logical_and(_m.less(count, limit), _m.reduce_any(alive))

    def pick(count: Tensor, alive: Tensor, chosen: Tensor) -> tuple:
        i = _m.argmax(_m.where(alive, scores, minus_inf), output_type="int32")
        chosen = _m.where(_m.equal(slots, count), _a.fill(_a.shape(slots), i), chosen)
        overlap = _m.greater(_iou_with(i, corners, area), iou_t)
        alive = _m.logical_and(alive, _m.logical_not(_m.logical_or(overlap,
                                                                   _m.equal(slots, i))))
        return _m.add(count, 1), alive, chosen

    alive = _m.greater(scores, _m.cast(score_threshold, "float32"))
    count, _, chosen = while_loop(more, pick, (_a.zeros([], "int32"), alive,
                                               _a.zeros_like(slots)))
    return chosen[:count]


__all__ = ["non_max_suppression"]
