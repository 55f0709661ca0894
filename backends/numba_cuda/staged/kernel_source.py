"""The source of one fused elementwise kernel: a grid-stride loop over the flat index of the
group's output, reading each input by its broadcast mode and computing the group's equations
with the shared scalar expressions (``codegen.scalar_ops``: exact IR dtypes, integer
checks), storing the values used after the group.

The loop is ``kernels/index.py``'s ``grid_stride_loop``. Input modes: ``same`` (the output's
shape: the flat index), ``scalar`` (one element),
``strided`` (broadcast: ``offset(i, shape, strides)`` with strides 0 along broadcast dims).
Literal operands are inline typed constants.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from stagecraft.backends.codegen import scalar_ops
from stagecraft.backends.codegen.source import literal
from stagecraft.backends.numba_cuda.kernels.index import grid_stride_loop
from stagecraft.ir.graph import Eqn, Literal, Value


@dataclasses.dataclass
class KernelText:
    """One generated kernel: its parameter list and body lines (without the ``def``), and the
    integer-check messages whose codes (``first_code``, ``first_code + 1``...) it sets."""

    params: list[str]
    lines: list[str]
    checks: list[str]


def fused_kernel(group: Sequence[Eqn], inputs: Sequence[Value], modes: Sequence[str],
                 keep: Sequence[Value], first_code: int) -> KernelText:
    """The kernel computing ``group`` elementwise: parameters ``o0..`` (the ``keep`` outputs,
    flat), ``a0..`` (the flat ``inputs``, read by ``modes``), then ``shape`` and one
    ``s<k>`` strides tuple per strided input when any is strided, then ``err`` when a check
    exists (set to its code, counted from ``first_code``, instead of raising).

    >>> from stagecraft.ir import dtypes as dt
    >>> from stagecraft.ir.types import TensorType
    >>> x = Value(TensorType(dt.float32, (4,)))
    >>> y = Value(TensorType(dt.float32, (4,)))
    >>> e = Eqn("multiply", (x, Literal(2.0, TensorType(dt.float32, ()))), (y,))
    >>> k = fused_kernel([e], [x], ["same"], [y], 1)
    >>> print("\\n".join(k.lines[6:]))   # (after grid_stride_loop's lines)
            x0 = a0[u]
            e0 = np.float32((x0 * np.float32(2.0)))
            o0[u] = e0
    """
    outs = [f"o{k}" for k in range(len(keep))]
    ins = [f"a{k}" for k in range(len(inputs))]
    strided = [k for k, m in enumerate(modes) if m == "strided"]
    params = outs + ins + (["shape"] + [f"s{k}" for k in strided] if strided else [])
    lines = grid_stride_loop("o0.size")
    elem: dict[int, str] = {}
    for k, (x, mode) in enumerate(zip(inputs, modes)):
        index = {"same": "u", "scalar": "0"}.get(mode, f"offset(i, shape, s{k})")
        lines.append(f"        x{k} = a{k}[{index}]")
        elem[x.uid] = f"x{k}"
    checks: list[str] = []
    for n, e in enumerate(group):
        args = [literal(x.value, x.type.dtype) if isinstance(x, Literal) else elem[x.uid]
                for x in e.inputs]
        in_d = e.inputs[-1].type.dtype if e.inputs else e.outputs[0].type.dtype
        out_d = e.outputs[0].type.dtype
        checked = scalar_ops.check(e.op, args, in_d)
        if checked is not None:
            code = first_code + len(checks)
            checks.append(f"{e.op}: {checked[1]}\n  at {e.loc}")
            lines += [f"        if {checked[0]}:", f"            err[0] = {code}",
                      "            continue"]
        expr = scalar_ops.SCALAR[e.op](args, in_d)
        lines.append(f"        e{n} = {scalar_ops.convert(expr, in_d, out_d)}")
        elem[e.outputs[0].uid] = f"e{n}"
    for o, v in zip(outs, keep):
        lines.append(f"        {o}[u] = {elem[v.uid]}")
    if checks:
        params.append("err")
    return KernelText(params, lines, checks)


def has_check(e: Eqn) -> bool:
    """Whether elementwise ``e`` has a run-time integer check (division by zero...)."""
    in_d = e.inputs[-1].type.dtype if e.inputs else e.outputs[0].type.dtype
    return scalar_ops.check(e.op, ["a", "b"], in_d) is not None
