"""Generated kernels (eager elementwise, blocked matmul, staged groups) as modules of the disk
cache (``numba_cuda.kernel_module``): the module each kernel comes from, its key, and on a GPU
numba-cuda's verified disk cache for them and the library's kernels (checked on Numba's real CUDA dispatcher in a process without
the simulator; loading machine code back needs a GPU, where every CUDA test runs these
kernels)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cuda import kernel_module, memory
from stagecraft.backends.numba_cuda.kernels import elementwise
from stagecraft.ir import dtypes as dt

pytestmark = pytest.mark.cuda
ROOT = pathlib.Path(__file__).resolve().parents[3]


def _module_file(kernel) -> pathlib.Path:
    return pathlib.Path(sys.modules[kernel.py_func.__module__].__file__)


def test_an_elementwise_kernel_is_a_module_of_the_disk_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(tmp_path))
    kernel = elementwise._kernel.__wrapped__("add", (dt.float32, dt.float32), dt.float32,
                                              ("same", "strided"), True)
    path = _module_file(kernel)
    assert path.parent == tmp_path.resolve() and path.name.startswith("gen_")
    text = path.read_text()
    assert text.startswith("\n".join(kernel_module.prelude(True)))
    assert "def add_f32_f32_sa_st(" in text
    # The device spelling of NumPy, asked for, even on the simulator.
    assert kernel.py_func.__globals__["np"] is kernel_module.kernel_numpy(True)
    again = elementwise._kernel.__wrapped__("add", (dt.float32, dt.float32), dt.float32,
                                             ("same", "strided"), True)
    assert again is kernel   # one module, one kernel per process


def test_eager_ops_run_kernels_of_generated_modules():
    with tf.device("/gpu:0"):
        x = tf.constant([[1.0, -2.0], [3.0, 4.5]])
        y = tf.maximum(x, tf.constant([0.5, 0.0]))
    np.testing.assert_array_equal(y.numpy(), [[1.0, 0.0], [3.0, 4.5]])
    call = elementwise.prepared("maximum", (((2, 2), np.dtype(np.float32)),
                                            ((2,), np.dtype(np.float32))), dt.float32, (2, 2))
    assert call.setting, "the eager maximum did not run this Call"
    path = _module_file(call.launch.kernel)
    assert path.name.startswith("gen_") and "np.maximum(a0, a1)" in path.read_text()


def test_the_key_holds_the_library_hash(monkeypatch, tmp_path):
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(tmp_path))
    source = "\n".join([*kernel_module.prelude(), "X = 1", ""])
    first = kernel_module.load(source, "eager")
    monkeypatch.setattr(kernel_module, "_library_hash", "0" * 16)   # the kernels changed
    second = kernel_module.load(source, "eager")
    assert first.__file__ != second.__file__
    assert kernel_module.load(source, "staged").__file__ not in (first.__file__,
                                                                 second.__file__)


def test_kernel_constants_are_numbers_or_dtypes_only():
    assert kernel_module.constant_line("flag", True) == "flag = True"
    with pytest.raises(TypeError) as info:
        kernel_module.constant_line("name", "x; import os")
    assert str(info.value).splitlines()[0] == (
        "kernel constant 'name' is a str: constants of generated kernels are ints, floats, "
        "bools or NumPy dtypes")
    with pytest.raises(TypeError):
        kernel_module.constant_line("n", np.int64(3))   # (its repr is not its value's text)


def test_the_blocked_matmul_kernels_come_from_modules(monkeypatch, tmp_path):
    from stagecraft.backends.numba_cuda.kernels import matmul
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(tmp_path))
    single, batched = matmul._blocked_kernel.__wrapped__(np.dtype(np.int32), (8, 8, 4), (2, 2))
    text = _module_file(single).read_text()
    assert "elem = _km.numba_dtype('int32')" in text and "bm = 8" in text
    assert _module_file(batched) != _module_file(single)
    a = memory.to_device(np.arange(12, dtype=np.int32).reshape(3, 4))
    b = memory.to_device(np.arange(8, dtype=np.int32).reshape(4, 2))
    out = matmul.matmul(a, b, False, False, (3, 2))
    np.testing.assert_array_equal(memory.to_host(out),
                                  np.arange(12).reshape(3, 4) @ np.arange(8).reshape(4, 2))


_REAL_DISPATCHER = textwrap.dedent("""
    import json, os
    from stagecraft.backends.numba_cuda import detect
    detect._probe = lambda: ("gpu", "a stand-in: no kernel is compiled or launched")
    from stagecraft.backends.numba_cuda import kernel_module
    from stagecraft.backends.numba_cuda.kernels import elementwise
    from stagecraft.ir import dtypes as dt
    k = elementwise._kernel("multiply", (dt.float32, dt.float32), dt.float32,
                            ("same", "value"), True)
    from stagecraft.backends.numba_cuda.kernels import gather
    library = gather._check_kernel()
    print(json.dumps({"dispatcher": type(k).__name__,
                      "files": type(k._cache._cache_file).__name__,
                      "cache_path": k._cache._cache_path,
                      "cache": kernel_module.disk_cache(),
                      "library_files": type(library._cache._cache_file).__name__,
                      "library_index": library._cache._cache_file._index_name,
                      "library_hash": kernel_module.library_hash(),
                      "stats": kernel_module.cache_stats()}))
""")


def test_on_a_gpu_kernels_keep_their_machine_code_in_verified_files(tmp_path):
    # Numba's real CUDA dispatcher (no simulator), made without a driver: what a GPU gets.
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "STAGECRAFT_CACHE_DIR": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)   # (numba's folder beside the generated file)
    run = subprocess.run([sys.executable, "-c", _REAL_DISPATCHER], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["dispatcher"] == "CUDADispatcher" and got["files"] == "VerifiedCacheFile"
    assert got["cache"] is True
    assert pathlib.Path(got["cache_path"]) == tmp_path.resolve() / "__pycache__"
    # The library's kernels too, in files named with the hash of the whole kernel library.
    assert got["library_files"] == "VerifiedCacheFile"
    assert got["library_index"].startswith("gather._check_kernel.locals.check-")
    assert got["library_index"].endswith(f".lib{got['library_hash']}.sc.nbi")
    assert got["stats"] == {"kernels": 2, "loaded": 0, "compiled": 0}   # (nothing launched)


def test_every_library_kernel_has_the_same_cache_key_in_every_process(tmp_path):
    # numba-cuda keys a closure's disk-cache entry by the pickled values it holds: one that
    # cannot be pickled would fail to save, one pickled differently per process (a set's
    # order under hash randomization) would miss every time and grow the index.
    script = str(ROOT / "tests" / "backends" / "cuda" / "ptx_check.py")
    runs = []
    for seed in ("1", "2"):
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONHASHSEED": seed,
               "STAGECRAFT_CACHE_DIR": str(tmp_path)}
        run = subprocess.run([sys.executable, script, "--quick", "--cache-keys"], env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        runs.append([line for line in run.stdout.splitlines() if line.startswith("KEY ")])
    library = [line for line in runs[0] if " gen_" not in line]
    assert len(library) > 50 and any("_tree_kernel.<locals>.reduce" in k for k in library)
    assert runs[0] == runs[1]


def test_eager_kernels_run_from_memory_when_the_cache_folder_is_refused(monkeypatch, tmp_path,
                                                                        caplog):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)   # others could plant code there: stagecraft refuses the folder
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(shared))
    monkeypatch.setattr(kernel_module, "_IN_MEMORY_WARNED", [])
    with caplog.at_level("WARNING", logger="stagecraft"):
        kernel = elementwise._kernel.__wrapped__("subtract", (dt.int16, dt.int16), dt.int16,
                                                  ("same", "scalar"), True)
        again = elementwise._kernel.__wrapped__("subtract", (dt.int16, dt.int16), dt.int16,
                                                 ("same", "scalar"), True)
    assert again is kernel and kernel.py_func.__code__.co_filename.startswith("<stagecraft-")
    out = memory.to_device(np.zeros(2, np.int16))
    kernel[1, 2](out, memory.to_device(np.int16([5, 7])), memory.to_device(np.int16([2])))
    np.testing.assert_array_equal(memory.to_host(out), [3, 5])
    assert [r.getMessage().split(":")[:2] for r in caplog.records] == [
        ["stagecraft", " GPU kernels are compiled in every process, not cached on disk"]]
    assert not list(shared.iterdir())
    with pytest.raises(PermissionError):   # staged code, as on the CPU, names the folder
        kernel_module.load("\n".join(kernel_module.prelude()), "staged")
