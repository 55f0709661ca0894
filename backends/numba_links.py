"""Calls from one compiled function to another that do not compile the callee again.

Numba links the LLVM module of every njit function a function calls into the caller's own
module, then optimizes it and emits its machine code again, in every caller. A generated graph
function calls outlined loop nests, which call the kernel library, so the same code was
compiled once per level: for the L2HMC step, a quarter of its first call. :func:`external`
wraps an njit function in an intrinsic that calls its machine code through a symbol instead:

* at typing, the intrinsic compiles the function for the argument types (once per process)
  and publishes the entry point under a stable name,
  ``stagecraft.<module>.<function>.<digest of the argument types>``;
* the caller's code declares that symbol and calls it with Numba's calling convention, so
  errors raised by the callee propagate as from an ordinary call.

Machine code loaded from Numba's disk cache refers to those symbols, and LLVM aborts the
process on one it cannot resolve, so every symbol must be published before such code is
loaded. A :class:`Links` (one per generated module) lists each call it publishes in a file
next to the module, callees before callers and before Numba caches the caller, and lets a
function of the module load its cached code only after publishing what is listed before it.

>>> import numba, numpy as np
>>> @numba.njit
... def double(x):
...     return 2 * x
>>> twice = external(double)
>>> @numba.njit
... def caller(x):
...     return twice(x) + 1
>>> caller(np.arange(3.0))
array([1., 3., 5.])
"""
from __future__ import annotations

import hashlib
import json
import logging
import pathlib
import threading
import types as pytypes
from typing import Any, Callable, Iterable

import numpy as np

from stagecraft.backends.sealed_files import discard
from stagecraft.ir import durable

__all__ = ["external", "Links", "encode_type", "decode_type"]

_log = logging.getLogger("stagecraft")
_lock = threading.RLock()
_published: dict[str, Any] = {}  # symbol -> compile result (kept alive: it owns the code)
_VERSION = 1  # of the record file


# ------------------------------------------------------------------------------ type codes

def encode_type(t: Any) -> Any:
    """A JSON value naming the Numba type ``t`` (arrays, scalars, scalar classes, tuples,
    None), which :func:`decode_type` turns back into ``t``.

    >>> from numba import types
    >>> encode_type(types.Array(types.float32, 2, "C"))
    ['array', 'float32', 2, 'C', False]
    >>> decode_type(encode_type(types.UniTuple(types.int64, 2)))
    UniTuple(int64, 2)
    """
    from numba import types
    if isinstance(t, types.Array):
        return ["array", _dtype_name(t.dtype), t.ndim, t.layout, not t.mutable]
    if isinstance(t, (types.Number, types.Boolean)):
        return ["scalar", _dtype_name(t)]
    if isinstance(t, types.NumberClass):
        return ["class", _dtype_name(t.instance_type)]
    if isinstance(t, types.BaseTuple):
        return ["tuple", [encode_type(x) for x in t.types]]
    if isinstance(t, types.NoneType):
        return ["none"]
    raise TypeError(f"a call through a published symbol cannot take a {t} argument")


def decode_type(code: Any) -> Any:
    """The Numba type :func:`encode_type` encoded as ``code``; ``ValueError`` when ``code``
    names none."""
    import numba
    from numba import types
    try:
        kind = code[0]
        if kind == "array":
            _, dtype, ndim, layout, readonly = code
            return types.Array(numba.from_dtype(np.dtype(dtype)), int(ndim), str(layout),
                               readonly=bool(readonly))
        if kind == "scalar":
            return numba.from_dtype(np.dtype(code[1]))
        if kind == "class":
            return types.NumberClass(numba.from_dtype(np.dtype(code[1])))
        if kind == "tuple":
            return types.BaseTuple.from_types([decode_type(x) for x in code[1]])
        if kind == "none":
            return types.none
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as e:
        raise ValueError(f"not a type code: {code!r} ({e})") from None
    raise ValueError(f"not a type code: {code!r}")


def _dtype_name(t: Any) -> str:
    from numba import types
    if t == types.boolean:
        return "bool"
    if not isinstance(t, types.Number):
        raise TypeError(f"a call through a published symbol cannot take {t} elements")
    return str(np.dtype(str(t)))


# ------------------------------------------------------------------------------ publishing

def _symbol(fn: Any, codes: list) -> str:
    digest = hashlib.sha256(json.dumps(codes).encode()).hexdigest()[:16]
    return f"stagecraft.{fn.py_func.__module__}.{fn.py_func.__qualname__}.{digest}"


def publish(fn: Any, argtypes: tuple) -> tuple[str, Any]:
    """Compiles the njit dispatcher ``fn`` for ``argtypes`` (or loads it from Numba's cache)
    and publishes its entry point; returns the symbol and Numba's compile result."""
    import llvmlite.binding as llvm
    codes = [encode_type(t) for t in argtypes]
    name = _symbol(fn, codes)
    with _lock:
        cres = _published.get(name)
        if cres is None:
            fn.compile(argtypes)
            cres = fn.overloads[argtypes]
            llvm.add_symbol(name, cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name))
            _published[name] = cres
    return name, cres


def external(fn: Any, links: Links | None = None, key: str | None = None) -> Callable:
    """An intrinsic calling the njit dispatcher ``fn`` through its published symbol (module
    docstring). ``links`` records each published call under ``key`` (``fn``'s name by
    default), so that a new process publishes it again before loading cached code that calls
    it (:class:`Links`)."""
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic
    key = key or fn.py_func.__name__

    def call(typingctx, *args):
        argtypes = tuple(types.unliteral(a) for a in args)
        name, cres = publish(fn, argtypes)
        if links is not None:
            links.record(key, argtypes)
        restype, params = cres.fndesc.restype, cres.fndesc.argtypes

        def codegen(context, builder, signature, values):
            fnty = context.call_conv.get_function_type(restype, params)
            callee = cgutils.get_or_insert_function(builder.module, fnty, name)
            items = [builder.extract_value(values[0], i) for i in range(len(args))]
            actual = [context.cast(builder, v, t, p) for v, t, p in zip(items, args, params)]
            status, result = context.call_conv.call_function(builder, callee, restype, params,
                                                             actual)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return result

        return restype(types.StarArgTuple.from_types(args)), codegen

    call.__name__ = call.__qualname__ = key
    return intrinsic(prefer_literal=False)(call)


# ------------------------------------------------------------------------------ the record

class Links:
    """The calls published for one generated module, also kept in the file ``path``: JSON with
    the list of ``[key, [type codes]]`` (each function after the functions it calls) as text,
    and that text's SHA-256, so that damage is noticed instead of trusted.

    :meth:`guard` makes every njit function of the module load its machine code from Numba's
    disk cache only when the file lists it, after publishing everything listed before it
    (its callees); an entry is listed before Numba writes the cache, and after its callees,
    which are published while it is typed. Without a listing, Numba compiles again."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.functions: dict[str, Any] = {}  # key -> njit dispatcher
        self.entries: list[list] = []
        self._read = False

    def wrap(self, namespace: dict[str, Any], names: Iterable[str]) -> None:
        """Replaces each dispatcher ``namespace[name]`` with its :func:`external` intrinsic,
        whose cache loads are guarded."""
        for name in names:
            self.guard(namespace[name], name)
            namespace[name] = external(namespace[name], self, name)

    def kernels(self, module: pytypes.ModuleType, names: Iterable[str],
                prefix: str) -> pytypes.ModuleType:
        """A module like ``module`` whose functions ``names`` are :func:`external` intrinsics
        (recorded as ``prefix + name``); its other attributes are ``module``'s."""
        proxy = pytypes.ModuleType(module.__name__ + "_linked")
        proxy.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
        for name in names:
            key = prefix + name
            self.functions[key] = getattr(module, name)
            setattr(proxy, name, external(getattr(module, name), self, key))
        return proxy

    def record(self, key: str, argtypes: tuple) -> None:
        """Lists ``key`` compiled for ``argtypes`` (once) and rewrites the file."""
        entry = [key, [encode_type(t) for t in argtypes]]
        with _lock:
            if entry in self.entries:
                return
            self._read = False  # merge what other processes listed since, not overwrite it
            self._load()
            if entry not in self.entries:
                self.entries.append(entry)
                listing = json.dumps(self.entries)
                record = {"version": _VERSION, "calls": listing, "sha256": _digest(listing)}
                durable.write_atomic(str(self.path), json.dumps(record).encode())

    def guard(self, dispatcher: Any, key: str) -> None:
        """Lets ``dispatcher`` (recorded as ``key``) load cached machine code only when the file
        lists it, publishing what is listed before it first; records it before Numba caches
        it. Uses Numba's private ``Dispatcher._cache``, like the cache repairs."""
        self.functions[key] = dispatcher
        cache = dispatcher._cache
        load, save = cache.load_overload, cache.save_overload

        def load_overload(sig: Any, target_context: Any) -> Any:
            try:
                entry = [key, [encode_type(t) for t in _args(sig)]]
            except TypeError:  # never recorded, so never cached: Numba compiles (or says why not)
                return None
            if not self._publish_before(entry):
                return None
            return load(sig, target_context)

        def save_overload(sig: Any, data: Any) -> None:
            self.record(key, _args(sig))
            save(sig, data)

        cache.load_overload, cache.save_overload = load_overload, save_overload

    def _publish_before(self, entry: list) -> bool:
        """Publishes the listed calls before ``entry``; False when ``entry`` is not listed."""
        with _lock:
            if entry not in self.entries:
                self._read = False  # another process may have listed it since
                self._load()
            if entry not in self.entries:
                return False
            before = self.entries[:self.entries.index(entry)]
            try:
                plan = [(self.functions[k], tuple(decode_type(c) for c in codes))
                        for k, codes in before]
            except (KeyError, ValueError) as e:
                _log.warning("stagecraft cache: %s lists an unknown call (%s); compiling again",
                             self.path, e)
                return False
        for fn, argtypes in plan:
            publish(fn, argtypes)
        return True

    def _load(self) -> None:
        """Merges the file's list into the one in memory (once, until :meth:`_publish_before`
        asks again); a damaged file is deleted with one warning (so the module's functions
        compile again) and rewritten by the next :meth:`record`."""
        if self._read:
            return
        self._read = True
        try:
            record = json.loads(self.path.read_text())
            if not isinstance(record, dict) or record.get("version") != _VERSION:
                raise ValueError(f"not a version {_VERSION} record")
            if _digest(record["calls"]) != record["sha256"]:
                raise ValueError("its checksum does not match")
            listed = json.loads(record["calls"])
            if not isinstance(listed, list) or not all(
                    isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) for e in listed):
                raise ValueError("not a list of [name, types]")
        except FileNotFoundError:
            return
        except (OSError, ValueError, TypeError, KeyError) as e:
            discard(self.path, f"symbol-link record; {type(e).__name__}: {e}")
            return
        for e in listed:
            if e not in self.entries:
                self.entries.append(e)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _args(sig: Any) -> tuple:
    """The argument types of what Numba's cache is given: a signature or a tuple of types."""
    return tuple(sig.args) if hasattr(sig, "args") else tuple(sig)
