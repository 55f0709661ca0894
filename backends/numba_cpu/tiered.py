"""Tiered execution (``stagecraft.config.set_compile_mode("background")``, the default): a new
concrete function runs at once on the reference interpreter, which computes what eager
execution computes, while the compile worker (:mod:`stagecraft.backends.compile_worker`)
compiles its generated module into the disk cache; once the machine code is there, a loader
thread loads it and later calls run it. A compile that fails in the background leaves the
function on the interpreter, with one warning naming it.

``"sync"`` compiles before the first call returns (as before tiers existed); both modes log
a compile that takes more than a second when it starts and when it ends
(:class:`Progress`)."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Sequence

from stagecraft.backends import compile_worker, numba_cache
from stagecraft.backends import reference
from stagecraft.backends.numba_cpu.codegen import ENTRY
from stagecraft.backends.numba_cpu.executable import Executable, library_hash
from stagecraft.backends.numba_cpu.plans import generated
from stagecraft.ir.graph import Graph, walk_eqns

__all__ = ["TieredExecutable", "SyncExecutable", "Progress"]

_log = logging.getLogger("stagecraft")


class Progress:
    """Logs a compile on the ``stagecraft`` logger if it takes more than ``after`` seconds:
    one INFO line when that second has passed, one when it ends (seconds, cache hit)."""

    def __init__(self, name: str, graph: Graph, where: str, after: float = 1.0):
        self.name, self.where = name, where
        self.equations = sum(1 for _ in walk_eqns(graph))
        self.start = time.perf_counter()
        self._announced = False
        self._timer = threading.Timer(after, self._announce)
        self._timer.daemon = True
        self._timer.start()

    def _announce(self) -> None:
        self._announced = True
        _log.info("stagecraft: compiling '%s' (%d equations) %s...", self.name,
                  self.equations, self.where)

    def finish(self, cache_hit: bool | None = None, seconds: float | None = None) -> None:
        self._timer.cancel()
        seconds = time.perf_counter() - self.start if seconds is None else seconds
        if self._announced or seconds > 1.0:
            hit = "" if cache_hit is None else " (disk cache hit)" if cache_hit else \
                " (not cached before)"
            _log.info("stagecraft: compiled '%s' (%d equations) in %.1f s%s", self.name,
                      self.equations, seconds, hit)


class SyncExecutable:
    """The ``"sync"`` mode: the Numba executable, its first call (where Numba compiles or
    loads the machine code) timed by ``Progress``."""

    def __init__(self, graph: Graph):
        self._exe = Executable(graph)
        self.graph, self.source = graph, self._exe.source
        self.fallback_reason = None
        self.dispatcher = self._exe.dispatcher
        self._first = True

    def __call__(self, args: Sequence[Any]) -> list:
        if self._first:
            progress = Progress(self.graph.name, self.graph, "with Numba")
            try:
                return self._exe(args)
            finally:
                self._first = False
                progress.finish()
        return self._exe(args)

    def tensor_entry(self, n_args: int, extras: Sequence[Any], box: Any,
                     only: int | None = None) -> Any:
        if self._first:  # the first call goes through __call__ (and its progress line)
            def first(args: Any) -> Any:
                outs = self([a._value for a in args[:n_args]] + list(extras))
                boxed = [box(o) for o in outs]
                return boxed[only] if only is not None else boxed
            entry = self._exe.tensor_entry(n_args, extras, box, only)
            return lambda args: entry(args) if not self._first else first(args)
        return self._exe.tensor_entry(n_args, extras, box, only)


class TieredExecutable:
    """The ``"background"`` mode (see the module docstring)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self._gen = generated(graph, library_hash())
        self.source = self._gen.source
        self.fallback_reason: str | None = None
        self._reference = reference.compile(graph)
        self.compiled: Executable | None = None  # set by the loader thread when ready
        self._job: compile_worker.CompileJob | None = None
        self._described: list | None = None
        self._progress: Progress | None = None
        self._loading = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the tiers

    def _tier(self, args: Sequence[Any]) -> Any:
        compiled = self.compiled
        if compiled is not None:
            return compiled
        with self._lock:
            if self._job is None and self.fallback_reason is None:
                self._start(args)
            elif self._job is not None and self._job.done() and not self._loading:
                self._loading = True
                self._finish()
        return self.compiled or self._reference

    def _start(self, args: Sequence[Any]) -> None:
        try:
            self._described = self._describe(args)
        except TypeError as e:
            self.fallback_reason = f"its arguments cannot be compiled ahead: {e}"
            return
        options = {"no_cfunc_wrapper": True}
        if "numba.objmode" in self.source:
            options["nogil"] = False
        self._options = options
        self._progress = Progress(self.graph.name, self.graph, "in the background")
        self._job = compile_worker.submit(self.graph.name, str(numba_cache.cache_dir()),
                                          self.source, ENTRY, library_hash(), options,
                                          self._described)

    def _describe(self, args: Sequence[Any]) -> list:
        """The argument types the compiled entry will be called with (as the call wrapper
        passes them: parameters, constants, the host token)."""
        out = []
        for i in self._gen.param_indices:
            p = self.graph.params[i]
            value = args[i]._value if p.ref else args[i]
            value = getattr(value, "_value", value)
            if p.type.rank == 0:
                value = value[()]
            elif not (value.flags.c_contiguous and value.flags.aligned):
                value = value.copy()  # the wrapper copies such arrays
            out.append(compile_worker.describe_argument(value))
        out += [compile_worker.describe_argument(c) for c in self._gen.consts]
        if self._gen.host_fns:
            out.append(("int",))
        return out

    def _finish(self) -> None:
        job = self._job
        if job.error is not None:
            self._progress.finish()
            self.fallback_reason = (f"compiling it in the background failed ({job.error}); it "
                                    f"runs on the reference interpreter, which gives the same "
                                    f"results at Python speed")
            _log.warning("stagecraft: '%s': %s. Pass backend=\"reference\" to choose the "
                         "interpreter, or set_compile_mode(\"sync\") to see the error where it "
                         "happens.", self.graph.name, self.fallback_reason)
            return
        threading.Thread(target=self._load, name="stagecraft-load", daemon=True).start()

    def _load(self) -> None:
        """Loads the cached machine code (off the call path) and switches to it."""
        try:
            exe = Executable(self.graph)
            exe.dispatcher.compile(compile_worker.numba_signature(self._described))
        except Exception as e:  # noqa: BLE001 - reported, and the interpreter stays
            self.fallback_reason = f"loading its compiled code failed ({type(e).__name__}: {e})"
            _log.warning("stagecraft: '%s': %s; it stays on the reference interpreter.",
                         self.graph.name, self.fallback_reason)
            return
        self._progress.finish(self._job.cache_hit, self._job.seconds)
        self.compiled = exe

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until the compiled tier is in use (for tests and benchmarks); whether it
        is."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        while self.compiled is None and self.fallback_reason is None:
            if deadline is not None and time.perf_counter() > deadline:
                break
            job = self._job
            if job is not None and job.done() and not self._loading:
                with self._lock:
                    if not self._loading:
                        self._loading = True
                        self._finish()
            time.sleep(0.01)
        return self.compiled is not None

    # ------------------------------------------------------------------ the executable API

    def __call__(self, args: Sequence[Any]) -> list:
        return self._tier(args)(args)

    def tensor_entry(self, n_args: int, extras: Sequence[Any], box: Any,
                     only: int | None = None) -> Any:
        """The hot path: the interpreter until the compiled tier is ready, then the
        compiled entry (made once)."""
        extras = list(extras)
        fast: list = [None]

        def call(args: Any) -> Any:
            entry = fast[0]
            if entry is not None:
                return entry(args)
            values = [a._value for a in args[:n_args]] + extras
            tier = self._tier(values)
            if tier is self._reference:
                outs = [box(o) for o in tier(values)]
                return outs[only] if only is not None else outs
            entry = fast[0] = tier.tensor_entry(n_args, extras, box, only)
            return entry(args)
        return call
