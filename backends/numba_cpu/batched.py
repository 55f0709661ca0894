"""Generated code for binary matrix ops whose batch dimensions broadcast (matmul,
triangular_solve): the static plan of :func:`.kernels.linalg.matmul_plan`, the per-output
batch indices of ``K.batch_index``, and one call of a 3-D kernel taking them."""
from __future__ import annotations

from stagecraft.backends.codegen.source import tuple_text
from stagecraft.backends.codegen.source_emitter import LoweringError
from stagecraft.backends.numba_cpu.kernels.linalg import matmul_plan
from stagecraft.ir.graph import Eqn


def emit_batched(cg, e: Eqn, kernel: str, flags: str, transpose_a: bool = False,
                 transpose_b: bool = False) -> None:
    """Binds ``e``'s output to ``K.<kernel>(a3, b3, ia, ib, <flags>)`` viewed with the
    broadcast batch; the shapes must be static (else a LoweringError naming the op)."""
    a, b = e.inputs
    if None in a.type.shape or None in b.type.shape:
        raise LoweringError(
            f"{e.op} at {e.loc}: the Numba backend needs static shapes for batched {e.op} "
            f"(got {list(a.type.shape)} and {list(b.type.shape)}); give the shapes or compile "
            f"this function with backend=\"reference\".")
    ab, bb, a3s, b3s, _, out_shape = matmul_plan(a.type.shape, b.type.shape, transpose_a,
                                                 transpose_b)
    ia, ib = cg.fresh("ia"), cg.fresh("ib")
    cg.line(f"{ia}, {ib} = K.batch_index({ab}, {bb})")
    cg.define(e.outputs[0], f"K.{kernel}({cg.operand(a)}.reshape({a3s}), "
                            f"{cg.operand(b)}.reshape({b3s}), {ia}, {ib}, {flags})"
                            f".reshape({tuple_text(out_shape)})")
