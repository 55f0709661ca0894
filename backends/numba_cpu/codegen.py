"""Graph -> the source of one Numba-compiled Python function.

Representation in the generated code: a rank-0 tensor is a NumPy scalar of its exact dtype, any
other tensor a C-contiguous array; a variable is a local ("slot") holding its current value,
which ``assign`` rebinds (values are never mutated in place, so reads taken earlier keep their
value). The function takes the graph's parameters (variables as their current values), then
the graph's constant arrays, then (only when the graph has a ``py_function``) a host token; it
returns a tuple of the results followed by the final values of the variables it assigns.

Elementwise equations that follow one another with one static output shape are fused into one
loop nest; values used only inside the nest stay scalars. ``cond``, ``while`` and ``call`` are
inlined as native ``if``/``while`` blocks and plain statements (:mod:`.structural`, with
``assign``, ``call``, ``cond`` and ``while`` written once for both backends in
``backends.codegen.source_emitter``).  Everything
else is a call into the kernel library ``stagecraft.backends.numba_cpu.kernels``
(:mod:`.lowerings`, which holds the one table of lowerings, ``LOWER``).  Above every statement a
comment shows the IR equation it comes from.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

from stagecraft.backends.codegen import half, scalar_ops
from stagecraft.backends.codegen.canonical import GLOBALS
from stagecraft.backends.codegen.fusion import fusible, fusion_group
from stagecraft.backends.codegen.source import (Namer, Writer, literal, np_type, product_text,
                                                rank as _rank, tuple_text)
from stagecraft.backends.codegen.source_emitter import LoweringError, SourceEmitter, value_uses
from stagecraft.backends.numba_cpu import structural  # noqa: F401 (registers its lowerings)
from stagecraft.backends.numba_cpu.lowerings import LOWER
from stagecraft.backends.numba_cpu.outline import Kernels
from stagecraft.backends.numba_cpu.repeats import (TRANSPARENT, Group, Occurrence, find_repeats,
                                                   identities, outside_operands)
from stagecraft.backends.numba_cpu.reroll import Reroll, find_rerolls, loop_uses
from stagecraft.ir import OPS
from stagecraft.ir.graph import Eqn, Graph, Literal, Value, walk_eqns
from stagecraft.ir.ops.opdef import Kind
from stagecraft.ir.types import TensorType

ENTRY = "graph_fn"
HEADER = ("import cmath\nimport numba\nimport numpy as np\n"
          "import stagecraft.backends.numba_cpu.kernels.all as K\n"
          "import stagecraft.backends.numba_cpu.host as rt\n")


@dataclasses.dataclass
class Generated:
    """What the code generator produced for one graph."""

    source: str
    param_indices: tuple   # the graph parameters the function takes (the used ones)
    consts: tuple          # constant arrays passed after the parameters
    assigned: tuple        # indices (into params) of the variables returned after the results
    host_fns: tuple        # py_function callables, called through the host token
    num_results: int


def generate(graph: Graph) -> Generated:
    """The generated module source for ``graph`` (see the module docstring); every tensor of
    ``graph`` must have a known rank (``compile`` runs other graphs on the interpreter)."""
    reason = unknown_rank(graph)
    if reason is not None:
        raise LoweringError(f"The Numba backend needs the rank of every tensor, and {reason} "
                            f"has an unknown rank; give it a rank (dims may be None) or "
                            f"compile this function with backend=\"reference\".")
    # Two passes: the first finds which fused loop nests occur more than once; the second
    # makes only those separate functions (a function costs Numba more than one inline copy
    # of its loop, a repeated call site far less than a repeated loop).
    first = _Codegen(graph)
    first.run()
    return _Codegen(graph, inline=first.kernels.used_once(), repeats=first.repeats).run()


def unknown_rank(graph: Graph) -> str | None:
    """Describes the first tensor of ``graph`` (regions included) whose rank is unknown."""
    for p in graph.params:
        if p.type.shape is None:
            return f"the input '{p.hint}'"
    for e in walk_eqns(graph):
        if any(o.type.shape is None for o in e.outputs):
            return f"the result of {e.op} at {e.loc}"
    return None


class _Codegen(SourceEmitter):
    def __init__(self, graph: Graph, inline: frozenset = frozenset(),
                 repeats: dict | None = None):
        super().__init__(graph, Namer((*GLOBALS, ENTRY, "host_token")), Writer())
        self.inline = inline  # canonical texts of the loop nests to emit inline
        # find_repeats of each body, by id of its equation list (shared by both passes).
        self.repeats: dict[int, dict] = {} if repeats is None else repeats
        self.kernels = Kernels()
        self.ids: dict = {}        # value uid -> operand identity (see .repeats.identities)
        self.functions: dict[Group, str] = {}   # repeated runs' functions, by group
        self.consts: list[np.ndarray] = []
        self.const_names: list[str] = []
        self.host_fns: list[Any] = []

    # ------------------------------------------------------------------ entry point

    def run(self) -> Generated:
        g = self.graph
        taken, params = self.bind_params()
        results = self.emit_body(g)
        slot_params = {name: taken[i] for i, name in enumerate(params)}
        assigned = tuple(slot_params[s] for s in self.assigned)
        returned = list(results) + list(self.assigned)
        args = params + self.const_names + (["host_token"] if self.host_fns else [])
        header = f"def {ENTRY}({', '.join(args)}):"
        body = self.w.lines + [f"    return {tuple_text(returned)}"]
        source = HEADER + "\n\n" + self.kernels.source() + "\n".join([header, *body]) + "\n"
        return Generated(source, taken, tuple(self.consts), assigned,
                         tuple(self.host_fns), len(results))

    # ------------------------------------------------------------------ values

    def operand(self, x: Value | Literal) -> str:
        if isinstance(x, Literal):
            return literal(x.value, x.type.dtype)
        return self.env[x.uid]

    def array(self, x: Value | Literal) -> str:
        """``x`` as an array (rank-0 values become 0-d arrays, as kernels expect)."""
        return f"np.asarray({self.operand(x)})" if _rank(x) == 0 else self.operand(x)

    def dim(self, x: Value | Literal, k: int) -> str:
        d = x.type.shape[k]
        return str(d) if d is not None else f"{self.operand(x)}.shape[{k}]"

    def dims(self, x: Value | Literal) -> list[str]:
        return [self.dim(x, k) for k in range(_rank(x))]

    def line_view(self, x: Value, axis: int) -> str:
        """``x`` as a C-contiguous 3-D array (outer, axis, inner): kernels that work along
        one axis take its lines as ``view[i, :, k]``."""
        dims = self.dims(x)
        k = axis % len(dims)
        return (f"np.ascontiguousarray({self.operand(x)}).reshape(("
                f"{product_text(dims[:k])}, {dims[k]}, {product_text(dims[k + 1:])}))")

    def define(self, v: Value, expr: str) -> str:
        name = self.names.fresh(v.hint)
        self.w.line(f"{name} = {expr}")
        self.env[v.uid] = name
        return name

    def define_array(self, v: Value, expr: str) -> str:
        """Binds ``v`` to the array ``expr``; a rank-0 ``v`` takes its element."""
        return self.define(v, f"{expr}[()]" if _rank(v) == 0 else expr)

    def empty(self, v: Value, dims: Sequence[str]) -> str:
        """Allocates the output array of ``v`` (0-d for a rank-0 ``v``)."""
        name = self.names.fresh(v.hint)
        self.w.line(f"{name} = K.empty({tuple_text(dims)}, {np_type(v.type.dtype)})")
        return name

    def fail(self, condition: str, message: str) -> None:
        """Raises ``message`` (a ValueError; the executable reports InvalidArgumentError)."""
        with self.w.block(f"if {condition}:"):
            self.w.line(f"raise ValueError({message!r})")

    def predicate(self, x: Value | Literal) -> str:
        return self.operand(x)

    def copy_of(self, src: str) -> str:
        return f"{src}.copy()"

    def elementwise(self, op: str, inputs: Sequence[Value | Literal], out: TensorType,
                    loc: object) -> Value:
        new = Value(out, "new")
        self.emit_fused([Eqn(op, tuple(inputs), (new,), loc=loc)], range(1), {new.uid: {1}})
        return new

    def converted(self, value: Value | Literal, src: str, target: TensorType, fill: bool,
                  loc: object) -> str:
        if fill:
            src = f"np.full({tuple_text(target.shape)}, {src})"
        if value.type.dtype != target.dtype:
            src = f"{np_type(target.dtype)}({src})" if target.rank == 0 else \
                f"{src}.astype({np_type(target.dtype)})"
        return src

    # ------------------------------------------------------------------ bodies

    def emit_body(self, graph: Graph) -> list[str]:
        eqns = graph.eqns
        self.ids.update(identities(eqns))
        if id(eqns) not in self.repeats:
            self.repeats[id(eqns)] = find_repeats(eqns, graph.results)
        self.emit_eqns(eqns, value_uses(eqns, graph.results), self.repeats[id(eqns)])
        return [self.operand(r) for r in graph.results]

    def emit_eqns(self, eqns: Sequence[Eqn], uses: dict, repeats: dict) -> None:
        """Emits ``eqns`` (``uses``: value uid -> indices of the equations using it, the
        length of ``eqns`` standing for "after them"; ``repeats``: the runs outlined, by
        start)."""
        self.emit_range(eqns, uses, repeats, 0, len(eqns), find_rerolls(eqns, uses, repeats))

    def emit_range(self, eqns: Sequence[Eqn], uses: dict, repeats: dict, lo: int, hi: int,
                   rerolls: dict) -> None:
        """Emits ``eqns[lo:hi]`` (see :meth:`emit_eqns`; ``rerolls``: see .reroll)."""
        starts = sorted({*repeats, *rerolls, hi})   # where a fused group must stop
        i = lo
        while i < hi:
            if i in rerolls:
                self.emit_rerolled(eqns, rerolls[i], uses, repeats)
                i += rerolls[i].length * rerolls[i].count
                continue
            if i in repeats:
                r = repeats[i]
                self.emit_repeated(eqns, i, r, uses)
                i += r.length
                continue
            # A fused group stops where a repeated run or a rolled loop starts.
            stop = min(next(j for j in starts if j > i), hi)
            group = min(self._fusion_group(eqns, i), stop - i)
            if group:
                self.emit_fused(eqns[i:i + group], range(i, i + group), uses)
                i += group
                continue
            self.emit_eqn(eqns[i])
            i += 1

    def emit_rerolled(self, eqns: Sequence[Eqn], r: Reroll, uses: dict, repeats: dict) -> None:
        """``r.count`` periods of equations as one ``for`` loop over the first (see .reroll)."""
        saved, carried = {}, []
        for init, rel, out in r.carried:
            name = self.fresh(eqns[r.start + rel].outputs[out].hint or init.hint or "carried")
            self.line(f"{name} = {self.operand(init)}")
            saved[init.uid] = self.env[init.uid]
            self.env[init.uid] = name
            carried.append((name, rel, out))
        self.line(f"# {r.count} copies of {r.length} equations, each taking the results of "
                  f"the one before: a loop")
        body_uses = loop_uses(eqns, uses, r)
        with self.w.block(f"for {self.fresh('step')} in range({r.count}):"):
            self.emit_range(eqns, body_uses, repeats, r.start, r.start + r.length, {})
            for name, rel, out in carried:
                self.line(f"{name} = {self.operand(eqns[r.start + rel].outputs[out])}")
        self.env.update(saved)
        # After the loop, the first period's names hold the last period's values.
        last = r.start + (r.count - 1) * r.length
        for q in range(r.length):
            for first, v in zip(eqns[r.start + q].outputs, eqns[last + q].outputs):
                if first.uid in self.env:
                    self.env[v.uid] = self.env[first.uid]

    def emit_repeated(self, eqns: Sequence[Eqn], start: int, r: Occurrence,
                      uses: dict) -> None:
        """One occurrence of a repeated run of equations: a call of the group's function
        (see .repeats), which the first occurrence defines."""
        run = eqns[start:start + r.length]
        end = start + r.length
        for e in run:  # reads/consts whose values are also used after the run
            if e.op in TRANSPARENT and e.outputs[0].uid not in self.env and \
                    (e.op == "const" or any(u >= end for u in uses.get(e.outputs[0].uid, ()))):
                self.emit_eqn(e)  # a const binds its literal or argument name: no code
        params = outside_operands(run, self.ids)  # identity -> the values standing for it
        fn = self.functions.get(r.group)
        if fn is None:
            fn = self.functions[r.group] = self._repeated_function(run, r.group, params)
        body = [e for e in run if e.op not in TRANSPARENT]
        outs = [body[k].outputs[j] for k, j in r.group.results]
        names_out = [self.fresh(v.hint) for v in outs]
        self.line(f"# a piece repeated {r.group.count} times in the graph "
                  f"({len(body)} equations)")
        args = [self._identity_operand(i, values) for i, values in params.items()]
        call = f"{fn}({', '.join(args)})"
        if len(outs) == 1:
            self.line(f"{names_out[0]} = {call}")
        elif outs:
            self.line(f"{''.join(n + ', ' for n in names_out)}= {call}")
        for v, name in zip(outs, names_out):
            self.env[v.uid] = name

    def _repeated_function(self, run: Sequence[Eqn], group: Group, params: dict) -> str:
        """The name of the function computing ``run`` (one per canonical text)."""
        body = [e for e in run if e.op not in TRANSPARENT]
        saved = self.w, self.env
        self.w, self.env = Writer(), dict(self.env)
        names = [self.fresh(f"a{n}") for n in range(len(params))]
        for values, name in zip(params.values(), names):
            for x in values:
                self.env[x.uid] = name
        local = value_uses(body, ())
        for k, j in group.results:
            local.setdefault(body[k].outputs[j].uid, set()).add(len(body))
        self.emit_eqns(body, local, group.inner)
        returned = [self.operand(body[k].outputs[j]) for k, j in group.results]
        lines = self.w.lines
        self.w, self.env = saved
        return self.kernels.add(names, lines, returned, prefix="repeated")

    def _identity_operand(self, identity: tuple, values: list) -> str:
        """Source text of an operand identity of a repeated run (see .repeats.identities):
        a value standing for it that is bound, else the variable's slot."""
        for x in values:
            if x.uid in self.env:
                return self.env[x.uid]
        return self.slots[identity[1]]

    def emit_eqn(self, e: Eqn) -> None:
        self.comment(e)
        LOWER.emit(self, e)
        self._round_half(e)

    def _round_half(self, e: Eqn) -> None:
        """Rounds the float16/bfloat16 results of a kernel call (computed in float32 buffers)
        to their format, once per op like the NumPy kernels (``ir/ops/half.py``); data
        movement and fused elementwise code (which rounds each element) need none, and a
        uniform draw rounds down so it stays below 1 (``ir/ops/philox.py``)."""
        op = OPS.get(e.op)
        if op is None or op.kind is Kind.ELEMENTWISE or e.op in half.MOVES:
            return
        for v in e.outputs:
            d = v.type.dtype
            if not half.is_half(d) or v.uid not in self.env:
                continue
            src = self.env[v.uid]
            if e.op.removesuffix("_dynamic") == "random_uniform":
                expr = f"K.floor_to({self.array(v)}, {half.QUANTUM[d.name]!r})"
                expr = f"{expr}[()]" if _rank(v) == 0 else expr
            elif _rank(v) == 0:
                expr = half.round_expr(src, d)
            else:
                expr = half.round_array_expr(src, d)
            name = self.names.fresh(v.hint)
            self.w.line(f"{name} = {expr}")
            self.env[v.uid] = name

    # ------------------------------------------------------------------ elementwise fusion

    def _fusion_group(self, eqns: Sequence[Eqn], i: int) -> int:
        return fusion_group(eqns, i)

    def emit_fused(self, group: Sequence[Eqn], positions: range, uses: dict,
                   commented: bool = False) -> None:
        """One loop nest computing ``group`` (see :func:`.fusion_group`), its values used
        outside ``positions`` stored (``commented``: the caller wrote the IR comments)."""
        for e in group if not commented else ():
            self.comment(e)
        out_type = group[0].outputs[0].type
        rank = out_type.rank
        inside = set(positions)
        produced = {e.outputs[0].uid for e in group}
        # Values needed after the group are materialized; the rest stay loop-local scalars.
        keep = [e.outputs[0] for e in group if uses.get(e.outputs[0].uid, set()) - inside]
        if rank == 0:
            elem = {}
            for e in group:
                elem[e.outputs[0].uid] = self._scalar(e, elem)
            for v in keep:
                self.env[v.uid] = elem[v.uid]
            return
        # The loop nest becomes a kernel function: its inputs (arrays and outside scalars)
        # are parameters, the kept values its results (see .outline).
        params: list[Value] = []
        for e in group:
            for x in e.inputs:
                if isinstance(x, Value) and x.uid not in produced and x not in params:
                    params.append(x)
        saved = self.w, self.env
        self.w, self.env = Writer(), dict(self.env)
        names = [self.fresh(f"a{k}") for k in range(len(params))]
        for x, name in zip(params, names):
            self.env[x.uid] = name
        self._loop_nest(group, out_type, produced, keep)
        body, results = self.w.lines, [self.env[v.uid] for v in keep]
        self.w, self.env = saved
        if self.kernels.text(names, body, results) in self.inline:
            self._loop_nest(group, out_type, produced, keep)
            return
        kernel = self.kernels.add(names, body, results)
        outs = [self.fresh(v.hint) for v in keep]
        call = f"{kernel}({', '.join(self.operand(x) for x in params)})"
        if len(outs) == 1:
            self.line(f"{outs[0]} = {call}")
        else:
            self.line(f"{''.join(o + ', ' for o in outs)}= {call}" if outs else call)
        for v, name in zip(keep, outs):
            self.env[v.uid] = name

    def _loop_nest(self, group: Sequence[Eqn], out_type: TensorType, produced: set,
                   keep: list) -> None:
        """The loops computing ``group`` elementwise, storing the ``keep`` values (a folded
        reduction ends the group: its accumulator is a scalar updated in the loop)."""
        rank = out_type.rank
        reduction = group[-1] if not fusible(group[-1]) else None
        if reduction is not None:
            group = group[:-1]
            acc = reduction.outputs[0]
            keep = [v for v in keep if v is not acc]
            name = self.fresh(acc.hint or "acc")
            d = acc.type.dtype
            if reduction.op == "reduce_max":
                start = -math.inf if d.is_floating else np.iinfo(d.np).min
            else:
                start = math.inf if d.is_floating else np.iinfo(d.np).max
            self.w.line(f"{name} = {literal(start, d)}")
            self.env[acc.uid] = name
        dims = self._out_dims(group[0]) if None in out_type.shape else \
            [str(d) for d in out_type.shape]
        outs = {v.uid: self.empty(v, dims) for v in keep}
        outside = []
        for e in group:
            for x in e.inputs:
                if isinstance(x, Value) and x.uid not in produced and _rank(x) > 0 \
                        and x not in outside:
                    outside.append(x)
        flat = None not in out_type.shape and all(x.type.shape == out_type.shape
                                                  for x in outside)
        if reduction is not None and isinstance(reduction.inputs[0], Value) and \
                reduction.inputs[0].uid not in produced and reduction.inputs[0] not in outside:
            outside.append(reduction.inputs[0])
        elem: dict[int, str] = {}
        if flat:
            n = math.prod(out_type.shape)
            views = {}
            for x in outside + keep:
                base = self.operand(x) if x.uid not in outs else outs[x.uid]
                views[x.uid] = self.fresh(base + "_f")
                self.w.line(f"{views[x.uid]} = {base}.reshape({n})")
            j = self.fresh("j")
            with self.w.block(f"for {j} in range({n}):"):
                self._loop_body(group, outside, keep, elem, lambda x: f"{views[x.uid]}[{j}]")
                self._accumulate(reduction, elem)
        else:
            idx = [self.fresh(f"i{k}") for k in range(rank)]
            index = {x.uid: self._broadcast_index(x, out_type, idx) for x in outside}
            for x in keep:
                index[x.uid] = ", ".join(idx)
            for k in range(rank):
                self.w.line(f"for {idx[k]} in range({dims[k]}):")
                self.w.depth += 1
            self._loop_body(group, outside, keep, elem,
                            lambda x: f"{outs.get(x.uid) or self.operand(x)}[{index[x.uid]}]")
            self._accumulate(reduction, elem)
            self.w.depth -= rank
        for v in keep:
            self.env[v.uid] = outs[v.uid]

    def _loop_body(self, group, outside, keep, elem: dict, at) -> None:
        """One iteration: load the outside inputs' elements (``at(x)`` is the element
        expression), compute the group's scalars, store the materialized ones."""
        for x in outside:
            elem[x.uid] = at(x)
        for e in group:
            elem[e.outputs[0].uid] = self._scalar(e, elem)
        for v in keep:
            self.w.line(f"{at(v)} = {elem[v.uid]}")

    def _accumulate(self, reduction: Eqn | None, elem: dict) -> None:
        """One step of a folded max/min: NaN propagates, as in the reduction kernels."""
        if reduction is None:
            return
        acc, x = self.env[reduction.outputs[0].uid], elem[reduction.inputs[0].uid]
        better = ">" if reduction.op == "reduce_max" else "<"
        with self.w.block(f"if {x} {better} {acc} or {x} != {x}:"):
            self.w.line(f"{acc} = {x}")

    def _scalar(self, e: Eqn, elem: dict) -> str:
        """Emits one element of ``e`` as a local scalar; returns its name."""
        args = [elem.get(x.uid, None) if isinstance(x, Value) else None for x in e.inputs]
        args = [a if a is not None else self.operand(x) for a, x in zip(args, e.inputs)]
        in_d = e.inputs[-1].type.dtype if e.inputs else e.outputs[0].type.dtype
        out_d = e.outputs[0].type.dtype
        checked = scalar_ops.check(e.op, args, in_d)
        if checked is not None:
            self.fail(checked[0], f"{e.op}: {checked[1]}\n  at {e.loc}")
        expr = scalar_ops.SCALAR[e.op](args, in_d)
        name = self.names.fresh(e.outputs[0].hint, "e")
        self.w.line(f"{name} = {scalar_ops.convert(expr, in_d, out_d)}")
        return name

    def _broadcast_index(self, x: Value, out: TensorType, idx: list[str]) -> str:
        """The index of ``x``'s element for the output index ``idx`` (NumPy broadcasting)."""
        lead = out.rank - _rank(x)
        parts = []
        for j, d in enumerate(x.type.shape):
            k, od = j + lead, out.shape[j + lead]
            if d == 1:
                parts.append("0")
            elif d is not None and d == od:
                parts.append(idx[k])
            else:   # only known at run time whether this dim broadcasts
                m = self.fresh(f"m_{self.operand(x)}_{j}")
                self.w.line(f"{m} = 0 if {self.operand(x)}.shape[{j}] == 1 else 1")
                parts.append(f"{idx[k]} * {m}")
        return ", ".join(parts)

    def _out_dims(self, e: Eqn) -> list[str]:
        """Run-time output dims of one broadcasting elementwise equation."""
        out = e.outputs[0].type
        dims = []
        for k, d in enumerate(out.shape):
            if d is not None:
                dims.append(str(d))
                continue
            cands = [x for x in e.inputs if _rank(x) > 0 and k - (out.rank - _rank(x)) >= 0]
            exprs = [self.dim(x, k - (out.rank - _rank(x))) for x in cands]
            expr = exprs[0]
            for other in exprs[1:]:
                expr = f"K.broadcast_dim({expr}, {other})"
            name = self.fresh(f"d{k}")
            self.w.line(f"{name} = {expr}")
            dims.append(name)
        return dims
