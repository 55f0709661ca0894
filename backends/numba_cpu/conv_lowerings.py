"""Numba lowerings of the convolution ops (``ir/ops/conv.py``): operands are viewed as 5-D
(``[N, D, H, W, C]`` inputs, ``[KD, KH, KW, Cg, O]`` filters, unit spatial dims in front) and
the im2col + BLAS kernels of :mod:`stagecraft.backends.numba_cpu.kernels.conv` run with the
geometry baked into the source; their 5-D results are viewed back with the op's rank.
``LOWERINGS`` holds them; :mod:`.lowerings` registers them in ``LOWER`` (this module does
not import it: no import cycle).
"""
from __future__ import annotations

from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.source import tuple_text
from stagecraft.backends.numba_cpu.kernels.conv import geometry
from stagecraft.ir.graph import Eqn

LOWERINGS = Lowerings("Numba", missing='compile this function with backend="reference"')
lowers = LOWERINGS.lowers


def _as5(cg, x, lead: int) -> str:
    """``x`` (channels last, 1-3 spatial dims after ``lead`` leading dims) as contiguous 5-D."""
    dims = cg.dims(x)
    dims5 = dims[:lead] + ["1"] * (5 - len(dims)) + dims[lead:]
    return f"np.ascontiguousarray({cg.operand(x)}).reshape({tuple_text(dims5)})"


def _back(cg, e: Eqn, expr: str) -> None:
    """Binds the op's output to the 5-D result ``expr`` viewed with the output's rank."""
    r = cg.fresh("conv5")
    cg.line(f"{r} = {expr}")
    rank = len(e.outputs[0].type.shape)
    keep = [0] + list(range(6 - rank, 5))
    cg.define(e.outputs[0], f"{r}.reshape({tuple_text([f'{r}.shape[{k}]' for k in keep])})")


def _geometry(e: Eqn) -> str:
    p = e.params
    return tuple_text(str(v) for v in geometry(p["strides"], p["dilations"], p["padding"],
                                               p["groups"]))


@lowers("conv")
def _conv(cg, e: Eqn) -> None:
    x, w = e.inputs
    p = e.params
    xd, wd = cg.dims(x), cg.dims(w)
    r = len(p["strides"])
    out = ["1"] * (3 - r)
    for i in range(r):
        lo, hi = p["padding"][i]
        eff = f"(({wd[i]} - 1) * {p['dilations'][i]} + 1)"
        out.append(f"({xd[1 + i]} + {lo + hi} - {eff}) // {p['strides'][i]} + 1")
    _back(cg, e, f"K.conv5({_as5(cg, x, 1)}, {_as5(cg, w, 0)}, {_geometry(e)}, "
                 f"{tuple_text(out)})")


@lowers("conv_backprop_input")
def _conv_backprop_input(cg, e: Eqn) -> None:
    w, dy = e.inputs
    shape = e.params["input_shape"]
    x4 = ["1"] * (5 - len(shape)) + [str(int(d)) for d in shape[1:]]
    _back(cg, e, f"K.conv_backprop_input5({_as5(cg, w, 0)}, {_as5(cg, dy, 1)}, "
                 f"{tuple_text(x4)}, {_geometry(e)})")


@lowers("conv_backprop_filter")
def _conv_backprop_filter(cg, e: Eqn) -> None:
    x, dy = e.inputs
    shape = e.params["filter_shape"]
    f5 = ["1"] * (5 - len(shape)) + [str(int(d)) for d in shape]
    r = cg.fresh("dw5")
    cg.line(f"{r} = K.conv_backprop_filter5({_as5(cg, x, 1)}, {_as5(cg, dy, 1)}, "
            f"{tuple_text(f5)}, {_geometry(e)})")
    cg.define(e.outputs[0], f"{r}.reshape({tuple_text([str(int(d)) for d in shape])})")
