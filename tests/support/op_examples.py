"""The op table's examples as every generated op test draws them: a seed fixed by a key
(default ``(op, dtype)``), so every xdist worker and every backend sees the same data."""
from __future__ import annotations

import math
import zlib
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt


def seed(*parts: Any) -> int:
    """A stable seed from the parts (CRC-32 of ``"a/b/c"``).

    >>> seed("add", "float32") == seed("add/float32")
    True
    """
    return zlib.crc32("/".join(map(str, parts)).encode())


def rng(*parts: Any) -> np.random.Generator:
    """A generator seeded by ``seed(*parts)``.

    >>> float(rng("x").uniform()) == float(rng("x").uniform())
    True
    """
    return np.random.default_rng(seed(*parts))


def dtypes_to_test(name: str) -> tuple:
    """The dtypes an op's generated tests run by default: ``OpDef.test_dtypes`` when the op
    sets it, else its classic dtypes (``dt.CLASSIC``), and for one op in three (picked by the
    name) one of its other dtypes too: the suite covers each new dtype on several ops of every
    backend without compiling every op in every dtype (each dtype is a new specialization of
    the kernel library; ``all_dtypes_to_test`` is the whole matrix, run with --full-matrix).

    >>> dtypes_to_test("logical_not")
    (stagecraft.bool,)
    >>> [d.name for d in dtypes_to_test("add")], [d.name for d in dtypes_to_test("multiply")]
    (['int32', 'int64', 'float32', 'float64'], ['int32', 'int64', 'float32', 'float64', 'bfloat16'])
    """
    op = OPS[name]
    if op.test_dtypes is not None:
        return op.test_dtypes
    classic = tuple(d for d in op.dtypes if d in dt.CLASSIC)
    others = tuple(d for d in op.dtypes if d not in dt.CLASSIC)
    if not others or seed(name, "extra") % 3:
        return classic
    return classic + (others[seed(name) % len(others)],)


def all_dtypes_to_test(name: str) -> tuple:
    """Every dtype an op declares (``OpDef.test_dtypes`` when set) — the full matrix.

    >>> len(all_dtypes_to_test("add")) > len(dtypes_to_test("add"))
    True
    """
    op = OPS[name]
    return op.test_dtypes if op.test_dtypes is not None else op.dtypes


def compiled_dtypes(name: str) -> tuple:
    """The op's dtypes that compiled kernels see: not float16/bfloat16, which compiled code
    holds in float32 buffers (``backends/codegen/half.py``; tests/frontend/test_half_dtypes.py
    checks them end to end).

    >>> [d.name for d in compiled_dtypes("matmul")][:3]
    ['int8', 'int16', 'int32']
    """
    return tuple(d for d in OPS[name].dtypes if d not in dt.HALF)


def extra_dtype_cases(name: str) -> list:
    """``(dtype, example)`` for the dtypes of ``all_dtypes_to_test`` that the default sample
    leaves out (the generated tests mark them ``full_matrix``).

    >>> all(d not in dtypes_to_test("add") for d, _ in extra_dtype_cases("add"))
    True
    """
    sample = dtypes_to_test(name)
    return [(d, ex) for d in all_dtypes_to_test(name) if d not in sample
            for ex in examples(name, d)]


def examples(name: str, d: dt.DType, key: Sequence[Any] | None = None) -> list:
    """The op's examples for dtype ``d``, drawn with ``rng(*key)``; ``key`` defaults to
    ``(name, d.name)``, which the generated tests of every backend share (the Numba kernel
    tests use ``("numba", name, d.name)``, the finite-difference gradients ``(name,)``).

    >>> len(examples("add", dt.float32)) > 0
    True
    """
    key = (name, d.name) if key is None else key
    return list(OPS[name].examples(rng(*key), d))


def cases(name: str) -> list:
    """``(dtype, example)`` for every test dtype of the op and every example.

    >>> all(d in dtypes_to_test("add") for d, _ in cases("add"))
    True
    """
    return [(d, ex) for d in dtypes_to_test(name) for ex in examples(name, d)]


def is_python(x: Any) -> bool:
    """A Python scalar (not a NumPy one): passed to ops as it is.

    >>> is_python(1.0), is_python(np.float32(1.0))
    (True, False)
    """
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def inputs(ex: Any) -> list:
    """``tf.constant`` for arrays and NumPy scalars; Python scalars stay Python values (eager
    and staged get the very same objects).

    >>> [type(x).__name__ for x in inputs(examples("add", dt.float32)[0])]
    ['Tensor', 'Tensor']
    """
    import stagecraft as tf
    return [x if is_python(x) else tf.constant(np.asarray(x)) for x in ex.inputs]


def as_list(out: Any) -> list:
    """An op's outputs as a list (one output is not a sequence).

    >>> as_list(1), as_list((1, 2))
    ([1], [1, 2])
    """
    return list(out) if isinstance(out, (list, tuple)) else [out]


def apply_all(cases: Sequence[tuple]) -> Callable:
    """``f(*flat_inputs) -> [outputs of every case]``: one function (to stage once: compiling
    is what costs) applying each case's op to its slice of the flat inputs; ``cases`` are
    ``(name, dtype, example)``.

    >>> import stagecraft as tf
    >>> f = apply_all([("negative", dt.float32, examples("negative", dt.float32)[0])])
    >>> len(f(*inputs(examples("negative", dt.float32)[0])))
    1
    """
    from stagecraft.eager.bind import bind
    sizes = [len(ex.inputs) for _, _, ex in cases]

    def apply(*flat: Any) -> list:
        outs, k = [], 0
        for (name, _, ex), n in zip(cases, sizes):
            outs.extend(as_list(bind(OPS[name], *flat[k:k + n], **ex.attrs)))
            k += n
        return outs
    return apply


def random_values(key: str, dtype: str, shape: tuple, lo: float, hi: float,
                  nonzero: bool = False) -> np.ndarray:
    """An array of ``dtype`` (a name) and ``shape`` seeded by ``key``: uniform in [lo, hi]
    for floats, integers in [floor(lo), ceil(hi)], fair coins for bool; ``nonzero`` keeps
    values away from 0 (right operands of divisions).

    >>> random_values("k", "int32", (3,), 1, 2, nonzero=True).dtype.name
    'int32'
    """
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int32", "int64"):
        v = rng.integers(int(math.floor(lo)), int(math.ceil(hi)) + 1, shape)
        if nonzero:
            v = np.where(v == 0, 1, v)
        return np.asarray(v, dtype)
    v = rng.uniform(lo, hi, shape)
    if nonzero:
        v = np.where(np.abs(v) < 0.25, 0.5, v)
    return np.asarray(v, dtype)
