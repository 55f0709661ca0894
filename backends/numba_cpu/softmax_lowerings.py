"""Numba lowerings of the softmax family (``ir/ops/softmax.py``), calls into
``kernels/softmax.py``: softmax and log_softmax on a 3-D view (outer, axis, inner) of the
logits, the fused sparse cross-entropy on the op's own ``[batch, classes]`` logits after a
check of the labels that raises the reference's message with the user's line.
``LOWERINGS`` maps each op to its lowering; :mod:`.lowerings` registers them in ``LOWER``
(this module does not import it, so the two stay free of import cycles)."""
from __future__ import annotations

from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.source import tuple_text
from stagecraft.ir.graph import Eqn
from stagecraft.ir.ops.softmax import GRAD, LABEL_ERROR, NAME

LOWERINGS = Lowerings("Numba", missing='compile this function with backend="reference"')
lowers = LOWERINGS.lowers


@lowers("softmax", "log_softmax")
def _softmax(cg, e: Eqn) -> None:
    x = e.inputs[0]
    cg.define(e.outputs[0], f"K.softmax3({cg.line_view(x, e.params['axis'])}, "
                            f"{e.op == 'log_softmax'}).reshape({tuple_text(cg.dims(x))})")


@lowers(NAME, GRAD)
def _sparse_xent(cg, e: Eqn) -> None:
    kernel = "sparse_xent_grad" if e.op == GRAD else "sparse_xent"
    labels = cg.array(e.inputs[-1])
    bad, classes = cg.fresh("bad"), cg.dim(e.inputs[-2], 1)
    cg.w.line(f"{bad} = K.first_bad_label({labels}, {classes})")
    # the reference's message, its two numbers filled in at run time (string literals only)
    before, between, after = LABEL_ERROR.split("{}")
    head, tail = f"{e.op}: {before}", f"{after}\n  at {e.loc}"
    with cg.w.block(f"if {bad} >= 0:"):
        cg.w.line(f"raise ValueError({head!r} + str({labels}[{bad}]) + {between!r} + "
                  f"str({classes}) + {tail!r})")
    args = ", ".join(cg.array(x) for x in e.inputs)
    cg.define(e.outputs[0], f"K.{kernel}({args})")
