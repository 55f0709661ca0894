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

Everything read from the cache is untrusted (DESIGN.md, "Trust boundary") and verified
before use; a damaged entry is deleted, one WARNING goes to the ``"stagecraft"`` logger, and it
is compiled again:

* ``gen_<key>.py`` must hold exactly the source whose hash names it (it is compared, then
  rewritten when it differs; the module runs from the in-memory text in any case);
* other files the cache writes (code plans, their constants) are *sealed*
  (:func:`write_verified`): a header holds the SHA-256 of the content, checked by
  :func:`read_verified` before anything parses it;
* numba's own ``.nbi`` index and ``.nbc`` machine-code files, for generated modules and for
  stagecraft's kernel library, are sealed the same way by a subclass of numba's cache-file
  class (:func:`install_verified_numba_cache`): nothing is unpickled before its digest
  checks out, so a flipped bit can no longer crash LLVM or run a crafted pickle;
* symbol-link records (``gen_<key>.links``) carry their own SHA-256
  (:mod:`stagecraft.backends.numba_links`).

The cache folder is created private (0700); an existing one that other users can write, or
that belongs to another user, is refused (:func:`cache_dir`), since whoever can write it can
make stagecraft run their code.  Two processes loading the same source at once both succeed:
every file is written to a temporary name and published with an atomic link or rename.

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

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import io
import linecache
import logging
import os
import pathlib
import pickle
import stat
import sys
import threading
import types
from typing import Any, Callable, Iterator

from stagecraft.backends.sealed_files import (CacheCorrupted, discard, read_verified, seal,
                                             unseal, write_verified)
from stagecraft.ir import durable

__all__ = ["cache_dir", "source_key", "load", "load_module", "clear", "DEFAULT_NJIT_OPTIONS",
           "VERSION", "CacheCorrupted", "seal", "unseal", "write_verified", "read_verified",
           "discard", "install_verified_numba_cache", "install_verified_cuda_cache",
           "tag_cache_files"]

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
    (``$XDG_CACHE_HOME``, default ``~/.cache``).  A new folder is made private (mode 0700);
    ``PermissionError`` (naming ``STAGECRAFT_CACHE_DIR``) when an existing one is writable by
    group or others or owned by another user, as pip and ccache refuse such folders.

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
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    _check_private(path)
    return path


def _check_private(path: pathlib.Path) -> None:
    """Refuses a cache folder that someone else could write (it holds code stagecraft runs)."""
    info = path.stat()
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(f"stagecraft cache: {path} is not a directory; set "
                                 "STAGECRAFT_CACHE_DIR to a private directory")
    problem = _writable_by_others(path)
    if problem:
        raise PermissionError(
            f"stagecraft refuses the cache directory {path}: {problem}. Anyone who can write "
            "there could make stagecraft run their code. Use a directory only you can write, "
            "e.g. set STAGECRAFT_CACHE_DIR to a new path (stagecraft creates it with mode 0700).")


def _writable_by_others(path: os.PathLike | str) -> str | None:
    """Why someone other than this user could write the folder ``path``, or None."""
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows: ACLs, not mode bits
        return None
    info = os.stat(path)
    if info.st_uid != os.getuid():
        return f"it is owned by another user (uid {info.st_uid}, you are {os.getuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"other users can write to it (mode {stat.S_IMODE(info.st_mode):04o}); "
                f"`chmod go-w {path}` fixes that")
    return None


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


def _ensure_source_file(path: pathlib.Path, source: str) -> None:
    """Makes ``path`` hold exactly ``source``, rewriting (with a warning) damaged content."""
    data = source.encode("utf-8")
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        durable.write_atomic(str(path), data, replace=False)
        return
    except OSError as e:
        _log.warning("stagecraft cache: cannot read %s (%s); rebuilding it", path, e)
        durable.write_atomic(str(path), data)
        return
    if current != data:
        _log.warning("stagecraft cache: %s is corrupted (its content differs from the generated "
                     "source: %d bytes on disk, %d expected); rebuilding it",
                     path, len(current), len(data))
        durable.write_atomic(str(path), data)


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


# ------------------------------------------------------------------------------ numba's files

_verified_classes: dict[type, type] = {}
# The first item of a verified data file's payload: (_KEYED, key, numba's data).
_KEYED = "stagecraft-keyed-v1"


def _verified_cache_file_class(base: type) -> type:
    """A subclass of numba's ``IndexDataCacheFile`` (private API of numba 0.5x-0.6x) whose
    ``.nbi`` index and ``.nbc`` data files are sealed: the digest is written with the file, in
    the same atomic rename, and checked before a byte of it is unpickled. A damaged file
    deletes the function's index and data files (one warning) and reads as a miss, so numba
    compiles again and writes them afresh."""
    if base in _verified_classes:
        return _verified_classes[base]

    class VerifiedCacheFile(base):  # type: ignore[valid-type,misc]
        def _entry_files(self) -> list[str]:
            base = self._index_name[: -len(".nbi")]
            try:
                names = os.listdir(self._cache_path)
            except OSError:
                names = []
            return [os.path.join(self._cache_path, n) for n in names
                    if n.startswith(base + ".") and n.endswith(".nbc")]

        def _payload(self, path: str) -> bytes | None:
            try:
                with open(path, "rb") as f:
                    blob = f.read()
            except FileNotFoundError:
                return None
            try:
                return unseal(blob)
            except CacheCorrupted as e:
                discard(path, f"numba cache file; {e}",
                        also=[self._index_path, *self._entry_files()])
                return None

        def _load_index(self) -> dict:
            payload = self._payload(self._index_path)
            if payload is None:
                return {}
            stream = io.BytesIO(payload)
            if pickle.load(stream) != self._version:  # verified: written by us
                return {}
            stamp, overloads = pickle.loads(stream.read())
            return overloads if stamp == self._source_stamp else {}

        def _load_data(self, name: str) -> Any:
            payload = self._payload(self._data_path(name))
            if payload is None:  # numba's load() reads an OSError as a miss
                raise FileNotFoundError(self._data_path(name))
            return pickle.loads(payload)

        # Each data file holds its key beside the code: numba picks a data file's number from
        # the index it read, so two processes saving two keys of one function at once can
        # leave the index naming, for one key, the file the other wrote. A file whose key is
        # another reads as a miss (compiled again), never as the other's code.
        def save(self, key: Any, data: Any) -> None:
            super().save(key, (_KEYED, key, data))

        def load(self, key: Any) -> Any:
            stored = super().load(key)
            if (isinstance(stored, tuple) and len(stored) == 3 and stored[0] == _KEYED
                    and stored[1] == key):
                return stored[2]
            return None

        @contextlib.contextmanager
        def _open_for_write(self, filepath: str) -> Iterator[io.BytesIO]:
            buffer = io.BytesIO()
            yield buffer
            with super()._open_for_write(filepath) as f:
                f.write(seal(buffer.getvalue()))

    _verified_classes[base] = VerifiedCacheFile
    return VerifiedCacheFile


#: Modules whose njit functions get verified numba cache files: the generated modules and
#: stagecraft's own (the kernel library and what it compiles from ``stagecraft.ir``).
_VERIFIED_MODULES = (_MODULE_PREFIX, "stagecraft.")
_installed: set[str] = set()


def install_verified_numba_cache() -> None:
    """Makes every ``cache=True`` njit function of a stagecraft or generated module keep its
    numba cache in verified files (sealed, under names of their own: ``<numba's name>.sc``,
    so files written by plain numba are never read), and deletes and recompiles an entry that
    still fails to load. Other functions' caches are left to numba. Idempotent; called before
    the kernel library and any generated module define their functions. Patches numba's
    ``Dispatcher.enable_caching`` (numba calls it once per dispatcher, at decoration)."""
    from numba.core.caching import IndexDataCacheFile, NullCache
    from numba.core.dispatcher import Dispatcher
    _install(Dispatcher, IndexDataCacheFile, NullCache)


def install_verified_cuda_cache() -> None:
    """The same for ``cuda.jit(cache=True)`` kernels of generated modules (numba-cuda keeps
    its own copy of numba's cache classes, with the same file layout). Only the CUDA backend
    calls it, so the CPU path never imports numba-cuda."""
    from numba.cuda.core.caching import IndexDataCacheFile, NullCache
    from numba.cuda.dispatcher import CUDADispatcher
    _install(CUDADispatcher, IndexDataCacheFile, NullCache)


def _install(dispatcher_class: type, file_class: type, null_cache: type) -> None:
    name = f"{dispatcher_class.__module__}.{dispatcher_class.__qualname__}"
    with _lock:
        if name in _installed:
            return
        original = dispatcher_class.enable_caching

        def enable_caching(self: Any) -> None:
            original(self)
            if getattr(self.py_func, "__module__", "").startswith(_VERIFIED_MODULES):
                _verify(self, file_class, null_cache)

        dispatcher_class.enable_caching = enable_caching
        _installed.add(name)


#: Module-name prefix -> a tag in the cache file names of that package's functions
#: (:func:`tag_cache_files`).
_TAGS: dict[str, str] = {}


def tag_cache_files(prefix: str, tag: str) -> None:
    """Puts ``tag`` in the names of the numba cache files of every function defined from now
    on in a module whose name starts with ``prefix``. Numba's index notices a change of the
    file that defines a function, not of the modules it calls (device functions, shared
    helpers): a tag that hashes the whole package (say, the CUDA kernels) makes a changed
    package miss the files of the old one.

    >>> tag_cache_files("my_kernels.", "v2")
    >>> _tag(types.SimpleNamespace(py_func=types.SimpleNamespace(__module__="my_kernels.add")))
    '.v2'
    >>> del _TAGS["my_kernels."]
    """
    with _lock:
        _TAGS[prefix] = tag


def _tag(dispatcher: Any) -> str:
    module = getattr(dispatcher.py_func, "__module__", "") or ""
    tags = [t for prefix, t in _TAGS.items() if module.startswith(prefix)]
    return "".join(f".{t}" for t in tags)


def _verify(dispatcher: Any, file_class: type, null_cache: type) -> None:
    cache = dispatcher._cache
    old = cache._cache_file
    if not _private_numba_folder(old._cache_path):
        dispatcher._cache = null_cache()  # compiled in memory: same results, no disk cache
        return
    base = old._index_name[: -len(".nbi")] + _tag(dispatcher) + ".sc"
    cache._cache_file = _verified_cache_file_class(file_class)(
        cache_path=old._cache_path, filename_base=base, source_stamp=old._source_stamp)
    _guard_cache_loads(dispatcher, null_cache)


_refused_folders: set[str] = set()


def _private_numba_folder(folder: str) -> bool:
    """Whether numba's cache folder for a stagecraft function (a ``__pycache__`` beside the
    kernel library or a generated module, or one under ``$NUMBA_CACHE_DIR``) can be written by
    this user (or root) only, the folder and every folder above it (above it, a shared folder
    with the sticky bit, as /tmp, is safe: nobody can rename what is ours). The digests guard
    against damage, not against a writer who can recompute them, so another folder is not
    used: one WARNING per folder, and the functions compile in memory. A folder numba made
    inside stagecraft's own cache directory under a permissive umask is tightened instead."""
    problem = _unsafe_path(folder)
    if problem and _inside_own_cache(folder):
        try:
            os.chmod(folder, 0o700)
            problem = _unsafe_path(folder)
        except OSError:
            pass
    if problem is None:
        return True
    with _lock:
        if folder not in _refused_folders:
            _refused_folders.add(folder)
            _log.warning(
                "stagecraft: not caching compiled code in %s: %s. Anyone who can write there "
                "could make stagecraft run their code; set NUMBA_CACHE_DIR to a directory only "
                "you can write (functions compile in memory meanwhile, with the same results).",
                folder, problem)
    return False


def _unsafe_path(folder: str) -> str | None:
    """Why someone other than this user or root could change what ``folder`` holds, or None."""
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows: ACLs, not mode bits
        return None
    path = pathlib.Path(folder).absolute()
    for i, p in enumerate([path, *path.parents]):
        try:
            info = p.stat()
        except OSError:
            return None if i == 0 else f"{p} cannot be read"
        if info.st_uid not in (os.getuid(), 0):
            return f"{p} is owned by another user (uid {info.st_uid}, you are {os.getuid()})"
        shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if shared and (i == 0 or not info.st_mode & stat.S_ISVTX):
            return (f"other users can write to {p} (mode {stat.S_IMODE(info.st_mode):04o}); "
                    f"`chmod go-w {p}` fixes that")
    return None


def _inside_own_cache(folder: str) -> bool:
    try:
        own = cache_dir().resolve()
        return own in pathlib.Path(folder).resolve().parents
    except OSError:
        return False


def _guard_cache_loads(dispatcher: Any, null_cache: type) -> None:
    """Safety net: a verified numba cache entry that still fails to load at call time (say,
    numba cannot rebuild it) is deleted (with a warning) and the function recompiled, instead
    of the call raising; where the failure is not the files' (no memory, a CUDA driver error)
    the files stay. A function whose cache key cannot be made, or whose compiled code
    cannot be saved (numba pickles the values a closure holds into its key), runs compiled in
    memory with one warning, and the files of its other variants, which share its index, are
    left alone."""
    cache = dispatcher._cache
    original = cache.load_overload
    original_save = cache.save_overload

    def stop_caching(e: Exception) -> None:
        dispatcher._cache = null_cache()
        _log.warning("stagecraft: cannot cache the compiled code of %s (%s: %s); it is "
                     "compiled again in each process, with the same results",
                     getattr(dispatcher.py_func, "__qualname__", dispatcher),
                     type(e).__name__, str(e).splitlines()[0] if str(e) else "")

    def save_overload(sig: Any, data: Any) -> None:
        try:
            original_save(sig, data)
        except Exception as e:  # noqa: BLE001 - the compiled code is right; only saving failed
            stop_caching(e)

    def load_overload(sig: Any, target_context: Any) -> Any:
        try:
            return original(sig, target_context)
        except Exception as e:  # noqa: BLE001 - any damaged entry means: recompile
            if _not_about_the_files(e):   # a miss; compiling raises it again if it stays
                _log.warning("stagecraft: loading the cached code of %s failed (%s: %s); it "
                             "is compiled again, and the cache files are kept",
                             getattr(dispatcher.py_func, "__qualname__", dispatcher),
                             type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                return None
            try:
                cache._index_key(sig, target_context.codegen())
            except Exception:  # noqa: BLE001 - no key: nothing on disk is to blame
                stop_caching(e)
                return None
            files = cache._cache_file
            discard(files._index_path, f"loading it failed: {type(e).__name__}: {e}",
                    also=files._entry_files())
            return None

    cache.load_overload = load_overload
    cache.save_overload = save_overload


def _not_about_the_files(error: Exception) -> bool:
    """Whether a failed load says nothing about the cache files: the machine ran out of
    memory, or the CUDA driver failed. (numba-cuda 0.30 rebuilds a cached kernel without the
    driver and loads its module at the first launch, outside this guard, where a driver error
    reaches the caller; one raised while loading would still not mean damaged files.)"""
    module = type(error).__module__ or ""
    return isinstance(error, MemoryError) or module.startswith(
        ("numba.cuda.cudadrv", "cuda.bindings", "cuda.core"))


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
        install_verified_numba_cache()  # before the module's own njit decorators run
        module = _publish(path, key, source)
        try:
            fn = getattr(module, entry)
        except AttributeError:
            raise AttributeError(f"generated source {path} defines no function {entry!r}") from None
        dispatcher = numba.njit(**_njit_options(njit_options))(fn)
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
        install_verified_numba_cache()
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
