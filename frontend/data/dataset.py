"""``tf.data.Dataset``: the base class and its methods. Each method returns a new dataset node
(``sources.py``, ``transformations.py``); iterating builds a fresh Python generator chain from
the nodes, so a dataset can be iterated many times and by several iterators at once."""
from __future__ import annotations

import abc
from typing import Any, Callable, Iterator

import numpy as np

from stagecraft.data import structure
from stagecraft.data.functions import StagedFunction
from stagecraft.eager.context import executing_eagerly
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir import dtypes as dt

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Context"]

#: ``tf.data.AUTOTUNE``: let the runtime choose a parallelism or buffer size.
AUTOTUNE = -1
#: ``Dataset.cardinality()`` of a dataset that never ends (``repeat()``).
INFINITE_CARDINALITY = -1
#: ``Dataset.cardinality()`` when it cannot be known without iterating (``filter``).
UNKNOWN_CARDINALITY = -2


#: The dataset and iterator classes by name, filled by the modules defining them (``register``)
#: when ``stagecraft.data`` is imported: the methods below create them through it, so this
#: module imports none of them (they all import it).
_KINDS: dict[str, Callable[..., Any]] = {}


def register(cls: type) -> type:
    """Class decorator: makes ``cls`` what ``Dataset``'s methods create under its name."""
    _KINDS[cls.__name__] = cls
    return cls


def _make(kind: str, *args: Any, **kwargs: Any) -> Any:
    return _KINDS[kind](*args, **kwargs)


class Context:
    """What one iterator's pass through a pipeline shares: ``base``, the number of iterators
    the dataset had made before this one (it seeds ``shuffle``'s reshuffling, and a restored
    iterator reuses it), and how often each node has been entered in this pass (each ``repeat``
    epoch enters its input again)."""

    def __init__(self, base: int):
        self.base = base
        self.entries: dict[int, int] = {}

    def enter(self, node: "Dataset") -> int:
        """The number of earlier entries of ``node`` in this pass (0 for the first)."""
        n = self.entries.get(id(node), 0)
        self.entries[id(node)] = n + 1
        return n


class Dataset(abc.ABC):
    """A sequence of elements, each a tensor or a tuple/dict structure of tensors, built from
    sources and transformations and iterated with ``for`` (or ``iter``/``next``).

    >>> import stagecraft as tf
    >>> ds = tf.data.Dataset.range(10).filter(lambda x: x % 2 == 0).map(lambda x: x * 10)
    >>> [int(x) for x in ds.batch(2).take(2).unbatch()]
    [0, 20, 40, 60]
    """

    def __init__(self, spec: Any, inputs: tuple["Dataset", ...] = ()):
        self._spec = spec
        self._inputs = inputs
        self._iterators_made = 0

    # ------------------------------------------------------------------ what subclasses define

    @abc.abstractmethod
    def _elements(self, ctx: Context) -> Iterator[Any]:
        """A new pass over the elements (structures of eager tensors)."""

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _row_order(self, ctx: Context) -> tuple | None:
        """``(source, order)`` when this dataset's elements are the rows ``order`` of a
        tensor-slices ``source`` (so ``batch`` can index them); else None."""
        return None

    # ------------------------------------------------------------------ properties

    @property
    def element_spec(self) -> Any:
        """The structure of ``TensorSpec``s of an element (shape dims None where elements
        differ).

        >>> import stagecraft as tf
        >>> x, y = tf.data.Dataset.from_tensor_slices(([1, 2], [[1.0], [2.0]])).element_spec
        >>> (x.shape, x.dtype.name), (y.shape, y.dtype.name)
        ((TensorShape([]), 'int32'), (TensorShape([1]), 'float32'))
        """
        return self._spec

    def cardinality(self) -> Tensor:
        """The number of elements as a scalar int64 tensor; ``INFINITE_CARDINALITY`` (-1) or
        ``UNKNOWN_CARDINALITY`` (-2) where it is not a finite known number.

        >>> import stagecraft as tf
        >>> int(tf.data.Dataset.range(5).batch(2).cardinality())
        3
        """
        return wrap(np.asarray(self._cardinality(), np.int64))

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite (it repeats forever); it has no length.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown (a filter, generator or unbatch "
                            "decides it); iterate it to count the elements.")
        return n

    def __bool__(self) -> bool:
        return True  # a dataset is an object, not a sequence, for truth tests

    # ------------------------------------------------------------------ iteration

    def __iter__(self) -> "Any":
        """An iterator: eagerly an ``OwnedIterator``; while tracing a ``tf.function``, a
        staged one (``data/staged.py``) that opens a fresh pass at every call."""
        return _make("OwnedIterator" if executing_eagerly() else "GraphIterator", self)

    def _stage_for_loop(self, *loop: Any) -> tuple:
        """``for element in dataset:`` inside a ``tf.function``: a staged loop over a new
        iterator (see ``GraphIterator._stage_for_loop``)."""
        return _make("GraphIterator", self)._stage_for_loop(*loop)

    def _new_context(self) -> Context:
        ctx = Context(self._iterators_made)
        self._iterators_made += 1
        return ctx

    def as_numpy_iterator(self) -> Iterator[Any]:
        """Iterates the elements as NumPy values (0-d tensors as NumPy scalars).

        >>> import stagecraft as tf
        >>> [int(e["a"]) for e in tf.data.Dataset.from_tensor_slices({"a": [1, 2]})
        ...                                 .as_numpy_iterator()]
        [1, 2]
        """
        for element in self:
            yield structure.to_numpy(element)

    def reduce(self, initial_state: Any, reduce_func: Callable[[Any, Any], Any]) -> Any:
        """Folds the elements into a state: ``state = reduce_func(state, element)``.

        >>> import stagecraft as tf
        >>> int(tf.data.Dataset.range(5).reduce(tf.constant(0, tf.int64), lambda s, x: s + x))
        10
        """
        state = structure.normalize(initial_state, "Dataset.reduce")
        fn = StagedFunction(reduce_func, "reduce", unpack=False)
        for element in self:
            state = structure.normalize(fn(state, element), "Dataset.reduce")
        return state

    # ------------------------------------------------------------------ sources

    @staticmethod
    def from_tensor_slices(tensors: Any, name: str | None = None) -> "Dataset":
        """One element per slice along the first dimension of every component.

        >>> import stagecraft as tf
        >>> [x.numpy().tolist() for x in tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]])]
        [[1, 2], [3, 4]]
        """
        return _make("TensorSlices", tensors)

    @staticmethod
    def from_tensors(tensors: Any, name: str | None = None) -> "Dataset":
        """A dataset of one element, ``tensors``.

        >>> import stagecraft as tf
        >>> [x.shape for x in tf.data.Dataset.from_tensors([1, 2, 3])]
        [TensorShape([3])]
        """
        return _make("Tensors", tensors)

    @staticmethod
    def range(*args: int, dtype: Any = dt.int64, name: str | None = None) -> "Dataset":
        """Like Python's ``range``, as scalar tensors (int64 unless ``dtype`` says otherwise).

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.range(1, 8, 3)]
        [1, 4, 7]
        """
        return _make("Range", *args, dtype=dtype)

    @staticmethod
    def from_generator(generator: Callable[..., Any], output_types: Any = None,
                       output_shapes: Any = None, args: Any = None,
                       output_signature: Any = None, name: str | None = None) -> "Dataset":
        """Elements produced by calling ``generator(*args)`` (a fresh call per iteration),
        checked against ``output_signature`` (or ``output_types``/``output_shapes``).

        >>> import stagecraft as tf
        >>> def gen():
        ...     yield from ([1.0], [2.0, 3.0])
        >>> ds = tf.data.Dataset.from_generator(
        ...     gen, output_signature=tf.TensorSpec(shape=[None], dtype=tf.float32))
        >>> [x.numpy().tolist() for x in ds]
        [[1.0], [2.0, 3.0]]
        """
        return _make("Generator", generator, output_types, output_shapes, args,
                     output_signature)

    @staticmethod
    def zip(*datasets: Any, name: str | None = None) -> "Dataset":
        """Elements that pair up the elements of ``datasets`` (a tuple or dict of datasets, or
        several datasets as arguments); stops with the shortest.

        >>> import stagecraft as tf
        >>> a, b = tf.data.Dataset.range(3), tf.data.Dataset.range(10, 12)
        >>> [(int(x), int(y)) for x, y in tf.data.Dataset.zip(a, b)]
        [(0, 10), (1, 11)]
        """
        if len(datasets) == 1 and not isinstance(datasets[0], Dataset):
            return _make("Zip", datasets[0])
        return _make("Zip", tuple(datasets))

    # ------------------------------------------------------------------ transformations

    def map(self, map_func: Callable[..., Any], num_parallel_calls: int | None = None,
            deterministic: bool | None = None, name: str | None = None) -> "Dataset":
        """Applies ``map_func`` to each element (a tuple element is unpacked into arguments).
        The function is traced once into a staged function, as ``tf.function`` would (Python
        side effects run only while tracing); ``num_parallel_calls`` runs that many calls at
        once on a thread pool (the compiled code releases the GIL), in order unless
        ``deterministic=False``.

        >>> import stagecraft as tf
        >>> ds = tf.data.Dataset.from_tensor_slices(([1, 2], [10, 20])).map(lambda a, b: a + b)
        >>> [int(x) for x in ds]
        [11, 22]
        """
        return _make("Map", self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate: Callable[..., Any], name: str | None = None) -> "Dataset":
        """Keeps the elements for which ``predicate`` (staged like ``map``'s function) is True.

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.range(6).filter(lambda x: x > 3)]
        [4, 5]
        """
        return _make("Filter", self, predicate)

    def batch(self, batch_size: int, drop_remainder: bool = False,
              num_parallel_calls: int | None = None, deterministic: bool | None = None,
              name: str | None = None) -> "Dataset":
        """Stacks consecutive elements into batches of ``batch_size`` (the last one smaller
        unless ``drop_remainder``).

        >>> import stagecraft as tf
        >>> [b.numpy().tolist() for b in tf.data.Dataset.range(5).batch(2)]
        [[0, 1], [2, 3], [4]]
        """
        return _make("Batch", self, batch_size, drop_remainder)

    def padded_batch(self, batch_size: int, padded_shapes: Any = None,
                     padding_values: Any = None, drop_remainder: bool = False,
                     name: str | None = None) -> "Dataset":
        """Like ``batch``, for elements of different shapes: each component is padded (with
        ``padding_values``, default 0) to ``padded_shapes`` (None dims: the longest in the
        batch).

        >>> import stagecraft as tf
        >>> ds = tf.data.Dataset.range(1, 4).map(lambda n: tf.fill([n], n))
        >>> [b.numpy().tolist() for b in ds.padded_batch(2)]
        [[[1, 0], [2, 2]], [[3, 3, 3]]]
        """
        return _make("PaddedBatch", self, batch_size, padded_shapes, padding_values,
                     drop_remainder)

    def unbatch(self, name: str | None = None) -> "Dataset":
        """Splits each element along its first dimension (the inverse of ``batch``).

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.from_tensors([[1, 2], [3, 4]]).unbatch().unbatch()]
        [1, 2, 3, 4]
        """
        return _make("Unbatch", self)

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool | None = None,
                name: str | None = None) -> "Dataset":
        """Shuffles with a buffer of ``buffer_size`` elements (a uniform shuffle when it holds
        the whole dataset). Seeds follow ``tf.random``'s rules (``set_seed`` makes the order
        repeatable); each iteration reshuffles unless ``reshuffle_each_iteration=False``.

        >>> import stagecraft as tf
        >>> sorted(int(x) for x in tf.data.Dataset.range(5).shuffle(5, seed=1))
        [0, 1, 2, 3, 4]
        """
        return _make("Shuffle", self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count: int | None = None, name: str | None = None) -> "Dataset":
        """The elements ``count`` times over (forever when ``count`` is None or -1).

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.range(2).repeat(2)]
        [0, 1, 0, 1]
        """
        return _make("Repeat", self, count)

    def take(self, count: int, name: str | None = None) -> "Dataset":
        """The first ``count`` elements (all of them for -1).

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.range(10).take(3)]
        [0, 1, 2]
        """
        return _make("Take", self, count)

    def skip(self, count: int, name: str | None = None) -> "Dataset":
        """All but the first ``count`` elements (none for -1).

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.range(5).skip(3)]
        [3, 4]
        """
        return _make("Skip", self, count)

    def prefetch(self, buffer_size: int, name: str | None = None) -> "Dataset":
        """Produces up to ``buffer_size`` elements ahead on a background thread, so the input
        pipeline runs while the consumer computes (``AUTOTUNE`` picks 2).

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.range(3).prefetch(tf.data.AUTOTUNE)]
        [0, 1, 2]
        """
        return _make("Prefetch", self, buffer_size)

    def cache(self, filename: str = "", name: str | None = None) -> "Dataset":
        """Keeps the elements of the first complete pass (in memory, or in the file
        ``filename`` + ``.npz``) and replays them on later passes.

        >>> import stagecraft as tf
        >>> ds = tf.data.Dataset.range(3).map(lambda x: x * x).cache()
        >>> [int(x) for x in ds], [int(x) for x in ds]
        ([0, 1, 4], [0, 1, 4])
        """
        return _make("Cache", self, filename)

    def concatenate(self, dataset: "Dataset", name: str | None = None) -> "Dataset":
        """The elements of this dataset, then those of ``dataset`` (same structure and
        dtypes).

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.range(2).concatenate(tf.data.Dataset.range(5, 6))]
        [0, 1, 5]
        """
        return _make("Concatenate", self, dataset)

    def enumerate(self, start: int = 0, name: str | None = None) -> "Dataset":
        """Pairs each element with its int64 index: ``(index, element)``.

        >>> import stagecraft as tf
        >>> [(int(i), int(x)) for i, x in tf.data.Dataset.range(5, 7).enumerate(1)]
        [(1, 5), (2, 6)]
        """
        return _make("Enumerate", self, start)

    def flat_map(self, map_func: Callable[..., "Dataset"], name: str | None = None) -> "Dataset":
        """Maps each element to a dataset and flattens the results in order.

        >>> import stagecraft as tf
        >>> ds = tf.data.Dataset.range(1, 3).flat_map(lambda n: tf.data.Dataset.range(n))
        >>> [int(x) for x in ds]
        [0, 0, 1]
        """
        return _make("FlatMap", self, map_func)

    def apply(self, transformation_func: Callable[["Dataset"], "Dataset"]) -> "Dataset":
        """``transformation_func(self)``, for chaining reusable transformations.

        >>> import stagecraft as tf
        >>> [int(x) for x in tf.data.Dataset.range(4).apply(lambda ds: ds.skip(2))]
        [2, 3]
        """
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"Dataset.apply: the transformation must return a Dataset; it "
                            f"returned {type(result).__name__}.")
        return result

    def __repr__(self) -> str:
        return f"<{type(self).__name__}Dataset element_spec={self._spec}>"
