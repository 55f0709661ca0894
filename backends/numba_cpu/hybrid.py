"""Hybrid execution for large graphs: a Python driver calls small compiled kernels.

Numba's typing and LLVM cost grow faster than linearly with the size of one function: a whole
ResNet-50 forward pass (1,820 equations) as one ``njit`` function took 240 s to compile. A graph
with more equations than ``stagecraft.config.get_hybrid_threshold()`` therefore runs as a
*plan* driven from Python, like the reference interpreter (values freed after their last use):

* each fused elementwise group (:func:`stagecraft.backends.codegen.fusion.fusion_group`) and
  each other op of the op table is a *step*: a small graph of its own, compiled by the
  whole-graph code generator into one ``njit`` function (a kernel call, or one fused loop);
* the step's graph is made canonical before it is compiled: no names, no source locations,
  and every dimension other than 1 left to run time, so steps of the same structure (ResNet's
  bottleneck blocks) share one compiled function in the process (:data:`_KERNELS`) and, through
  the disk cache (:mod:`stagecraft.backends.numba_cache`), across processes;
* variables, constants, views (``reshape``...), ops whose NumPy kernels are faster
  (:data:`NUMPY_OPS`), rank-0 arithmetic, host calls and asserts run as the interpreter runs
  them; ``cond``/``while``/``call`` run their regions through plans of their own.

A step whose compiled code is not loaded yet (``"background"`` mode: the compile worker builds
the kernels while the program runs) runs its equations on the interpreter, so a step is never
waited for; an error raised by a compiled step is raised again by the interpreter running that
step, with the source location of its equation.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from typing import Any, Sequence

import numpy as np

from stagecraft.backends import compile_worker, numba_cache, reference
from stagecraft.backends.codegen.fusion import fusible, fusion_group
from stagecraft.backends.codegen.source_emitter import LoweringError
from stagecraft.backends.numba_cpu.codegen import ENTRY, Generated, _Codegen
from stagecraft.backends.numba_cpu.executable import Executable, library_hash
from stagecraft.backends.numba_cpu.tiered import Progress
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.graph import STRUCTURAL_OPS, Eqn, Graph, Literal, Value, walk_eqns
from stagecraft.ir.types import TensorType

__all__ = ["HybridExecutable", "equation_count"]

_log = logging.getLogger("stagecraft")

# Ops the driver runs with the interpreter's NumPy kernels: views and copies (NumPy makes them
# faster than a compiled call is entered), and ops whose NumPy kernels were faster than the
# Numba library's on ResNet-50's training step at 224x224, batch 1: its 213 ``sum_like`` took
# 64 ms in NumPy and 1,900 ms compiled with run-time dims, its 107 ``broadcast_like`` 8 ms (a
# view) and 1,020 ms, its 53 ``conv_backprop_filter`` 230 ms (im2col + BLAS) and 370 ms.
NUMPY_OPS = frozenset(("reshape", "stop_gradient", "identity", "squeeze", "expand_dims",
                       "reshape_like", "broadcast_like", "sum_like", "conv_backprop_filter"))


def numpy_step(e: Eqn) -> bool:
    """Whether the driver runs ``e`` with the interpreter's NumPy kernel (:data:`NUMPY_OPS`;
    and a convolution of an input with few channels: ResNet-50's 7x7 stem at 224x224 takes
    8.3 ms in NumPy, 13.8 ms in the Numba kernel; with 16 or more channels the Numba kernel
    was as fast or faster, and much faster on small images)."""
    if e.op in NUMPY_OPS:
        return True
    return e.op == "conv" and e.inputs[0].type.shape[-1] is not None and \
        e.inputs[0].type.shape[-1] <= 4


def equation_count(graph: Graph) -> int:
    """The number of equations of ``graph``, its regions included: what the threshold between
    one compiled function and the hybrid plan compares.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("f")
    >>> x = b.param(TensorType(dtypes.float32, (2,)), "x")
    >>> (y,) = b.add("exp", [x], [x.type])
    >>> equation_count(b.build([y]))
    1
    """
    return sum(1 for _ in walk_eqns(graph))


# ---------------------------------------------------------------------------- kernels


class _FusedCodegen(_Codegen):
    """The code generator for one fused group whose dims are left to run time: the group is
    one loop nest (the generic generator fuses only equations of one static shape; the
    hybrid cut the group where the original, static shapes were equal). With ``static`` the
    original shapes were all known: a dim the step's graph keeps as 1 is broadcast, every
    other dim equals the loop's (broadcasting allows nothing else), so operands are indexed
    without run-time broadcasting tests, which keep LLVM from vectorizing the loop."""

    def __init__(self, graph: Graph, static: bool, **kw: Any):
        super().__init__(graph, **kw)
        self.static = static

    def _fusion_group(self, eqns: Sequence[Eqn], i: int) -> int:
        if i == 0 and all(fusible(e) for e in eqns[:-1]):
            return len(eqns)
        return super()._fusion_group(eqns, i)

    def _broadcast_index(self, x: Value, out: TensorType, idx: list[str]) -> str:
        if not self.static:
            return super()._broadcast_index(x, out, idx)
        lead = out.rank - x.type.rank
        return ", ".join("0" if d == 1 else idx[j + lead] for j, d in enumerate(x.type.shape))


def _generate(graph: Graph, fused: bool, static: bool) -> Generated:
    """``codegen.generate`` for a step's graph (two passes, as there)."""
    if fused:
        first = _FusedCodegen(graph, static)
        first.run()
        return _FusedCodegen(graph, static, inline=first.kernels.used_once(),
                             repeats=first.repeats).run()
    first = _Codegen(graph)
    first.run()
    return _Codegen(graph, inline=first.kernels.used_once(), repeats=first.repeats).run()


class Kernel:
    """One compiled step function, shared by every step of its canonical text."""

    def __init__(self, key: str, graph: Graph, gen: Generated):
        self.key, self.graph, self.gen = key, graph, gen
        self.source = gen.source
        self.exe: Executable | None = None   # loaded machine code (set when ready)
        self.job: compile_worker.CompileJob | None = None
        self.error: str | None = None        # why compiling it failed (it stays interpreted)
        self.steps = 0                        # how many steps (of every plan) use it
        self._lock = threading.Lock()

    def described(self) -> list:
        """The argument types of its entry (``compile_worker.describe_argument``'s form)."""
        out = []
        for p in self.graph.params:
            name = np.dtype(p.type.dtype.np).name
            out.append(("scalar", name) if p.type.rank == 0 else
                       ("array", name, p.type.rank, False))
        return out

    def submit(self) -> None:
        """Has the compile worker compile it into the disk cache (unless it is loaded or on
        its way); ``job`` tracks it."""
        with self._lock:
            if self.exe is None and self.job is None and self.error is None:
                self.job = compile_worker.submit(
                    "hybrid step", str(numba_cache.cache_dir()), self.source, ENTRY,
                    library_hash(), {"no_cfunc_wrapper": True}, self.described())

    def compile(self) -> Executable:
        """The executable, its machine code compiled (or loaded from the disk cache) for the
        argument types of the step's graph."""
        exe = self.load()
        exe.dispatcher.compile(compile_worker.numba_signature(self.described()))
        return exe

    def load(self) -> Executable:
        """The executable (imports the generated module; Numba compiles, or loads from the
        disk cache, at its first call)."""
        with self._lock:
            if self.exe is None:
                self.exe = Executable(self.graph, self.gen)
            return self.exe


_KERNELS: dict[str, Kernel] = {}   # canonical step text -> kernel, for the whole process
_KERNELS_LOCK = threading.Lock()


def _relaxed(t: TensorType) -> TensorType:
    """``t`` with every dim other than 1 left to run time (1s stay: they broadcast)."""
    return TensorType(t.dtype, tuple(d if d == 1 else None for d in t.shape))


def _literal_key(x: Literal) -> tuple:
    return (repr(x.value), x.type.dtype.name)


def _operand_key(x: Value | Literal) -> int | tuple:
    return x.uid if isinstance(x, Value) else _literal_key(x)


def collapsed(eqns: Sequence[Eqn], inputs: Sequence[Value | Literal]) -> tuple | None:
    """For a fused elementwise group of one static shape: ``(input shapes, loop shape)`` once
    the dims of 1 are dropped and neighbouring dims that every input broadcasts alike are
    merged (a C-contiguous array reshaped so is a view), None when that changes nothing or the
    shapes are not static. Batch normalization's ``(1, 56, 56, 64)`` loop with ``(1, 1, 1,
    64)`` operands becomes ``(3136, 64)`` with ``(1, 64)`` ones: groups of other sizes and
    batch sizes then share one kernel, and the loop nest is shallower.

    >>> from stagecraft.ir.dtypes import float32
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("bn")
    >>> x = b.param(TensorType(float32, (1, 5, 6, 4)), "x")
    >>> m = b.param(TensorType(float32, (1, 1, 1, 4)), "m")
    >>> (y,) = b.add("subtract", [x, m], [x.type])
    >>> collapsed(b.build([y]).eqns, [x, m])
    ([(30, 4), (1, 4)], (30, 4))
    """
    if not all(fusible(e) for e in eqns):
        return None   # a folded reduction's axes refer to the loop's own rank
    shape = eqns[0].outputs[0].type.shape
    r = len(shape)
    padded = []
    for x in inputs:
        if x.type.shape is None or None in x.type.shape:
            return None
        padded.append(None if x.type.rank == 0 else (1,) * (r - x.type.rank) + x.type.shape)
    groups: list[list[int]] = []
    for k in (k for k in range(r) if shape[k] != 1):
        if groups and all(p is None or (p[k] == 1) == (p[groups[-1][-1]] == 1) for p in padded):
            groups[-1].append(k)
        else:
            groups.append([k])
    loop = tuple(math.prod(shape[k] for k in g) for g in groups)
    ins = [x.type.shape if p is None else tuple(1 if p[g[0]] == 1 else n
                                                 for g, n in zip(groups, loop))
           for x, p in zip(inputs, padded)]
    if loop == shape and all(i == x.type.shape for i, x in zip(ins, inputs)):
        return None
    return ins, loop


def _step_graph(eqns: Sequence[Eqn], inputs: Sequence[Value | Literal], outputs: Sequence[Value],
                relax: bool, shapes: tuple | None = None) -> Graph:
    """The canonical graph of a step: fresh nameless values, no locations (``shapes``: the
    collapsed shapes of the inputs and the loop, see :func:`collapsed`)."""
    kind = _relaxed if relax else (lambda t: t)
    new: dict = {}   # uid, or a literal's key -> its value in the step's graph
    params = []
    for i, x in enumerate(inputs):
        t = x.type if shapes is None else TensorType(x.type.dtype, shapes[0][i])
        p = new[_operand_key(x)] = Value(kind(t))
        params.append(p)
    body = []
    for e in eqns:
        ins = tuple(new.get(_operand_key(x), x) for x in e.inputs)
        outs = tuple(Value(kind(o.type if shapes is None else
                                TensorType(o.type.dtype, shapes[1]))) for o in e.outputs)
        for o, n in zip(e.outputs, outs):
            new[o.uid] = n
        body.append(Eqn(e.op, ins, outs, e.attrs))
    return Graph("step", tuple(params), tuple(body), tuple(new[v.uid] for v in outputs))


def kernel_for(eqns: Sequence[Eqn], inputs: Sequence[Value | Literal], outputs: Sequence[Value],
               fused: bool, shapes: tuple | None = None) -> Kernel:
    """The shared kernel of a step (generated once per canonical text). Dims are left to run
    time where the generator can do without them, else the static shapes are kept (e.g. a
    batched matmul whose batch dims broadcast). ``shapes``: see :func:`collapsed`."""
    static = fused and all(None not in v.type.shape for e in eqns
                           for v in (*e.outputs, *(x for x in e.inputs if isinstance(x, Value))))
    for relax in (True, False):
        graph = _step_graph(eqns, inputs, outputs, relax, shapes)
        key = graph.to_text() + (f"\nfused, static: {static}" if fused else "")
        with _KERNELS_LOCK:
            k = _KERNELS.get(key)
        if k is not None:
            return k
        try:
            gen = _generate(graph, fused, static)
        except LoweringError:
            if relax:
                continue
            raise
        with _KERNELS_LOCK:
            return _KERNELS.setdefault(key, Kernel(key, graph, gen))
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------- plans


@dataclasses.dataclass
class Step:
    """One step of a plan: ``eqns`` (one driver equation, or a compiled step's equations),
    the keys of the values they read and define, and the values dropped after it."""

    eqns: tuple
    ins: tuple            # env keys (uids; literals under negative keys)
    outs: tuple           # env keys of the values it defines (the used ones, for kernels)
    dead: tuple = ()
    kernel: Kernel | None = None
    regions: tuple = ()   # plans of a control-flow equation's regions
    shapes: tuple | None = None   # a collapsed step: its kernel's input shapes, its outputs'


class Plan:
    """A graph (or region) cut into steps (see the module docstring)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.literals: dict[int, Any] = {}
        self.steps: list[Step] = []
        self._lits: dict[tuple, int] = {}
        eqns = graph.eqns
        uses = _last_uses(eqns, graph.results)
        i = 0
        while i < len(eqns):
            n = self._cut(eqns, i)
            self.steps.append(self._step(eqns[i:i + n], i + n, uses))
            i += n
        self._release(graph)
        self.params = tuple(p.uid for p in graph.params)
        self.results = tuple(self._key(r) for r in graph.results)

    def _key(self, x: Value | Literal) -> int:
        if isinstance(x, Value):
            return x.uid
        k = _literal_key(x)
        if k not in self._lits:
            self._lits[k] = -1 - len(self._lits)
            self.literals[self._lits[k]] = np.asarray(x.value, x.type.dtype.np)[()]
        return self._lits[k]

    @staticmethod
    def _cut(eqns: Sequence[Eqn], i: int) -> int:
        """How many equations from ``i`` form one step."""
        e = eqns[i]
        if e.op in STRUCTURAL_OPS or numpy_step(e) or e.regions:
            return 1
        return max(fusion_group(eqns, i), 1)

    def _step(self, eqns: tuple, end: int, uses: dict) -> Step:
        e = eqns[0]
        if len(eqns) == 1 and (e.op in STRUCTURAL_OPS or numpy_step(e) or e.regions
                               or (fusible(e) and e.outputs[0].type.rank == 0)):
            return Step(eqns, tuple(self._key(x) for x in e.inputs),
                        tuple(o.uid for o in e.outputs),
                        regions=tuple(Plan(r) for r in e.regions))
        produced = {o.uid for q in eqns for o in q.outputs}
        inputs: list = []
        seen: set = set()
        for q in eqns:
            for x in q.inputs:
                # A fused loop takes its scalar constants as arguments too: they often
                # depend on sizes (a mean's 1/n), which would make kernels differ.
                if isinstance(x, Literal) and fusible(e):
                    key = _literal_key(x)
                elif isinstance(x, Value) and x.uid not in produced:
                    key = x.uid
                else:
                    continue
                if key not in seen:
                    seen.add(key)
                    inputs.append(x)
        # Values used after the step (or results): the rest stay inside its loop nest.
        outputs = [o for q in eqns for o in q.outputs if uses.get(o.uid, -1) >= end]
        if not outputs:   # nothing needs it: keep the last value so the step still runs
            outputs = [eqns[-1].outputs[0]]
        shapes = collapsed(eqns, inputs) if fusible(e) else None
        kernel = kernel_for(eqns, inputs, outputs, fused=fusible(e), shapes=shapes)
        kernel.steps += 1
        return Step(eqns, tuple(self._key(x) for x in inputs), tuple(o.uid for o in outputs),
                    kernel=kernel, shapes=None if shapes is None else
                    (tuple(shapes[0]), tuple(o.type.shape for o in outputs)))

    def _release(self, graph: Graph) -> None:
        """Each step drops the values it uses last (as ``reference.release_plan``)."""
        last: dict[int, int] = {}
        for i, s in enumerate(self.steps):
            for k in s.ins:
                if k >= 0:
                    last[k] = i
            for k in s.outs:
                last.setdefault(k, i)
        for r in graph.results:
            if isinstance(r, Value):
                last.pop(r.uid, None)
        dead: list[list] = [[] for _ in self.steps]
        for uid, i in last.items():
            dead[i].append(uid)
        for s, d in zip(self.steps, dead):
            s.dead = tuple(d)

    def kernels(self) -> list[Kernel]:
        """The kernels its steps (and its regions' steps) use, each once, in order."""
        seen: dict[str, Kernel] = {}
        for s in self.steps:
            if s.kernel is not None:
                seen.setdefault(s.kernel.key, s.kernel)
            for r in s.regions:
                for k in r.kernels():
                    seen.setdefault(k.key, k)
        return list(seen.values())


def _last_uses(eqns: Sequence[Eqn], results: Sequence) -> dict:
    """Value uid -> index of the last equation using it (``len(eqns)`` for results)."""
    last: dict[int, int] = {}
    for i, e in enumerate(eqns):
        for x in e.inputs:
            if isinstance(x, Value):
                last[x.uid] = i
    for r in results:
        if isinstance(r, Value):
            last[r.uid] = len(eqns)
    return last


# ---------------------------------------------------------------------------- running


def run_plan(plan: Plan, args: Sequence[Any], plans: dict) -> list:
    """Runs ``plan`` on ``args`` (``plans``: the interpreter's release plans, for steps it
    runs)."""
    env = dict(plan.literals)
    env.update(zip(plan.params, args))
    for s in plan.steps:
        ins = [env[k] for k in s.ins]
        k = s.kernel
        if k is not None:
            outs = _run_kernel(s, k, ins, plans)
        elif s.regions:
            outs = _run_control(s, ins, plans)
        else:
            outs = reference._run_eqn(s.eqns[0], ins, plans)
        for key, o in zip(s.outs, outs):
            env[key] = o
        for key in s.dead:
            env.pop(key, None)
    return [env[k] for k in plan.results]


def _interpret(s: Step, ins: list, plans: dict) -> list:
    """A compiled step's equations on the interpreter (same values, Python speed)."""
    env = dict(zip(s.ins, ins))
    for e in s.eqns:
        vals = [np.asarray(x.value, x.type.dtype.np)[()] if isinstance(x, Literal)
                else env[x.uid] for x in e.inputs]
        for o, v in zip(e.outputs, reference._run_eqn(e, vals, plans)):
            env[o.uid] = v
    return [env[k] for k in s.outs]


def _run_kernel(s: Step, k: Kernel, ins: list, plans: dict) -> list:
    exe = k.exe
    if exe is None:
        return _interpret(s, ins, plans)
    try:
        shapes = s.shapes
        if shapes is None:
            return exe(ins)
        outs = exe([np.reshape(a, n) for a, n in zip(ins, shapes[0])])
        return [np.reshape(o, n) for o, n in zip(outs, shapes[1])]
    except InvalidArgumentError:
        # The interpreter raises the same error with its equation's source location.
        _interpret(s, ins, plans)
        raise


def _run_control(s: Step, ins: list, plans: dict) -> Sequence[Any]:
    e = s.eqns[0]
    if e.op == "cond":
        return run_plan(s.regions[0] if bool(ins[0]) else s.regions[1], ins[1:], plans)
    if e.op == "while":
        n = dict(e.attrs)["carry"]
        carried, invariant = list(ins[:n]), list(ins[n:])
        cond, body = s.regions
        while bool(run_plan(cond, carried + invariant, plans)[0]):
            carried = run_plan(body, carried + invariant, plans)
        return carried
    if e.op == "call":
        return run_plan(s.regions[0], ins, plans)
    raise AssertionError(f"{e.op} has regions but no driver rule")


# ---------------------------------------------------------------------------- the executable


class HybridExecutable:
    """``exe(args) -> list of arrays`` for a large graph (see the module docstring).

    ``mode`` is the compile mode: ``"sync"`` loads every kernel before the first call returns
    (Numba compiles each at its first call), ``"background"`` has the compile worker build
    them while steps run on the interpreter; ``wait()`` blocks until all are in use.

    >>> import numpy as np
    >>> from stagecraft.ir.dtypes import float32
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("two_blocks")
    >>> y = x = b.param(TensorType(float32, (3,)), "x")
    >>> for _ in range(2):     # two identical blocks: one compiled kernel
    ...     (y,) = b.add("exp", [y], [x.type])
    ...     (y,) = b.add("cumsum", [y], [x.type],
    ...                  {"axis": 0, "exclusive": False, "reverse": False})
    >>> exe = HybridExecutable(b.build([y]), "sync")
    >>> exe([np.zeros(3, np.float32)])
    [array([ 2.7182817, 10.107338 , 30.192875 ], dtype=float32)]
    >>> len(exe.plan.kernels()), len(exe.plan.steps)
    (2, 4)
    """

    def __init__(self, graph: Graph, mode: str = "sync"):
        self.graph = graph
        self.mode = mode
        self.fallback_reason: str | None = None
        self._pruned = reference.prune_unused(graph)
        self.plan = Plan(self._pruned)
        self._kernels = self.plan.kernels()
        self._plans: dict = {}
        self._started = False
        self._lock = threading.Lock()
        self.source = self._describe_source()

    def __call__(self, args: Sequence[Any]) -> list:
        if not self._started:
            self._start()
        return run_plan(self.plan, args, self._plans)

    # ------------------------------------------------------------------ compiling

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            if self.mode == "background":
                threading.Thread(target=self._background, name="stagecraft-hybrid-load",
                                 daemon=True).start()
            else:
                progress = Progress(self.graph.name, self.graph,
                                    f"as a hybrid plan of {len(self._kernels)} kernels")
                # In this process: handing every other kernel to the compile worker meanwhile
                # made ResNet-50's forward pass slower to compile on 2 busy cores (18 s, 11 s
                # here), the worker's start and the loads from the disk cache included.
                for k in self._kernels:
                    k.compile()
                progress.finish()

    def _background(self) -> None:
        """Submits the kernels not yet loaded to the compile worker, then loads each from the
        disk cache as it is done (off the call path)."""
        progress = Progress(self.graph.name, self.graph,
                            f"in the background as a hybrid plan of {len(self._kernels)} kernels")
        pending = []
        for k in self._kernels:
            k.submit()
            if k.exe is None and k.job is not None:
                pending.append(k)
        for k in pending:
            k.job.wait()
            try:
                if k.job.error is not None:
                    raise RuntimeError(k.job.error)
                exe = Executable(k.graph, k.gen)
                exe.dispatcher.compile(compile_worker.numba_signature(k.described()))
            except Exception as e:  # noqa: BLE001 - reported; the step stays interpreted
                k.error = f"{type(e).__name__}: {e}"
                _log.warning("stagecraft: '%s': compiling one of its hybrid plan's kernels in "
                             "the background failed (%s); the steps using it run on the "
                             "reference interpreter, which gives the same results at Python "
                             "speed. set_compile_mode(\"sync\") shows the error where it "
                             "happens.", self.graph.name, k.error)
                continue
            with k._lock:
                if k.exe is None:
                    k.exe = exe
        progress.finish()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until every step runs compiled code (background mode); whether they all do."""
        self._start()
        deadline = None if timeout is None else time.perf_counter() + timeout
        while any(k.exe is None and k.error is None for k in self._kernels):
            if deadline is not None and time.perf_counter() > deadline:
                break
            time.sleep(0.01)
        return all(k.exe is not None for k in self._kernels)

    # ------------------------------------------------------------------ show_compiled

    def _describe_source(self) -> str:
        n = equation_count(self.graph)
        lines = [f"# '{self.graph.name}' has {n} equations, more than the hybrid threshold "
                 f"(stagecraft.config.set_hybrid_threshold): a Python driver runs "
                 f"{_count_steps(self.plan)} steps, calling {len(self._kernels)} distinct "
                 f"compiled kernels; the other steps run on the interpreter's kernels.",
                 "# The plan (step: equations -> kernel):"]
        names = {k.key: f"kernel_{i}" for i, k in enumerate(self._kernels)}
        _plan_lines(self.plan, names, lines, "#   ")
        for k in self._kernels:
            lines.append(f"\n# ---- {names[k.key]} ({k.steps} steps use it)")
            lines.append(k.source.rstrip("\n"))
        return "\n".join(lines) + "\n"


def _count_steps(plan: Plan) -> int:
    return sum(1 + sum(_count_steps(r) for r in s.regions) for s in plan.steps)


def _plan_lines(plan: Plan, names: dict, lines: list, indent: str) -> None:
    for i, s in enumerate(plan.steps):
        ops = " ".join(e.op for e in s.eqns)
        where = names[s.kernel.key] if s.kernel is not None else "driver"
        lines.append(f"{indent}{i}: {ops} -> {where}")
        for r in s.regions:
            _plan_lines(r, names, lines, indent + "    ")

