"""What ``fit``/``evaluate``/``predict`` accept as data, turned into batches: a ``tf.data``
dataset (already batched, of ``x``, ``(x, y)`` or ``(x, y, sample_weight)``), or arrays and
tensors (NumPy arrays, lists, tensors, and dicts/tuples of them) cut into batches of
``batch_size`` (default 32), shuffled each epoch when asked, as Keras does."""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from stagecraft.data import Dataset
from stagecraft.data import structure
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor, wrap

__all__ = ["unpack", "DataHandler", "split_validation", "class_weights_to_sample_weights"]


def unpack(data: Any) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` from a batch: ``x``, ``(x,)``, ``(x, y)`` or
    ``(x, y, sample_weight)`` (missing parts None), as ``keras.utils.unpack_x_y_sample_weight``.

    >>> unpack((1, 2)), unpack(3)
    ((1, 2, None), (3, None, None))
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be x, (x,), (x, y) or (x, y, sample_weight); got a "
                     f"tuple of {len(data)} elements.")


def _as_array(value: Any) -> Any:
    """NumPy arrays of a structure of arrays, lists and tensors; float64 NumPy data becomes
    float32 (Keras's floatx), as Keras's array adapter casts it."""
    def one(v: Any) -> np.ndarray:
        if isinstance(v, Tensor) or (hasattr(v, "numpy") and callable(v.numpy)):
            return np.asarray(v.numpy())
        a = np.asarray(v)
        return a.astype(np.float32) if a.dtype == np.float64 else a
    if isinstance(value, (dict, tuple)):
        return structure.map_structure(one, value)
    return one(value)


def _rows(value: Any) -> int:
    sizes = {len(a) for a in structure.flatten(value)}
    if len(sizes) != 1:
        raise ValueError(f"Data cardinality is ambiguous: the arrays have "
                         f"{sorted(sizes)} samples. Make sure all arrays contain the same "
                         f"number of samples.")
    return sizes.pop()


def _take(value: Any, index: Any) -> Any:
    return structure.map_structure(lambda a: a[index], value)


def split_validation(x: Any, y: Any, sample_weight: Any, fraction: float) -> tuple:
    """Keras's ``validation_split``: the last ``fraction`` of the samples (before any
    shuffling) for validation: ``((x, y, sw), (x_val, y_val, sw_val))``."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1); got {fraction}.")
    if isinstance(x, Dataset):
        raise ValueError("validation_split is only supported for arrays and tensors, not "
                         "for a tf.data.Dataset; pass validation_data instead.")
    arrays = tuple(None if v is None else _as_array(v) for v in (x, y, sample_weight))
    n = _rows(arrays[0])
    cut = int(n * (1.0 - fraction))
    if cut == 0 or cut == n:
        raise ValueError(f"validation_split={fraction} leaves no samples for training or for "
                         f"validation out of {n}.")
    train = tuple(None if a is None else _take(a, slice(0, cut)) for a in arrays)
    val = tuple(None if a is None else _take(a, slice(cut, n)) for a in arrays)
    return train, val


def class_weights_to_sample_weights(y: np.ndarray, class_weight: dict) -> np.ndarray:
    """Per-sample weights from ``class_weight`` (``{class index: weight}``) and the targets
    (class indices, or one-hot rows).

    >>> class_weights_to_sample_weights(np.array([0, 1, 1]), {0: 1.0, 1: 3.0}).tolist()
    [1.0, 3.0, 3.0]
    """
    y = np.asarray(y)
    classes = y.argmax(axis=-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(len(y))
    missing = sorted(set(np.unique(classes).astype(int).tolist()) - set(class_weight))
    if missing:
        raise ValueError(f"class_weight has no weight for classes {missing}; give every class "
                         f"present in the targets a weight.")
    return np.asarray([class_weight[int(c)] for c in classes], np.float32)


class DataHandler:
    """The batches of one epoch, for each epoch: from a dataset (``steps`` limits an epoch;
    an infinite dataset needs it) or from arrays."""

    def __init__(self, x: Any, y: Any = None, sample_weight: Any = None,
                 batch_size: int | None = None, steps: int | None = None,
                 shuffle: bool = False, class_weight: dict | None = None):
        self.steps_limit = steps
        if isinstance(x, Dataset):
            if y is not None or sample_weight is not None:
                raise ValueError("`y` and `sample_weight` must not be given with a "
                                 "tf.data.Dataset `x`: the dataset yields (x, y[, weight]).")
            if class_weight is not None:
                raise ValueError("class_weight is supported for arrays and tensors; map the "
                                 "dataset to (x, y, sample_weight) instead.")
            self.dataset = x
            n = int(x.cardinality())
            if n == -1 and steps is None:
                raise ValueError("The dataset is infinite (repeat()); pass steps_per_epoch "
                                 "(or steps) to say how many batches make an epoch.")
            self.steps = steps if steps is not None else (n if n >= 0 else None)
            self._arrays = None
            self._iterator = None
            return
        if x is None:
            raise ValueError("No data: pass `x` (arrays, tensors or a tf.data.Dataset).")
        self.dataset = None
        x = _as_array(x)
        y = None if y is None else _as_array(y)
        sw = None if sample_weight is None else _as_array(sample_weight)
        if class_weight is not None:
            if y is None:
                raise ValueError("class_weight needs targets `y`.")
            cw = class_weights_to_sample_weights(y, class_weight)
            sw = cw if sw is None else sw * cw
        # Converted once here (a dtype stagecraft lacks is a clear error now, not mid-epoch);
        # batches are then wrapped slices of these arrays.
        self._arrays = tuple(None if a is None else structure.map_structure(
            lambda v: np.asarray(convert_to_tensor(v).numpy()), a) for a in (x, y, sw))
        self._n = _rows(tuple(a for a in self._arrays if a is not None))
        self._batch = batch_size or 32
        self._shuffle = shuffle
        full = -(-self._n // self._batch)
        self.steps = full if steps is None else min(steps, full)

    def epoch(self) -> Iterator[Any]:
        """The batches of one epoch, as ``(x, y, sample_weight)`` tuples or dataset
        elements."""
        if self.dataset is not None:
            yield from self._dataset_epoch()
            return
        order = np.random.permutation(self._n) if self._shuffle else np.arange(self._n)
        for step in range(self.steps):
            index = order[step * self._batch:(step + 1) * self._batch]
            yield tuple(None if a is None else structure.map_structure(
                lambda v: wrap(v[index]), a) for a in self._arrays)

    def _dataset_epoch(self) -> Iterator[Any]:
        if self.steps_limit is None:  # a finite dataset: one pass per epoch
            yield from self.dataset
            return
        # steps_per_epoch: the epochs continue one iterator, as Keras does
        if self._iterator is None:
            self._iterator = iter(self.dataset)
        for _ in range(self.steps_limit):
            try:
                yield next(self._iterator)
            except StopIteration:
                self._iterator = None
                return
