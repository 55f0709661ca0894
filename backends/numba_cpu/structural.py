"""Lowerings of the ops the generator composes itself rather than calling a kernel: the
elementwise ops (fused loop nests, see ``_Codegen.emit_fused``), constants, variables
(``read``/``assign``: slots), control flow (``cond``/``while`` as native blocks, ``call``
inlined: written once for both backends in ``SourceEmitter``, registered here) and host calls
(``print``/``py_function`` in object mode, ``assert``). Registered in the backend's one table,
:data:`.lowerings.LOWER`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from stagecraft.backends.codegen.half import storage_name
from stagecraft.backends.codegen.scalar_ops import SCALAR
from stagecraft.backends.codegen.source import literal, rank as _rank, tuple_text
from stagecraft.backends.codegen.source_emitter import SourceEmitter
from stagecraft.backends.numba_cpu.lowerings import lowers
from stagecraft.ir import dtypes as dt
from stagecraft.ir.graph import Eqn, Value
from stagecraft.ir.types import TensorType

SMALL_FILL = 1024  # elements: uniform constants up to this size are made by the code, not passed


@lowers(*SCALAR)
def _elementwise(cg, e: Eqn) -> None:
    """An elementwise equation on its own: a fused group of one (the generator's fusion
    groups take every elementwise equation before it gets here; kept for completeness)."""
    cg.emit_fused([e], range(1), {e.outputs[0].uid: {1}}, commented=True)


@lowers("const")
def _const(cg, e: Eqn) -> None:
    """A scalar is a typed literal; an array is passed as an argument (or filled in place)."""
    value = np.asarray(e.params["value"])
    v = e.outputs[0]
    if value.ndim == 0:
        cg.env[v.uid] = literal(value.item(), v.type.dtype)
        return
    name = cg.names.fresh(v.hint or "const", "c")
    if cg.w.depth == 1 and 0 < value.size <= SMALL_FILL and (value == value.flat[0]).all():
        # A small uniform constant (a TensorArray's zeros) is filled in place: each array
        # argument costs Numba's dispatcher ~0.3 us per call, more than the fill.
        first = literal(value.flat[0].item(), v.type.dtype)
        cg.w.line(f"{name} = np.full({tuple_text(list(value.shape))}, {first})")
        cg.env[v.uid] = name
        return
    cg.consts.append(np.array(value, dtype=storage_name(v.type.dtype), order="C"))
    cg.const_names.append(name)
    cg.env[v.uid] = name


@lowers("read")
def _read(cg, e: Eqn) -> None:
    """The variable's current value: its slot."""
    cg.define(e.outputs[0], cg.slots[e.inputs[0].uid])


# Written once, for both backends, in SourceEmitter (with per-backend hooks).
lowers("assign")(SourceEmitter.lower_assign)
lowers("call")(SourceEmitter.lower_call)
lowers("cond")(SourceEmitter.lower_cond)
lowers("while")(SourceEmitter.lower_while)


@lowers("print")
def _print(cg, e: Eqn) -> None:
    """Formats and writes on the host, in an object-mode block."""
    a = e.params
    values = [cg.array(x) for x in e.inputs]
    with cg.w.block("with numba.objmode():"):
        cg.w.line(f"rt.host_print({a['template']!r}, {a['sep']!r}, {a['summarize']!r}, "
                  f"{a['end']!r}, {a['stream']!r}, {tuple_text(values)})")


@lowers("assert")
def _assert(cg, e: Eqn) -> None:
    """Raises the message when the condition does not hold."""
    c = e.inputs[0]
    cond = cg.operand(c) if _rank(c) == 0 else f"{cg.operand(c)}.all()"
    cg.fail(f"not {cond}", f"{e.params['message']}\n  at {e.loc}")


@lowers("py_function")
def _py_function(cg, e: Eqn) -> None:
    """Calls the Python function on the host through the token (see .host)."""
    types = [_numba_type(o.type) for o in e.outputs]
    index = len(cg.host_fns)
    cg.host_fns.append(e.params["fn"])
    names = [cg.fresh(o.hint or "py") for o in e.outputs]
    decl = ", ".join(f"{n}={t!r}" for n, t in zip(names, types))
    values = tuple_text(cg.operand(x) for x in e.inputs)
    with cg.w.block(f"with numba.objmode({decl}):"):
        call = f"rt.call_host(host_token, {index}, {values}, {_specs(e.outputs)!r})"
        cg.w.line(f"{tuple_text(names)} = {call}" if names else call)
    for o, n in zip(e.outputs, names):
        cg.env[o.uid] = n


def _numba_type(t: TensorType) -> str:
    base = "boolean" if t.dtype == dt.bool_ else storage_name(t.dtype)
    if t.rank == 0:
        return base
    return f"{base}[{', '.join([':'] * (t.rank - 1) + ['::1'])}]"


def _specs(values: Sequence[Value]) -> tuple:
    return tuple((storage_name(o.type.dtype), o.type.rank) for o in values)
