"""Datasets that produce elements: from tensors, a range, a Python generator, and the
combinations of datasets (``zip``, ``concatenate``)."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from stagecraft.data import structure
from stagecraft.data.dataset import (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Context, Dataset,
                                     register)
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir import dtypes as dt
from stagecraft.staging.tensor_spec import TensorSpec

__all__ = ["TensorSlices", "Tensors", "Range", "Generator", "Zip", "Concatenate"]


@register
class TensorSlices(Dataset):
    def __init__(self, tensors: Any):
        element = structure.normalize(tensors, "Dataset.from_tensor_slices")
        components = structure.flatten(element)
        if not components:
            raise ValueError("Dataset.from_tensor_slices: the structure has no tensors.")
        sizes = set()
        for t in components:
            if t.shape.rank == 0:
                raise ValueError(f"Dataset.from_tensor_slices: every component needs a first "
                                 f"dimension to slice; got a scalar ({t.dtype.name}).")
            sizes.add(int(t.shape[0]))
        if len(sizes) > 1:
            raise ValueError(f"Dataset.from_tensor_slices: all components must have the same "
                             f"size in their first dimension; got sizes {sorted(sizes)}.")
        self._values = [structure.component_value(t) for t in components]
        self._n = sizes.pop()
        self._structure = element
        super().__init__(structure.map_structure(
            lambda t: TensorSpec(t.shape[1:], t.dtype), element))

    def _cardinality(self) -> int:
        return self._n

    def _elements(self, ctx: Context) -> Iterator[Any]:
        pack, values = structure.packer(self._structure), self._values
        for i in range(self._n):
            yield pack([wrap(v[i]) for v in values])

    def _row_order(self, ctx: Context) -> tuple:
        return self, np.arange(self._n)

    def _rows(self, index: np.ndarray) -> Any:
        """The elements at ``index`` stacked (a batch), by one indexing per component."""
        return structure.packer(self._structure)([wrap(v[index]) for v in self._values])


@register
class Tensors(Dataset):
    def __init__(self, tensors: Any):
        self._element = structure.normalize(tensors, "Dataset.from_tensors")
        super().__init__(structure.spec_of(self._element))

    def _cardinality(self) -> int:
        return 1

    def _elements(self, ctx: Context) -> Iterator[Any]:
        yield self._element


@register
class Range(Dataset):
    def __init__(self, *args: int, dtype: Any = dt.int64):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"Dataset.range takes 1 to 3 arguments (stop, or start, stop[, "
                            f"step]); got {len(args)}.")
        values = [int(a.numpy()) if isinstance(a, Tensor) else int(a) for a in args]
        self._range = range(*values)  # ValueError for step 0, as Python's
        self._dtype = dt.as_dtype(dtype)
        super().__init__(TensorSpec([], self._dtype))

    def _cardinality(self) -> int:
        return len(self._range)

    def _elements(self, ctx: Context) -> Iterator[Any]:
        np_type = self._dtype.np.type
        for v in self._range:
            yield wrap(np.asarray(np_type(v)))


@register
class Generator(Dataset):
    def __init__(self, generator: Callable[..., Any], output_types: Any, output_shapes: Any,
                 args: Any, output_signature: Any):
        if not callable(generator):
            raise TypeError("Dataset.from_generator: `generator` must be a callable that "
                            "returns an iterator (pass the generator function, not a call).")
        if output_signature is None:
            if output_types is None:
                raise TypeError("Dataset.from_generator: pass output_signature (a TensorSpec "
                                "structure), or output_types (and optionally output_shapes).")
            shapes = output_shapes if output_shapes is not None else \
                structure.map_structure(lambda _: None, output_types)
            output_signature = structure.map_structure(
                lambda t, s: TensorSpec(s, t), output_types, shapes)
        elif output_types is not None or output_shapes is not None:
            raise TypeError("Dataset.from_generator: pass either output_signature or "
                            "output_types/output_shapes, not both.")
        for spec in structure.flatten(output_signature):
            if not isinstance(spec, TensorSpec):
                raise TypeError(f"Dataset.from_generator: output_signature must be a structure "
                                f"of tf.TensorSpec; got {type(spec).__name__}.")
        self._generator = generator
        self._args = tuple(args) if args is not None else ()
        super().__init__(output_signature)

    def _elements(self, ctx: Context) -> Iterator[Any]:
        args = [convert_to_tensor(a) for a in self._args]
        for i, value in enumerate(self._generator(*args)):
            yield self._check(value, i)

    def _check(self, value: Any, index: int) -> Any:
        spec = self._spec
        if not structure.same_structure(spec, value) or (
                isinstance(value, tuple) and not isinstance(spec, tuple)):
            raise TypeError(f"Dataset.from_generator: element {index} does not match the "
                            f"structure of output_signature {spec}; got {value!r:.200}.")

        def convert(s: TensorSpec, v: Any) -> Tensor:
            t = v if isinstance(v, Tensor) else convert_to_tensor(np.asarray(v, s.dtype.np))
            if t.dtype != s.dtype:
                raise TypeError(f"Dataset.from_generator: element {index} has dtype "
                                f"{t.dtype.name} where output_signature says {s.dtype.name}.")
            if not s.shape.is_compatible_with(t.shape):
                raise ValueError(f"Dataset.from_generator: element {index} has shape "
                                 f"{t.shape} where output_signature says {s.shape}.")
            return t
        return structure.map_structure(convert, spec, value)


@register
class Zip(Dataset):
    def __init__(self, datasets: Any):
        members = structure.flatten(datasets)
        if not members:
            raise ValueError("Dataset.zip needs at least one dataset.")
        for d in members:
            if not isinstance(d, Dataset):
                raise TypeError(f"Dataset.zip: expected datasets (or a tuple/dict of them); "
                                f"got {type(d).__name__}.")
        self._structure = datasets
        super().__init__(structure.map_structure(lambda d: d.element_spec, datasets),
                         tuple(members))

    def _cardinality(self) -> int:
        sizes = [d._cardinality() for d in self._inputs]
        finite = [n for n in sizes if n >= 0]
        if finite:
            return min(finite)
        return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in sizes else INFINITE_CARDINALITY

    def _elements(self, ctx: Context) -> Iterator[Any]:
        iterators = [d._elements(ctx) for d in self._inputs]
        for parts in zip(*iterators):
            yield structure.pack(self._structure, list(parts))


@register
class Concatenate(Dataset):
    def __init__(self, first: Dataset, second: Dataset):
        if not isinstance(second, Dataset):
            raise TypeError(f"Dataset.concatenate: expected a Dataset, got "
                            f"{type(second).__name__}.")
        a, b = first.element_spec, second.element_spec
        if not structure.same_structure(a, b) or [s.dtype for s in structure.flatten(a)] != \
                [s.dtype for s in structure.flatten(b)]:
            raise TypeError(f"Dataset.concatenate: the datasets' elements differ in structure "
                            f"or dtype: {a} and {b}.")
        super().__init__(structure.relax(a, b), (first, second))

    def _cardinality(self) -> int:
        a, b = (d._cardinality() for d in self._inputs)
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in (a, b) else a + b

    def _elements(self, ctx: Context) -> Iterator[Any]:
        for d in self._inputs:
            yield from d._elements(ctx)
