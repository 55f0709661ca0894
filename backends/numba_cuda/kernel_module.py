"""Generated kernels as modules of the disk cache, so that a new process loads their machine
code instead of compiling it again.

A kernel written as source (the eager elementwise kernels, the blocked matmul, a staged
function's fused groups) becomes a module: :func:`prelude` (the globals kernels use), its
constants, its functions. ``numba_cache.load_module`` publishes it as ``gen_<key>.py`` in
``$STAGECRAFT_CACHE_DIR`` (keyed by the text, the versions and :func:`library_hash`) and
kernels are ``cuda.jit(cache=True)`` on a GPU: numba-cuda keeps their PTX and cubin beside the
file, in sealed files (``numba_cache.install_verified_cuda_cache``). On the simulator nothing
is compiled, so nothing is cached, and the same modules run as Python.

Numba compiles a kernel's globals as constants, and the simulator runs a kernel by swapping the
globals that hold ``numba.cuda``: so kernels reach the CUDA API through the module global
``cuda``, bound by the prelude.
"""
from __future__ import annotations

import functools
import hashlib
import linecache
import logging
import pathlib
import sys
import types
from typing import Any, Callable, Mapping

import numpy as np

from stagecraft.backends.numba_cuda.launch import cuda_module, simulated

#: Names the prelude binds (generated code must not assign them).
PRELUDE_NAMES = ("cmath", "cuda", "uint64", "_km", "np", "offset", "K", "_CACHE")


def prelude(device_numpy: bool | None = None, imports: tuple[str, ...] = ()) -> list[str]:
    """The first lines of a generated kernel module: the names kernels use (``np``: NumPy's
    names as device code, see :func:`kernel_numpy`; ``K``: the special functions;
    ``offset``: strided indexing) and ``_CACHE``, the ``cache=`` of their ``cuda.jit``;
    ``imports``: more import lines (the staged host function's runtime).

    >>> print("\\n".join(prelude(True)))
    import cmath
    from numba import cuda, uint64
    <BLANKLINE>
    from stagecraft.backends.numba_cuda import kernel_module as _km
    <BLANKLINE>
    np = _km.kernel_numpy(True)  # NumPy's names as device code
    offset = _km.offset()
    K = _km.kernel_special()  # special functions as device code
    _CACHE = _km.disk_cache()
    """
    where = {True: "", False: " (NumPy itself)", None: " (NumPy itself on the simulator)"}
    return ["import cmath", "from numba import cuda, uint64", "",
            "from stagecraft.backends.numba_cuda import kernel_module as _km", *imports, "",
            f"np = _km.kernel_numpy({device_numpy!r})  # NumPy's names as device code"
            f"{where[device_numpy]}",
            "offset = _km.offset()",
            "K = _km.kernel_special()  # special functions as device code",
            "_CACHE = _km.disk_cache()"]


def kernel_numpy(device: bool | None = None) -> Any:
    """The ``np`` generated kernels see: ``kernels.device_numpy`` (NumPy's names as CUDA
    device code) when ``device`` is true, NumPy itself when false; None picks the device
    version on a GPU and NumPy on the simulator (where kernels run as Python)."""
    if device is None:
        device = not simulated()
    if not device:
        return np
    from stagecraft.backends.numba_cuda.kernels.device_numpy import module
    return module()


def kernel_special() -> Any:
    """The ``K`` generated kernels see: the special functions (``kernels.device_special``)."""
    from stagecraft.backends.numba_cuda.kernels.device_special import module
    return module()


@functools.lru_cache(maxsize=None)
def offset() -> Callable:
    """The device function giving the element offset of a flat index through strides."""
    from stagecraft.backends.numba_cuda.kernels.index import offset_function
    return offset_function()


def disk_cache() -> bool:
    """Whether kernels use ``cuda.jit(cache=True)``: on a GPU (PTX/cubin cached next to the
    generated file); the simulator compiles nothing, so there is nothing to cache."""
    return not simulated()


def numba_dtype(name: str) -> Any:
    """The Numba type of NumPy dtype ``name`` (a kernel constant such as a tile's element).

    >>> str(numba_dtype("float32"))
    'float32'
    """
    import numba
    return numba.from_dtype(np.dtype(name))


_library_hash: str | None = None


def library_sources() -> list[tuple[str, pathlib.Path]]:
    """The sources kernels are made from, as (name, path): this package (kernels, eager
    library) and those it takes device code from, ``backends/codegen`` (scalar expressions,
    special functions, half rounding) and ``ir`` (the Philox stream).

    >>> names = [name for name, _ in library_sources()]
    >>> "stagecraft.ir/ops/philox.py" in names, "stagecraft.backends.codegen/half.py" in names
    (True, True)
    """
    import stagecraft.backends.codegen  # noqa: F401 (in sys.modules for the loop below)
    import stagecraft.ir  # noqa: F401
    sources = []
    for package in (__package__, "stagecraft.backends.codegen", "stagecraft.ir"):
        root = pathlib.Path(sys.modules[package].__file__).resolve().parent
        sources += [(f"{package}/{p.relative_to(root)}", p) for p in sorted(root.rglob("*.py"))]
    return sources


def library_hash() -> str:
    """A hash of :func:`library_sources`, part of every cache key: numba does not notice
    changes in the modules a cached kernel calls."""
    global _library_hash
    if _library_hash is None:
        h = hashlib.sha256()
        for name, path in library_sources():
            h.update(name.encode() + path.read_bytes())
        _library_hash = h.hexdigest()[:16]
    return _library_hash


def constant_line(name: str, value: Any) -> str:
    """``name = value`` for a kernel constant: a Python int, float or bool, or a NumPy dtype
    (bound to its Numba type). Only values of these kinds, which stagecraft computed, are
    written into generated code.

    >>> constant_line("bm", 64), constant_line("elem", np.dtype(np.float64))
    ('bm = 64', "elem = _km.numba_dtype('float64')")
    """
    if isinstance(value, np.dtype):
        return f"{name} = _km.numba_dtype({value.name!r})"
    if type(value) in (int, float, bool):
        return f"{name} = {value!r}"
    raise TypeError(f"kernel constant {name!r} is a {type(value).__name__}: constants of "
                    f"generated kernels are ints, floats, bools or NumPy dtypes")


def load(source: str, kind: str) -> types.ModuleType:
    """The generated module of ``source`` (which starts with :func:`prelude`), from the disk
    cache; ``kind`` names the generator in the key (``"eager"``, ``"staged"``)."""
    from stagecraft.backends import numba_cache
    mode = "simulator" if simulated() else "gpu"
    _install_cache()
    extra = f"cuda-{kind}-{mode}-{library_hash()}"
    try:
        module = numba_cache.load_module(source, extra=extra)
    except OSError as e:   # (a cache folder refused, or one that cannot be written)
        if kind != "eager":
            raise
        module = _in_memory(numba_cache.source_key(source, extra), source, e)
    _LOADED.setdefault(module.__name__, module)
    return module


def _in_memory(key: str, source: str, why: OSError) -> types.ModuleType:
    """The module of ``source`` run from memory, its kernels compiled per process: an eager op
    works without a usable cache folder (as TensorFlow's do), saying once why it is slower."""
    name = f"stagecraft_gen_{key}"   # (under the warning filter of generated modules)
    module = sys.modules.get(name)
    if module is None:
        if not _IN_MEMORY_WARNED:
            _IN_MEMORY_WARNED.append(True)
            logging.getLogger("stagecraft").warning(
                "stagecraft: GPU kernels are compiled in every process, not cached on disk: "
                "%s", why)
        filename = f"<stagecraft-cuda {key[:16]}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        module = types.ModuleType(name)
        exec(compile(source, filename, "exec"), module.__dict__)
        module._CACHE = False   # (numba caches only functions defined in a file)
        sys.modules[name] = module
    return module


_IN_MEMORY_WARNED: list = []


# The generated kernel modules this process loaded, by name, and the library's kernels (for
# cache_stats).
_LOADED: dict[str, types.ModuleType] = {}
_LIBRARY: list = []


def _install_cache() -> None:
    """On a GPU, before a kernel is made: numba-cuda's cache files sealed and verified, and
    those of the library's kernels named with :func:`library_hash` (numba's index notices a
    change of a kernel's own file only, not of the device functions it calls)."""
    if not simulated():
        from stagecraft.backends import numba_cache
        numba_cache.install_verified_cuda_cache()
        numba_cache.tag_cache_files(__name__.rsplit(".", 1)[0] + ".", f"lib{library_hash()}")


def library_kernel(fn: Callable) -> Callable:
    """``cuda.jit`` for the kernels of the library (``kernels/``): on a GPU their machine code
    is cached on disk as the generated kernels' is (numba-cuda keys a closure's entry by the
    values it holds: its factory's arguments, device functions, launch constants).

    >>> @library_kernel
    ... def fill(out, value):
    ...     for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
    ...         out[i] = value
    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> from stagecraft.backends.numba_cuda.launch import bind_cuda
    >>> _ = bind_cuda(globals())
    >>> out = to_device(np.zeros(3, np.int32)); fill[1, 4](out, 7); to_host(out)
    array([7, 7, 7], dtype=int32)
    """
    _install_cache()
    kernel = cuda_module().jit(cache=disk_cache())(fn)
    _LIBRARY.append(kernel)
    return kernel


def cache_stats() -> dict[str, int]:
    """How this process got the machine code of its kernels (generated and the library's) so
    far: ``loaded`` kernel signatures came from the disk cache, ``compiled`` ones were
    compiled (and saved), over ``kernels`` kernels (numba-cuda's counts; on the simulator
    nothing compiles, so all stay 0). A program's second start should compile none.

    >>> sorted(cache_stats())
    ['compiled', 'kernels', 'loaded']
    """
    stats = {"kernels": 0, "loaded": 0, "compiled": 0}
    kernels = [v for m in list(_LOADED.values()) for k, v in list(vars(m).items())
               if k not in PRELUDE_NAMES]   # (the device functions that kernels share)
    for value in kernels + _LIBRARY:
        counts = getattr(value, "_cache_hits", None), getattr(value, "_cache_misses", None)
        if None in counts:   # (not a kernel, or one of the simulator's)
            continue
        stats["kernels"] += 1
        stats["loaded"] += sum(counts[0].values())
        stats["compiled"] += sum(counts[1].values())
    return stats


def jit_kernel(name: str, source: str, constants: Mapping[str, Any] | None = None,
               device_numpy: bool | None = None) -> Callable:
    """``cuda.jit`` of the function ``name`` that ``source`` defines, loaded as a generated
    module (:func:`load`) after the :func:`prelude` (``np`` bound for ``device_numpy``) and
    ``constants`` (:func:`constant_line`), so that on a GPU its machine code is cached on
    disk.

    >>> kernel = jit_kernel("twice", "def twice(out, x):\\n    out[0] = x[0] * k\\n", {"k": 2})
    >>> from stagecraft.backends.numba_cuda.memory import to_device, to_host
    >>> out = to_device(np.zeros(1, np.float32))
    >>> kernel[1, 1](out, to_device(np.float32([1.5]))); to_host(out)
    array([3.], dtype=float32)
    """
    cuda_module()   # (raises the error that says how to get CUDA first)
    lines = prelude(device_numpy) + [constant_line(k, v) for k, v in (constants or {}).items()]
    module = load("\n".join([*lines, "", "", source.rstrip("\n"), ""]), "eager")
    kernel = getattr(module, name)
    if isinstance(kernel, types.FunctionType):   # (not jitted when loaded before)
        kernel = module.cuda.jit(cache=module._CACHE)(kernel)
        setattr(module, name, kernel)   # where cache_stats finds it
    return kernel
