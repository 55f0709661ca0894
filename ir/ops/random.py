"""Random primitives: pure functions of their ``seed`` input, an int64 triple (global seed,
op seed, call counter). The frontend supplies the seed: a constant for an eager call, the
value of a state variable that the staged code advances for a staged one (so a compiled
function draws new numbers on every call). Every backend computes the same Philox stream
(``ir/ops/philox.py``)."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops import philox
from stagecraft.ir.ops.infer import check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.types import TensorType

SEED_TYPE = TensorType(dt.int64, (3,))


def _check_seed(name: str, seed: TensorType, shape: tuple) -> None:
    if seed.dtype is not dt.int64 or seed.shape not in ((3,), (None,), None):
        raise fail(name, f"seed must be an int64 tensor of shape [3] (global seed, op seed, "
                         f"counter), got {seed}.")
    if any(d < 0 for d in shape):
        raise fail(name, f"shape must be non-negative, got {list(shape)}.")


def _float_infer(name):
    def infer(types, shape, dtype):
        _check_seed(name, types[0], shape)
        if dtype not in dt.FLOATS:
            raise fail(name, f"dtype must be float32 or float64, got {dtype.name}.")
        return [TensorType(dtype, tuple(shape))]
    return infer


def _seed(*triple: int) -> np.ndarray:
    return np.asarray(triple, np.int64)


def _examples(rng, d):
    return [Example((_seed(1, 2, 3),), {"shape": s, "dtype": d}) for s in [(), (4, 3), (5,)]]


def _float_op(name: str, kind: int, doc: str) -> OpDef:
    return OpDef(
        name=name, kind=Kind.RANDOM, inputs=("seed",), attrs=("shape", "dtype"),
        infer=_float_infer(name),
        kernel=lambda seed, shape, dtype: philox.sample(kind, shape, dtype.np, seed),
        dtypes=dt.FLOATS, unify=(), examples=_examples, doc=doc)


random_normal_op = _float_op("random_normal", philox.NORMAL,
                             "Standard normal samples (mean 0, stddev 1).")
random_uniform_op = _float_op("random_uniform", philox.UNIFORM, "Uniform samples in [0, 1).")
random_truncated_normal_op = _float_op(
    "random_truncated_normal", philox.TRUNCATED_NORMAL,
    "Standard normal samples redrawn until they lie within two standard deviations.")


def _int_infer(types, shape):
    _check_seed("random_uniform_int", types[0], shape)
    d = check_unified("random_uniform_int", ("seed", "minval", "maxval"), types, (1, 2), dt.INTS)
    return [TensorType(d, tuple(shape))]


def _int_kernel(seed, minval, maxval, shape):
    lo, hi = int(minval), int(maxval)
    if not lo < hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
    return philox.sample(philox.UNIFORM_INT, shape, np.asarray(minval).dtype, seed, lo, hi - lo)


random_uniform_int_op = OpDef(
    name="random_uniform_int", kind=Kind.RANDOM, inputs=("seed", "minval", "maxval"),
    attrs=("shape",), infer=_int_infer, kernel=_int_kernel, dtypes=dt.INTS, unify=(1, 2),
    examples=lambda rng, d: [Example((_seed(1, 2, 3), np.asarray(-3, d.np), np.asarray(7, d.np)),
                                     {"shape": (5,)})],
    doc="Uniform integers in [minval, maxval).")
