"""``Dataset.cache``: the first complete pass records the elements (in memory, or in a file
that later runs reuse) and later passes replay them without running the input pipeline.

The cache file is untrusted input when it is read back: it is read without unpickling and with
every array's size bounded by the file's (``ir.serialize.read_npz``), and its elements must match
the dataset's ``element_spec`` (count, dtype and shape of every component); a file that does not
is a ``DataLossError`` naming the file, never a wrong element."""
from __future__ import annotations

import io
import os
from typing import Any, Iterator

import numpy as np

from stagecraft.data import structure
from stagecraft.data.dataset import Context, Dataset, register
from stagecraft.eager.tensor import wrap
from stagecraft.ir import durable
from stagecraft.ir.errors import DataLossError
from stagecraft.ir.serialize import read_npz, savez

__all__ = ["Cache"]

_COUNT = "count"  # the member holding the number of elements


@register
class Cache(Dataset):
    def __init__(self, source: Dataset, filename: str):
        self._path = os.fspath(filename) + ".npz" if filename else None
        self._memory: list | None = None
        super().__init__(source.element_spec, (source,))

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()

    def _elements(self, ctx: Context) -> Iterator[Any]:
        if self._memory is None and self._path is not None and os.path.exists(self._path):
            self._memory = self._read()
        if self._memory is not None:
            yield from self._memory
            return
        recorded = []
        for element in self._inputs[0]._elements(ctx):
            recorded.append(element)
            yield element
        self._memory = recorded  # only a complete pass is kept, as in TensorFlow
        if self._path is not None:
            self._write(recorded)

    def _write(self, elements: list) -> None:
        arrays = {_COUNT: np.asarray(len(elements), np.int64)}
        for i, element in enumerate(elements):
            for j, t in enumerate(structure.flatten(element)):
                arrays[f"e{i}_{j}"] = structure.component_value(t)
        buffer = io.BytesIO()
        savez(buffer, arrays)
        durable.write_atomic(self._path, buffer.getvalue())

    def _read(self) -> list:
        specs = structure.flatten(self.element_spec)
        try:
            allowed = frozenset(np.dtype(s.dtype.np) for s in specs) | {np.dtype(np.int64)}
            arrays = read_npz(self._path, allowed)
            count = arrays.pop(_COUNT)
            if count.shape != () or not 0 <= int(count) or len(arrays) != int(count) * len(specs):
                raise ValueError("its element count does not match its arrays")
            elements = []
            for i in range(int(count)):
                parts = []
                for j, spec in enumerate(specs):
                    a = arrays.get(f"e{i}_{j}")
                    if a is None or a.dtype != spec.dtype.np or \
                            not spec.shape.is_compatible_with(a.shape):
                        raise ValueError(f"element {i} component {j} is missing or does not "
                                         f"match {spec}")
                    parts.append(wrap(a))
                elements.append(structure.pack(self.element_spec, parts))
            return elements
        except (ValueError, KeyError, OSError) as e:
            raise DataLossError(
                f"{self._path}: the tf.data cache file does not hold this dataset's elements "
                f"({e}). Delete it to rebuild the cache, or pass another filename.") from None
