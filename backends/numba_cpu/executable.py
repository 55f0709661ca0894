"""The callable around a compiled graph function: argument unboxing, variable write-back,
result boxing with exact dtypes, and error translation."""
from __future__ import annotations

import hashlib
import pathlib
import weakref
from typing import Any, Sequence

import numpy as np

from stagecraft.backends import numba_cache
from stagecraft.backends.numba_cpu import host, linking
from stagecraft.backends.numba_cpu.codegen import ENTRY, Generated
from stagecraft.backends.numba_cpu.plans import generated
from stagecraft.backends.codegen.half import is_half
from stagecraft.backends.codegen.source import np_type
from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import InternalError, InvalidArgumentError
from stagecraft.ir.graph import Graph

_library_hash: str | None = None


def library_hash() -> str:
    """A hash of the kernel library, this backend's sources and the symbol links: part of
    every cache key, because numba does not notice changes in the modules a cached function
    calls."""
    global _library_hash
    if _library_hash is None:
        h = hashlib.sha256()
        root = pathlib.Path(__file__).resolve().parent.parent
        # numba_links names the symbols that cached code calls: a change must not reuse it.
        # numba_cpu/ holds the kernel library (kernels/); codegen/ the shared generator.
        for path in sorted([*root.glob("numba_cpu/**/*.py"), *root.glob("codegen/*.py"),
                            root / "numba_links.py"]):
            h.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
        _library_hash = h.hexdigest()[:16]
    return _library_hash


class Executable:
    """``exe(args) -> list of arrays`` for a graph: tensor parameters take arrays, reference
    parameters take variable objects (their buffer in ``_value``, replaced after the call when
    the graph assigns them). ``source`` is the generated module."""

    def __init__(self, graph: Graph, gen: Generated | None = None):
        self.graph = graph
        # ``gen``: the code generated already (the hybrid plan's steps generate their own).
        gen = generated(graph, library_hash()) if gen is None else gen
        self.source = gen.source
        self.fallback_reason = None
        # Only Python calls the entry: no C-callable wrapper to compile. Object-mode blocks
        # (print, py_function) hold the GIL: asking for nogil would only make Numba warn on
        # every compile.
        options = {"no_cfunc_wrapper": True}
        if "numba.objmode" in gen.source:
            options["nogil"] = False
        self.dispatcher = numba_cache.load(gen.source, ENTRY, extra=library_hash(),
                                           njit_options=options, link=linking.link)
        self._token = None
        if gen.host_fns:
            self._token = host.register(gen.host_fns)
            weakref.finalize(self, host.release, self._token)
        self._gen = gen
        self._call = _make_wrapper(graph, gen, self.dispatcher, self._token)

    def __call__(self, args: Sequence[Any]) -> list:
        return self._call(args)

    def tensor_entry(self, n_args: int, extras: Sequence[Any], box: Any,
                     only: int | None = None) -> Any:
        """``call(tensors)`` for the hot path of a concrete function: parameter ``i`` is
        ``tensors[i]._value`` for the first ``n_args`` parameters and ``extras[i - n_args]``
        after them (captured arrays, or variables for reference parameters); the results are
        boxed with ``box`` (the list of them, or only result ``only``). One generated function
        instead of a list of arrays built per call and a second call."""
        return _make_wrapper(self.graph, self._gen, self.dispatcher, self._token,
                             n_args=n_args, extras=list(extras), box=box, only=only)


def boxed(d: dt.DType) -> str:
    """The scalar class of dtype ``d`` in the wrapper (``np_type`` is the compiled code's,
    float32 for the half formats).

    >>> boxed(dt.bfloat16), boxed(dt.int8)
    ('bfloat16', 'np.int8')
    """
    return d.name if is_half(d) else np_type(d)


def _make_wrapper(graph: Graph, gen, fn: Any, token: int | None, n_args: int | None = None,
                  extras: list | None = None, box: Any = None, only: int | None = None):
    """A Python function specialized to the graph's signature (no per-argument dispatch):
    ``call(args)`` with every parameter in ``args``, or with ``n_args`` given, the first
    ``n_args`` parameters as tensors in ``args`` and the rest in ``extras``."""
    def source(i: int) -> str:
        if n_args is None:
            return f"args[{i}]"
        return f"args[{i}]._value" if i < n_args else f"extras[{i - n_args}]"

    lines = ["def call(args):"]
    names = []
    for i in gen.param_indices:
        p = graph.params[i]
        src = f"{source(i)}._value" if p.ref and (n_args is None or i >= n_args) else source(i)
        names.append(f"a{i}")
        if is_half(p.type.dtype):  # held in float32 in compiled code (exact)
            lines.append(f"    a{i} = np.float32({src}[()])" if p.type.rank == 0 else
                         f"    a{i} = {src}.astype(np.float32)")
        elif p.type.rank == 0:
            lines.append(f"    a{i} = {src}[()]")
        else:
            lines.append(f"    a{i} = {src}")
            lines.append(f"    if (a{i}.flags.num & 0x401) != 0x401: a{i} = a{i}.copy()")
    call_args = names + [f"consts[{k}]" for k in range(len(gen.consts))]
    if token is not None:
        call_args.append(str(token))
    lines += ["    try:",
              f"        r = fn({', '.join(call_args)})",
              "    except InvalidArgumentError:",
              "        raise",
              "    except NumbaError as e:",
              "        raise compile_failed(e) from None",
              "    except (ValueError, IndexError, ZeroDivisionError) as e:",
              "        raise InvalidArgumentError(str(e)) from None"]
    n = gen.num_results
    for j, i in enumerate(gen.assigned):
        p = graph.params[i]
        value = f"r[{n + j}]"
        if p.type.rank == 0:
            value = f"np.asarray({value}, {boxed(p.type.dtype)})"
        elif is_half(p.type.dtype):
            value = f"{value}.astype({boxed(p.type.dtype)})"
        target = f"args[{i}]" if n_args is None else source(i)
        lines.append(f"    {target}._value = {value}")
    # (half results are rounded already: narrowing them to their format is exact)
    outs = [f"{boxed(r.type.dtype)}(r[{k}])" if r.type.rank == 0 else
            f"r[{k}].astype({boxed(r.type.dtype)})" if is_half(r.type.dtype) else f"r[{k}]"
            for k, r in enumerate(graph.results)]
    if box is not None:
        outs = [f"box({o})" for o in outs]
    lines.append(f"    return {outs[only]}" if only is not None else
                 f"    return [{', '.join(outs)}]")
    from numba.core.errors import NumbaError

    def compile_failed(e: Exception) -> InternalError:
        path = getattr(fn, "__stagecraft_path__", "?")
        return InternalError(
            f"Numba could not compile the code generated for '{graph.name}' (a stagecraft "
            f"bug; the source is {path}): {str(e).splitlines()[0] if str(e) else e!r}\n"
            f"Compile this function with backend=\"reference\" meanwhile.")

    scope = {"fn": fn, "consts": gen.consts, "np": np, "NumbaError": NumbaError,
             "float16": np.float16, "bfloat16": dt.bfloat16.np.type,
             "extras": extras, "box": box,
             "compile_failed": compile_failed, "InvalidArgumentError": InvalidArgumentError}
    exec(compile("\n".join(lines), f"<stagecraft wrapper of {graph.name}>", "exec"), scope)
    return scope["call"]
