"""Graph -> the source of one module: a ``cuda.jit`` kernel per fusion group and the host
orchestration function that allocates device arrays, launches those kernels and runs every
other op with the eager CUDA library (``numba_cuda.eager.run``).

Representation in the host function: every tensor (rank 0 included) is a device array; a
variable is a local ("slot") holding its current device buffer, which ``assign`` rebinds
(buffers are not written in place, so reads taken earlier keep their value; the one exception
is a buffer a ``while`` loop owns: see ``SourceEmitter.lower_while``). ``cond`` and ``while`` run
on the host: their predicate is the one value copied to the host (one element per test).
``call`` regions are inlined. Above every statement a comment shows its IR line.

The fusion groups are the CPU backend's (``codegen.fusion.fusion_group``), without folded
reductions (reductions are the eager library's tree reductions), plus runs of rank-0
elementwise equations (inline scalar code on the CPU, one launch each here otherwise): see
:func:`group_size`.

The module defines ``build(C, S)``, which returns ``graph_fn``: ``C`` holds the device
constants (uploaded once per executable), ``S`` the op sites (attributes, location, Python
callables) that need not be source text.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

from stagecraft.backends.codegen import half
from stagecraft.backends.codegen.canonical import canonical
from stagecraft.backends.codegen.fusion import fusible, fusion_group
from stagecraft.backends.codegen.source import Namer, Writer, tuple_text
from stagecraft.backends.codegen.source_emitter import SourceEmitter, comment_text, value_uses
from stagecraft.backends.numba_cuda import kernel_module, layout
from stagecraft.backends.numba_cuda.staged.kernel_source import fused_kernel, has_check
from stagecraft.backends.numba_cuda.staged.lowerings import LOWER
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt
from stagecraft.ir.graph import Eqn, Graph, Literal, Value, walk_eqns
from stagecraft.ir.ops.opdef import Kind
from stagecraft.ir.types import TensorType

ENTRY = "build"
HOST_FN = "graph_fn"
# Names the generated code uses at module or build() level.
_RESERVED = (*kernel_module.PRELUDE_NAMES, "rt", "C", "S", "err", "run", "grid", "launch",
             "empty", "build", HOST_FN, "_MESSAGES")
_DECORATOR = "@cuda.jit(cache=_CACHE)"


@dataclasses.dataclass
class Generated:
    """What the generator produced for one graph."""

    source: str
    param_indices: tuple      # the graph parameters graph_fn takes (the used ones)
    consts: tuple             # NumPy values of C (uploaded to the device by the executable)
    sites: tuple              # S
    assigned: tuple           # indices (into params) of the variables returned after results
    num_results: int
    num_kernels: int          # distinct kernels in the module
    num_groups: int           # fusion groups (launch sites) in the host function


def generate(graph: Graph) -> Generated:
    """The module source for ``graph`` (see the module docstring).

    >>> from stagecraft.ir import dtypes as dt
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("f")
    >>> x = b.param(TensorType(dt.float32, (3,)), "x")
    >>> (y,) = b.add("multiply", [x, x], [x.type])
    >>> (s,) = b.add("reduce_sum", [y], [TensorType(dt.float32, ())],
    ...              {"axes": None, "keepdims": False})
    >>> gen = generate(b.build([s]))
    >>> gen.num_kernels, gen.source.count("@cuda.jit")
    (1, 1)
    >>> print(gen.source[gen.source.index("    def graph_fn"):].rstrip())
        def graph_fn(x):
            # %0: f32[3] = multiply %x, %x
            t = empty((3,), "float32")
            launch(_k0_multiply, grid(3), t, x)
            # %1: f32[] = reduce_sum[axes=None, keepdims=False] %0
            t_1 = run("reduce_sum", [t], S[0])
            return (t_1,)
        return graph_fn
    """
    return _Codegen(graph).run()


class _Codegen(SourceEmitter):
    def __init__(self, graph: Graph):
        super().__init__(graph, Namer(_RESERVED), Writer(depth=2))  # env values: device arrays
        self.ref_slots: list[tuple[int, str]] = []  # (graph parameter index, slot name)
        self.consts: list[np.ndarray] = []
        self.const_keys: dict[tuple, int] = {}
        self.sites: list[tuple] = []
        self.kernel_names: dict[str, str] = {}  # canonical text -> kernel name
        self.kernel_sources: list[str] = []
        self.groups = 0
        self.tests = 0   # cond/while tests so far (their sites)
        self.loop_tests: dict[int, int] = {}   # id of a value a while loop tests -> its site
        self.loop_sites: list[int] = []        # the sites of the while loops being written
        self.assign_log: list[str] = []     # slots in the order assigns rebind them
        self.loops: list[tuple] = []        # open while loops (see enter_loop)
        self.conds: list[tuple] = []        # open conds (see enter_cond)
        self.messages: list[str] = []
        self.checks = any(fusible(e) and has_check(e) for e in walk_eqns(graph))

    # ------------------------------------------------------------------ entry point

    def run(self) -> Generated:
        g = self.graph
        taken, params = self.bind_params()
        self.ref_slots = [(i, name) for i, name in zip(taken, params) if g.params[i].ref]
        if self.checks:
            self.w.line("err = rt.error_flag()")
        results = self.emit_body(g)
        if self.checks:
            self.w.line("rt.raise_if_error(err, _MESSAGES)")
        slot_params = {name: taken[i] for i, name in enumerate(params)}
        assigned = tuple(slot_params[s] for s in self.assigned)
        returned = list(results) + list(self.assigned)
        body = self.w.lines + [f"        return {tuple_text(returned)}"]
        source = "\n".join([
            repr(f"Staged GPU code of graph @{comment_text(g.name)} (generated by stagecraft)."),
            *kernel_module.prelude(imports=(
                "from stagecraft.backends.numba_cuda.staged import runtime as rt",)),
            f"_MESSAGES = {tuple(self.messages)!r}", "", "",
            *[s + "\n\n" for s in self.kernel_sources],
            f"def {ENTRY}(C, S):",
            "    " + repr(f"The host function of @{comment_text(g.name)}: C holds its device "
                         f"constants, S its op sites."),
            "    run, grid, launch, empty = rt.run, rt.grid, rt.launch, rt.empty", "",
            f"    def {HOST_FN}({', '.join(params)}):",
            *body,
            f"    return {HOST_FN}", ""])
        return Generated(source, taken, tuple(self.consts), tuple(self.sites), assigned,
                         len(results), len(self.kernel_sources), self.groups)

    # ------------------------------------------------------------------ values

    def const(self, value: Any, dtype: Any) -> str:
        """``C[k]``: a device constant holding ``value`` (deduplicated for scalars). A
        float16/bfloat16 value (a Python number or an array) is rounded to its format, as eager
        code rounds it, and held in float32 like every half tensor here."""
        if half.is_half(dtype):
            value = np.asarray(value, dtype=dtype.np)
        array = np.array(value, dtype=half.storage_name(dtype), order="C")
        key = (array.dtype.str, array.tobytes()) if array.ndim == 0 else None
        if key is not None and key in self.const_keys:
            return f"C[{self.const_keys[key]}]"
        self.consts.append(array)
        if key is not None:
            self.const_keys[key] = len(self.consts) - 1
        return f"C[{len(self.consts) - 1}]"

    def operand(self, x: Value | Literal) -> str:
        if isinstance(x, Literal):
            return self.const(x.value, x.type.dtype)
        return self.env[x.uid]

    def site(self, *entry: Any) -> str:
        if entry and isinstance(entry[0], dict):  # ops on half tensors run on float32 buffers
            entry = ({k: dt.float32 if v in dt.HALF else v for k, v in entry[0].items()},
                     *entry[1:])
        self.sites.append(entry)
        return f"S[{len(self.sites) - 1}]"

    def copy_of(self, src: str) -> str:
        return f"rt.copy({src})"

    def fail(self, condition: str, message: str) -> None:
        with self.w.block(f"if {condition}:"):
            self.line(f"rt.fail({message!r})")

    def elementwise(self, op: str, inputs: Sequence[Value | Literal], out: TensorType,
                    loc: object) -> Value:
        new = Value(out, "new")
        self.emit_fused([Eqn(op, tuple(inputs), (new,), loc=loc)], {0}, {new.uid: {1}})
        return new

    def converted(self, value: Value | Literal, src: str, target: TensorType, fill: bool,
                  loc: object) -> str:
        # A dtype conversion or a fill is a fused cast.
        return src if target == value.type else \
            self.operand(self.elementwise("cast", (value,), target, loc))

    # ------------------------------------------------------------------ bodies

    def emit_body(self, graph: Graph) -> list[str]:
        eqns = graph.eqns
        uses = value_uses(eqns, graph.results)
        i = 0
        while i < len(eqns):
            n = group_size(eqns, i)
            if n:
                self.emit_fused(eqns[i:i + n], set(range(i, i + n)), uses)
                i += n
            else:
                self.emit_eqn(eqns[i])
                i += 1
        return [self.operand(r) for r in graph.results]

    def emit_eqn(self, e: Eqn) -> None:
        self.comment(e)
        LOWER.emit(self, e)
        op = OPS.get(e.op)
        if op is None or op.kind is Kind.ELEMENTWISE or e.op in half.MOVES:
            return
        # float16/bfloat16 results of the eager library (run on float32 buffers) rounded
        # once, as every backend rounds each op's result (ir/ops/half.py)
        uniform = e.op.removesuffix("_dynamic") == "random_uniform"
        for v in e.outputs:
            if half.is_half(v.type.dtype) and v.uid in self.env:
                name = self.fresh(v.hint)
                self.line(f"{name} = rt.round_half({self.env[v.uid]}, "
                          f"{v.type.dtype.name!r}, {uniform})")
                self.env[v.uid] = name

    def emit_call(self, e: Eqn, head: str) -> None:
        """``outputs = head[operands], site)``: ``head`` opens a call of ``run`` or of a runtime
        function taking what ``run`` takes after the op name."""
        args = ", ".join(self.operand(x) for x in e.inputs)
        outs = [self.fresh(o.hint) for o in e.outputs]
        call = f"{head}[{args}], {self.site(dict(e.attrs), e.loc)})"
        self.line(f"{', '.join(outs)} = {call}")
        for o, name in zip(e.outputs, outs):
            self.env[o.uid] = name

    # ------------------------------------------------------------------ fused kernels

    def emit_fused(self, group: Sequence[Eqn], inside: set, uses: dict,
                   commented: bool = False) -> None:
        """One kernel launch computing ``group`` (see :func:`group_size`), its values used
        outside the positions ``inside`` stored (``commented``: the caller wrote the IR
        comments)."""
        for e in group if not commented else ():
            self.comment(e)
        keep = [e.outputs[0] for e in group if uses.get(e.outputs[0].uid, set()) - inside]
        if not keep:
            return  # nothing uses the group (pure elementwise code: nothing to run)
        out_type = group[0].outputs[0].type
        produced = {e.outputs[0].uid for e in group}
        inputs: list[Value] = []
        for e in group:
            for x in e.inputs:
                if isinstance(x, Value) and x.uid not in produced and x not in inputs:
                    inputs.append(x)
        static = out_type.shape is not None and None not in out_type.shape
        if static:
            dims = tuple_text(out_type.shape)
            n: str = str(math.prod(out_type.shape))
        elif len(inputs) == 1:   # one array (literals are scalars): its shape is the output's
            dims = f"{self.operand(inputs[0])}.shape"
            n = f"{self.operand(inputs[0])}.size"
        else:
            where = f"{group[0].op} at {group[0].loc}"
            shapes = "".join(f", {self.operand(x)}.shape" for x in inputs)
            dims = self.fresh("shape")
            self.line(f"{dims} = rt.broadcast_shape({where!r}{shapes})")
            n = self.fresh("n")
            self.line(f"{n} = rt.size({dims})")
        if not static and len(inputs) == 1:
            modes = ["same"]
        else:
            modes = [_mode(x.type, out_type if static else None) for x in inputs]
        extra = []
        if "strided" in modes:
            extra.append(tuple_text(out_type.shape or (1,)) if static
                         else f"rt.kernel_shape({dims})")
            for x, m in zip(inputs, modes):
                if m != "strided":
                    continue
                if static and x.type.shape is not None and None not in x.type.shape:
                    extra.append(tuple_text(layout.broadcast_strides(x.type.shape,
                                                                     out_type.shape) or (0,)))
                else:
                    extra.append(f"rt.strides({self.operand(x)}.shape, {dims})")
        text = fused_kernel(group, inputs, modes, keep, len(self.messages) + 1)
        if text.checks:
            extra.append("err")
        self.messages += text.checks
        kernel = self.kernel(group, text.params, text.lines)
        outs = [self.fresh(v.hint) for v in keep]
        for v, name in zip(keep, outs):
            self.line(f'{name} = empty({dims}, "{half.storage_name(v.type.dtype)}")')
        args = [kernel, f"grid({n})", *outs, *[self.operand(x) for x in inputs]]
        launch = f"launch({', '.join(args + extra)})"
        self.groups += 1
        if static:
            if int(n):
                self.line(launch)
        else:
            with self.w.block(f"if {n}:"):
                self.line(launch)
        for v, name in zip(keep, outs):
            self.env[v.uid] = name

    def kernel(self, group: Sequence[Eqn], params: list[str], lines: list[str]) -> str:
        """The name of the module's kernel with this text (one kernel per distinct text)."""
        text = canonical([f"def kernel({', '.join(params)}):", *lines])
        name = self.kernel_names.get(text)
        if name is None:
            ops = "_".join(dict.fromkeys(e.op for e in group).keys())
            ops = ops if len(ops) <= 40 else ops[:40].rstrip("_")
            name = self.kernel_names[text] = f"_k{len(self.kernel_names)}_{ops}"
            self.kernel_sources.append("\n".join(
                [_DECORATOR, f"def {name}({', '.join(params)}):", *lines]))
        return name

    # ------------------------------------------------------------------ host control flow

    def predicate(self, x: Value | Literal) -> str:
        """Host code testing the boolean ``x`` (the one copy a cond or while test costs); the
        test's number in the function tells replays which branch it is (``programs.py``)."""
        if isinstance(x, Literal):
            return repr(bool(x.value))
        if self.checks:   # values computed after a failed check must not steer control flow
            self.line("rt.raise_if_error(err, _MESSAGES)")
        if id(x) in self.loop_tests:
            return f"rt.predicate({self.operand(x)}, {self.loop_tests[id(x)]}, loop=True)"
        self.tests += 1
        return f"rt.predicate({self.operand(x)}, {self.tests})"

    def loop_head(self) -> None:
        """Each pass of a loop starts a block (``runtime.loop_head``): its cond region runs
        before the first pass and after every other, and is then one block either way."""
        self.line(f"rt.loop_head({self.loop_sites[-1]})")

    def enter_cond(self, e: Eqn, outs: list[str]) -> None:
        """A ``cond``'s results, and the variables its branches assign, get buffers of their
        own while a replay is recorded (``runtime.cond_entry``), which both branches fill, so
        the code after it reads the same buffers whichever branch ran; ``runtime.join`` then
        ends the recorded block (``programs.py``). Lines left here are filled in
        :meth:`join_cond`, once both branches are written."""
        if isinstance(e.inputs[0], Literal):   # (one branch, known now: no test, no join)
            self.conds.append(None)
            return
        specs = [(o.type.shape, half.storage_name(o.type.dtype)) for o in e.outputs]
        self.conds.append((specs, outs, len(self.w.lines), len(self.assign_log), []))
        self.line("")

    def exit_branch(self, outs: list[str], results: list[str]) -> None:
        if self.conds[-1] is None:
            super().exit_branch(outs, results)
            return
        self.conds[-1][4].append((len(self.w.lines), list(results)))
        self.line("")

    def join_cond(self) -> None:
        if self.conds[-1] is None:
            self.conds.pop()
            return
        specs, outs, at, first, exits = self.conds.pop()
        slots = list(dict.fromkeys(self.assign_log[first:]))
        names, lines = outs + slots, self.w.lines
        own = [self.fresh(f"{n}_join") for n in names]
        for where, results in exits:
            lines[where] += (f"{tuple_text(names)} = rt.branch_exit({tuple_text(own)}, "
                             f"{tuple_text(results + slots)})" if names else "pass")
        if names:
            lines[at] += (f"{tuple_text(own)} = rt.cond_entry({tuple_text(specs)}, "
                          f"{tuple_text(slots)})")
        else:
            del lines[at]   # (conds opened after this one are closed: no index moves)
        self.tests += 1
        self.line(f"rt.join({self.tests})")

    def enter_loop(self, carry: list[str]) -> None:
        """Carried values, and the variables the loop assigns, get buffers of their own while
        a replay is recorded (``runtime.loop_entry``). Which variables the body assigns is
        known once it is written: this leaves a line for :meth:`next_iteration` to fill."""
        self.loops.append((carry, len(self.w.lines), len(self.assign_log)))
        self.line("")

    def next_iteration(self, carry: list[str], results: list[str]) -> None:
        carry, at, first = self.loops.pop()
        slots = list(dict.fromkeys(self.assign_log[first:]))
        names = carry + slots
        if not names:
            del self.w.lines[at]   # (loops opened after this one are closed: no index moves)
            return
        own = [self.fresh(f"{s}_loop") for s in slots]   # (the loop's buffers of the slots)
        indent = self.w.lines[at]
        self.w.lines[at] = indent + f"\n{indent}".join(
            [f"{tuple_text(names)} = rt.loop_entry({tuple_text(names)})"]
            + ([f"{tuple_text(own)} = {tuple_text(slots)}"] if slots else []))
        self.line(f"{tuple_text(names)} = rt.loop_next({tuple_text(carry + own)}, "
                  f"{tuple_text(results + slots)})")


def group_size(eqns: Sequence[Eqn], i: int) -> int:
    """How many equations from ``i`` on one fused kernel computes (0: ``eqns[i]`` is not
    elementwise): the CPU backend's fusion group without folded reductions; a rank-0 group
    also takes the rank-0 elementwise equations that follow (loop counters and predicates
    then cost one launch, not one per equation)."""
    n = fusion_group(eqns, i, fold_reductions=False)
    if n == 1 and eqns[i].outputs[0].type.shape == ():
        while i + n < len(eqns) and fusible(eqns[i + n]) and \
                eqns[i + n].outputs[0].type.shape == ():
            n += 1
    return n


def _mode(t: TensorType, out: TensorType | None) -> str:
    """How a kernel reads an input of type ``t`` for an output of static type ``out`` (None:
    the output's shape is only known at run time)."""
    if t.shape is not None and None not in t.shape and math.prod(t.shape) == 1 and (
            out is None or len(t.shape) <= len(out.shape)):
        return "scalar"
    if out is not None and t.shape == out.shape:
        return "same"
    return "strided"
