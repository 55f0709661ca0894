"""Numba lowerings of the pooling ops (``ir/ops/pooling.py``): the input is viewed as 5-D
``(batch, depth, height, width, channels)`` and the kernels of
:mod:`stagecraft.backends.numba_cpu.kernels.pooling` run with the geometry baked into the
source; their 5-D results are viewed back with the op's rank. ``LOWERINGS`` maps each op to
its lowering; :mod:`.lowerings` registers them in ``LOWER`` (this module does not import it,
so the two stay free of import cycles).
"""
from __future__ import annotations


from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.source import tuple_text
from stagecraft.backends.numba_cpu.kernels.pooling import geometry
from stagecraft.ir.graph import Eqn

LOWERINGS = Lowerings("Numba", missing='compile this function with backend="reference"')
lowers = LOWERINGS.lowers




def _as5(cg, x, rank: int) -> str:
    """``x`` (rank 3 to 5, channels last) as a contiguous 5-D array."""
    dims = cg.dims(x)
    dims5 = [dims[0]] + ["1"] * (5 - rank) + dims[1:]
    return f"np.ascontiguousarray({cg.operand(x)}).reshape({tuple_text(dims5)})"


def _back(cg, e: Eqn, expr: str, rank: int) -> None:
    """Binds the op's output to the 5-D result ``expr`` viewed with ``rank`` dims."""
    r = cg.fresh("pooled")
    cg.line(f"{r} = {expr}")
    keep = [0] + list(range(5 - rank + 1, 5))
    cg.define(e.outputs[0], f"{r}.reshape({tuple_text([f'{r}.shape[{k}]' for k in keep])})")


def _geometry(e: Eqn) -> str:
    p = e.params
    return tuple_text(str(v) for v in geometry(p["ksize"], p["strides"], p["padding"]))


@lowers("max_pool", "avg_pool")
def _pool(cg, e: Eqn) -> None:
    x = e.inputs[0]
    rank = len(e.params["ksize"]) + 2
    _back(cg, e, f"K.{e.op}5({_as5(cg, x, rank)}, {_geometry(e)})", rank)


@lowers("max_pool_grad", "max_pool_grad_grad")
def _max_pool_grads(cg, e: Eqn) -> None:
    x, grad = e.inputs
    rank = len(e.params["ksize"]) + 2
    _back(cg, e, f"K.{e.op}5({_as5(cg, x, rank)}, {_as5(cg, grad, rank)}, {_geometry(e)})",
          rank)


@lowers("avg_pool_grad")
def _avg_pool_grad(cg, e: Eqn) -> None:
    dy = e.inputs[0]
    shape = list(e.params["input_shape"])  # the batch size comes from dy
    rank = len(shape)
    spatial = [1] * (5 - rank) + shape[1:-1]
    _back(cg, e, f"K.avg_pool_grad5({_as5(cg, dy, rank)}, {spatial[0]}, {spatial[1]}, "
                 f"{spatial[2]}, {_geometry(e)})", rank)
