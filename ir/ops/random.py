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
from stagecraft.ir.ops.shape import check_shape_input, runtime_dims
from stagecraft.ir.types import TensorType

SEED_TYPE = TensorType(dt.int64, (3,))


def _check_seed(name: str, seed: TensorType, shape: tuple | None) -> None:
    if seed.dtype is not dt.int64 or seed.shape not in ((3,), (None,), None):
        raise fail(name, f"seed must be an int64 tensor of shape [3] (global seed, op seed, "
                         f"counter), got {seed}.")
    if shape is not None and any(d is not None and d < 0 for d in shape):
        raise fail(name, f"shape must be non-negative, got {list(shape)}.")


def _out_shape(types, name: str, attrs: dict) -> tuple | None:
    """The result's shape: the ``shape`` attribute, or for a ``*_dynamic`` op the dims of its
    shape tensor (input 1) known when tracing (its ``static`` attribute)."""
    if "static" in attrs:
        check_shape_input(name, "shape", types[1], attrs["static"])
        shape = attrs["static"]
    else:
        shape = attrs["shape"]
    _check_seed(name, types[0], shape)
    return None if shape is None else tuple(shape)


def _float_infer(name):
    def infer(types, dtype, **attrs):
        shape = _out_shape(types, name, attrs)
        if dtype not in dt.FLOATS:
            raise fail(name, f"dtype must be float32 or float64, got {dtype.name}.")
        return [TensorType(dtype, shape)]
    return infer


def _seed(*triple: int) -> np.ndarray:
    return np.asarray(triple, np.int64)


def _examples(rng, d):
    return [Example((_seed(1, 2, 3),), {"shape": s, "dtype": d}) for s in [(), (4, 3), (5,)]]


# The shape tensors of the ``*_dynamic`` examples and the dims known when tracing.
_DYNAMIC_SHAPES = [((4, 3), (None, 3)), ((5,), (None,)), ((2, 0), (2, None))]


def _dynamic_examples(rng, d):
    return [Example((_seed(1, 2, 3), np.asarray(s, np.int32)), {"static": st, "dtype": d})
            for s, st in _DYNAMIC_SHAPES]


def _float_op(name: str, kind: int, doc: str, dynamic: bool = False) -> OpDef:
    if dynamic:
        return OpDef(
            name=name + "_dynamic", kind=Kind.RANDOM, inputs=("seed", "shape"),
            attrs=("static", "dtype"), infer=_float_infer(name + "_dynamic"),
            kernel=lambda seed, shape, static, dtype: philox.sample(
                kind, runtime_dims(name, "shape", shape, static), dtype.np, seed),
            dtypes=dt.FLOATS, unify=(), examples=_dynamic_examples,
            doc=f"`{name}` with the shape as a 1-D int tensor (known when the function runs).")
    return OpDef(
        name=name, kind=Kind.RANDOM, inputs=("seed",), attrs=("shape", "dtype"),
        infer=_float_infer(name),
        kernel=lambda seed, shape, dtype: philox.sample(kind, shape, dtype.np, seed),
        dtypes=dt.FLOATS, unify=(), examples=_examples, doc=doc)


_NORMAL_DOC = "Standard normal samples (mean 0, stddev 1)."
_UNIFORM_DOC = "Uniform samples in [0, 1)."
_TRUNCATED_DOC = "Standard normal samples redrawn until they lie within two standard deviations."
random_normal_op = _float_op("random_normal", philox.NORMAL, _NORMAL_DOC)
random_uniform_op = _float_op("random_uniform", philox.UNIFORM, _UNIFORM_DOC)
random_truncated_normal_op = _float_op("random_truncated_normal", philox.TRUNCATED_NORMAL,
                                       _TRUNCATED_DOC)
random_normal_dynamic_op = _float_op("random_normal", philox.NORMAL, _NORMAL_DOC, True)
random_uniform_dynamic_op = _float_op("random_uniform", philox.UNIFORM, _UNIFORM_DOC, True)
random_truncated_normal_dynamic_op = _float_op("random_truncated_normal",
                                               philox.TRUNCATED_NORMAL, _TRUNCATED_DOC, True)


def _int_infer(name):
    def infer(types, **attrs):
        shape = _out_shape(types, name, attrs)
        n = len(types)
        names = ("seed", "shape", "minval", "maxval") if n == 4 else ("seed", "minval", "maxval")
        return [TensorType(check_unified(name, names, types, (n - 2, n - 1), dt.INTS), shape)]
    return infer


def _int_kernel(seed, minval, maxval, shape):
    lo, hi = int(minval), int(maxval)
    if not lo < hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
    return philox.sample(philox.UNIFORM_INT, shape, np.asarray(minval).dtype, seed, lo, hi - lo)


def _int_examples(rng, d):
    return [Example((_seed(1, 2, 3), np.asarray(-3, d.np), np.asarray(7, d.np)), {"shape": (5,)})]


random_uniform_int_op = OpDef(
    name="random_uniform_int", kind=Kind.RANDOM, inputs=("seed", "minval", "maxval"),
    attrs=("shape",), infer=_int_infer("random_uniform_int"), kernel=_int_kernel, dtypes=dt.INTS, unify=(1, 2),
    examples=_int_examples, doc="Uniform integers in [minval, maxval).")

random_uniform_int_dynamic_op = OpDef(
    name="random_uniform_int_dynamic", kind=Kind.RANDOM,
    inputs=("seed", "shape", "minval", "maxval"), attrs=("static",),
    infer=_int_infer("random_uniform_int_dynamic"),
    kernel=lambda seed, shape, minval, maxval, static: _int_kernel(
        seed, minval, maxval, runtime_dims("random_uniform_int", "shape", shape, static)),
    dtypes=dt.INTS, unify=(2, 3),
    examples=lambda rng, d: [Example((_seed(1, 2, 3), np.asarray(s, np.int32),
                                      np.asarray(-3, d.np), np.asarray(7, d.np)), {"static": st})
                             for s, st in _DYNAMIC_SHAPES],
    doc="`random_uniform_int` with the shape as a 1-D int tensor (known when the function runs).")
