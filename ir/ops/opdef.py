"""``OpDef``: the one record that defines a primitive op (name, attributes, inference, kernel)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.ir.dtypes import HALF, DType
from stagecraft.ir.ops.half import half_kernel
from stagecraft.ir.types import TensorType


class Kind(enum.Enum):
    ELEMENTWISE = "elementwise"
    REDUCE = "reduce"
    SHAPE = "shape"
    LINALG = "linalg"
    RANDOM = "random"
    CREATION = "creation"


@dataclass(frozen=True, slots=True)
class Example:
    """One input set for the generated tests: arrays (or Python scalars) and attributes."""

    inputs: tuple
    attrs: dict = field(default_factory=dict)


# (rng, dtype) -> examples; the generated tests call it for each dtype in `OpDef.test_dtypes`.
ExamplesFn = Callable[[np.random.Generator, DType], Sequence[Example]]
InferFn = Callable[..., Sequence[TensorType]]


@dataclass(frozen=True, slots=True, eq=False)  # identity equality: hashing stays O(1)
class OpDef:
    """A primitive op.

    ``infer(in_types, **attrs)`` returns the output types or raises ``InvalidArgumentError``
    with the message users see (eagerly and when staged). ``kernel(*arrays, **attrs)`` is the
    NumPy reference implementation and returns one array (or a tuple when ``num_outputs > 1``).
    ``dtypes`` are the dtypes accepted by the inputs listed in ``unify`` (which must all share
    one dtype; Python scalars passed there adopt it; ``"all"`` means every input).

    Properties that passes and backends ask by op name (the structural ops keep theirs in
    ``ir/ops/structural.py``): ``stateful`` ops are never pruned and keep their order;
    ``copying`` ops compute a fresh result that never aliases an input on any backend, so a
    loop that reads a buffer only through them (or elementwise code) may then overwrite that
    buffer in place (``backends/codegen/inplace_rows.py``); ``value_free`` ops compute their
    result from their operands' types alone (shapes and dtypes: ``zeros_like``, ``shape``), so
    constant folding needs no operand values where those types are fully known.
    """

    name: str
    kind: Kind
    inputs: tuple[str, ...]  # argument names, used in messages; the last repeats if variadic
    attrs: tuple[str, ...]
    infer: InferFn
    kernel: Callable[..., Any]
    dtypes: tuple[DType, ...]
    unify: tuple[int, ...] | str
    examples: ExamplesFn
    doc: str
    test_dtypes: tuple[DType, ...] | None = None  # defaults to `dtypes`
    variadic: bool = False
    num_outputs: int = 1
    stateful: bool = False
    copying: bool = False
    value_free: bool = False
    # Derived in __post_init__ for bind's hot path: unified input indices, allowed NumPy dtypes.
    unify_indices: tuple[int, ...] = field(init=False, default=())
    np_dtypes: frozenset = field(init=False, default=frozenset())
    # The kernel to call when the unified inputs are not 2-byte (so not float16/bfloat16):
    # the NumPy kernel itself where every input is unified and no dtype attribute can name a
    # half dtype, skipping the half wrapper's checks on eager code's hot path.
    plain_kernel: Callable[..., Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "unify_indices", () if self.unify == "all" else tuple(self.unify))
        object.__setattr__(self, "np_dtypes", frozenset(d.np for d in self.dtypes))
        plain = self.kernel
        if self.kind is not Kind.RANDOM and any(d in HALF for d in self.dtypes):
            # float16/bfloat16 computed in float32 and rounded once per op (see .half); the
            # random kernels draw half values themselves
            object.__setattr__(self, "kernel", half_kernel(self.kernel, self.infer,
                                                           self.num_outputs))
        unified = self.unify == "all" or (not self.variadic and
                                          len(self.unify_indices) == len(self.inputs))
        object.__setattr__(self, "plain_kernel",
                           plain if unified and "dtype" not in self.attrs else self.kernel)

    def __repr__(self) -> str:
        return f"<op {self.name}>"
