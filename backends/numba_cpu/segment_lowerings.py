"""Numba lowerings of ``segment_reduce``, ``unique_index`` and ``searchsorted`` (calls into
``kernels/segment.py`` on 2-D views: rows by the segment ids, the rest flattened), of
``random_gamma``, ``random_poisson`` and ``random_binomial`` (``kernels/rejection.py``) and of
``cumulative_logsumexp`` (``kernels/logsumexp.py``)."""
from __future__ import annotations

from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.source import literal, product_text, rank as _rank, tuple_text
from stagecraft.ir.graph import Eqn
from stagecraft.ir.ops.segment import REDUCTIONS, identity

# Registered into the backend's table by :mod:`.lowerings` (this module does not import it, so
# the two stay free of import cycles).
LOWERINGS = Lowerings("Numba", missing='compile this function with backend="reference"')
lowers = LOWERINGS.lowers


@lowers("segment_reduce")
def _segment_reduce(cg, e: Eqn) -> None:
    data, ids, num = e.inputs
    v = e.outputs[0]
    a = e.params
    k = _rank(ids)
    ddims, idims = cg.dims(data), cg.dims(ids)
    rows, width = product_text(ddims[:k]), product_text(ddims[k:])
    n = cg.fresh("n")
    cg.line(f"{n} = np.int64({cg.operand(num)})")
    if a["static"][0] is not None:
        cg.fail(f"{n} != {int(a['static'][0])}",
                f"segment_reduce: num_segments differs from its value when the function was "
                f"traced ({a['static'][0]}).")
    init = literal(identity(a["mode"], data.type.dtype.np).item(), data.type.dtype)
    ids_shape = f"np.array({tuple_text(idims)}, np.int64)" if idims else "np.empty(0, np.int64)"
    call = (f"K.segment_reduce(np.ascontiguousarray({cg.array(data)}).reshape(({rows}, {width})), "
            f"np.ascontiguousarray({cg.array(ids)}).reshape(-1), {ids_shape}, {n}, "
            f"{REDUCTIONS.index(a['mode'])}, {bool(a['sorted'])}, {init})")
    cg.define(v, f"{call}.reshape({tuple_text([n] + ddims[k:])})")


@lowers("unique_index")
def _unique_index(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    out = cg.empty(v, cg.dims(x))
    cg.define(v, f"K.unique_index({cg.operand(x)}, {out})")


@lowers("searchsorted")
def _searchsorted(cg, e: Eqn) -> None:
    seq, vals = e.inputs
    v = e.outputs[0]
    sd, vd = cg.dims(seq), cg.dims(vals)
    rows = product_text(vd[:-1])
    if sd[:-1] != vd[:-1]:
        cg.fail(f"{product_text(sd[:-1])} != {rows}",
                "searchsorted: Leading dim_size of both tensors must match.")
    out = cg.empty(v, [rows, vd[-1]])
    right = e.params["side"] == "right"
    cg.define(v, f"K.searchsorted2(np.ascontiguousarray({cg.operand(seq)}).reshape(({rows}, "
                 f"{sd[-1]})), np.ascontiguousarray({cg.operand(vals)}).reshape(({rows}, "
                 f"{vd[-1]})), {right}, {out}).reshape({tuple_text(vd)})")



@lowers("random_gamma", "random_poisson")
def _random_gamma(cg, e: Eqn) -> None:
    seed, alpha = e.inputs
    v = e.outputs[0]
    out = cg.empty(v, [str(int(d)) for d in e.params["shape"]] + cg.dims(alpha))
    cg.line(f"K.rejection_sample_into({out}, {cg.array(alpha)}, {cg.array(seed)}, "
            f"{e.op == 'random_poisson'})")
    cg.define_array(v, out)


@lowers("random_binomial")
def _random_binomial(cg, e: Eqn) -> None:
    seed, counts, probs = e.inputs
    v = e.outputs[0]
    out = cg.empty(v, cg.dims(counts))
    cg.line(f"K.binomial_sample_into({out}, np.ascontiguousarray({cg.array(counts)}), "
            f"np.ascontiguousarray({cg.array(probs)}), {cg.array(seed)})")
    cg.define_array(v, out)


@lowers("cumulative_logsumexp")
def _cumulative_logsumexp(cg, e: Eqn) -> None:
    x, v = e.inputs[0], e.outputs[0]
    a = e.params
    cg.define(v, f"K.cumulative_logsumexp3({cg.line_view(x, a['axis'])}, "
                 f"{bool(a['exclusive'])}, {bool(a['reverse'])}).reshape("
                 f"{tuple_text(cg.dims(x))})")
