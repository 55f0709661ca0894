"""The disk cache of generated numba source: in-process reuse, reuse by a new process
(numba's own cache hit), repair of corrupted files, and concurrent compilation."""
from __future__ import annotations

import json
import logging
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from stagecraft.backends import numba_cache

SOURCE = textwrap.dedent('''\
    import numpy as np

    def total(x):
        # node 1 reduce_sum
        s = np.float64(0.0)
        for i in range(x.size):
            s += x[i]
        return s
''')

# Loads SOURCE in a fresh process and prints the result, the cache hits/misses, and timings.
CHILD = textwrap.dedent('''
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    from stagecraft.backends import numba_cache
    source, marker = sys.argv[1], sys.argv[2]
    f = numba_cache.load(source, "total", extra=marker)
    value = float(f(np.arange(10.0)))
    print(json.dumps({"value": value, "hits": sum(f.stats.cache_hits.values()),
                      "misses": sum(f.stats.cache_misses.values()),
                      "seconds": time.perf_counter() - t0}))
''')


@pytest.fixture
def cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(folder))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)  # numba's files go to __pycache__
    return folder


def _child(marker: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, SOURCE, marker],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _nb_files(folder: pathlib.Path, suffix: str) -> list[pathlib.Path]:
    return sorted((folder / "__pycache__").glob(f"gen_*{suffix}"))


def test_cache_dir_defaults(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STAGECRAFT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert numba_cache.cache_dir() == tmp_path / "xdg" / "stagecraft"
    assert (tmp_path / "xdg" / "stagecraft").is_dir()
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(tmp_path / "own"))
    assert numba_cache.cache_dir() == tmp_path / "own" and (tmp_path / "own").is_dir()


def test_source_key_covers_inputs() -> None:
    k = numba_cache.source_key(SOURCE)
    assert k == numba_cache.source_key(SOURCE) and len(k) == 64
    others = {numba_cache.source_key(SOURCE + "\n"), numba_cache.source_key(SOURCE, "lib2"),
              numba_cache.source_key(SOURCE, njit_options={"fastmath": True}),
              numba_cache.source_key(SOURCE, njit_options={"nogil": False})}
    assert k not in others and len(others) == 4
    # Passing a default explicitly is the same compiled function.
    assert numba_cache.source_key(SOURCE, njit_options={"nogil": True}) == k


def test_load_compiles_and_reuses_in_process(cache: pathlib.Path) -> None:
    f = numba_cache.load(SOURCE, "total")
    x = np.random.default_rng(0).standard_normal(100)
    assert f(x) == pytest.approx(x.sum())
    assert numba_cache.load(SOURCE, "total") is f
    assert numba_cache.load(SOURCE, "total", extra="other-lib") is not f
    path = cache / f"gen_{numba_cache.source_key(SOURCE)}.py"
    assert f.__stagecraft_path__ == path.resolve() and path.read_text() == SOURCE
    assert f.__stagecraft_source__ == SOURCE
    module = f.py_func.__module__
    assert module in sys.modules and module.startswith("stagecraft_gen_")
    assert f.targetoptions["nogil"] and f.targetoptions["error_model"] == "numpy"
    assert _nb_files(cache, ".nbi"), "numba wrote no cache index"
    assert not list(cache.glob(".*.tmp")), "temporary files left behind"


def test_error_model_numpy_and_options(cache: pathlib.Path) -> None:
    src = "def div(a, b):\n    return a / b\n"
    f = numba_cache.load(src, "div")
    assert np.isinf(f(1.0, 0.0))  # error_model="numpy": no ZeroDivisionError
    g = numba_cache.load(src, "div", njit_options={"error_model": "python"})
    with pytest.raises(ZeroDivisionError):
        g(1.0, 0.0)


def test_linecache_shows_generated_source(cache: pathlib.Path) -> None:
    import linecache
    f = numba_cache.load(SOURCE, "total")
    assert "# node 1 reduce_sum" in linecache.getline(str(f.__stagecraft_path__), 4)


def test_bad_entry_and_bad_source(cache: pathlib.Path) -> None:
    with pytest.raises(AttributeError, match="no function 'nope'"):
        numba_cache.load(SOURCE, "nope")
    with pytest.raises(SyntaxError):
        numba_cache.load("def broken(:\n", "broken")


def test_new_process_loads_from_numba_cache(cache: pathlib.Path) -> None:
    first = _result(_child("proc"))
    second = _result(_child("proc"))
    assert first["value"] == second["value"] == 45.0
    assert (first["hits"], first["misses"]) == (0, 1)
    # numba loaded the machine code instead of compiling (deterministic, unlike wall-clock
    # times, which overlap when the machine is busy: typically ~1.0 s cold vs ~0.6 s here).
    assert (second["hits"], second["misses"]) == (1, 0), (first, second)


def test_corrupted_source_file_is_rebuilt(cache: pathlib.Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    path = cache / f"gen_{numba_cache.source_key(SOURCE, 'corrupt')}.py"
    cache.mkdir(parents=True)
    path.write_text(SOURCE.replace("s += x[i]", "s -= x[i]"))  # same name, wrong content
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        f = numba_cache.load(SOURCE, "total", extra="corrupt")
    assert f(np.arange(10.0)) == 45.0
    assert path.read_text() == SOURCE
    assert any(str(path) in r.getMessage() and "differs" in r.getMessage() for r in caplog.records)


def test_unreadable_source_file_is_rebuilt(cache: pathlib.Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    path = cache / f"gen_{numba_cache.source_key(SOURCE, 'binary')}.py"
    cache.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe\x00garbage")
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        f = numba_cache.load(SOURCE, "total", extra="binary")
    assert f(np.arange(4.0)) == 6.0 and path.read_text() == SOURCE
    assert any(str(path) in r.getMessage() for r in caplog.records)


def test_identical_file_is_not_rewritten(cache: pathlib.Path) -> None:
    f = numba_cache.load(SOURCE, "total", extra="mtime")
    path = f.__stagecraft_path__
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # numba's stamp includes the mtime
    numba_cache._loaded.clear()
    numba_cache.load(SOURCE, "total", extra="mtime")
    assert path.stat().st_mtime_ns == 1_000_000_000


@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
def test_truncated_numba_cache_file_recompiles(cache: pathlib.Path, suffix: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    # Fill numba's cache in a child process, then damage it.
    assert _result(_child(suffix))["misses"] == 1
    (victim,) = _nb_files(cache, suffix)
    victim.write_bytes(victim.read_bytes()[:40])
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        f = numba_cache.load(SOURCE, "total", extra=suffix)
        assert f(np.arange(10.0)) == 45.0
    assert any("corrupted" in r.getMessage() for r in caplog.records)
    # The recompiled code was saved again: a new process hits the cache.
    assert _result(_child(suffix))["hits"] == 1


def test_damage_after_load_is_caught_at_call(cache: pathlib.Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    assert _result(_child("late"))["misses"] == 1
    f = numba_cache.load(SOURCE, "total", extra="late")  # files are fine now ...
    (victim,) = _nb_files(cache, ".nbc")
    victim.write_bytes(b"")                                # ... and broken before the call
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        assert f(np.arange(10.0)) == 45.0
    assert sum("corrupted" in r.getMessage() for r in caplog.records) == 1


def test_concurrent_processes_both_succeed(cache: pathlib.Path) -> None:
    procs = [_child("race") for _ in range(2)]
    results = [_result(p) for p in procs]
    assert [r["value"] for r in results] == [45.0, 45.0]
    assert len(list(cache.glob("gen_*.py"))) == 1
    assert not list(cache.glob(".*.tmp"))
    assert _result(_child("race"))["hits"] == 1


def test_clear(cache: pathlib.Path) -> None:
    f = numba_cache.load(SOURCE, "total", extra="clear")
    f(np.arange(3.0))
    assert numba_cache.clear() == 1
    assert not list(cache.glob("gen_*")) and not _nb_files(cache, ".nbi")
    assert numba_cache.load(SOURCE, "total", extra="clear") is not f
