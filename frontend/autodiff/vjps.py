"""The VJP rule of every differentiable primitive, written with stagecraft ops so that the
backward pass is itself recorded (higher-order derivatives) and stageable.

A rule is ``vjp(g, out, *inputs, **attrs) -> tuple`` with one entry per input: the gradient
with respect to that input, or None when none flows (integer inputs, indices, conditions).
``NOT_DIFFERENTIABLE`` lists the ops with no rule at all: their outputs are never floats or
they take no tensor inputs, so the tape never needs one.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from stagecraft.ops import array_ops as a
from stagecraft.ops import math_ops as m
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.eager.tensor import Tensor

VJPS: dict[str, Callable[..., tuple]] = {}

NOT_DIFFERENTIABLE = frozenset({
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "logical_not", "reduce_all", "reduce_any", "argmax", "argmin",
    "shape", "where_indices", "range", "eye", "random_normal", "random_uniform",
    "random_uniform_int", "random_truncated_normal", "random_normal_dynamic",
    "random_uniform_dynamic", "random_uniform_int_dynamic", "random_truncated_normal_dynamic",
    "is_finite", "is_nan", "is_inf", "argsort", "unique_index", "searchsorted",
    "random_gamma_grad", "random_poisson", "random_binomial",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
})

# Opted-out ops whose float outputs do depend on float inputs, but whose derivative nobody
# defines (TensorFlow has none either): a gradient reaching one raises this message instead of
# silently dropping a term (a Hessian of gamma samples, say).
UNDEFINED: dict[str, str] = {
    "random_gamma_grad":
        "random_gamma_grad: the second derivative of tf.random.gamma's samples with respect to "
        "alpha is not defined (TensorFlow has none either). Differentiate the samples once, or "
        "wrap the first-order gradient in tf.stop_gradient where an outer tape watches alpha.",
}


def vjp(*names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for n in names:
            VJPS[n] = fn
        return fn
    return register


def same_shape(x: Tensor, y: Tensor) -> bool:
    sx, sy = x.shape, y.shape
    return sx.is_fully_defined() and sx == sy


def unbroadcast(g: Tensor, like: Tensor) -> Tensor:
    """Sums ``g`` down to the shape of ``like`` (undoing broadcasting); shared by every binary
    rule."""
    return g if same_shape(g, like) else bind(OPS["sum_like"], g, like)


# ---------------------------------------------------------------------- elementwise

@vjp("negative")
def _neg(g, out, x):
    return (m.negative(g),)


@vjp("abs")
def _abs(g, out, x):
    return (m.multiply(g, m.sign(x)),)


@vjp("sign", "zeros_like", "ones_like")
def _zero(g, out, x):
    return (a.zeros_like(x),) if x.dtype.is_floating else (None,)


@vjp("floor", "ceil", "round", "stop_gradient")
def _none(g, out, x):
    return (None,)


@vjp("identity")
def _identity(g, out, x):
    return (g,)


@vjp("square")
def _square(g, out, x):
    return (m.multiply(g, m.multiply(x, 2)),)


@vjp("exp")
def _exp(g, out, x):
    return (m.multiply(g, out),)


@vjp("log")
def _log(g, out, x):
    return (m.truediv(g, x),)


@vjp("log1p")
def _log1p(g, out, x):
    return (m.truediv(g, m.add(x, 1)),)


@vjp("sqrt")
def _sqrt(g, out, x):
    return (m.truediv(g, m.multiply(out, 2)),)


@vjp("rsqrt")
def _rsqrt(g, out, x):
    return (m.multiply(g, m.multiply(m.multiply(out, m.square(out)), -0.5)),)


@vjp("sin")
def _sin(g, out, x):
    return (m.multiply(g, m.cos(x)),)


@vjp("cos")
def _cos(g, out, x):
    return (m.negative(m.multiply(g, m.sin(x))),)


@vjp("tanh")
def _tanh(g, out, x):
    return (m.multiply(g, m.subtract(1, m.square(out))),)


@vjp("sigmoid")
def _sigmoid(g, out, x):
    return (m.multiply(g, m.multiply(out, m.subtract(1, out))),)


@vjp("softplus")
def _softplus(g, out, x):
    return (m.multiply(g, m.sigmoid(x)),)


@vjp("relu")
def _relu(g, out, x):
    return (m.where(m.greater(x, 0), g, a.zeros_like(g)),)


@vjp("cast")
def _cast(g, out, x, dtype):
    return (m.cast(g, x.dtype) if x.dtype.is_floating and dtype.is_floating else None,)


@vjp("add")
def _add(g, out, x, y):
    return unbroadcast(g, x), unbroadcast(g, y)


@vjp("expm1")
def _expm1(g, out, x):
    return (m.multiply(g, m.add(out, 1)),)


@vjp("tan")
def _tan(g, out, x):
    return (m.multiply(g, m.add(1, m.square(out))),)


@vjp("atan")
def _atan(g, out, x):
    return (m.truediv(g, m.add(1, m.square(x))),)


@vjp("asin")
def _asin(g, out, x):
    return (m.multiply(g, m.rsqrt(m.subtract(1, m.square(x)))),)


@vjp("acos")
def _acos(g, out, x):
    return (m.negative(m.multiply(g, m.rsqrt(m.subtract(1, m.square(x))))),)


@vjp("sinh")
def _sinh(g, out, x):
    return (m.multiply(g, m.cosh(x)),)


@vjp("cosh")
def _cosh(g, out, x):
    return (m.multiply(g, m.sinh(x)),)


@vjp("asinh")
def _asinh(g, out, x):
    return (m.multiply(g, m.rsqrt(m.add(m.square(x), 1))),)


@vjp("acosh")
def _acosh(g, out, x):
    return (m.multiply(g, m.rsqrt(m.subtract(m.square(x), 1))),)


@vjp("atanh")
def _atanh(g, out, x):
    return (m.truediv(g, m.subtract(1, m.square(x))),)


@vjp("reciprocal")
def _reciprocal(g, out, x):
    return (m.negative(m.multiply(g, m.square(out))),)


@vjp("softsign")
def _softsign(g, out, x):
    return (m.truediv(g, m.square(m.add(1, m.abs(x)))),)


@vjp("atan2")
def _atan2(g, out, y, x):
    scale = m.truediv(g, m.add(m.square(x), m.square(y)))
    return unbroadcast(m.multiply(scale, x), y), unbroadcast(m.negative(m.multiply(scale, y)), x)


@vjp("squared_difference")
def _squared_difference(g, out, x, y):
    d = m.multiply(m.multiply(g, 2), m.subtract(x, y))
    return unbroadcast(d, x), unbroadcast(m.negative(d), y)


@vjp("xlogy")
def _xlogy(g, out, x, y):
    nonzero = m.not_equal(x, 0)
    safe_y = m.where(nonzero, y, a.ones_like(y) if y.shape == x.shape else y)
    gx = m.where(nonzero, m.multiply(g, m.log(safe_y)), a.zeros_like(g))
    return unbroadcast(gx, x), unbroadcast(m.truediv(m.multiply(g, x), y), y)


@vjp("subtract")
def _sub(g, out, x, y):
    return unbroadcast(g, x), unbroadcast(m.negative(g), y)


@vjp("multiply")
def _mul(g, out, x, y):
    return unbroadcast(m.multiply(g, y), x), unbroadcast(m.multiply(g, x), y)


@vjp("divide")
def _div(g, out, x, y):
    if not x.dtype.is_floating:
        return None, None
    gx = m.truediv(g, y)
    return unbroadcast(gx, x), unbroadcast(m.negative(m.multiply(gx, m.truediv(x, y))), y)


@vjp("floordiv", "truncatediv")
def _floordiv(g, out, x, y):
    return None, None


@vjp("floormod")
def _floormod(g, out, x, y):
    return unbroadcast(g, x), unbroadcast(m.negative(m.multiply(g, m.floordiv(x, y))), y)


@vjp("pow")
def _pow(g, out, x, y):
    gx = m.multiply(g, m.multiply(y, m.pow(x, m.subtract(y, 1))))
    positive = m.greater(x, 0)
    safe = m.where(positive, x, a.ones_like(x))
    gy = m.multiply(g, m.multiply(out, m.where(positive, m.log(safe), a.zeros_like(x))))
    return unbroadcast(gx, x), unbroadcast(gy, y)


def _select_grads(g, x_mask, x, y):
    zeros = a.zeros_like(g)
    return unbroadcast(m.where(x_mask, g, zeros), x), unbroadcast(m.where(x_mask, zeros, g), y)


@vjp("maximum")
def _maximum(g, out, x, y):
    return _select_grads(g, m.greater_equal(x, y), x, y)


@vjp("minimum")
def _minimum(g, out, x, y):
    return _select_grads(g, m.less_equal(x, y), x, y)


@vjp("select")
def _select(g, out, c, x, y):
    return (None,) + _select_grads(g, c, x, y)


# ----------------------------------------------------------------------- reductions

def _keepdims_grad(g: Tensor, x: Tensor, axes, keepdims: bool) -> Tensor:
    """``g`` of a reduction, reshaped to keepdims form and broadcast back to ``x``'s shape."""
    if not keepdims:
        for ax in sorted(range(x.ndim) if axes is None else [d % x.ndim for d in axes]):
            g = a.expand_dims(g, ax)
    return bind(OPS["broadcast_like"], g, x)


def _count(x: Tensor, out: Tensor) -> Any:
    """How many inputs each output of a reduction averaged: a Python int for static shapes,
    a tensor (in x's dtype) when dimensions are only known at run time."""
    if x.shape.is_fully_defined() and out.shape.is_fully_defined():
        return max(int(np.prod(x.shape.as_list())) // max(int(np.prod(out.shape.as_list())), 1),
                   1)
    n = m.truediv(m.cast(a.size(x), x.dtype), m.maximum(m.cast(a.size(out), x.dtype), 1))
    return m.maximum(n, 1)


@vjp("reduce_sum")
def _reduce_sum(g, out, x, axes, keepdims):
    return (_keepdims_grad(g, x, axes, keepdims),)


@vjp("reduce_mean")
def _reduce_mean(g, out, x, axes, keepdims):
    return (m.truediv(_keepdims_grad(g, x, axes, keepdims), _count(x, out)),)


@vjp("reduce_max", "reduce_min")
def _reduce_extreme(g, out, x, axes, keepdims):
    hit = m.cast(m.equal(x, _keepdims_grad(out, x, axes, keepdims)), x.dtype)
    ties = m.reduce_sum(hit, axes, keepdims=True)
    return (m.truediv(m.multiply(_keepdims_grad(g, x, axes, keepdims), hit),
                      bind(OPS["broadcast_like"], ties, x)),)


@vjp("reduce_prod")
def _reduce_prod(g, out, x, axes, keepdims):
    # d prod / d x_i is the product of the other elements: exclusive cumulative products from
    # both ends, so zeros in x are handled exactly (no division by x).
    rank = x.ndim
    reduced = sorted(range(rank) if axes is None else {d % rank for d in axes})
    kept = [d for d in range(rank) if d not in reduced]
    perm = kept + reduced
    dims = x.shape.as_list()
    flat = a.reshape(a.transpose(x, perm),
                     [dims[d] for d in kept] + [int(np.prod([dims[d] for d in reduced]))])
    others = m.multiply(m.cumprod(flat, axis=-1, exclusive=True),
                        m.cumprod(flat, axis=-1, exclusive=True, reverse=True))
    others = a.transpose(a.reshape(others, [dims[d] for d in perm]),
                         tuple(int(i) for i in np.argsort(perm)))
    return (m.multiply(_keepdims_grad(g, x, axes, keepdims), others),)


@vjp("cumsum")
def _cumsum(g, out, x, axis, exclusive, reverse):
    return (m.cumsum(g, axis, exclusive=exclusive, reverse=not reverse),)


@vjp("cumprod")
def _cumprod(g, out, x, axis, exclusive, reverse):
    summed = m.cumsum(m.multiply(out, g), axis, exclusive=exclusive, reverse=not reverse)
    return (m.truediv(summed, x),)


# --------------------------------------------------------------------------- linalg

@vjp("matmul")
def _matmul(g, out, x, y, transpose_a, transpose_b):
    mm = m.matmul
    if not transpose_a and not transpose_b:
        gx, gy = mm(g, y, transpose_b=True), mm(x, g, transpose_a=True)
    elif transpose_a and not transpose_b:
        gx, gy = mm(y, g, transpose_b=True), mm(x, g)
    elif not transpose_a and transpose_b:
        gx, gy = mm(g, y), mm(g, x, transpose_a=True)
    else:
        gx, gy = mm(y, g, transpose_a=True, transpose_b=True), \
            mm(g, x, transpose_a=True, transpose_b=True)
    return unbroadcast(gx, x), unbroadcast(gy, y)


@vjp("diag")
def _diag(g, out, x):
    return (bind(OPS["diag_part"], g),)


@vjp("diag_part")
def _diag_part(g, out, x):
    rows, cols = x.shape[-2], x.shape[-1]
    full = bind(OPS["diag"], g)
    if rows == cols:
        return (full,)
    k = min(rows, cols)
    left = a.eye(rows, k, dtype=g.dtype)
    right = a.eye(k, cols, dtype=g.dtype)
    return (m.matmul(m.matmul(left, full), right),)


# ---------------------------------------------------------------------------- shape

@vjp("reshape", "squeeze", "expand_dims")
def _reshape(g, out, x, **attrs):
    return (bind(OPS["reshape_like"], g, x),)


@vjp("reshape_like")
def _reshape_like(g, out, x, like):
    return bind(OPS["reshape_like"], g, x), None


@vjp("transpose")
def _transpose(g, out, x, perm):
    return (a.transpose(g, tuple(int(i) for i in np.argsort(perm))),)


@vjp("concat")
def _concat(g, out, *xs, axis):
    rank = g.ndim
    ax = axis % rank
    grads, start = [], 0
    for x in xs:
        size = x.shape[ax]
        if size is None:  # unknown while tracing (e.g. a stack grown in a loop): a tensor
            size = a.shape(x)[ax]
        stop = start + size
        dyn: list = []

        def bound(v):
            if isinstance(v, (int, np.integer)):
                return int(v)
            dyn.append(v)
            return f"${len(dyn) - 1}"
        spec = (("slice", None, None, None),) * ax + (("slice", bound(start), bound(stop), None),)
        grads.append(bind(OPS["strided_slice"], g, *dyn, spec=spec))
        start = stop
    return tuple(grads)


@vjp("broadcast_to")
def _broadcast_to(g, out, x, shape):
    return (unbroadcast(g, x),)


@vjp("broadcast_like")
def _broadcast_like(g, out, x, like):
    return unbroadcast(g, x), None


@vjp("sum_like")
def _sum_like(g, out, x, like):
    return bind(OPS["broadcast_like"], g, x), None


@vjp("gather")
def _gather(g, out, params, indices, axis, batch_dims):
    return bind(OPS["gather_grad"], g, indices, params, axis=axis, batch_dims=batch_dims), None


@vjp("row_update")
def _row_update(g, out, buffer, index, value):
    return (bind(OPS["row_update"], g, index, a.zeros_like(value)), None,
            bind(OPS["gather"], g, index, axis=0, batch_dims=0))


@vjp("gather_grad")
def _gather_grad(g, out, grad, indices, like, axis, batch_dims):
    return bind(OPS["gather"], g, indices, axis=axis, batch_dims=batch_dims), None, None


@vjp("one_hot")
def _one_hot(g, out, indices, on_value, off_value, depth, axis):
    hot = bind(OPS["one_hot"], indices, a.ones_like(on_value), a.zeros_like(off_value),
               depth=depth, axis=axis)
    return None, m.reduce_sum(m.multiply(g, hot)), m.reduce_sum(m.multiply(g, m.subtract(1, hot)))


def _untile(g: Tensor, x: Tensor, multiples: list) -> Tensor:
    """Sums the tiles of ``g`` back into the shape of ``x`` (multiples: ints or scalar
    tensors; x's dims may be unknown while tracing)."""
    dims = [d if d is not None else a.shape(x)[i] for i, d in enumerate(x.shape.as_list())]
    split = [v for pair in zip(multiples, dims) for v in pair]
    summed = m.reduce_sum(a.reshape(g, split), axis=list(range(0, 2 * len(dims), 2)))
    return bind(OPS["reshape_like"], summed, x)


@vjp("tile")
def _tile(g, out, x, multiples):
    return (_untile(g, x, list(multiples)),)


@vjp("tile_dynamic")
def _tile_dynamic(g, out, x, multiples, static):
    known = static if static is not None else [None] * x.ndim
    return _untile(g, x, [k if k is not None else multiples[i] for i, k in enumerate(known)]), None


@vjp("strided_slice")
def _strided_slice(g, out, x, *dynamic, spec):
    return (bind(OPS["strided_slice_grad"], g, x, *dynamic, spec=spec),) + (None,) * len(dynamic)


@vjp("strided_slice_update")
def _strided_slice_update(g, out, x, value, *dynamic, spec):
    kept = bind(OPS["strided_slice_update"], g, a.zeros_like(value), *dynamic, spec=spec)
    return (kept, bind(OPS["strided_slice"], g, *dynamic, spec=spec)) + (None,) * len(dynamic)


@vjp("scatter_nd")
def _scatter_nd(g, out, x, indices, updates, mode):
    # gather_nd(g, indices): rows of g flattened over the k indexed dims, at linear positions.
    dims = a.shape(g, out_type=indices.dtype)
    k = indices.shape[-1]
    strides = [m.reduce_prod(dims[j + 1:k]) for j in range(k)]
    linear = m.reduce_sum(indices * a.stack(strides), axis=-1)
    rows = a.gather(a.reshape(g, a.concat([[-1], dims[k:]], 0)), linear)
    if mode == "update":
        return bind(OPS["scatter_nd"], g, indices, a.zeros_like(updates), mode=mode), None, rows
    return g, None, rows if mode == "add" else m.negative(rows)


@vjp("strided_slice_grad")
def _strided_slice_grad(g, out, grad, like, *dynamic, spec):
    return (bind(OPS["strided_slice"], g, *dynamic, spec=spec), None) + (None,) * len(dynamic)


@vjp("fill")
def _fill(g, out, value, dims):
    return (m.reduce_sum(g),)


@vjp("fill_dynamic")
def _fill_dynamic(g, out, value, dims, static):
    return m.reduce_sum(g), None


@vjp("reshape_dynamic")
def _reshape_dynamic(g, out, x, shape, static):
    return bind(OPS["reshape_like"], g, x), None


@vjp("broadcast_to_dynamic")
def _broadcast_to_dynamic(g, out, x, shape, static):
    return unbroadcast(g, x), None


def rule(name: str) -> Callable[..., tuple] | None:
    """The VJP rule for op ``name`` (None if it is not differentiable)."""
    return VJPS.get(name)


__all__ = ["VJPS", "NOT_DIFFERENTIABLE", "UNDEFINED", "rule", "unbroadcast"]


# Rule modules of other op families register into VJPS when this table loads.
from stagecraft.autodiff.conv_vjps import RULES as _CONV_RULES  # noqa: E402
from stagecraft.autodiff.pooling_vjps import RULES as _POOLING_RULES  # noqa: E402
from stagecraft.autodiff.linalg_vjps import RULES as _LINALG_RULES  # noqa: E402
from stagecraft.autodiff.segment_vjps import RULES as _SEGMENT_RULES  # noqa: E402
from stagecraft.autodiff.special_vjps import RULES as _SPECIAL_RULES  # noqa: E402
from stagecraft.autodiff.logsumexp_vjps import RULES as _LOGSUMEXP_RULES  # noqa: E402
from stagecraft.autodiff.softmax_vjps import RULES as _SOFTMAX_RULES  # noqa: E402

VJPS.update(_CONV_RULES)
VJPS.update(_POOLING_RULES)
VJPS.update(_LINALG_RULES)
VJPS.update(_SEGMENT_RULES)
VJPS.update(_SPECIAL_RULES)
VJPS.update(_LOGSUMEXP_RULES)
VJPS.update(_SOFTMAX_RULES)

from stagecraft.autodiff.complex_vjps import RULES as _COMPLEX_RULES  # noqa: E402
from stagecraft.autodiff.complex_vjps import complex_aware as _complex_aware  # noqa: E402

VJPS.update(_COMPLEX_RULES)
from stagecraft.autodiff.fft_vjps import RULES as _FFT_RULES  # noqa: E402
VJPS.update(_FFT_RULES)
VJPS.update(_complex_aware(VJPS))  # complex inputs of ops that also take real ones
