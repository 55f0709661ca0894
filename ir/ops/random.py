"""Random primitives. They are pure functions of their ``seed`` attribute, a triple
(global seed, op seed, call counter) that the frontend advances, so results are reproducible
and any backend can generate the same stream (Philox keyed by the seed, counter as offset)."""
from __future__ import annotations

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_unified, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.types import TensorType


def generator(seed: tuple) -> np.random.Generator:
    """The Philox stream for a (global, op, counter) seed triple."""
    a, b, counter = (int(s) & 0xFFFFFFFFFFFFFFFF for s in seed)
    return np.random.Generator(np.random.Philox(key=[a, b], counter=[counter, 0, 0, 0]))


def _float_infer(name):
    def infer(types, shape, dtype, seed):
        if dtype not in dt.FLOATS:
            raise fail(name, f"dtype must be float32 or float64, got {dtype.name}.")
        if any(d < 0 for d in shape):
            raise fail(name, f"shape must be non-negative, got {list(shape)}.")
        return [TensorType(dtype, tuple(shape))]
    return infer


def _examples(rng, d):
    return [Example((), {"shape": s, "dtype": d, "seed": (1, 2, 3)}) for s in [(), (4, 3)]]


random_normal_op = OpDef(
    name="random_normal", kind=Kind.RANDOM, inputs=(), attrs=("shape", "dtype", "seed"),
    infer=_float_infer("random_normal"),
    kernel=lambda shape, dtype, seed: generator(seed).standard_normal(shape).astype(dtype.np),
    dtypes=dt.FLOATS, unify=(), examples=_examples, stateful=True,
    doc="Standard normal samples (mean 0, stddev 1).")

random_uniform_op = OpDef(
    name="random_uniform", kind=Kind.RANDOM, inputs=(), attrs=("shape", "dtype", "seed"),
    infer=_float_infer("random_uniform"),
    kernel=lambda shape, dtype, seed: generator(seed).random(shape).astype(dtype.np),
    dtypes=dt.FLOATS, unify=(), examples=_examples, stateful=True,
    doc="Uniform samples in [0, 1).")


def _int_infer(types, shape, seed):
    d = check_unified("random_uniform_int", ("minval", "maxval"), types, (0, 1), dt.INTS)
    return [TensorType(d, tuple(shape))]


def _int_kernel(minval, maxval, shape, seed):
    if not minval < maxval:
        raise ValueError(f"Need minval < maxval: {minval} >= {maxval}")
    return generator(seed).integers(minval, maxval, shape, dtype=np.asarray(minval).dtype)


random_uniform_int_op = OpDef(
    name="random_uniform_int", kind=Kind.RANDOM, inputs=("minval", "maxval"),
    attrs=("shape", "seed"), infer=_int_infer, kernel=_int_kernel, dtypes=dt.INTS, unify=(0, 1),
    examples=lambda rng, d: [Example((np.asarray(-3, d.np), np.asarray(7, d.np)),
                                     {"shape": (5,), "seed": (1, 2, 3)})],
    stateful=True, doc="Uniform integers in [minval, maxval).")
