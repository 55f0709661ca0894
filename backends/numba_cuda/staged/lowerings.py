"""The staged CUDA backend's one table of lowerings, ``LOWER``: elementwise ops become fused
kernels (``_Codegen.emit_fused``), constants device constants, variables slots, ``cond`` and
``while`` host control flow on a predicate copied to the host, ``call`` inlined regions,
``print``/``assert``/``py_function`` host calls; every other op of the table runs through the
eager CUDA library (``numba_cuda.eager.run``), registered last.
"""
from __future__ import annotations

from stagecraft.backends.codegen.half import storage_name
from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.scalar_ops import SCALAR
from stagecraft.backends.codegen.source import tuple_text
from stagecraft.backends.codegen.source_emitter import SourceEmitter
from stagecraft.ir import OPS
from stagecraft.ir.graph import Eqn

LOWER = Lowerings("CUDA", missing="call this function under `with tf.device('/cpu:0'):` to run "
                                  "it on the CPU")
lowers = LOWER.lowers


@lowers(*SCALAR)
def _elementwise(cg, e: Eqn) -> None:
    """An elementwise equation on its own: a fused kernel of one (the generator's groups take
    every elementwise equation before it gets here; kept for completeness)."""
    cg.emit_fused([e], {0}, {e.outputs[0].uid: {1}}, commented=True)


@lowers("const")
def _const(cg, e: Eqn) -> None:
    """A device constant (``C[k]``, uploaded once per executable)."""
    cg.env[e.outputs[0].uid] = cg.const(e.params["value"], e.outputs[0].type.dtype)


@lowers("read")
def _read(cg, e: Eqn) -> None:
    """The variable's current device buffer: its slot."""
    name = cg.fresh(e.outputs[0].hint)
    cg.line(f"{name} = {cg.slots[e.inputs[0].uid]}")
    cg.env[e.outputs[0].uid] = name


# Written once, for both backends, in SourceEmitter (with per-backend hooks).
lowers("call")(SourceEmitter.lower_call)
lowers("cond")(SourceEmitter.lower_cond)


@lowers("assign")
def _assign(cg, e: Eqn) -> None:
    """``SourceEmitter.lower_assign``, noting the slot for the loops around it
    (``_Codegen.next_iteration``)."""
    cg.assign_log.append(cg.slots[e.inputs[0].uid])
    SourceEmitter.lower_assign(cg, e)


@lowers("while")
def _while(cg, e: Eqn) -> None:
    """``SourceEmitter.lower_while``, its test marked as a loop's (``runtime.predicate``), its
    site numbered before its cond region so that each pass can start with it
    (``runtime.loop_head``)."""
    cg.tests += 1
    cg.loop_tests[id(e.regions[0].results[0])] = cg.tests
    cg.loop_sites.append(cg.tests)
    SourceEmitter.lower_while(cg, e)
    cg.loop_sites.pop()


@lowers("row_update")
def _row_update(cg, e: Eqn) -> None:
    """In place when the loop owns the buffer (see ``SourceEmitter.lower_while``), else a
    copy."""
    in_place = id(e) in cg.inplace
    cg.emit_call(e, "rt.row_update_in_place(" if in_place else 'run("row_update", ')


@lowers("print")
def _print(cg, e: Eqn) -> None:
    """Formats and writes on the host."""
    values = tuple_text(cg.operand(x) for x in e.inputs)
    cg.line(f"rt.host_print({cg.site(e.params, e.loc)}, {values})")


@lowers("assert")
def _assert(cg, e: Eqn) -> None:
    """Raises the message on the host when the condition does not hold."""
    cg.line(f"rt.host_assert({cg.operand(e.inputs[0])}, {cg.site(e.params, e.loc)})")


@lowers("py_function")
def _py_function(cg, e: Eqn) -> None:
    """Calls the Python function on the host, variables synced first."""
    specs = tuple((storage_name(o.type.dtype), None if o.type.shape is None else o.type.rank)
                  for o in e.outputs)
    names = [cg.fresh(o.hint or "py") for o in e.outputs]
    values = tuple_text(cg.operand(x) for x in e.inputs)
    if cg.ref_slots:  # Python code may read the variables: give them their values now
        pairs = tuple_text(f"({i}, {slot})" for i, slot in cg.ref_slots)
        cg.line(f"rt.sync_variables({pairs})")
    call = f"rt.call_host({cg.site(e.params, e.loc, specs)}, {values})"
    cg.line(f"{tuple_text(names)} = {call}" if names else call)
    for o, n in zip(e.outputs, names):
        cg.env[o.uid] = n


def _eager(cg, e: Eqn) -> None:
    """The eager CUDA library's kernel for the op (``run("op", [inputs], site)``)."""
    cg.emit_call(e, f'run("{e.op}", ')


# Last: every op of the table not registered above runs eagerly.
lowers(*(name for name in OPS if name not in LOWER))(_eager)
