"""Datasets inside a staged function. The pipeline runs on the host; the compiled code reaches
it through ``py_function`` calls: one that opens an iterator (a new one per call of the
function, so every call sees the whole dataset afresh and a shuffle reshuffles) and returns
an int64 token, and one per element that returns ``(has_element, *components)``.

``iter(dataset)`` while tracing gives a ``GraphIterator``: ``next(it)`` is a staged fetch that
raises ``tf.errors.OutOfRangeError`` when it runs past the end (as TensorFlow's), and
``for x in it`` continues from where the iterator is. AutoGraph stages ``for`` loops over
datasets and these iterators through their ``_stage_for_loop`` method, which gives it the
pieces of a while loop (so the converters need not know about datasets)."""
from __future__ import annotations

import collections
import itertools
import threading
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.data import structure
from stagecraft.data.dataset import register
from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import OutOfRangeError
from stagecraft.ops.script_ops import py_function
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.staging.while_loop import and_extra_test

__all__ = ["GraphIterator", "open_iterator", "fetch"]

_OPEN_LIMIT = 256  # iterators left open by loops that stopped early are dropped beyond this


class _OpenIterators:
    """The host-side iterators of running staged code, by token."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._open: collections.OrderedDict = collections.OrderedDict()

    def open(self, dataset: Any) -> np.ndarray:
        elements = dataset._elements(dataset._new_context())
        with self._lock:
            token = next(self._tokens)
            self._open[token] = elements
            while len(self._open) > _OPEN_LIMIT:
                self._open.popitem(last=False)
        return np.asarray(token, np.int64)

    def next(self, token: int, specs: list, required: bool) -> list:
        with self._lock:
            elements = self._open.get(token)
        element = None if elements is None else next(elements, None)
        if element is not None:
            components = [structure.component_value(t) for t in structure.flatten(element)]
            return components if required else [np.asarray(True)] + components
        with self._lock:
            self._open.pop(token, None)
        if required:
            raise OutOfRangeError("End of sequence: next() on a tf.data iterator inside a "
                                  "tf.function ran past the last element.")
        # the end: has_element is False; the components are placeholders of the right
        # dtypes and ranks (unknown dims as 0)
        return [np.asarray(False)] + [
            np.zeros([0 if d is None else d for d in s.shape.as_list()], s.dtype.np)
            for s in specs]


_ITERATORS = _OpenIterators()


def _known_ranks(dataset: Any, what: str) -> list:
    specs = structure.flatten(dataset.element_spec)
    if any(s.shape.rank is None for s in specs):
        raise ValueError(f"{what} inside a tf.function needs dataset elements of known rank; "
                         f"element_spec is {dataset.element_spec}.")
    return specs


def open_iterator(dataset: Any) -> Any:
    """Stages opening a new iterator over ``dataset``: its int64 token."""
    _known_ranks(dataset, "Iterating a tf.data.Dataset")
    return py_function(lambda: _ITERATORS.open(dataset), [], TensorSpec([], dt.int64))


def fetch(dataset: Any, token: Any, required: bool = False) -> list:
    """Stages fetching the next element of the iterator ``token``: ``[has_element,
    *components]`` (or, ``required``, just the components, raising at the end)."""
    specs = _known_ranks(dataset, "Iterating a tf.data.Dataset")
    touts = list(specs) if required else [TensorSpec([], dt.bool_)] + list(specs)
    return list(py_function(lambda t: _ITERATORS.next(int(t.numpy()), specs, required),
                            [token], touts))


@register
class GraphIterator:
    """``iter(dataset)`` inside a staged function.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def first_two(ds):
    ...     it = iter(ds)
    ...     return next(it) + next(it)
    >>> int(first_two(tf.data.Dataset.range(10, 20)))
    21
    """

    def __init__(self, dataset: Any):
        self.dataset = dataset
        self.token = open_iterator(dataset)

    @property
    def element_spec(self) -> Any:
        return self.dataset.element_spec

    def __iter__(self) -> "GraphIterator":
        return self

    def __next__(self) -> Any:
        return self.get_next()

    def get_next(self) -> Any:
        """The next element (``tf.errors.OutOfRangeError`` at run time past the end)."""
        return structure.pack(self.element_spec, fetch(self.dataset, self.token, True))

    def _stage_for_loop(self, extra_test: Callable | None, body: Callable,
                        get_state: Callable, set_state: Callable,
                        names: Sequence[str]) -> tuple:
        """``for element in self: body(element)`` (``extra_test()`` checked before each
        iteration, for ``break``) as the pieces of a staged while loop: ``(test, body,
        get_state, set_state, names)``; the loop carries ``has_element`` and the element's
        components before the user's variables."""
        current = fetch(self.dataset, self.token)
        n = len(current)

        def get_state2() -> tuple:
            return tuple(current) + tuple(get_state())

        def set_state2(values: Sequence[Any]) -> None:
            current[:] = values[:n]
            set_state(list(values[n:]))

        def test() -> Any:
            return and_extra_test(current[0], extra_test)

        def body2() -> None:
            body(structure.pack(self.element_spec, current[1:]))
            current[:] = fetch(self.dataset, self.token)

        element_names = ("has_element",) + tuple(f"element_{i}" for i in range(n - 1))
        return test, body2, get_state2, set_state2, element_names + tuple(names)

    def get_next_as_optional(self) -> Any:
        has, *components = fetch(self.dataset, self.token)
        return _StagedOptional(has, structure.pack(self.element_spec, components),
                               self.element_spec)


class _StagedOptional:
    """``get_next_as_optional()`` inside a staged function: ``has_value()`` is a bool tensor;
    ``get_value()`` gives the element (placeholders when there is none)."""

    def __init__(self, has: Any, value: Any, spec: Any):
        self._has, self._value, self.element_spec = has, value, spec

    def has_value(self) -> Any:
        return self._has

    def get_value(self) -> Any:
        return self._value
