"""Which ``row_update`` equations of a ``while`` body may write their buffer in place.

A staged TensorArray write (and the stack of a loop gradient's intermediates) is a
``row_update`` that, taken literally, copies the whole buffer every iteration. When the body
carries the updated buffer on and nothing else can still see the old one, a backend copies the
buffer once on loop entry instead and then overwrites the row in place each iteration. Shared
by the CPU and CUDA code generators, which differ only in which equations fuse into
elementwise loops (reading a buffer there never aliases it).
"""
from __future__ import annotations

from typing import Callable

from stagecraft.ir.graph import Eqn, Graph, Value
from stagecraft.ir.ops import OPS

# Ops whose generated code never returns a view of an input on either backend (the op table's
# ``copying`` property), so reading a buffer with them before overwriting it in place is safe.
COPYING = frozenset(name for name, op in OPS.items() if op.copying)


def rows_written_in_place(body: Graph, n: int,
                          fusible: Callable[[Eqn], bool]) -> dict[int, Eqn]:
    """The carried buffers (by index among the ``n`` carried parameters of the while ``body``)
    that the body overwrites one row of and carries on, and reads before that only through
    ``COPYING`` ops or equations for which ``fusible`` holds (the backend computes those into
    fresh arrays): the generated loop may copy such a buffer once on entry and then write
    the row in place, the ``row_update`` equation it maps to.

    >>> from stagecraft.ir import dtypes as dt
    >>> from stagecraft.ir.types import TensorType
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("body")
    >>> buf = b.param(TensorType(dt.float32, (4, 3)), "buf")
    >>> i = b.param(TensorType(dt.int32, ()), "i")
    >>> row = b.param(TensorType(dt.float32, (3,)), "row")
    >>> (out,) = b.add("row_update", [buf, i, row], [buf.type])
    >>> owned = rows_written_in_place(b.build([out, i]), 2, lambda e: False)
    >>> {k: e.op for k, e in owned.items()}
    {0: 'row_update'}

    Returning the old buffer as well keeps it alive, so that write must copy:

    >>> rows_written_in_place(b.build([out, buf]), 2, lambda e: False)
    {}
    """
    users: dict[int, list[int]] = {}
    for i, e in enumerate(body.eqns):
        for x in e.inputs:
            if isinstance(x, Value):
                users.setdefault(x.uid, []).append(i)
    returned = [r.uid for r in body.results if isinstance(r, Value)]
    owned = {}
    for i, e in enumerate(body.eqns):
        if e.op != "row_update" or not isinstance(e.inputs[0], Value):
            continue
        buf, out = e.inputs[0], e.outputs[0]
        k = next((k for k, p in enumerate(body.params[:n]) if p.uid == buf.uid), None)
        if k is None or body.results[k] is not out or returned.count(out.uid) != 1 \
                or buf.uid in returned or users.get(out.uid):
            continue
        others = [j for j in users[buf.uid] if j != i]
        if all(j < i and (body.eqns[j].op in COPYING or fusible(body.eqns[j]))
               for j in others) and users[buf.uid].count(i) == 1:
            owned[k] = e
    return owned
