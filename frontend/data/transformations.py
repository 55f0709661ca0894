"""Datasets that transform another dataset's elements: ``map``, ``filter``, ``batch``,
``padded_batch``, ``unbatch``, ``shuffle``, ``repeat``, ``take``, ``skip``, ``flat_map``,
``enumerate``."""
from __future__ import annotations

import collections
import concurrent.futures
import os
from typing import Any, Callable, Iterator

import numpy as np

from stagecraft.data import structure
from stagecraft.data.dataset import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Context,
                                     Dataset, register)
from stagecraft.data.functions import StagedFunction
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir import dtypes as dt
from stagecraft.ops.random_ops import get_seed_pair
from stagecraft.staging.tensor_spec import TensorSpec

__all__ = ["Map", "Filter", "Batch", "PaddedBatch", "Unbatch", "Shuffle", "Repeat", "Take",
           "Skip", "FlatMap", "Enumerate"]


def _count(value: Any, what: str, minimum: int) -> int:
    n = int(value.numpy()) if isinstance(value, Tensor) else value
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < minimum:
        raise ValueError(f"Dataset.{what}: expected an integer >= {minimum}; got {value!r}.")
    return int(n)


def _spec_with_first(spec: TensorSpec, n: int | None) -> TensorSpec:
    return TensorSpec([n, *spec.shape.as_list()] if spec.shape.rank is not None else None,
                      spec.dtype)


@register
class Map(Dataset):
    def __init__(self, source: Dataset, fn: Callable[..., Any], num_parallel_calls: Any,
                 deterministic: bool | None):
        self._fn = StagedFunction(fn, "map")
        self._parallel = 0 if num_parallel_calls in (None, 0, 1) else (
            min(os.cpu_count() or 1, 8) if num_parallel_calls == AUTOTUNE
            else _count(num_parallel_calls, "map(num_parallel_calls)", 1))
        self._ordered = deterministic is not False
        # The element spec comes from tracing the function once on the input spec's shapes:
        # a pass over one element would run the pipeline's side effects.
        spec = self._fn.output_spec(source.element_spec)
        super().__init__(spec, (source,))

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()

    def _elements(self, ctx: Context) -> Iterator[Any]:
        upstream = self._inputs[0]._elements(ctx)
        if not self._parallel:
            for element in upstream:
                yield self._apply(element)
            return
        yield from _parallel_map(self._apply, upstream, self._parallel, self._ordered)

    def _apply(self, element: Any) -> Any:
        return structure.normalize(self._fn(element), "Dataset.map")


def _parallel_map(fn: Callable[[Any], Any], upstream: Iterator[Any], workers: int,
                  ordered: bool) -> Iterator[Any]:
    """``map(fn, upstream)`` with up to ``workers`` calls in flight on a thread pool."""
    with concurrent.futures.ThreadPoolExecutor(workers, "stagecraft-data-map") as pool:
        pending: collections.deque = collections.deque()
        for element in upstream:
            pending.append(pool.submit(fn, element))
            if len(pending) >= 2 * workers:
                yield from _drain(pending, ordered, keep=workers)
        yield from _drain(pending, ordered, keep=0)


def _drain(pending: collections.deque, ordered: bool, keep: int) -> Iterator[Any]:
    while len(pending) > keep:
        if ordered:
            yield pending.popleft().result()
        else:
            done = next((f for f in pending if f.done()), pending[0])
            pending.remove(done)
            yield done.result()


@register
class Filter(Dataset):
    def __init__(self, source: Dataset, predicate: Callable[..., Any]):
        self._fn = StagedFunction(predicate, "filter")
        spec = self._fn.output_spec(source.element_spec)
        if not isinstance(spec, TensorSpec) or spec.dtype != dt.bool_ or spec.shape.rank != 0:
            raise TypeError(f"Dataset.filter: the predicate must return a scalar bool tensor; "
                            f"it returns {spec}.")
        super().__init__(source.element_spec, (source,))

    def _elements(self, ctx: Context) -> Iterator[Any]:
        for element in self._inputs[0]._elements(ctx):
            if bool(self._fn(element).numpy()):
                yield element


@register
class Batch(Dataset):
    def __init__(self, source: Dataset, batch_size: Any, drop_remainder: bool):
        self._size = _count(batch_size, "batch(batch_size)", 1)
        self._drop = bool(drop_remainder)
        first = self._size if self._drop else None
        super().__init__(structure.map_structure(lambda s: _spec_with_first(s, first),
                                                 source.element_spec), (source,))

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if n < 0:
            return n
        return n // self._size if self._drop else -(-n // self._size)

    def _elements(self, ctx: Context) -> Iterator[Any]:
        rows = self._row_order(ctx) if type(self) is Batch else None
        if rows is not None:  # batches of a tensor-slices source: one indexing per component
            source, order = rows
            for start in range(0, len(order), self._size):
                index = order[start:start + self._size]
                if len(index) < self._size and self._drop:
                    return
                yield source._rows(index)
            return
        buffer: list = []
        for element in self._inputs[0]._elements(ctx):
            buffer.append(element)
            if len(buffer) == self._size:
                yield self._stack(buffer)
                buffer = []
        if buffer and not self._drop:
            yield self._stack(buffer)

    def _row_order(self, ctx: Context) -> tuple | None:
        return self._inputs[0]._row_order(ctx)

    def _stack(self, elements: list) -> Any:
        first = elements[0]
        flat = type(first) is tuple and all(type(t) is Tensor for t in first)
        columns = zip(*elements) if flat else zip(*(structure.flatten(e) for e in elements))
        stacked = []
        for i, column in enumerate(columns):
            values = [np.asarray(t._value) for t in column]
            shapes = {v.shape for v in values}
            if len(shapes) > 1:
                raise ValueError(
                    f"Dataset.batch: cannot batch component {i} whose elements have different "
                    f"shapes {sorted(shapes)}; use padded_batch, or map them to one shape "
                    f"first.")
            stacked.append(wrap(np.stack(values)))
        return tuple(stacked) if flat else structure.pack(first, stacked)


@register
class PaddedBatch(Batch):
    def __init__(self, source: Dataset, batch_size: Any, padded_shapes: Any,
                 padding_values: Any, drop_remainder: bool):
        super().__init__(source, batch_size, drop_remainder)
        spec = source.element_spec
        if padded_shapes is None:
            padded_shapes = structure.map_structure(lambda s: s.shape.as_list(), spec)
        self._shapes = structure.flatten(structure.map_structure(
            lambda s, p: _padded_shape(s, p), spec, padded_shapes))
        if padding_values is None:
            padding_values = structure.map_structure(lambda s: 0, spec)
        self._pads = [np.asarray(v.numpy() if isinstance(v, Tensor) else v, s.dtype.np)
                      for v, s in zip(structure.flatten(padding_values),
                                      structure.flatten(spec))]
        first = self._size if self._drop else None
        self._spec = structure.pack(spec, [
            TensorSpec([first, *shape], s.dtype)
            for shape, s in zip(self._shapes, structure.flatten(spec))])

    def _stack(self, elements: list) -> Any:
        columns = zip(*(structure.flatten(e) for e in elements))
        stacked = []
        for shape, pad, column in zip(self._shapes, self._pads, columns):
            values = [structure.component_value(t) for t in column]
            target = [d if d is not None else max(v.shape[k] for v in values)
                      for k, d in enumerate(shape)]
            out = np.full([len(values), *target], pad, dtype=values[0].dtype)
            for j, v in enumerate(values):
                if any(a > b for a, b in zip(v.shape, target)):
                    raise ValueError(f"Dataset.padded_batch: an element of shape "
                                     f"{list(v.shape)} is larger than padded shape {target}.")
                out[(j, *(slice(0, a) for a in v.shape))] = v
            stacked.append(wrap(out))
        return structure.pack(elements[0], stacked)


def _padded_shape(spec: TensorSpec, shape: Any) -> list:
    dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    dims = [None if d is None or d == -1 else int(d) for d in dims]
    if spec.shape.rank is None or len(dims) != spec.shape.rank:
        raise ValueError(f"Dataset.padded_batch: padded shape {dims} does not fit the "
                         f"component's shape {spec.shape}.")
    return dims


@register
class Unbatch(Dataset):
    def __init__(self, source: Dataset):
        for s in structure.flatten(source.element_spec):
            if s.shape.rank == 0:
                raise ValueError("Dataset.unbatch: every component needs a first dimension; "
                                 "a component is a scalar.")
        super().__init__(structure.map_structure(
            lambda s: TensorSpec(s.shape[1:], s.dtype), source.element_spec), (source,))

    def _elements(self, ctx: Context) -> Iterator[Any]:
        for element in self._inputs[0]._elements(ctx):
            values = [structure.component_value(t) for t in structure.flatten(element)]
            sizes = {v.shape[0] for v in values}
            if len(sizes) > 1:
                raise ValueError(f"Dataset.unbatch: the components of an element have "
                                 f"different first dimensions {sorted(sizes)}.")
            for i in range(sizes.pop()):
                yield structure.pack(element, [wrap(v[i]) for v in values])


@register
class Shuffle(Dataset):
    def __init__(self, source: Dataset, buffer_size: Any, seed: int | None,
                 reshuffle_each_iteration: bool | None):
        self._buffer = _count(buffer_size, "shuffle(buffer_size)", 1)
        self._seed = get_seed_pair(seed)  # TF's rules: equal seeds, equal orders
        self._reshuffle = reshuffle_each_iteration is not False
        super().__init__(source.element_spec, (source,))

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()

    def _rng(self, ctx: Context) -> np.random.Generator:
        key = [*self._seed]
        if self._reshuffle:  # a new order for every iterator and every repeat epoch
            key += [ctx.base, ctx.enter(self)]
        return np.random.Generator(np.random.Philox(np.random.SeedSequence(key)))

    def _whole(self) -> bool:
        """Whether the buffer holds the whole input: then the order is one uniform
        permutation (which a batch over a tensor-slices source takes by indexing)."""
        return 0 <= self._inputs[0]._cardinality() <= self._buffer

    def _row_order(self, ctx: Context) -> tuple | None:
        if not self._whole():
            return None
        rows = self._inputs[0]._row_order(ctx)
        if rows is None:
            return None
        source, order = rows
        return source, order[self._rng(ctx).permutation(len(order))]

    def _elements(self, ctx: Context) -> Iterator[Any]:
        if self._whole():
            items = list(self._inputs[0]._elements(ctx))
            for i in self._rng(ctx).permutation(len(items)):
                yield items[i]
            return
        rng = self._rng(ctx)
        buffer: list = []
        for element in self._inputs[0]._elements(ctx):
            if len(buffer) < self._buffer:
                buffer.append(element)
                continue
            i = int(rng.integers(len(buffer)))
            buffer[i], element = element, buffer[i]
            yield element
        while buffer:
            i = int(rng.integers(len(buffer)))
            buffer[i], buffer[-1] = buffer[-1], buffer[i]
            yield buffer.pop()


@register
class Repeat(Dataset):
    def __init__(self, source: Dataset, count: Any):
        self._count = -1 if count is None else _count(count, "repeat(count)", -1)
        super().__init__(source.element_spec, (source,))

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if self._count == 0 or n == 0:
            return 0
        if self._count < 0 or n == INFINITE_CARDINALITY:
            return INFINITE_CARDINALITY
        return n if n == UNKNOWN_CARDINALITY else n * self._count

    def _elements(self, ctx: Context) -> Iterator[Any]:
        epoch = 0
        while self._count < 0 or epoch < self._count:
            produced = False
            for element in self._inputs[0]._elements(ctx):
                produced = True
                yield element
            if not produced:  # an empty input repeated forever is empty, not a hang
                return
            epoch += 1


@register
class Take(Dataset):
    def __init__(self, source: Dataset, count: Any):
        self._count = _count(count, "take(count)", -1)
        super().__init__(source.element_spec, (source,))

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if self._count < 0:
            return n
        if n == INFINITE_CARDINALITY:
            return self._count
        return UNKNOWN_CARDINALITY if n == UNKNOWN_CARDINALITY else min(n, self._count)

    def _elements(self, ctx: Context) -> Iterator[Any]:
        if self._count == 0:
            return
        for i, element in enumerate(self._inputs[0]._elements(ctx)):
            yield element
            if i + 1 == self._count:
                return


@register
class Skip(Dataset):
    def __init__(self, source: Dataset, count: Any):
        self._count = _count(count, "skip(count)", -1)
        super().__init__(source.element_spec, (source,))

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if self._count < 0:
            return 0 if n != INFINITE_CARDINALITY else n
        return n if n < 0 else max(0, n - self._count)

    def _elements(self, ctx: Context) -> Iterator[Any]:
        if self._count < 0:
            return
        for i, element in enumerate(self._inputs[0]._elements(ctx)):
            if i >= self._count:
                yield element


@register
class FlatMap(Dataset):
    def __init__(self, source: Dataset, fn: Callable[..., Dataset]):
        if not callable(fn):
            raise TypeError(f"Dataset.flat_map: expected a function, got {type(fn).__name__}.")
        self._fn = fn  # it builds datasets, so it runs in Python per element, as TF's does
        probe = self._apply(next(iter(_zeros_like(source.element_spec))))
        super().__init__(probe.element_spec, (source,))

    def _apply(self, element: Any) -> Dataset:
        result = structure.call_with_element(self._fn, element)
        if not isinstance(result, Dataset):
            raise TypeError(f"Dataset.flat_map: the function must return a Dataset; it "
                            f"returned {type(result).__name__}.")
        return result

    def _elements(self, ctx: Context) -> Iterator[Any]:
        for element in self._inputs[0]._elements(ctx):
            yield from self._apply(element)._elements(ctx)


def _zeros_like(spec: Any) -> Iterator[Any]:
    """One element of zeros matching ``spec`` (None dims as 1), to learn what a function
    returns without running the pipeline."""
    yield structure.map_structure(
        lambda s: wrap(np.zeros([1 if d is None else d for d in s.shape.as_list()],
                                s.dtype.np)), spec)


@register
class Enumerate(Dataset):
    def __init__(self, source: Dataset, start: Any):
        self._start = int(start.numpy()) if isinstance(start, Tensor) else int(start)
        super().__init__((TensorSpec([], dt.int64), source.element_spec), (source,))

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()

    def _elements(self, ctx: Context) -> Iterator[Any]:
        for i, element in enumerate(self._inputs[0]._elements(ctx), self._start):
            yield wrap(np.asarray(i, np.int64)), element
