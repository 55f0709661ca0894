"""Each code generator's one table of lowerings (``@lowers("while")``) covers the whole op table
and every structural op, and names nothing else."""
from __future__ import annotations

import pytest

from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.source_emitter import LoweringError
from stagecraft.backends.numba_cpu.lowerings import LOWER as CPU
from stagecraft.backends.numba_cuda.staged.lowerings import LOWER as CUDA
from stagecraft.ir import OPS
from stagecraft.ir.graph import STRUCTURAL_OPS, Eqn

# Structural ops no backend sees: tracing turns captures into graph parameters.
NOT_LOWERED = {"capture"}


@pytest.mark.parametrize("table", [CPU, CUDA], ids=["numba", "cuda"])
def test_every_op_has_exactly_one_lowering(table: Lowerings) -> None:
    expected = set(OPS) | (set(STRUCTURAL_OPS) - NOT_LOWERED)
    assert sorted(expected - set(table)) == []
    assert sorted(set(table) - expected) == []


@pytest.mark.parametrize("table", [CPU, CUDA], ids=["numba", "cuda"])
def test_an_op_without_a_lowering_is_a_compile_time_error(table: Lowerings) -> None:
    with pytest.raises(LoweringError, match=f"^The {table.backend} backend has no lowering for "
                                            f"the op 'capture' \\(at f.py:3\\); "):
        table.emit(None, Eqn("capture", (), (), loc="f.py:3"))
