"""What the CPU and CUDA code generators share: binding a graph's parameters to source names
(variables to "slots" rebound by ``assign``), value uses, inlining regions, the printed IR
equation as a comment above the code it became, and the error for what cannot be lowered."""
from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Sequence

from stagecraft.backends.codegen.fusion import fusible
from stagecraft.backends.codegen.inplace_rows import rows_written_in_place
from stagecraft.ir.errors import UnimplementedError
from stagecraft.ir.graph import Eqn, Graph, Literal, Value
from stagecraft.ir.printer import print_lines
from stagecraft.ir.types import TensorType

if TYPE_CHECKING:
    from stagecraft.backends.codegen.source import Namer, Writer


class LoweringError(UnimplementedError):
    """The graph uses something a code generator cannot compile (raised when compiling,
    never at a call, and never replaced by a silent fallback)."""


class SourceEmitter(abc.ABC):
    """Base of a generator emitting one function's source for ``graph``; subclasses define
    ``operand`` and ``emit_body``."""

    def __init__(self, graph: Graph, names: Namer, writer: Writer):
        self.graph = graph
        self.names = names
        self.w = writer
        self.env: dict[int, str] = {}          # value uid -> source expression
        self.slots: dict[int, str] = {}        # ref uid -> slot name
        self.assigned: dict[str, None] = {}    # slot names assigned anywhere (ordered)
        self.inplace: set[int] = set()  # ids of row_update equations writing their buffer
        printout = print_lines(graph)
        self.ir_lines = {k: printout.lines[i].strip() for k, i in printout.eqn_lines.items()}

    def bind_params(self) -> tuple[tuple, list[str]]:
        """Names the graph parameters that are used: ``(their indices, their names)``;
        variable references become slots, tensors values."""
        g = self.graph
        used = {x.uid for e in g.eqns for x in e.inputs if isinstance(x, Value)}
        used |= {r.uid for r in g.results if isinstance(r, Value)}
        taken = tuple(i for i, p in enumerate(g.params) if p.uid in used)
        names = []
        for i in taken:
            p = g.params[i]
            name = self.names.fresh(p.hint, "p")
            names.append(name)
            (self.slots if p.ref else self.env)[p.uid] = name
        return taken, names

    @abc.abstractmethod
    def operand(self, x: Value | Literal) -> str:
        """The source text of an operand."""

    @abc.abstractmethod
    def emit_body(self, graph: Graph) -> list[str]:
        """Emits ``graph``'s equations; returns the source text of its results."""

    def fresh(self, hint: str | None) -> str:
        return self.names.fresh(hint)

    def line(self, text: str) -> None:
        self.w.line(text)

    def comment(self, e: Eqn) -> None:
        text = self.ir_lines.get(id(e))
        if text is not None:   # None: an equation made by the generator itself
            self.w.line("# " + comment_text(text))

    def emit_region(self, region: Graph, args: Sequence[Value | Literal]) -> list[str]:
        """Inlines ``region`` with its parameters bound to ``args`` (refs to their slots)."""
        for p, a in zip(region.params, args):
            if p.ref:
                self.slots[p.uid] = self.slots[a.uid]
            else:
                self.env[p.uid] = self.operand(a)
        return self.emit_body(region)

    # ------------------------------------------------------------------ shared lowerings

    def lower_call(self, e: Eqn) -> None:
        """``call``: the function's region inlined."""
        results = self.emit_region(e.regions[0], e.inputs)
        for o, r in zip(e.outputs, results):
            self.env[o.uid] = r

    def lower_cond(self, e: Eqn) -> None:
        """``cond``: an ``if``/``else`` with both branches inlined, on :meth:`predicate`."""
        outs = [self.fresh(o.hint or "r") for o in e.outputs]
        self.enter_cond(e, outs)
        test = self.predicate(e.inputs[0])
        for branch, header in zip(e.regions, (f"if {test}:", "else:")):
            with self.w.block(header):
                results = self.emit_region(branch, e.inputs[1:])
                self.exit_branch(outs, results)
        self.join_cond()
        for o, name in zip(e.outputs, outs):
            self.env[o.uid] = name

    def lower_while(self, e: Eqn) -> None:
        """``while``: a ``while True`` loop running the cond region, ``break`` on its
        :meth:`predicate`, then the body region. A carried buffer the body overwrites one row
        of (a TensorArray, a loop gradient's stack) and nothing else sees is copied once here
        (:meth:`copy_of`), then written in place (see .inplace_rows)."""
        n = e.params["carry"]
        cond, body = e.regions
        owned = rows_written_in_place(body, n, fusible)
        self.inplace.update(id(u) for u in owned.values())
        carry = []
        for k, (o, init) in enumerate(zip(e.outputs, e.inputs[:n])):
            name = self.fresh(o.hint or "c")
            value = self.operand(init)
            self.line(f"{name} = {self.copy_of(value) if k in owned else value}")
            carry.append(name)
            self.env[o.uid] = name
        self.enter_loop(carry)
        with self.w.block("while True:"):
            self.loop_head()
            carried = [Value(o.type, None) for o in e.outputs]
            for v, name in zip(carried, carry):
                self.env[v.uid] = name
            args = carried + list(e.inputs[n:])
            self.emit_region(cond, args)
            with self.w.block(f"if not {self.predicate(cond.results[0])}:"):
                self.line("break")
            results = self.emit_region(body, args)
            self.next_iteration(carry, results)

    def lower_assign(self, e: Eqn) -> None:
        """``assign``: rebinds the variable's slot to the new value (``add``/``sub``: the old
        value plus or minus it, through the elementwise machinery), after the run-time check
        that its static dims match; a scalar fills a variable of static shape."""
        ref, value = e.inputs
        slot = self.slots[ref.uid]
        var_t = ref.type
        mode = e.params["mode"]
        if mode in ("add", "sub"):
            old = Value(var_t, "old")
            self.env[old.uid] = slot
            value = self.elementwise("add" if mode == "add" else "subtract", (old, value),
                                     var_t, e.loc)
        src = self.operand(value)
        v_shape, shape = value.type.shape, var_t.shape
        if v_shape is not None and shape is not None and len(v_shape) == len(shape):
            for k, d in enumerate(shape):
                if d is not None and v_shape[k] != d:
                    self.fail(f"{src}.shape[{k}] != {d}",
                              f"assign: cannot assign a value of a different shape to a "
                              f"variable of shape {list(shape)}\n  at {e.loc}")
            src = self.converted(value, src, TensorType(var_t.dtype, v_shape), False, e.loc)
        elif v_shape == () and shape is not None and None not in shape:
            src = self.converted(value, src, var_t, True, e.loc)
        else:
            raise LoweringError(
                f"assign: cannot assign a value of shape {_dims(v_shape)} to a variable of "
                f"shape {_dims(shape)} (at {e.loc}).")
        self.line(f"{slot} = {src}")
        self.assigned[slot] = None

    # Hooks of the shared lowerings, one per backend.

    def enter_cond(self, e: Eqn, outs: list[str]) -> None:
        """Code before a ``cond`` whose results the locals ``outs`` take."""

    def exit_branch(self, outs: list[str], results: list[str]) -> None:
        """Code ending a ``cond`` branch: the result locals take the branch's results."""
        for name, r in zip(outs, results):
            self.line(f"{name} = {r}")

    def join_cond(self) -> None:
        """Code after a ``cond``'s two branches."""

    def enter_loop(self, carry: list[str]) -> None:
        """Code before a ``while`` loop whose carried values are the locals ``carry``."""

    def loop_head(self) -> None:
        """Code at the top of each pass of a ``while`` loop, before its cond region."""

    def next_iteration(self, carry: list[str], results: list[str]) -> None:
        """Code ending a ``while`` body: the carried locals take the body's results."""
        if carry:
            self.line(f"{', '.join(carry)} = {', '.join(results)}")

    @abc.abstractmethod
    def predicate(self, x: Value | Literal) -> str:
        """Source text testing the boolean scalar ``x`` in an ``if``."""

    @abc.abstractmethod
    def copy_of(self, src: str) -> str:
        """Source text of a fresh copy of the buffer ``src``."""

    @abc.abstractmethod
    def fail(self, condition: str, message: str) -> None:
        """Emits: raise ``message`` at run time when ``condition`` holds."""

    @abc.abstractmethod
    def elementwise(self, op: str, inputs: Sequence[Value | Literal], out: TensorType,
                    loc: object) -> Value:
        """Emits the elementwise ``op`` of ``inputs`` as a fused group of one; its result."""

    @abc.abstractmethod
    def converted(self, value: Value | Literal, src: str, target: TensorType, fill: bool,
                  loc: object) -> str:
        """The source text of ``value`` (its text ``src``) as ``target``'s dtype; ``fill``: a
        scalar broadcast to ``target``'s static shape."""


def comment_text(text: str, limit: int = 100) -> str:
    """``text`` as the body of a one-line ``#`` comment of generated source, safe whatever the
    text holds (it may come from a loaded file): every character outside printable ASCII (line
    feeds, carriage returns, other line separators, NUL, non-ASCII) is written as its escape,
    so the comment cannot end early; text longer than ``limit`` is cut with ``...``.

    >>> comment_text("%y: f32[3\\nimport os] = add %x")
    '%y: f32[3\\\\nimport os] = add %x'
    >>> comment_text("a\\u2028b\\x00c"), len(comment_text("x" * 200))
    ('a\\\\u2028b\\\\x00c', 100)
    """
    safe = "".join(c if " " <= c <= "~" else c.encode("unicode_escape").decode("ascii")
                   for c in text)
    return safe if len(safe) <= limit else safe[:limit - 3] + "..."


def value_uses(eqns: Sequence[Eqn], results: Sequence) -> dict[int, set]:
    """value uid -> the indices of the equations using it (``len(eqns)``: the results).

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("f")
    >>> x = b.param(TensorType(dtypes.float32, ()), "x")
    >>> (y,) = b.add("negative", [x], [x.type])
    >>> g = b.build([y])
    >>> value_uses(g.eqns, g.results) == {x.uid: {0}, y.uid: {1}}
    True
    """
    uses: dict[int, set] = {}
    for i, e in enumerate(eqns):
        for x in e.inputs:
            if isinstance(x, Value):
                uses.setdefault(x.uid, set()).add(i)
    for r in results:
        if isinstance(r, Value):
            uses.setdefault(r.uid, set()).add(len(eqns))
    return uses


def _dims(shape: tuple | None) -> str:
    return "unknown" if shape is None else str(list(shape))
