"""The eager CUDA op library: ``run(op_name, inputs, attrs)`` for every op of the op table.

Inputs are device arrays (host arrays and scalars are copied to the device first); results
are new device arrays, except where the reference kernel returns a view or its input
(``identity``, ``stop_gradient``, ``reshape``, ``reshape_like``, ``expand_dims``, ``squeeze``,
``sum_like`` without summed dims), which return a device view of the same buffer. Output
dtypes and shapes come from the op's ``infer``, so they are exactly the op table's; bad
dtypes or shapes raise its ``InvalidArgumentError``; value errors raise the exception the
reference kernel raises, with the same message (``bind`` wraps both the same way).

Data stays on the device. The host reads device values only where the result's shape or an
error depends on them, always single elements: ``range`` (start, limit, delta),
``where_indices`` (the row count), ``strided_slice``/``strided_slice_grad`` with run-time
bounds (those bounds), ``row_update`` (the row index), the shape tensor of the ``*_dynamic``
ops (a few ints), ``random_uniform_int`` (minval, maxval), and the error flag of
``gather``/``gather_grad`` and of integer ``floordiv``/``floormod``/``pow``, and one flag per
matrix of ``matrix_inverse``/``matrix_solve``/``cholesky`` (singular, not positive definite).
``qr``, ``svd`` and ``eigh`` are the exception: a host round trip through the reference
kernels (see ``kernels/decompositions.py``).

Each input signature gets a plan (the inferred output types; for an elementwise op its kernel
and launch ready). An op that is not elementwise replays its recorded launches from the fourth
call of a signature on, skipping its Python code (``op_replay.py``).

>>> import numpy as np
>>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
>>> x = to_device(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
>>> to_host(run("matmul", [x, x], {"transpose_a": False, "transpose_b": True}))
array([[ 5., 11.],
       [11., 25.]], dtype=float32)
>>> to_host(run("reduce_sum", [x], {"axes": (0,), "keepdims": False}))
array([4., 6.], dtype=float32)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends.codegen import scalar_ops
from stagecraft.backends.numba_cuda import memory
from stagecraft.backends.numba_cuda.kernels import (elementwise, gather, matmul, random, reduce,
                                                    scatter, shape)
from stagecraft.backends.numba_cuda.kernels import pooling
from stagecraft.backends.numba_cuda.kernels import conv
from stagecraft.backends.numba_cuda.kernels import decompositions
from stagecraft.backends.numba_cuda.kernels import half
from stagecraft.backends.numba_cuda.op_replay import Replayed
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops import Kind
from stagecraft.ir.ops.shape import check_broadcast_to, resolve_reshape, runtime_dims
from stagecraft.ir.ops.slicing import index_tuple, update_shape_error
from stagecraft.ir.types import TensorType

# (device inputs, attrs, inferred output types) -> device array (or tuple of them).
Impl = Callable[[list, dict, Sequence[TensorType]], Any]
TABLE: dict[str, Impl] = {}
# Ops the CUDA path does not run, with the reason (shown in the error). Empty: every op runs.
OPT_OUT: dict[str, str] = {}
# Ready calls by signature (see _signature): a repeated call does no typing or inference.
_PLANS: dict[tuple, "_Plan"] = {}
_MAX_PLANS = 4096


def run(op_name: str, inputs: Sequence[Any], attrs: dict) -> Any:
    """Runs op ``op_name`` of the op table on the device: one device array, or a tuple for
    ops with several outputs. Same semantics as the op's NumPy kernel (values, dtypes,
    shapes, broadcasting, errors). ``inputs`` are device arrays; a host array or scalar among
    them is copied to the device first (a NumPy scalar operand of an elementwise op is passed
    to its kernel instead). An op without an entry raises NotImplementedError.

    >>> import numpy as np
    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> y = run("add", [to_device(np.array([1, 2], np.int32)), to_device(np.int32(10))], {})
    >>> to_host(y)
    array([11, 12], dtype=int32)
    >>> run("gather", [to_device(np.zeros(3)), to_device(np.array([3]))],
    ...     {"axis": 0, "batch_dims": 0})
    Traceback (most recent call last):
    IndexError: indices[0] = 3 is not in [0, 3). Indices must be valid positions; ...
    """
    try:
        if len(inputs) == 2 and not attrs:   # (_signature's keys, inlined for binary and
            x, y = inputs                    # unary ops without attrs)
            key: tuple | None = (op_name, (type(x), x.shape, x.dtype, type(y), y.shape,
                                           y.dtype), ())
        elif len(inputs) == 1 and not attrs:
            x, = inputs
            key = (op_name, (type(x), x.shape, x.dtype), ())
        else:
            key = _signature(op_name, inputs, attrs)
        plan = _PLANS.get(key)
    except (AttributeError, TypeError):  # a Python scalar input, an unhashable attr
        key = plan = None
    if plan is not None and TABLE.get(op_name) is plan.impl:
        return plan.run(inputs) if plan.direct else plan(inputs)
    try:
        op = OPS[op_name]
    except KeyError:
        raise ValueError(f"Unknown op {op_name!r}: it is not in stagecraft.ir.OPS.") from None
    impl = TABLE.get(op_name)
    if impl is None:
        reason = OPT_OUT.get(op_name, "it has no CUDA implementation")
        raise NotImplementedError(f"{op_name}: the CUDA backend cannot run this op ({reason}); "
                                  f"run it on the CPU (with tf.device('/cpu:0')).")
    plan, values = _Plan.make(op, impl, inputs, attrs)
    if key is not None:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan.run(values)


def _signature(op_name: str, inputs: Sequence[Any], attrs: dict) -> tuple:
    """The key of a call's plan: the op, each input's type, shape and dtype, and the attrs
    with their types (1 and True are different attrs). Raises AttributeError for an input
    without a shape (a Python scalar); the key may be unhashable (a list attr)."""
    if len(inputs) == 2:   # (binary and unary ops, the most frequent: one flat tuple, no
        x, y = inputs      # inner ones; its first item, a type, tells it from a list of
        described: tuple = (type(x), x.shape, x.dtype, type(y), y.shape, y.dtype)   # tuples)
    elif len(inputs) == 1:
        x, = inputs
        described = (type(x), x.shape, x.dtype)
    else:
        described = tuple([(type(x), x.shape, x.dtype) for x in inputs])
    return (op_name, described,
            tuple([(k, type(v), v) for k, v in attrs.items()]) if attrs else ())


class _Plan:
    """One op made ready for one signature: the inferred output types (no typing or
    inference per call), which inputs are copied to the device per call, and the call itself
    (an elementwise op's ``elementwise.Call``, or the op's entry with the inferred types, or
    the half-precision wrapper around it)."""

    __slots__ = ("impl", "uploads", "run", "direct")

    def __init__(self, impl: Impl, uploads: tuple, run: Callable[[list], Any]):
        self.impl, self.uploads, self.run = impl, uploads, run
        self.direct = not uploads   # run() takes the inputs as they come

    def __call__(self, inputs: Sequence[Any]) -> Any:
        if self.uploads:
            inputs = [memory.to_device(x) if i in self.uploads else x
                      for i, x in enumerate(inputs)]
        return self.run(inputs)

    @staticmethod
    def make(op: Any, impl: Impl, inputs: Sequence[Any], attrs: dict) -> tuple["_Plan", list]:
        """The plan of a call, and its inputs as the plan runs them (host values copied to
        the device, except scalars an elementwise kernel takes as arguments)."""
        direct = getattr(impl, "elementwise", False) and op.name not in elementwise.PASS_THROUGH
        kept = [direct and elementwise.by_value(x) for x in inputs]
        values = [x if keep else memory.to_device(x) for x, keep in zip(inputs, kept)]
        types = [TensorType(dt.from_numpy(np.dtype(x.dtype)), tuple(x.shape)) for x in values]
        half_call = any(t.dtype in dt.HALF for t in types) or \
            any(a in dt.HALF for a in attrs.values())
        if half_call and any(kept):   # half kernels widen device arrays: no scalars by value
            values, kept = [memory.to_device(x) for x in values], [False] * len(values)
        uploads = tuple(i for i, (x, v) in enumerate(zip(inputs, values)) if x is not v)
        if half_call:
            return _Plan(impl, uploads, Replayed(_half_call(op, impl, types, attrs))), values
        out = op.infer(types, **attrs)
        if direct:
            call = elementwise.prepared(op.name, tuple(
                elementwise.signature(x, keep) for x, keep in zip(values, kept)),
                out[0].dtype, tuple(out[0].shape))
            return _Plan(impl, uploads, call), values
        # (replayed from its recorded launches once it has run: op_replay.py)
        return _Plan(impl, uploads, Replayed(lambda xs: impl(list(xs), attrs, out))), values


def _half_call(op: Any, impl: Impl, types: list, attrs: dict) -> Callable[[list], Any]:
    """``op`` on float16/bfloat16 inputs (or giving such outputs): computed in float32 device
    arrays and rounded once to the inferred dtypes, as on every backend (``ir/ops/half.py``)."""
    outs = [t.dtype for t in op.infer(types, **attrs)]
    wide = {k: dt.float32 if a in dt.HALF else a for k, a in attrs.items()}
    halves = [t.dtype in dt.HALF for t in types]
    inferred = op.infer([TensorType(dt.float32, t.shape) if h else t
                         for t, h in zip(types, halves)], **wide)
    uniform = op.name.removesuffix("_dynamic") == "random_uniform"
    several = op.num_outputs > 1

    def call(values: list) -> Any:
        values = [half.widen(v) if h else v for v, h in zip(values, halves)]
        result = impl(values, wide, inferred)
        narrowed = [half.narrow(r, d, uniform) if d in dt.HALF else r
                    for r, d in zip(result if several else (result,), outs)]
        return tuple(narrowed) if several else narrowed[0]
    return call


def implements(*names: str) -> Callable[[Impl], Impl]:
    def register(fn: Impl) -> Impl:
        for n in names:
            TABLE[n] = fn
        return fn
    return register


# ------------------------------------------------------------------------- elementwise

def _elementwise(name: str) -> Impl:
    def impl(xs, attrs, types):
        return elementwise.run(name, xs, types[0].dtype, types[0].shape)
    impl.elementwise = True  # type: ignore[attr-defined]  (run's plans call its kernel directly)
    return impl


# Every elementwise op with a scalar expression (the CPU backend's table) gets a generated kernel.
for _name, _op in OPS.items():
    if _op.kind is Kind.ELEMENTWISE and _name in scalar_ops.SCALAR:
        TABLE[_name] = _elementwise(_name)


# -------------------------------------------------------------------------- reductions

def _reduction(kind: str) -> Impl:
    def impl(xs, attrs, types):
        return reduce.reduce(kind, xs[0], attrs["axes"], attrs["keepdims"])
    return impl


for _kind in ("sum", "prod", "max", "min", "all", "any"):
    TABLE[f"reduce_{_kind}"] = _reduction(_kind)


@implements("reduce_mean")
def _reduce_mean(xs, a, t):
    x = xs[0]
    if np.dtype(x.dtype).kind != "c":
        return reduce.mean(x, a["axes"], a["keepdims"])
    # complex: the sum, then one division (the mean kernel's integer branch compares values,
    # which CUDA cannot type for complex numbers)
    total = reduce.reduce("sum", x, a["axes"], a["keepdims"])
    count = x.size // max(total.size, 1) if x.size else 1
    return elementwise.run("divide", [total, memory.to_device(np.asarray(count, x.dtype))],
                           t[0].dtype, t[0].shape)


TABLE["argmax"] = lambda xs, a, t: reduce.arg_extreme(xs[0], a["axis"], t[0].dtype.np, True)
TABLE["argmin"] = lambda xs, a, t: reduce.arg_extreme(xs[0], a["axis"], t[0].dtype.np, False)
TABLE["cumsum"] = lambda xs, a, t: reduce.scan(xs[0], a["axis"], a["exclusive"], a["reverse"],
                                               product=False)
TABLE["cumprod"] = lambda xs, a, t: reduce.scan(xs[0], a["axis"], a["exclusive"], a["reverse"],
                                                product=True)
TABLE["argsort"] = lambda xs, a, t: reduce.argsort(xs[0], a["axis"], a["descending"])
TABLE["sum_like"] = lambda xs, a, t: reduce.sum_like(xs[0], tuple(xs[1].shape))


# ------------------------------------------------------------------------------ linalg

TABLE["matmul"] = lambda xs, a, t: matmul.matmul(xs[0], xs[1], a["transpose_a"],
                                                 a["transpose_b"], t[0].shape)
TABLE["diag"] = lambda xs, a, t: shape.diag(xs[0])
TABLE["diag_part"] = lambda xs, a, t: shape.copy_view(
    xs[0], lambda v: np.diagonal(v, axis1=-2, axis2=-1))
# Decompositions: one thread per matrix (kernels/decompositions.py); qr, svd and eigh are a
# host round trip through the reference kernels (documented there).
TABLE["matrix_inverse"] = lambda xs, a, t: decompositions.inverse(xs[0], a["adjoint"])
TABLE["matrix_determinant"] = lambda xs, a, t: decompositions.determinant(xs[0], log=False)
TABLE["log_matrix_determinant"] = lambda xs, a, t: decompositions.determinant(xs[0], log=True)
TABLE["cholesky"] = lambda xs, a, t: decompositions.cholesky(xs[0])
TABLE["lu"] = lambda xs, a, t: decompositions.lu(xs[0], a["out_type"].np)
TABLE["matrix_solve"] = lambda xs, a, t: decompositions.solve(xs[0], xs[1], a["adjoint"])
TABLE["triangular_solve"] = lambda xs, a, t: decompositions.triangular_solve(
    xs[0], xs[1], a["lower"], a["adjoint"], t[0].shape)
# The FFTs too: NumPy's pocketfft on a host copy (cuFFT would keep the data on the device).
for _name in ("qr", "svd", "eigh", "eig", "fft", "rfft", "irfft"):
    TABLE[_name] = (lambda kernel: lambda xs, a, t: decompositions.on_host(kernel, xs, **a))(
        OPS[_name].kernel)
# Complex matrices too (the device kernels' arithmetic is real).
for _name in ("matrix_inverse", "matrix_determinant", "matrix_solve"):
    TABLE[_name] = (lambda real, kernel: lambda xs, a, t: decompositions.on_host(
        kernel, xs, **a) if np.dtype(xs[0].dtype).kind == "c" else real(xs, a, t))(
        TABLE[_name], OPS[_name].kernel)


# ------------------------------------------------------------------------------- shape

@implements("reshape", "reshape_like", "expand_dims", "squeeze")
def _reshape(xs, attrs, types):
    # A view, like NumPy's: contiguous buffers reshape without moving data.
    return memory.reshape(xs[0], tuple(types[0].shape))


TABLE["transpose"] = lambda xs, a, t: shape.copy_view(xs[0], lambda v: np.transpose(v, a["perm"]))
TABLE["broadcast_to"] = lambda xs, a, t: shape.copy_view(
    xs[0], lambda v: np.broadcast_to(v, t[0].shape))
TABLE["broadcast_like"] = TABLE["broadcast_to"]
TABLE["concat"] = lambda xs, a, t: shape.concat(xs, a["axis"], t[0].shape)
TABLE["tile"] = lambda xs, a, t: shape.tile(xs[0], a["multiples"])
TABLE["gather"] = lambda xs, a, t: gather.gather(xs[0], xs[1], a["axis"], a["batch_dims"],
                                                 t[0].shape)


@implements("gather_grad")
def _gather_grad(xs, a, t):
    grad = xs[0]
    if np.dtype(grad.dtype).kind == "c":
        # CUDA's atomic add has no complex numbers: the real and imaginary parts one by one
        part = t[0].dtype.real_dtype
        parts = [_gather_grad([elementwise.run(p, [grad], part, tuple(grad.shape)), *xs[1:]], a,
                              [TensorType(part, t[0].shape)]) for p in ("real", "imag")]
        return elementwise.run("complex", parts, t[0].dtype, t[0].shape)
    # CUDA's atomic add has no 8- or 16-bit integers: sum in 32 bits and wrap back, which
    # gives the same result (addition modulo 2**bits).
    narrow = np.dtype(grad.dtype).kind in "iu" and np.dtype(grad.dtype).itemsize < 4
    if narrow:
        wide = dt.int32 if np.dtype(grad.dtype).kind == "i" else dt.uint32
        grad = elementwise.run("cast", [grad], wide, tuple(grad.shape))
    out = gather.gather_grad(grad, xs[1], tuple(xs[2].shape), a["axis"], a["batch_dims"])
    return elementwise.run("cast", [out], t[0].dtype, t[0].shape) if narrow else out


TABLE["one_hot"] = lambda xs, a, t: gather.one_hot(xs[0], xs[1], xs[2], a["depth"], a["axis"],
                                                   t[0].shape)


def _index(spec: tuple, bounds: Sequence[Any]) -> tuple:
    """The NumPy index of a slicing spec; run-time bounds are read on the host. A trailing
    ellipsis keeps an all-integer index a (0-d) view instead of an element read."""
    idx = index_tuple(spec, tuple(int(memory.scalar(b)) for b in bounds))
    return idx if any(i is Ellipsis for i in idx) else idx + (Ellipsis,)


def _one_index(spec: tuple, shape: tuple, bounds: Sequence[Any]) -> tuple | None:
    """For a spec whose only run-time bound is one integer index (``x[i]``, ``x[:, i]``):
    ``(view at index 0, size of the indexed dim, elements per step of it)``; else None."""
    if len(bounds) != 1 or bounds[0].size != 1 or np.dtype(bounds[0].dtype).kind not in "iu":
        return None
    consumed = sum(1 for it in spec if it[0] in ("index", "slice"))
    dim = 0
    for item in spec:
        if item[0] == "index" and isinstance(item[1], str):
            break
        if any(isinstance(v, str) for v in item[1:]):
            return None   # (a slice bound: the result's shape depends on it)
        dim += {"index": 1, "slice": 1, "ellipsis": len(shape) - consumed}.get(item[0], 0)
    idx0 = index_tuple(spec, (0,))
    idx0 = idx0 if any(i is Ellipsis for i in idx0) else idx0 + (Ellipsis,)
    return (lambda v: v[idx0]), shape[dim], int(np.prod(shape[dim + 1:], dtype=np.int64))


@implements("strided_slice")
def _strided_slice(xs, attrs, types):
    at = _one_index(attrs["spec"], tuple(xs[0].shape), xs[1:])
    if at is not None and at[1] > 0:   # (the index is read on the device)
        out = shape.view_at(xs[0], at[0], xs[1], at[1], at[2])
        if out is not None:
            return out
    idx = _index(attrs["spec"], xs[1:])
    try:
        return shape.copy_view(xs[0], lambda v: v[idx])
    except IndexError as e:   # the reference kernel's message
        raise IndexError(f"{e} (shape {list(xs[0].shape)})") from None


@implements("strided_slice_grad")
def _strided_slice_grad(xs, attrs, types):
    out = shape.full(tuple(xs[1].shape), 0, xs[0].dtype)
    at = _one_index(attrs["spec"], tuple(xs[1].shape), xs[2:])
    if at is not None and at[1] > 0 and shape.view_at(xs[0], at[0], xs[2], at[1], at[2],
                                                       into=out) is not None:
        return out
    idx = _index(attrs["spec"], xs[2:])
    return shape.scatter_view(out, xs[0], lambda v: v[idx])


def row_update(buffer: Any, index: Any, value: Any, copy: bool = True) -> Any:
    """``buffer`` with row ``index`` set to ``value`` (shaped like a row): a new array, or
    with ``copy=False`` ``buffer`` itself, written in place (for a caller that owns it, see
    ``numba_cuda.staged.runtime.row_update_in_place``). An index outside [0, len(buffer))
    raises IndexError.

    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> b = to_device(np.zeros((2, 2), np.int32))
    >>> to_host(row_update(b, to_device(np.int32(1)), to_device(np.array([3, 4], np.int32)),
    ...                    copy=False)), to_host(b)[1]
    (array([[0, 0],
           [3, 4]], dtype=int32), array([3, 4], dtype=int32))
    """
    # The row index is read on the device (a staged loop's write stays one recorded step);
    # only the check's flag comes back, and an index that fails it is read for the message.
    n, row = tuple(buffer.shape)[0], tuple(buffer.shape)[1:]
    out = shape.copy_view(buffer, lambda v: v) if copy else buffer
    if n and tuple(value.shape) == row and np.dtype(index.dtype).kind in "iu" and shape.view_at(
            value, lambda v: v[0, ...], index, n, int(np.prod(row, dtype=np.int64)), into=out,
            wrap=False) is not None:
        return out
    i = int(memory.scalar(index))
    if not 0 <= i < n:
        raise IndexError(f"row_update: index {i} is not in [0, {n}); a fixed-size TensorArray "
                         f"cannot grow (pass dynamic_size=True).")
    return shape.scatter_view(out, value, lambda v: v[i, ...])


TABLE["row_update"] = lambda xs, a, t: row_update(*xs)


@implements("strided_slice_update")
def _strided_slice_update(xs, attrs, types):
    idx = _index(attrs["spec"], xs[2:])
    want = np.empty(tuple(xs[0].shape), np.int8)[idx].shape
    if want != tuple(xs[1].shape):  # the reference kernel's error: TF never broadcasts here
        raise ValueError(update_shape_error(want, tuple(xs[1].shape)))
    out = shape.copy_view(xs[0], lambda v: v)
    return shape.scatter_view(out, xs[1], lambda v: v[idx])


TABLE["scatter_nd"] = lambda xs, a, t: scatter.scatter_nd(*xs, a["mode"])


# ------------------------------------------------- shapes given as run-time tensors (*_dynamic)

def _dims(op: str, xs: list, attrs: dict, minus_one: bool = False) -> tuple:
    """The shape tensor (input 1) of a ``*_dynamic`` op, read on the host (a few ints) and
    checked as the reference kernel checks it."""
    return runtime_dims(op, "shape", memory.to_host(xs[1]), attrs["static"], minus_one)


@implements("reshape_dynamic")
def _reshape_dynamic(xs, attrs, types):
    dims = resolve_reshape("reshape", tuple(xs[0].shape), _dims("reshape", xs, attrs, True))
    return memory.reshape(xs[0], tuple(dims))


@implements("broadcast_to_dynamic")
def _broadcast_to_dynamic(xs, attrs, types):
    dims = _dims("broadcast_to", xs, attrs)
    check_broadcast_to("broadcast_to", tuple(xs[0].shape), dims)
    return shape.copy_view(xs[0], lambda v: np.broadcast_to(v, dims))


@implements("tile_dynamic")
def _tile_dynamic(xs, attrs, types):
    multiples = _dims("tile", xs, attrs)
    if len(multiples) != len(xs[0].shape):
        raise ValueError(f"tile: multiples has {len(multiples)} entries but the input has rank "
                         f"{len(xs[0].shape)}; give one multiple per dimension.")
    return shape.tile(xs[0], multiples)


TABLE["fill_dynamic"] = lambda xs, a, t: shape.fill(xs[0], _dims("fill", xs, a))


# ---------------------------------------------------------------------------- creation

TABLE["fill"] = lambda xs, a, t: shape.fill(xs[0], a["dims"])
TABLE["range"] = lambda xs, a, t: shape.arange(xs[0], xs[1], xs[2])
TABLE["eye"] = lambda xs, a, t: shape.eye(a["num_rows"], a["num_columns"], a["dtype"].np)
# The shape is metadata: built on the host, copied up (no device data is read).
TABLE["shape"] = lambda xs, a, t: memory.to_device(np.array(xs[0].shape, a["out_type"].np))
TABLE["where_indices"] = lambda xs, a, t: shape.where_indices(xs[0])


# ------------------------------------------------------------------------------ random

TABLE["random_normal"] = lambda xs, a, t: random.normal(xs[0], a["shape"], a["dtype"].np)
TABLE["random_truncated_normal"] = lambda xs, a, t: random.normal(xs[0], a["shape"],
                                                                  a["dtype"].np, truncated=True)
TABLE["random_uniform"] = lambda xs, a, t: random.uniform(xs[0], a["shape"], a["dtype"].np)
TABLE["random_uniform_int"] = lambda xs, a, t: random.uniform_int(*xs, a["shape"])
TABLE["random_normal_dynamic"] = lambda xs, a, t: random.normal(
    xs[0], _dims("random_normal", xs, a), a["dtype"].np)
TABLE["random_truncated_normal_dynamic"] = lambda xs, a, t: random.normal(
    xs[0], _dims("random_truncated_normal", xs, a), a["dtype"].np, truncated=True)
TABLE["random_uniform_dynamic"] = lambda xs, a, t: random.uniform(
    xs[0], _dims("random_uniform", xs, a), a["dtype"].np)
TABLE["random_uniform_int_dynamic"] = lambda xs, a, t: random.uniform_int(
    xs[0], xs[2], xs[3], _dims("random_uniform_int", xs, a))


# ------------------------------------------------------------------------- convolution

TABLE["conv"] = lambda xs, a, t: conv.conv(xs[0], xs[1], a, t[0].shape)
TABLE["conv_backprop_input"] = lambda xs, a, t: conv.conv_backprop_input(xs[0], xs[1], a)
TABLE["conv_backprop_filter"] = lambda xs, a, t: conv.conv_backprop_filter(xs[0], xs[1], a)


# ----------------------------------------------------------------------------- pooling

TABLE["max_pool"] = lambda xs, a, t: pooling.pool(xs[0], a, t[0].shape, average=False)
TABLE["avg_pool"] = lambda xs, a, t: pooling.pool(xs[0], a, t[0].shape, average=True)
TABLE["max_pool_grad"] = lambda xs, a, t: pooling.max_pool_grad(xs[0], xs[1], a)
TABLE["max_pool_grad_grad"] = lambda xs, a, t: pooling.max_pool_grad_grad(xs[0], xs[1], a,
                                                                          t[0].shape)
TABLE["avg_pool_grad"] = lambda xs, a, t: pooling.avg_pool_grad(xs[0], a)


# ------------------------------------------------------------------- segments and search

from stagecraft.backends.numba_cuda.kernels import segment  # noqa: E402

TABLE["segment_reduce"] = lambda xs, a, t: segment.segment_reduce(*xs, a["mode"], a["sorted"],
                                                                  a["static"])
TABLE["unique_index"] = lambda xs, a, t: segment.unique_index(xs[0], a["out_type"].np)
TABLE["searchsorted"] = lambda xs, a, t: segment.searchsorted(xs[0], xs[1], a["side"] == "right",
                                                              a["out_type"].np)

from stagecraft.backends.numba_cuda.kernels import rejection  # noqa: E402

TABLE["random_gamma"] = lambda xs, a, t: rejection.random_gamma(xs[0], xs[1], a["shape"])
TABLE["random_poisson"] = lambda xs, a, t: rejection.random_gamma(xs[0], xs[1], a["shape"],
                                                                 poisson=True)
TABLE["random_binomial"] = lambda xs, a, t: rejection.random_binomial(*xs)

from stagecraft.backends.numba_cuda.kernels import logsumexp  # noqa: E402

TABLE["cumulative_logsumexp"] = lambda xs, a, t: logsumexp.cumulative_logsumexp(
    xs[0], a["axis"], a["exclusive"], a["reverse"])

from stagecraft.backends.numba_cuda.kernels import softmax  # noqa: E402

TABLE["softmax"] = lambda xs, a, t: softmax.softmax(xs[0], a["axis"], False)
TABLE["log_softmax"] = lambda xs, a, t: softmax.softmax(xs[0], a["axis"], True)
TABLE["sparse_softmax_cross_entropy_with_logits"] = lambda xs, a, t: \
    softmax.sparse_softmax_cross_entropy(xs[0], xs[1])
TABLE["sparse_softmax_cross_entropy_with_logits_grad"] = lambda xs, a, t: \
    softmax.sparse_softmax_cross_entropy_grad(*xs)
