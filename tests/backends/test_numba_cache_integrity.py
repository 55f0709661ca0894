"""The verified disk cache (issue 15, item 2): damage to any kind of cache file is noticed
before the file is used, logged once, and rebuilt; a poisoned plan runs no code; a cache
directory others can write is refused.

Every damaged run is a new process with a timeout, so a crash or a hang fails the test instead
of the test session. The runs and the file kinds are those of
``examples/benchmarks/cache_damage.py`` (which repeats them with random damage)."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import stat
import subprocess
import sys

import pytest

from stagecraft.backends import numba_cache

_SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "benchmarks" / "cache_damage.py"
_spec = importlib.util.spec_from_file_location("cache_damage_example", _SCRIPT)
damage = sys.modules["cache_damage_example"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(damage)

TIMEOUT = 300  # seconds per run: a hang fails the test


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, object]:
    """A cache filled by one undamaged run (its own Numba cache, kernel library included), and
    the result of that run."""
    root = tmp_path_factory.mktemp("damage")
    return root, damage.seed(root, TIMEOUT).result


def _flip(path: pathlib.Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x5A
    path.write_bytes(bytes(data))


def _assert_rebuilt(root: pathlib.Path, reference: object) -> None:
    """The next run notices the damage (one warning) and gives the right result; the run after
    it finds a whole cache (no warning)."""
    first = damage.run_child(root, TIMEOUT)
    assert first.returncode == 0, first.stderr
    assert first.result == reference
    assert first.warnings == 1, first.stderr
    second = damage.run_child(root, TIMEOUT)
    assert second.returncode == 0, second.stderr
    assert second.result == reference
    assert second.warnings == 0, second.stderr


_WHERE = ["header", "middle", "end"]


def _flip_cases() -> list:
    # Every file kind by default, each damaged at one place in turn (each case is a child
    # process that rebuilds the cache, ~4 s); --full-matrix damages every kind everywhere.
    return [pytest.param(kind, where, id=f"{where}-{kind}",
                         marks=() if where == _WHERE[i % 3] else pytest.mark.full_matrix)
            for i, kind in enumerate(damage.KINDS) for where in _WHERE]


@pytest.mark.parametrize("kind,where", _flip_cases())
def test_a_flipped_byte_in_any_cache_file_is_noticed_logged_once_and_rebuilt(filled, kind, where):
    root, reference = filled
    work = damage.restore(root)
    files = damage.KINDS[kind](work)
    assert files, f"the filled cache has no {kind} file"
    victim = files[0]
    size = victim.stat().st_size
    _flip(victim, {"header": 3, "middle": size // 2, "end": size - 2}[where])
    _assert_rebuilt(root, reference)
    assert victim.exists(), "the damaged entry was not written again"
    if kind not in ("module", "links"):  # sealed files: whole again
        numba_cache.unseal(victim.read_bytes())


@pytest.mark.parametrize("kind", ["plan", "index", "kernel machine code"])
def test_a_truncated_or_emptied_file_is_rebuilt(filled, kind):
    root, reference = filled
    work = damage.restore(root)
    victim = damage.KINDS[kind](work)[0]
    victim.write_bytes(victim.read_bytes()[:victim.stat().st_size // 3])
    _assert_rebuilt(root, reference)


def test_a_poisoned_plan_source_runs_no_code(filled):
    root, reference = filled
    work = damage.restore(root)
    (plan,) = damage.KINDS["plan"](work)
    marker = root / "pwned"
    payload = numba_cache.unseal(plan.read_bytes())
    doc = json.loads(payload)
    doc["source"] = f"open({str(marker)!r}, 'w').close()\n" + doc["source"]
    header = plan.read_bytes()[:len(plan.read_bytes()) - len(payload)]
    plan.write_bytes(header + json.dumps(doc).encode())  # the old digest: a tampered file
    _assert_rebuilt(root, reference)
    assert not marker.exists(), "code from a cached plan ran"


def test_an_unsealed_plan_of_the_old_format_is_not_read(filled):
    root, reference = filled
    work = damage.restore(root)
    (plan,) = damage.KINDS["plan"](work)
    marker = root / "pwned-plain"
    doc = json.loads(numba_cache.unseal(plan.read_bytes()))
    doc["source"] = f"open({str(marker)!r}, 'w').close()\n" + doc["source"]
    plan.write_text(json.dumps(doc))
    _assert_rebuilt(root, reference)
    assert not marker.exists(), "code from a cached plan ran"


def test_a_crafted_numba_index_is_never_unpickled(filled):
    root, reference = filled
    work = damage.restore(root)
    marker = root / "unpickled"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    import pickle
    for index in damage.KINDS["index"](work) + damage.KINDS["kernel index"](work)[:1]:
        index.write_bytes(pickle.dumps(Evil()))
    first = damage.run_child(root, TIMEOUT)
    assert first.returncode == 0 and first.result == reference, first.stderr
    assert not marker.exists(), "a pickle from the cache was loaded before its digest checked"


# ------------------------------------------------------------------ the cache directory

def test_a_new_cache_directory_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(tmp_path / "a" / "cache"))
    path = numba_cache.cache_dir()
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_directory_others_can_write_is_refused(tmp_path, monkeypatch, mode):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(mode)
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(folder))
    with pytest.raises(PermissionError) as info:
        numba_cache.cache_dir()
    message = str(info.value)
    assert message.startswith(f"stagecraft refuses the cache directory {folder}: other users "
                              f"can write to it (mode {mode:04o})")
    assert "STAGECRAFT_CACHE_DIR" in message
    folder.chmod(0o755)  # readable by others, writable only by its owner: accepted
    assert numba_cache.cache_dir() == folder


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a folder to another user needs root")
def test_a_directory_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(folder))
    with pytest.raises(PermissionError, match="owned by another user .*STAGECRAFT_CACHE_DIR"):
        numba_cache.cache_dir()


def test_the_staged_call_reports_a_refused_directory(tmp_path, monkeypatch):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(folder))
    with pytest.raises(PermissionError, match="STAGECRAFT_CACHE_DIR"):
        numba_cache.load("def one():\n    return 1\n", "one")
    assert not list(folder.iterdir()), "a refused directory was written to"


def test_a_numba_cache_folder_others_can_write_is_not_used(tmp_path):
    """Numba's own cache folder (here under ``$NUMBA_CACHE_DIR``) is outside stagecraft's cache
    directory; one others can write is not used (a warning, the same result, no files)."""
    shared = tmp_path / "numba-shared"
    shared.mkdir()
    shared.chmod(0o777)
    script = tmp_path / "program.py"
    script.write_text("import numpy as np, stagecraft as tf\n"
                      "@tf.function(backend='numba')\n"
                      "def f(x):\n"
                      "    return tf.reduce_sum(x * 2.0)\n"
                      "print(float(f(tf.constant(np.arange(4.0)))))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(shared),
           "STAGECRAFT_CACHE_DIR": str(tmp_path / "private")}
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "12.0"
    assert "stagecraft: not caching compiled code in " in run.stderr
    assert "NUMBA_CACHE_DIR" in run.stderr
    written = [p.name for p in shared.rglob("*") if p.is_file()]
    assert not written, f"numba cache files were written to a shared folder: {written}"



_CUDA_PROBE = """
import importlib.util, logging, pathlib, sys
from numba.cuda.core.caching import IndexDataCacheFile, NullCache
from numba.cuda.dispatcher import CUDADispatcher
from stagecraft.backends import numba_cache

logging.basicConfig(level=logging.WARNING, format="%(message)s")
numba_cache.install_verified_cuda_cache()

def kernel_of(folder, name):  # stands for a CUDA dispatcher: a real one needs a GPU
    path = pathlib.Path(folder, name + ".py")
    path.write_text("def kernel(x):\\n    x[0] = 1\\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = type("Kernel", (), {})()
    kernel.py_func = module.kernel
    CUDADispatcher.enable_caching(kernel)  # what cuda.jit(cache=True) calls
    return kernel

files = kernel_of(sys.argv[1], "stagecraft_gen_probe")._cache._cache_file
assert isinstance(files, IndexDataCacheFile) and files._index_name.endswith(".sc.nbi")
files.save(("sig",), {"ptx": "code"})
assert files.load(("sig",)) == {"ptx": "code"}
data = next(pathlib.Path(files._cache_path).glob("*.sc.*.nbc"))
blob = bytearray(data.read_bytes()); blob[len(blob) // 2] ^= 0x5A; data.write_bytes(bytes(blob))
assert files.load(("sig",)) is None and not data.exists()
assert isinstance(kernel_of(sys.argv[2], "stagecraft_gen_shared")._cache, NullCache)
print("ok")
"""


def test_cuda_kernel_caches_are_verified_like_the_cpu_caches(tmp_path):
    """``cuda.jit(cache=True)`` kernels of generated modules get sealed cache files: a flipped
    byte is noticed before unpickling, deleted, and read as a miss (numba-cuda recompiles); a
    folder others can write is not used. Run without the simulator (whose kernels cache
    nothing), in a process of its own; no GPU is needed to create and read cache files."""
    pytest.importorskip("numba.cuda", reason="numba-cuda (the cuda/test extra) is not installed")
    private, shared = tmp_path / "private", tmp_path / "shared"
    private.mkdir(mode=0o700)
    shared.mkdir()
    shared.chmod(0o777)
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    run = subprocess.run([sys.executable, "-c", _CUDA_PROBE, str(private), str(shared)],
                         env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
    warnings = [line for line in run.stderr.splitlines() if line.startswith("stagecraft")]
    assert len(warnings) == 2, run.stderr
    assert warnings[0].startswith("stagecraft cache: ") and " is corrupted (" in warnings[0]
    assert warnings[1].startswith(f"stagecraft: not caching compiled code in {shared}")


class _UnpicklableKeyCache:
    """Stands in for numba's cache of a closure holding a value pickle refuses: numba pickles
    it into the key on loading (before compiling) and on saving."""

    def __init__(self, files: object = None):
        self._cache_file = files

    def _index_key(self, sig, codegen):
        raise TypeError("cannot pickle '_thread.lock' object\nmore detail")

    def load_overload(self, sig, target_context):
        return self._index_key(sig, None)

    def save_overload(self, sig, data):
        self._index_key(sig, None)


class _NullCache:
    pass


def _guarded(cache: object) -> object:
    def kernel(x):
        return x
    dispatcher = type("Dispatcher", (), {})()
    dispatcher.py_func, dispatcher._cache = kernel, cache
    numba_cache._guard_cache_loads(dispatcher, _NullCache)
    return dispatcher


_CANNOT_CACHE = ("stagecraft: cannot cache the compiled code of _guarded.<locals>.kernel "
                 "(TypeError: cannot pickle '_thread.lock' object); it is compiled again in "
                 "each process, with the same results")


def test_a_kernel_whose_code_cannot_be_saved_runs_compiled_in_memory(caplog):
    dispatcher = _guarded(_UnpicklableKeyCache())
    with caplog.at_level("WARNING", logger="stagecraft"):
        dispatcher._cache.save_overload(("sig",), object())   # what numba calls after compiling
    assert isinstance(dispatcher._cache, _NullCache)
    assert caplog.records[0].getMessage().splitlines()[0] == _CANNOT_CACHE


def test_a_key_that_cannot_be_made_leaves_the_other_variants_files_alone(caplog, tmp_path):
    # The closures of one kernel factory share one index: a variant whose key cannot be made
    # must not delete the index and data files of the variants that could be saved.
    kept = [tmp_path / "kernel.sc.nbi", tmp_path / "kernel.sc.1.nbc"]
    for path in kept:
        path.write_bytes(b"sealed")
    files = type("Files", (), {"_index_path": str(kept[0]),
                               "_entry_files": lambda self: [str(kept[1])]})()
    dispatcher = _guarded(_UnpicklableKeyCache(files))
    context = type("Context", (), {"codegen": lambda self: None})()
    with caplog.at_level("WARNING", logger="stagecraft"):
        assert dispatcher._cache.load_overload(("sig",), context) is None   # a miss: compile
    assert all(path.exists() for path in kept)
    assert isinstance(dispatcher._cache, _NullCache)
    assert [r.getMessage().splitlines()[0] for r in caplog.records] == [_CANNOT_CACHE]


class _DriverRefusal(Exception):
    """Stands in for numba-cuda's CudaAPIError (the driver refusing to load a module)."""
    __module__ = "numba.cuda.cudadrv.driver"


class _FailingLoadCache(_UnpicklableKeyCache):
    def __init__(self, files: object, error: Exception):
        super().__init__(files)
        self.error = error

    def _index_key(self, sig, codegen):
        return ("key",)

    def load_overload(self, sig, target_context):
        raise self.error


@pytest.mark.parametrize("error", [_DriverRefusal("CUDA_ERROR_OUT_OF_MEMORY"), MemoryError()],
                         ids=["driver", "memory"])
def test_a_load_failing_outside_the_files_keeps_them(caplog, tmp_path, error):
    # (other processes' entries live in the same index: a GPU out of memory while loading a
    # module says nothing about them)
    kept = [tmp_path / "kernel.sc.nbi", tmp_path / "kernel.sc.1.nbc"]
    for path in kept:
        path.write_bytes(b"sealed")
    files = type("Files", (), {"_index_path": str(kept[0]),
                               "_entry_files": lambda self: [str(kept[1])]})()
    dispatcher = _guarded(_FailingLoadCache(files, error))
    context = type("Context", (), {"codegen": lambda self: None})()
    with caplog.at_level("WARNING", logger="stagecraft"):
        assert dispatcher._cache.load_overload(("sig",), context) is None   # a miss: compile
    assert all(path.exists() for path in kept)
    assert not isinstance(dispatcher._cache, _NullCache)   # (and it still saves what it makes)
    assert caplog.records[0].getMessage().startswith(
        "stagecraft: loading the cached code of _guarded.<locals>.kernel failed "
        f"({type(error).__name__}")


def test_a_data_file_written_for_another_key_reads_as_a_miss(tmp_path):
    # Two processes saving two keys of one function at once: each reads the index, takes the
    # first free data file, writes the index, then its data. The index can end up naming, for
    # one key, the file the other process wrote last: that must be a miss, not its code.
    from numba.core.caching import IndexDataCacheFile
    files = numba_cache._verified_cache_file_class(IndexDataCacheFile)
    a, b = (files(str(tmp_path), "kernel.sc", (1, 2)) for _ in range(2))
    index_a, index_b = a._load_index(), b._load_index()
    index_a["key A"] = a._data_name(1)
    a._save_index(index_a)
    index_b["key B"] = b._data_name(1)
    b._save_index(index_b)                                        # the index B wrote stays
    b._save_data(b._data_name(1), (numba_cache._KEYED, "key B", "code of B"))
    a._save_data(a._data_name(1), (numba_cache._KEYED, "key A", "code of A"))  # A's data last
    reader = files(str(tmp_path), "kernel.sc", (1, 2))
    assert reader._load_index() == {"key B": "kernel.sc.1.nbc"}
    assert reader.load("key B") is None
    reader.save("key B", "code of B")                             # compiled again, saved
    assert files(str(tmp_path), "kernel.sc", (1, 2)).load("key B") == "code of B"
