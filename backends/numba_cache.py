"""Disk cache that turns generated Python source into a cached ``numba.njit`` function.

``njit(cache=True)`` cannot cache source that was ``exec``'d from a string (numba needs a real
file and an importable module to locate and rebuild its cache).  So :func:`load`

1. hashes the source, the caller's ``extra`` string (a hash of the kernel library), the
   stagecraft, numba and llvmlite versions and the njit flags into a key (:func:`source_key`);
2. publishes the source atomically as ``gen_<key>.py`` in :func:`cache_dir` (never rewriting a
   file that already holds exactly this source, so its mtime, which is part of numba's cache
   stamp, stays put);
3. runs it as the module ``stagecraft_gen_<key>`` (registered in :data:`sys.modules`, with its
   ``__file__`` pointing at the cached file) and registers the text in :mod:`linecache`, so
   numba errors and tracebacks show the generated lines;
4. applies ``numba.njit(cache=True, error_model="numpy", nogil=True, **njit_options)`` to the
   function ``entry`` and returns the dispatcher.  Numba keeps its index (``.nbi``) and data
   (``.nbc``) files in ``__pycache__`` next to the source (or under ``$NUMBA_CACHE_DIR``), so a
   new process loading the same source gets the machine code from disk instead of compiling.

Damaged cache entries are repaired, with a warning on the ``"stagecraft"`` logger: a
``gen_<key>.py`` whose content differs from the source (or cannot be read) is rewritten, and
numba cache files of the module that cannot be unpickled (say, truncated by a crash) are
deleted before numba sees them, so numba recompiles instead of raising.  Two processes loading
the same source at once both succeed: every file is written to a temporary name and published
with an atomic link or rename, and both write identical bytes.

>>> import os, tempfile, unittest.mock, numpy as np
>>> env = unittest.mock.patch.dict(os.environ, STAGECRAFT_CACHE_DIR=tempfile.mkdtemp())
>>> _ = env.start()
>>> src = '''
... def total(x):
...     s = 0.0
...     for i in range(x.size):
...         s += x[i]
...     return s
... '''
>>> f = load(src, "total")
>>> f(np.arange(4.0))
6.0
>>> load(src, "total") is f          # same source: the same dispatcher, in-process
True
>>> f.__stagecraft_source__ == src, f.__stagecraft_path__.parent == cache_dir()
(True, True)
>>> _ = env.stop()
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import linecache
import logging
import os
import pathlib
import pickle
import sys
import tempfile
import threading
import types
from typing import Any, Callable

__all__ = ["cache_dir", "source_key", "load", "load_module", "clear", "DEFAULT_NJIT_OPTIONS",
           "VERSION"]

_log = logging.getLogger("stagecraft")


def _version() -> str:
    try:
        return importlib.metadata.version("stagecraft")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a tree
        return "0+unknown"


#: The stagecraft version, part of every cache key.
VERSION: str = _version()

#: The njit flags :func:`load` always passes (``njit_options`` adds to or overrides them).
DEFAULT_NJIT_OPTIONS: dict[str, Any] = {"cache": True, "error_model": "numpy", "nogil": True}

_MODULE_PREFIX = "stagecraft_gen_"
_lock = threading.RLock()
_loaded: dict[str, Callable] = {}  # resolved path of gen_<key>.py -> dispatcher
_modules: dict[str, types.ModuleType] = {}  # the same, for load_module


def cache_dir() -> pathlib.Path:
    """The folder holding the generated sources, created on demand.

    ``$STAGECRAFT_CACHE_DIR`` if set, else ``stagecraft`` under the user's cache folder
    (``$XDG_CACHE_HOME``, default ``~/.cache``).

    >>> import os, tempfile, unittest.mock
    >>> home = tempfile.mkdtemp()
    >>> with unittest.mock.patch.dict(os.environ, XDG_CACHE_HOME=home):
    ...     _ = os.environ.pop("STAGECRAFT_CACHE_DIR", None)
    ...     default = cache_dir()
    ...     os.environ["STAGECRAFT_CACHE_DIR"] = os.path.join(home, "mine")
    ...     own = cache_dir()
    >>> default == pathlib.Path(home, "stagecraft"), own.name, own.is_dir()
    (True, 'mine', True)
    """
    env = os.environ.get("STAGECRAFT_CACHE_DIR")
    if env:
        path = pathlib.Path(env).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = pathlib.Path(base) / "stagecraft"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _njit_options(njit_options: dict[str, Any] | None) -> dict[str, Any]:
    return {**DEFAULT_NJIT_OPTIONS, **(njit_options or {})}


def _versions() -> str:
    import llvmlite
    import numba
    impl = sys.implementation
    return (f"stagecraft={VERSION};numba={numba.__version__};llvmlite={llvmlite.__version__};"
            f"python={impl.name}-{impl.version.major}.{impl.version.minor}")


def source_key(source: str, extra: str = "", njit_options: dict[str, Any] | None = None) -> str:
    """The sha256 hex digest naming the compiled form of ``source``.

    It covers the source text, ``extra`` (the caller passes a hash of the kernel library,
    because numba does not invalidate callers when a called module changes), the stagecraft,
    numba, llvmlite and Python versions, and the effective njit flags (the defaults updated by
    ``njit_options``).

    >>> k = source_key("def f(x):\\n    return x\\n")
    >>> len(k), k == source_key("def f(x):\\n    return x\\n")
    (64, True)
    >>> k == source_key("def f(x):\\n    return x\\n", extra="kernels-v2")
    False
    >>> k == source_key("def f(x):\\n    return x\\n", njit_options={"fastmath": True})
    False
    """
    h = hashlib.sha256()
    for part in (source, extra, _versions(), repr(sorted(_njit_options(njit_options).items()))):
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed: no ambiguous joins
        h.update(data)
    return h.hexdigest()


def _write_atomic(path: pathlib.Path, data: bytes, *, replace: bool) -> None:
    """Publishes ``data`` at ``path`` in one step (temp file in the same folder, fsync'd).

    With ``replace=False`` an existing file is left alone (another process won the race; it
    holds the same bytes since the name is their hash), which keeps its mtime stable.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # atomic create-if-absent
            except FileExistsError:
                pass
            except OSError:  # file systems without hard links
                os.replace(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def _ensure_source_file(path: pathlib.Path, source: str) -> None:
    """Makes ``path`` hold exactly ``source``, rewriting (with a warning) damaged content."""
    data = source.encode("utf-8")
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        _write_atomic(path, data, replace=False)
        return
    except OSError as e:
        _log.warning("stagecraft cache: cannot read %s (%s); rebuilding it", path, e)
        _write_atomic(path, data, replace=True)
        return
    if current != data:
        _log.warning("stagecraft cache: %s is corrupted (its content differs from the generated "
                     "source: %d bytes on disk, %d expected); rebuilding it",
                     path, len(current), len(data))
        _write_atomic(path, data, replace=True)


def _import(path: pathlib.Path, name: str, source: str) -> types.ModuleType:
    """Runs ``source`` as module ``name`` whose ``__file__`` is ``path``.

    The code is compiled from the in-memory text, which :func:`_ensure_source_file` has just
    made identical to the file, so no stale or damaged ``.pyc`` can be picked up.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    except BaseException:
        if previous is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
        raise
    return module


def _register_linecache(path: pathlib.Path, source: str) -> None:
    linecache.cache[str(path)] = (len(source), None, source.splitlines(True), str(path))


def _numba_cache_files(dispatcher: Any, path: pathlib.Path) -> tuple[pathlib.Path, list]:
    """Numba's cache folder for ``dispatcher`` and the index files of module ``path``."""
    cache = getattr(dispatcher, "_cache", None)
    folder = pathlib.Path(getattr(cache, "cache_path", None) or path.parent / "__pycache__")
    prefix = path.stem + "."
    try:
        names = [p for p in folder.iterdir() if p.name.startswith(prefix) and p.suffix == ".nbi"]
    except OSError:
        names = []
    return folder, names


def _check_numba_cache(dispatcher: Any, path: pathlib.Path) -> int:
    """Deletes (with a warning) numba index/data files of ``path``'s module that do not unpickle.

    Numba reads these lazily, at the first call of each signature, and raises on a damaged
    file instead of recompiling; checking them here lets numba recompile.  Returns the number
    of index files whose entries were deleted.
    """
    folder, indexes = _numba_cache_files(dispatcher, path)
    removed = 0
    for index in indexes:
        base = index.name[: -len(".nbi")]
        problem = None
        try:
            with open(index, "rb") as f:
                pickle.load(f)  # numba version
                _stamp, overloads = pickle.loads(f.read())
            for data_name in set(overloads.values()):
                try:
                    with open(folder / data_name, "rb") as f:
                        pickle.loads(f.read())
                except FileNotFoundError:
                    continue  # numba treats a missing data file as a miss
                except Exception as e:  # noqa: BLE001 - any unpickling failure
                    problem = f"data file {data_name}: {type(e).__name__}: {e}"
                    break
        except FileNotFoundError:
            continue
        except Exception as e:  # noqa: BLE001
            problem = f"index file {index.name}: {type(e).__name__}: {e}"
        if problem is None:
            continue
        _log.warning("stagecraft cache: numba cache of %s is corrupted (%s); deleting %s*.nbi/.nbc "
                     "so that numba recompiles", path, problem, folder / base)
        for p in folder.glob(f"{base}.*"):
            if p.suffix in (".nbi", ".nbc"):
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass
        removed += 1
    return removed


def _guard_cache_loads(dispatcher: Any, path: pathlib.Path) -> None:
    """Safety net: a numba cache entry that fails to load at call time is deleted (with a
    warning) and the function recompiled, instead of the call raising.  Uses numba's private
    ``Dispatcher._cache``; skipped when that is absent."""
    cache = getattr(dispatcher, "_cache", None)
    original = getattr(cache, "load_overload", None)
    if original is None:
        return

    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            return original(sig, target_context)
        except Exception as e:  # noqa: BLE001 - any damaged entry means: recompile
            folder, indexes = _numba_cache_files(dispatcher, path)
            _log.warning("stagecraft cache: loading the numba cache of %s failed (%s: %s); "
                         "deleting its .nbi/.nbc files in %s and recompiling",
                         path, type(e).__name__, e, folder)
            for index in indexes:
                for p in folder.glob(index.name[: -len(".nbi")] + ".*"):
                    if p.suffix in (".nbi", ".nbc"):
                        try:
                            p.unlink()
                        except FileNotFoundError:
                            pass
            return None

    cache.load_overload = load_overload


def load(source: str, entry: str, extra: str = "",
         njit_options: dict[str, Any] | None = None,
         link: Callable[[types.ModuleType, Any], None] | None = None) -> Callable:
    """The numba dispatcher of function ``entry`` defined by ``source``, cached on disk.

    ``source`` is a complete module text defining a plain Python function ``entry`` (its
    globals must come from the text itself, e.g. imports: numba does not hash globals, so
    every baked-in value must be in the source or in ``extra``).  The result is
    ``numba.njit(cache=True, error_model="numpy", nogil=True, **njit_options)`` applied to
    it; its ``__stagecraft_source__``, ``__stagecraft_path__`` and ``__stagecraft_key__``
    attributes hold the source, the cached file and the key.  Loading the same
    (source, extra, options) again in this process returns the same object; in a new process
    numba's ``cache=True`` loads the machine code from disk at the first call.

    ``link(module, links)``, when given, chooses the calls of the module that go through
    published symbols (:mod:`stagecraft.backends.numba_links`) instead of copying the callee's
    code into each caller; ``links`` keeps its record in ``gen_<key>.links``.

    Raises ``SyntaxError`` (or whatever running the module raises) for a broken source and
    ``AttributeError`` when it defines no ``entry``.

    >>> import os, tempfile, unittest.mock
    >>> with unittest.mock.patch.dict(os.environ, STAGECRAFT_CACHE_DIR=tempfile.mkdtemp()):
    ...     f = load("def twice(x):\\n    return 2 * x\\n", "twice",
    ...              njit_options={"boundscheck": False})
    >>> f(21), f.__stagecraft_path__.name.startswith("gen_")
    (42, True)
    """
    if link is not None:  # linked code calls symbols: never load it without its links
        extra += f";link={link.__module__}.{link.__qualname__}"
    key = source_key(source, extra, njit_options)
    path = (cache_dir() / f"gen_{key}.py").resolve()
    with _lock:
        hit = _loaded.get(str(path))
        if hit is not None:
            return hit
        import numba

        module = _publish(path, key, source)
        try:
            fn = getattr(module, entry)
        except AttributeError:
            raise AttributeError(f"generated source {path} defines no function {entry!r}") from None
        dispatcher = numba.njit(**_njit_options(njit_options))(fn)
        _check_numba_cache(dispatcher, path)
        _guard_cache_loads(dispatcher, path)
        if link is not None:
            from stagecraft.backends.numba_links import Links
            links = Links(path.with_suffix(".links"))
            link(module, links)
            links.guard(dispatcher, entry)
        dispatcher.__stagecraft_source__ = source
        dispatcher.__stagecraft_path__ = path
        dispatcher.__stagecraft_key__ = key
        _loaded[str(path)] = dispatcher
        return dispatcher


def _publish(path: pathlib.Path, key: str, source: str) -> types.ModuleType:
    """Steps 2 and 3 of the module docstring: the cached file, imported and in linecache."""
    _ensure_source_file(path, source)
    module = _import(path, _MODULE_PREFIX + key, source)
    _register_linecache(path, source)
    return module


def load_module(source: str, extra: str = "") -> types.ModuleType:
    """The module defined by ``source``, published as ``gen_<key>.py`` in :func:`cache_dir`
    exactly as :func:`load` publishes it (atomically, repaired when damaged, in ``linecache``)
    but with no njit applied: for generated code that compiles itself, such as CUDA kernels
    (``cuda.jit(cache=True)`` also needs a real file next to which it keeps its cache).
    Loading the same (source, extra) again in this process returns the same module.

    >>> import os, tempfile, unittest.mock
    >>> with unittest.mock.patch.dict(os.environ, STAGECRAFT_CACHE_DIR=tempfile.mkdtemp()):
    ...     m = load_module("def three():\\n    return 3\\n", extra="demo")
    ...     again = load_module("def three():\\n    return 3\\n", extra="demo")
    >>> m.three(), m is again, pathlib.Path(m.__file__).name.startswith("gen_")
    (3, True, True)
    """
    key = source_key(source, extra, {"module": True})
    path = (cache_dir() / f"gen_{key}.py").resolve()
    with _lock:
        hit = _modules.get(str(path))
        if hit is None:
            hit = _modules[str(path)] = _publish(path, key, source)
        return hit


def clear(directory: os.PathLike | str | None = None) -> int:
    """Deletes the generated sources and their numba cache files; returns how many sources.

    ``directory`` defaults to :func:`cache_dir`.  Also forgets the in-process dispatchers
    (already returned ones keep working).

    >>> import tempfile
    >>> clear(tempfile.mkdtemp())
    0
    """
    folder = pathlib.Path(directory) if directory is not None else cache_dir()
    count = 0
    with _lock:
        for p in folder.glob("gen_*.py"):
            stem = p.stem
            try:
                p.with_suffix(".links").unlink()
            except FileNotFoundError:
                pass
            for q in (folder / "__pycache__").glob(f"{stem}.*"):
                try:
                    q.unlink()
                except FileNotFoundError:
                    pass
            try:
                p.unlink()
                count += 1
            except FileNotFoundError:
                pass
            _loaded.pop(str(p.resolve()), None)
            _modules.pop(str(p.resolve()), None)
            linecache.cache.pop(str(p.resolve()), None)
    return count
