"""The structural ops: the equations tracing produces that are not primitives of the op table
(constants, variables, control flow, host effects), one record each with the properties that
the verifier, the printer, the passes and the backends ask by op name.

A new structural op is one record here plus a ``check_<op>`` in the verifier and a lowering in
each backend; the completeness tests (tests/ir/test_op_properties.py and
tests/backends/test_lowering_tables.py) fail until all exist.
"""
from __future__ import annotations

import types
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StructuralOp:
    """A non-primitive op and its properties.

    ``stateful``: never pruned and keeps its order among stateful equations (control flow is
    stateful when a region holds a stateful equation: see ``ir.graph.is_stateful``);
    ``regions``: the labels of its closed sub-graphs, as printed (none: it has no regions);
    ``takes_refs``: its operands may be variable references; ``makes_refs``: its output is one;
    ``attrs``: its attribute names; ``serializable``: ``ir.serialize`` can write it (not an
    equation holding a Python callable).
    """

    name: str
    doc: str
    attrs: tuple[str, ...] = ()
    stateful: bool = False
    regions: tuple[str, ...] = ()
    takes_refs: bool = False
    makes_refs: bool = False
    serializable: bool = True


_RECORDS = (
    StructuralOp("const", "A constant array or scalar.", attrs=("value",)),
    StructuralOp("capture", "A value from outside the function; tracing makes captures graph "
                            "parameters, so no backend sees this op.", makes_refs=True),
    StructuralOp("read", "The current value of a variable.", stateful=True, takes_refs=True),
    StructuralOp("assign", "Sets (``mode``: assign, add, sub) a variable's value.",
                 attrs=("mode",), stateful=True, takes_refs=True),
    StructuralOp("print", "Writes its operands formatted by ``template``.",
                 attrs=("template", "sep", "end", "stream", "summarize"), stateful=True),
    StructuralOp("assert", "Raises ``message`` when its operand is not all true.",
                 attrs=("message",), stateful=True),
    StructuralOp("py_function", "Calls the Python function ``fn`` on the host.",
                 attrs=("fn", "Tout"), stateful=True, serializable=False),
    StructuralOp("cond", "Runs one of two regions on a boolean predicate.",
                 regions=("then", "else"), takes_refs=True),
    StructuralOp("while", "Runs ``body`` while ``cond`` holds, carrying ``carry`` values.",
                 attrs=("carry",), regions=("cond", "body"), takes_refs=True),
    StructuralOp("call", "Inlines the graph function ``name``.", attrs=("name",),
                 regions=("fn",), takes_refs=True),
)

STRUCTURAL: types.MappingProxyType = types.MappingProxyType({r.name: r for r in _RECORDS})


def names_where(**props: object) -> frozenset:
    """The structural ops whose properties have the given values.

    >>> sorted(names_where(stateful=True))
    ['assert', 'assign', 'print', 'py_function', 'read']
    >>> sorted(n for n in STRUCTURAL if STRUCTURAL[n].regions)
    ['call', 'cond', 'while']
    """
    return frozenset(n for n, r in STRUCTURAL.items()
                     if all(getattr(r, k) == v for k, v in props.items()))
