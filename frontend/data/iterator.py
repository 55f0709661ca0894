"""Iterators over datasets (``iter(dataset)``), ``tf.data.Optional``, and iterator
checkpoints.

An iterator's position is saved as how many elements it has produced, with the seed base of its
pass (``Context.base``): restoring replays the pipeline to that position, which gives exactly
the elements the saved iterator would have produced next, shuffles included (their orders are
functions of the seeds). Replaying costs the time of producing the skipped elements; TensorFlow
instead saves buffers (a shuffle buffer, a prefetch queue) in the checkpoint."""
from __future__ import annotations

from typing import Any, Iterator as PyIterator

import numpy as np

from stagecraft.data import structure
from stagecraft.data.dataset import Context, Dataset, register
from stagecraft.eager.tensor import wrap
from stagecraft.ir.errors import InvalidArgumentError, OutOfRangeError

__all__ = ["Iterator", "OwnedIterator", "Optional"]

_STATE = "_iterator_state"  # the checkpoint child holding [base, position]


class Iterator:
    """``tf.data.Iterator``: the type of ``iter(dataset)``."""


@register
class OwnedIterator(Iterator):
    """An iterator over a dataset: ``next(it)`` raises ``StopIteration`` at the end,
    ``it.get_next()`` raises ``tf.errors.OutOfRangeError`` (as TensorFlow's).

    >>> import stagecraft as tf
    >>> it = iter(tf.data.Dataset.range(2))
    >>> int(next(it)), int(it.get_next()), bool(it.get_next_as_optional().has_value())
    (0, 1, False)
    """

    def __init__(self, dataset: Dataset):
        self._dataset = dataset
        self._start(dataset._new_context(), 0)
        self._variable = None

    def _start(self, ctx: Any, position: int) -> None:
        self._ctx = ctx
        self._elements: PyIterator[Any] = self._dataset._elements(ctx)
        self._position = 0
        self._done = False
        for _ in range(position):  # replay to a restored position
            if next(self._elements, _END) is _END:
                raise InvalidArgumentError(
                    f"Restoring a tf.data iterator: the checkpoint says it had produced "
                    f"{position} elements, but its dataset now ends after {self._position}; "
                    f"the dataset differs from the one whose iterator was saved.")
            self._position += 1

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    def __iter__(self) -> "OwnedIterator":
        return self

    def __next__(self) -> Any:
        self._sync_restored()
        if self._done:
            raise StopIteration
        element = next(self._elements, _END)
        if element is _END:
            self._done = True
            raise StopIteration
        self._position += 1
        if self._variable is not None:
            self._variable._value[1] = self._position
        return element

    def get_next(self) -> Any:
        """The next element; ``tf.errors.OutOfRangeError`` at the end of the dataset."""
        try:
            return next(self)
        except StopIteration:
            raise OutOfRangeError("End of sequence: the dataset has no more elements.") \
                from None

    def get_next_as_optional(self) -> "Optional":
        """The next element as a ``tf.data.Optional`` (empty at the end)."""
        try:
            return Optional(next(self), self.element_spec)
        except StopIteration:
            return Optional(None, self.element_spec)

    # ------------------------------------------------------------------ checkpoints

    def _checkpoint_children(self) -> list[tuple[str, Any]]:
        """A checkpoint saves the iterator's position in a non-trainable int64 variable whose
        buffer the iterator updates in place; a restore replaces that buffer, which the next
        ``next`` notices (and replays the pipeline to the restored position)."""
        if self._variable is None:
            from stagecraft.state.variables import Variable
            self._variable = Variable(np.asarray([self._ctx.base, self._position], np.int64),
                                      trainable=False, name="iterator_state")
            self._buffer = self._variable._value
        return [(_STATE, self._variable)]

    def _sync_restored(self) -> None:
        if self._variable is None or self._variable._value is self._buffer:
            return
        state = np.asarray(self._variable._value)
        if state.shape != (2,) or int(state[1]) < 0:
            raise InvalidArgumentError(f"Restoring a tf.data iterator: its saved state must be "
                                       f"[seed base, position]; got {state.tolist()}.")
        self._start(Context(int(state[0])), int(state[1]))
        self._variable._value = self._buffer = np.array(state, np.int64)


_END = object()


class Optional:
    """``tf.data.Optional``: a value that may be missing (``get_next_as_optional``).

    >>> import stagecraft as tf
    >>> o = tf.data.Optional.from_value(tf.constant(3))
    >>> bool(o.has_value()), int(o.get_value())
    (True, 3)
    """

    def __init__(self, value: Any, element_spec: Any):
        self._value = value
        self._spec = element_spec

    @staticmethod
    def from_value(value: Any) -> "Optional":
        value = structure.normalize(value, "Optional.from_value")
        return Optional(value, structure.spec_of(value))

    @staticmethod
    def empty(element_spec: Any) -> "Optional":
        return Optional(None, element_spec)

    @property
    def element_spec(self) -> Any:
        return self._spec

    def has_value(self) -> Any:
        return wrap(np.asarray(self._value is not None))

    def get_value(self) -> Any:
        if self._value is None:
            raise InvalidArgumentError("Optional.get_value: the Optional has no value "
                                       "(check has_value() first).")
        return self._value
