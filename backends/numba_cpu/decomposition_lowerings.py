"""Numba lowerings of the matrix decompositions and solvers (``ir/ops/decompositions.py``):
the inputs are viewed as ``(batch, rows, cols)``, the kernels of
:mod:`stagecraft.backends.numba_cpu.kernels.decompositions` return 3-D / 2-D / 1-D results,
viewed back with the batch dimensions. ``LOWERINGS`` holds them; :mod:`.lowerings` registers
them in ``LOWER`` (this module does not import it, so the two stay free of import cycles).
"""
from __future__ import annotations

from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.source import np_type, tuple_text
from stagecraft.backends.numba_cpu.batched import emit_batched
from stagecraft.ir.graph import Eqn

LOWERINGS = Lowerings("Numba", missing='compile this function with backend="reference"')
lowers = LOWERINGS.lowers


def _as3(cg, x) -> str:
    """A (batch of) matrices as a contiguous 3-D array."""
    m, n = cg.dims(x)[-2:]
    return f"np.ascontiguousarray({cg.operand(x)}).reshape((-1, {m}, {n}))"


def _bind(cg, e: Eqn, call: str) -> None:
    """Binds every output of ``e`` to the matching result of ``call`` (one array, or a tuple
    with one per output), reshaped to the output's dims (batch dims from the input)."""
    batch = cg.dims(e.inputs[0])[:-2]
    results = [call]
    if len(e.outputs) > 1:
        r = cg.fresh("dec")
        cg.line(f"{r} = {call}")
        results = [f"{r}[{k}]" for k in range(len(e.outputs))]
    for v, res in zip(e.outputs, results):
        tail = [str(d) if d is not None else f"{res}.shape[{k - v.type.rank}]"
                for k, d in enumerate(v.type.shape[len(batch):], start=len(batch))]
        dims = batch + tail
        cg.define(v, f"{res}.reshape({tuple_text(dims)})" if dims else f"{res}[0]")


@lowers("matrix_inverse")
def _inverse(cg, e: Eqn) -> None:
    _bind(cg, e, f"K.inverse3({_as3(cg, e.inputs[0])}, {bool(e.params['adjoint'])})")


@lowers("matrix_determinant", "log_matrix_determinant", "cholesky", "eigh")
def _square(cg, e: Eqn) -> None:
    kernel = {"matrix_determinant": "determinant3", "log_matrix_determinant": "slogdet3",
              "cholesky": "cholesky3", "eigh": "eigh3"}[e.op]
    _bind(cg, e, f"K.{kernel}({_as3(cg, e.inputs[0])})")


@lowers("lu")
def _lu(cg, e: Eqn) -> None:
    like = f"np.empty(0, {np_type(e.params['out_type'])})"
    _bind(cg, e, f"K.lu3({_as3(cg, e.inputs[0])}, {like})")


@lowers("eig")
def _eig(cg, e: Eqn) -> None:
    like = f"np.empty(0, {np_type(e.outputs[0].type.dtype)})"
    _bind(cg, e, f"K.eig3({_as3(cg, e.inputs[0])}, {like})")


@lowers("qr", "svd")
def _factor(cg, e: Eqn) -> None:
    _bind(cg, e, f"K.{e.op}3({_as3(cg, e.inputs[0])}, {bool(e.params['full_matrices'])})")


@lowers("matrix_solve")
def _solve(cg, e: Eqn) -> None:
    a, b = e.inputs
    _bind(cg, e, f"K.solve3({_as3(cg, a)}, {_as3(cg, b)}, {bool(e.params['adjoint'])})")


@lowers("triangular_solve")
def _triangular_solve(cg, e: Eqn) -> None:
    a, b = e.inputs
    flags = f"{bool(e.params['lower'])}, {bool(e.params['adjoint'])}"
    if a.type.rank == 2 and b.type.rank == 2:
        zero = "np.zeros(1, np.int64)"
        cg.define(e.outputs[0], f"K.triangular_solve3({_as3(cg, a)}, {_as3(cg, b)}, {zero}, "
                                f"{zero}, {flags})[0]")
        return
    emit_batched(cg, e, "triangular_solve3", flags)
