"""Lowerings of the non-elementwise ops: each emits calls into the kernel library ``K``
(:mod:`stagecraft.backends.numba_cpu.kernels`) with everything static (axes, permutations,
slice plans) baked into the source and dims written as literals when known, ``x.shape[k]``
when not.

``LOWER`` is the backend's one table of lowerings: ``LOWER[op](cg, eqn)`` emits the statements
for ``eqn`` and binds its outputs in ``cg``. This module registers the kernel calls;
:mod:`.structural` the elementwise ops (fused loops), constants, variables, control flow and
host calls. Together they cover the whole op table and the structural ops (a test checks this).
"""
from __future__ import annotations

from typing import Callable

from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.scalar_ops import convert
from stagecraft.backends.codegen.source import np_type, product_text, rank as _rank, tuple_text
from stagecraft.backends.codegen.source_emitter import LoweringError
from stagecraft.backends.numba_cpu.batched import emit_batched
from stagecraft.backends.numba_cpu.kernels.slicing import slice_plan
from stagecraft.ir.graph import Eqn
from stagecraft.ir.ops import philox

LOWER = Lowerings("Numba", missing='compile this function with backend="reference"')
lowers = LOWER.lowers


def _norm(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _identity(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    cg.define(v, convert(cg.operand(x), x.type.dtype, v.type.dtype))


# --------------------------------------------------------------------------- reductions

@lowers("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all",
        "reduce_any")
def _reduce(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    a = e.params
    r = _rank(x)
    if r == 0:
        return _identity(cg, e)
    axes = a["axes"]
    red = sorted({_norm(k, r) for k in ((axes,) if isinstance(axes, int) else axes)}) \
        if axes is not None else list(range(r))
    dims = cg.dims(x)
    if red:
        before = [i for i in range(red[-1]) if i not in red]
        after = list(range(red[-1] + 1, r))
    else:
        before, after = list(range(r)), []
    perm = tuple(before + red + after)
    sizes = [product_text([dims[i] for i in part]) for part in (before, red, after)]
    x3 = (f"{cg.operand(x)}.reshape(({', '.join(sizes)}))" if perm == tuple(range(r)) else
          f"K.to3({cg.operand(x)}, {perm}, {', '.join(sizes)})")
    kernel = f"K.{e.op.split('_')[1]}3({x3})"
    if _rank(v) == 0:
        cg.define(v, f"{kernel}[0, 0]")
    else:
        out = ["1" if i in red else d for i, d in enumerate(dims)] if a["keepdims"] else \
            [d for i, d in enumerate(dims) if i not in red]
        cg.define(v, f"{kernel}.reshape({tuple_text(out)})")


@lowers("argmax", "argmin")
def _arg(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    a = e.params
    res = f"K.{e.op}3({cg.line_view(x, a['axis'])}, {np_type(a['output_type'])})"
    dims = cg.dims(x)
    del dims[_norm(a["axis"], len(dims))]
    cg.define(v, f"{res}.reshape({tuple_text(dims)})" if dims else f"{res}[0, 0]")


@lowers("argsort")
def _argsort(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    a = e.params
    cg.define(v, f"K.argsort3({cg.line_view(x, a['axis'])}, {bool(a['descending'])})"
                 f".reshape({tuple_text(cg.dims(x))})")


@lowers("cumsum", "cumprod")
def _scan(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    a = e.params
    cg.define(v, f"K.{e.op}3({cg.line_view(x, a['axis'])}, {bool(a['exclusive'])}, "
                 f"{bool(a['reverse'])}).reshape({tuple_text(cg.dims(x))})")


# --------------------------------------------------------------------------- shapes

def _reshape_to(cg, e: Eqn, dims: list) -> None:
    x, v = e.inputs[0], e.outputs[0]
    if _rank(x) == 0 and _rank(v) == 0:
        return _identity(cg, e)
    cg.define_array(v, f"{cg.array(x)}.reshape({tuple_text(dims)})")


@lowers("reshape")
def _reshape(cg, e: Eqn) -> None:
    _reshape_to(cg, e, [str(int(d)) for d in e.params["shape"]])


@lowers("reshape_like")
def _reshape_like(cg, e: Eqn) -> None:
    _reshape_to(cg, e, cg.dims(e.inputs[1]))


def _dynamic_dims(cg, e: Eqn, op: str, minus_one: bool = False) -> list[str]:
    """The entries of the shape tensor (input 1) of a ``*_dynamic`` op as int64 expressions:
    literals where its ``static`` attribute knows them, elements of the tensor elsewhere (each
    checked when the function runs: non-negative, or -1 when ``minus_one``)."""
    shape, static = e.inputs[1], e.params["static"]
    s = cg.operand(shape)
    if shape.type.shape[0] is None:
        cg.fail(f"{s}.shape[0] != {len(static)}",
                f"{op}: the shape tensor must have {len(static)} entries (its length when the "
                f"function was traced)\n  at {e.loc}")
    dims = []
    for i, d in enumerate(static):
        if d is not None:
            dims.append(str(int(d)))
            continue
        dims.append(f"np.int64({s}[{i}])")
        low, what = (-1, ">= -1") if minus_one else (0, "non-negative")
        cg.fail(f"{s}[{i}] < {low}", f"{op}: dimensions must be {what} (dimension {i} of the "
                                    f"shape tensor is not)\n  at {e.loc}")
    return dims


@lowers("reshape_dynamic")
def _reshape_dynamic(cg, e: Eqn) -> None:
    dims = _dynamic_dims(cg, e, "reshape", minus_one=True)
    resolved = cg.fresh("dims")
    cg.line(f"{resolved} = K.reshape_dims({cg.operand(e.inputs[0])}.size, "
            f"np.array({tuple_text(dims)}, np.int64))")
    _reshape_to(cg, e, [f"{resolved}[{i}]" for i in range(len(dims))])


@lowers("expand_dims")
def _expand_dims(cg, e: Eqn) -> None:
    dims = cg.dims(e.inputs[0])
    a = _norm(e.params["axis"], len(dims) + 1)
    _reshape_to(cg, e, dims[:a] + ["1"] + dims[a:])


@lowers("squeeze")
def _squeeze(cg, e: Eqn) -> None:
    x = e.inputs[0]
    dims = cg.dims(x)
    axis = e.params["axis"]
    gone = {i for i, d in enumerate(x.type.shape) if d == 1} if axis is None else \
        {_norm(a, len(dims)) for a in axis}
    for i in sorted(gone):
        if x.type.shape[i] is None:
            cg.fail(f"{cg.operand(x)}.shape[{i}] != 1",
                    f"squeeze: Can not squeeze dim[{i}], expected a dimension of 1\n  at {e.loc}")
    _reshape_to(cg, e, [d for i, d in enumerate(dims) if i not in gone])


@lowers("transpose")
def _transpose(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    perm = tuple(int(p) for p in e.params["perm"])
    if perm == tuple(range(len(perm))):
        return _identity(cg, e)
    cg.define(v, f"np.ascontiguousarray(np.transpose({cg.operand(x)}, {perm}))")


@lowers("concat")
def _concat(cg, e: Eqn) -> None:
    v = e.outputs[0]
    a = _norm(e.params["axis"], _rank(v))
    dims = cg.dims(e.inputs[0])
    for k in range(len(dims)):
        if v.type.shape[k] is not None:
            dims[k] = str(v.type.shape[k])
        elif k == a:
            dims[k] = "(" + " + ".join(cg.dim(x, a) for x in e.inputs) + ")"
    out = cg.empty(v, dims)
    off = cg.fresh("off")
    cg.line(f"{off} = 0")
    for x in e.inputs:
        cg.line(f"{off} = K.concat_part_into({cg.operand(x)}, {out}, {a}, {off})")
    cg.define(v, out)


def _into(cg, e: Eqn, dims: list, call: Callable[[str], str]) -> None:
    """Allocates ``e``'s output with ``dims`` and fills it with ``call(out)``."""
    v = e.outputs[0]
    out = cg.empty(v, dims)
    cg.line(call(out))
    cg.define_array(v, out)


def _broadcast(cg, e: Eqn, dims: list) -> None:
    x = e.inputs[0]
    if not dims:
        return _identity(cg, e)
    _into(cg, e, dims, lambda out: f"K.broadcast_into({cg.array(x)}, {out})")


@lowers("broadcast_to")
def _broadcast_to(cg, e: Eqn) -> None:
    _broadcast(cg, e, [str(int(d)) for d in e.params["shape"]])


@lowers("broadcast_to_dynamic")
def _broadcast_to_dynamic(cg, e: Eqn) -> None:
    x = e.inputs[0]
    dims = _dynamic_dims(cg, e, "broadcast_to")
    lead = len(dims) - _rank(x)
    if lead < 0:
        raise LoweringError(f"broadcast_to at {e.loc}: a tensor of rank {_rank(x)} cannot be "
                            f"broadcast to rank {len(dims)}.")
    for j, xd in enumerate(cg.dims(x)):
        if not (xd.isdigit() and (xd == "1" or xd == dims[lead + j])):
            cg.fail(f"{xd} != 1 and {xd} != {dims[lead + j]}",
                    f"broadcast_to: dimension {j} of the input is neither 1 nor the requested "
                    f"size\n  at {e.loc}")
    _broadcast(cg, e, dims)


@lowers("broadcast_like")
def _broadcast_like(cg, e: Eqn) -> None:
    _broadcast(cg, e, cg.dims(e.inputs[1]))


@lowers("sum_like")
def _sum_like(cg, e: Eqn) -> None:
    x, like = e.inputs[:2]
    if _rank(x) == 0:
        return _identity(cg, e)
    _into(cg, e, cg.dims(like), lambda out: f"K.sum_like_into({cg.operand(x)}, {out})")


@lowers("tile")
def _tile(cg, e: Eqn) -> None:
    x = e.inputs[0]
    mult = [int(m) for m in e.params["multiples"]]
    if _rank(x) == 0:
        return _identity(cg, e)
    dims = [f"{d} * {m}" if m != 1 else d for d, m in zip(cg.dims(x), mult)]
    _into(cg, e, dims, lambda out: f"K.tile_into({cg.operand(x)}, {out})")


@lowers("tile_dynamic")
def _tile_dynamic(cg, e: Eqn) -> None:
    x = e.inputs[0]
    mult = _dynamic_dims(cg, e, "tile")
    if _rank(x) == 0:
        return _identity(cg, e)
    dims = [f"{d} * {m}" if m != "1" else d for d, m in zip(cg.dims(x), mult)]
    _into(cg, e, dims, lambda out: f"K.tile_into({cg.operand(x)}, {out})")


@lowers("gather")
def _gather(cg, e: Eqn) -> None:
    p, i = e.inputs
    a = e.params
    bd = a["batch_dims"] + (_rank(i) if a["batch_dims"] < 0 else 0)
    axis = _norm(a["axis"], _rank(p))
    if _rank(p) == 1 and _rank(i) == 0:  # one element: no output array
        cg.define(e.outputs[0], f"K.take1({cg.operand(p)}, {cg.operand(i)})")
        return
    pd, idims = cg.dims(p), cg.dims(i)
    dims = pd[:axis] + idims[bd:] + pd[axis + 1:]
    _into(cg, e, dims, lambda out: f"K.gather_into({cg.operand(p)}, {cg.array(i)}, {out}, "
                                   f"{axis}, {bd})")


@lowers("row_update")
def _row_update(cg, e: Eqn) -> None:
    buf, index, value = e.inputs
    kernel = "row_update1" if _rank(buf) == 1 else "row_update"
    copy = id(e) not in cg.inplace  # see backends.codegen.inplace_rows.rows_written_in_place
    cg.define(e.outputs[0], f"K.{kernel}({cg.operand(buf)}, {cg.operand(index)}, "
                            f"{cg.operand(value)}, {copy})")


@lowers("gather_grad")
def _gather_grad(cg, e: Eqn) -> None:
    g, i, like = e.inputs
    a = e.params
    bd = a["batch_dims"] + (_rank(i) if a["batch_dims"] < 0 else 0)
    axis = _norm(a["axis"], _rank(like))
    _into(cg, e, cg.dims(like), lambda out: f"K.gather_grad_into({cg.array(g)}, {cg.array(i)}, "
                                            f"{out}, {axis}, {bd})")


@lowers("one_hot")
def _one_hot(cg, e: Eqn) -> None:
    i, on, off = e.inputs
    a = e.params
    r = _rank(i)
    axis = r if a["axis"] == -1 else _norm(a["axis"], r + 1)
    idims = cg.dims(i)
    dims = idims[:axis] + [str(int(a["depth"]))] + idims[axis:]
    _into(cg, e, dims, lambda out: f"K.one_hot_into({cg.array(i)}, {cg.array(on)}, "
                                   f"{cg.array(off)}, {out}, {axis})")


def _slice_bounds(cg, e: Eqn, shaped, dyn_inputs) -> tuple:
    plan = slice_plan(shaped.type.shape, e.params["spec"])
    dyn = ("np.empty(0, np.int64)" if not dyn_inputs else
           "np.array(" + tuple_text(f"np.int64({cg.operand(x)})" for x in dyn_inputs) + ")")
    names = [cg.fresh(n) for n in ("starts", "steps", "lens")]
    cg.line(f"{', '.join(names)} = K.slice_bounds({cg.array(shaped)}.shape, {plan.code}, {dyn})")
    return plan, names


@lowers("strided_slice")
def _strided_slice(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    plan, (st, sp, ln) = _slice_bounds(cg, e, x, e.inputs[1:])
    out = cg.fresh(v.hint or "sliced")
    cg.line(f"{out} = np.empty({plan.shape_expr(ln)}, {np_type(v.type.dtype)})")
    cg.line(f"K.strided_slice_into({cg.array(x)}, {out}, {st}, {sp}, {ln})")
    cg.define_array(v, out)


@lowers("strided_slice_grad")
def _strided_slice_grad(cg, e: Eqn) -> None:
    g, like = e.inputs[:2]
    _, (st, sp, ln) = _slice_bounds(cg, e, like, e.inputs[2:])
    _into(cg, e, cg.dims(like), lambda out: f"K.strided_slice_grad_into({cg.array(g)}, {out}, "
                                            f"{st}, {sp}, {ln})")


@lowers("strided_slice_update")
def _strided_slice_update(cg, e: Eqn) -> None:
    x, value = e.inputs[:2]
    plan, (st, sp, ln) = _slice_bounds(cg, e, x, e.inputs[2:])
    if _rank(value):  # ranks match statically; dims unknown at trace time are checked here
        cg.line(f"K.check_update_shape({_int64s(f'{cg.array(value)}.shape', _rank(value))}, "
                f"{_int64s(plan.shape_expr(ln), _rank(value))})")
    _into(cg, e, cg.dims(x), lambda out: f"K.strided_slice_update_into({cg.array(x)}, "
                                         f"{cg.array(value)}, {out}, {st}, {sp}, {ln})")


def _int64s(tuple_expr: str, n: int) -> str:
    """An int64 array of a tuple expression of ``n`` ints (an empty one for n == 0)."""
    return f"np.array({tuple_expr}, np.int64)" if n else "np.empty(0, np.int64)"


@lowers("scatter_nd")
def _scatter_nd(cg, e: Eqn) -> None:
    x, i, u = e.inputs
    mode = {"update": 0, "add": 1, "sub": 2}[e.params["mode"]]
    cg.define_array(e.outputs[0], f"K.scatter_nd(" + ", ".join(
        f"np.ascontiguousarray({cg.array(v)})" for v in (x, i, u)) + f", {mode})")


# --------------------------------------------------------------------------- linear algebra

@lowers("matmul")
def _matmul(cg, e: Eqn) -> None:
    a, b = e.inputs
    v = e.outputs[0]
    ta, tb = bool(e.params["transpose_a"]), bool(e.params["transpose_b"])
    if _rank(a) == 2 and _rank(b) == 2:
        cg.define(v, f"K.matmul2({cg.operand(a)}, {cg.operand(b)}, {ta}, {tb})")
        return
    emit_batched(cg, e, "batch_matmul3", f"{ta}, {tb}", ta, tb)


@lowers("diag")
def _diag(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    dims = cg.dims(x)
    n = dims[-1]
    cg.define(v, f"K.diag2({cg.operand(x)}.reshape((-1, {n})))"
                 f".reshape({tuple_text(dims + [n])})")


@lowers("diag_part")
def _diag_part(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    dims = cg.dims(x)
    m, n = dims[-2:]
    cg.define_array(v, f"K.diag_part3({cg.operand(x)}.reshape((-1, {m}, {n})))"
                       f".reshape({tuple_text(dims[:-2] + [f'min({m}, {n})'])})")


# --------------------------------------------------------------------------- creation

@lowers("fill")
def _fill(cg, e: Eqn) -> None:
    dims = [str(int(d)) for d in e.params["dims"]]
    if not dims:
        return _identity(cg, e)
    _into(cg, e, dims, lambda out: f"K.fill_into({cg.array(e.inputs[0])}, {out})")


@lowers("fill_dynamic")
def _fill_dynamic(cg, e: Eqn) -> None:
    dims = _dynamic_dims(cg, e, "fill")
    _into(cg, e, dims, lambda out: f"K.fill_into({cg.array(e.inputs[0])}, {out})")


@lowers("range")
def _range(cg, e: Eqn) -> None:
    start, limit, delta = (cg.array(x) for x in e.inputs)
    n = cg.fresh("n")
    cg.line(f"{n} = K.range_len({start}, {limit}, {delta})")
    _into(cg, e, [n], lambda out: f"K.range_into({start}, {delta}, {out})")


@lowers("eye")
def _eye(cg, e: Eqn) -> None:
    a = e.params
    _into(cg, e, [str(int(a["num_rows"])), str(int(a["num_columns"]))],
          lambda out: f"K.eye_into({out})")


@lowers("shape")
def _shape(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    t = np_type(v.type.dtype)
    dims = cg.dims(x)
    cg.define(v, f"np.array({tuple_text(dims)}, {t})" if dims else f"np.empty(0, {t})")


@lowers("where_indices")
def _where_indices(cg, e: Eqn) -> None:
    cg.define(e.outputs[0], f"K.where_indices({cg.array(e.inputs[0])})")


# Kinds of K.random_into (see ir/ops/philox.py); the *_dynamic ops take the same kinds.
_RANDOM_KIND = {"random_normal": philox.NORMAL, "random_uniform": philox.UNIFORM,
                "random_uniform_int": philox.UNIFORM_INT,
                "random_truncated_normal": philox.TRUNCATED_NORMAL}


@lowers(*_RANDOM_KIND, *(name + "_dynamic" for name in _RANDOM_KIND))
def _random(cg, e: Eqn) -> None:
    name = e.op.removesuffix("_dynamic")
    seed = cg.array(e.inputs[0])
    if name == "random_uniform_int":
        bounds = ", ".join(f"np.int64({cg.operand(x)})" for x in e.inputs[-2:])
    else:
        bounds = "0, 1"
    if name == e.op:
        dims = [str(int(d)) for d in e.params["shape"]]
    else:
        dims = _dynamic_dims(cg, e, name)
    _into(cg, e, dims, lambda out: f"K.random_into({_RANDOM_KIND[name]}, {out}, {seed}, {bounds})")


# Lowerings of other op families, kept in their own modules, register into LOWER here.
from stagecraft.backends.numba_cpu.conv_lowerings import LOWERINGS as _CONV  # noqa: E402
from stagecraft.backends.numba_cpu.pooling_lowerings import LOWERINGS as _POOLING  # noqa: E402
from stagecraft.backends.numba_cpu.decomposition_lowerings import (  # noqa: E402
    LOWERINGS as _DECOMPOSITIONS)
from stagecraft.backends.numba_cpu.segment_lowerings import LOWERINGS as _SEGMENTS  # noqa: E402
from stagecraft.backends.numba_cpu.fft_lowerings import LOWERINGS as _FFT  # noqa: E402
from stagecraft.backends.numba_cpu.softmax_lowerings import (  # noqa: E402
    LOWERINGS as _SOFTMAX)

for _name, _fn in (*_CONV.items(), *_POOLING.items(), *_DECOMPOSITIONS.items(), *_SEGMENTS.items(),
                   *_FFT.items(), *_SOFTMAX.items()):
    lowers(_name)(_fn)
