"""Calls through published symbols (backends/numba_links.py): results, errors, the record
file, and a new process that finds it missing or damaged."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from numba import types

from stagecraft.backends import numba_cache, numba_links
from stagecraft.backends.numba_links import decode_type, encode_type, external


@numba.njit
def _scale_rows(x, factor):
    if x.shape[0] > 3:
        raise IndexError("too many rows for this test")
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * factor
    return out, x.sum()


_scale_rows_linked = external(_scale_rows)


@numba.njit
def _caller(x):
    a, s = _scale_rows_linked(x, 2.0)
    b, t = _scale_rows_linked(a, 0.5)
    return a + b, s + t


def test_results_equal_a_direct_call_for_contiguous_and_strided_arrays():
    for x in (np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)[:, ::2]):
        out, total = _caller(x)
        np.testing.assert_array_equal(out, 3 * x)
        assert total == 3 * x.sum()


def test_the_caller_holds_no_copy_of_the_callee():
    x = np.ones((2, 2))
    _caller(x)
    cres = _caller.overloads[(numba.typeof(x),)]
    defined = [f.name for f in cres.library._final_module.functions if not f.is_declaration]
    declared = [f.name for f in cres.library._final_module.functions if f.is_declaration]
    assert not any("_scale_rows" in name for name in defined)
    assert any(name.startswith("stagecraft.") and "_scale_rows" in name for name in declared)


def test_errors_raised_by_the_callee_propagate_to_the_caller():
    with pytest.raises(IndexError, match="^too many rows for this test"):
        _caller(np.ones((4, 2)))


@pytest.mark.parametrize("t", [
    types.Array(types.float32, 2, "C"), types.Array(types.int64, 1, "A"),
    types.Array(types.boolean, 3, "F"), types.Array(types.float64, 2, "C", readonly=True),
    types.float32, types.int8, types.boolean, types.complex128, types.NumberClass(types.int32),
    types.UniTuple(types.int64, 3), types.Tuple((types.int64, types.float32)), types.Tuple(()),
    types.none])
def test_type_codes_round_trip_through_json(t):
    assert decode_type(json.loads(json.dumps(encode_type(t)))) == t


def test_a_bad_type_code_is_a_value_error():
    with pytest.raises(ValueError, match=r"^not a type code: \['array', 'float99'"):
        decode_type(["array", "float99", 2, "C", False])
    with pytest.raises(TypeError, match="^a call through a published symbol cannot take"):
        encode_type(types.unicode_type)


# ------------------------------------------------------------------ generated modules

_SCRIPT = textwrap.dedent("""
    import numpy as np
    import stagecraft as tf

    w = tf.Variable(np.full((4, 4), 0.25, np.float32))

    @tf.function
    def step(x):
        for _ in range(6):  # unrolled: one outlined loop nest, called six times
            x = tf.tanh(tf.matmul(x, w)) * 0.5 + x
        return tf.reduce_sum(x, axis=1)

    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
    c = step.get_concrete_function(x)
    out = c(x)
    stats = c.executable.dispatcher.stats
    print(len(stats.cache_hits), len(stats.cache_misses), repr(out.numpy().tolist()))
""")


def _run(tmp_path: pathlib.Path) -> tuple[list[str], str]:
    path = tmp_path / "links_script.py"
    path.write_text(_SCRIPT)
    env = dict(os.environ, STAGECRAFT_CACHE_DIR=str(tmp_path / "cache"),
               STAGECRAFT_BACKEND="numba")
    done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    hits, misses, out = done.stdout.strip().split(" ", 2)
    return [hits, misses, out], done.stderr


def _record(tmp_path: pathlib.Path) -> pathlib.Path:
    (path,) = (tmp_path / "cache").glob("gen_*.links")
    return path


def test_the_record_lists_every_call_before_its_caller(tmp_path):
    _run(tmp_path)
    calls = [key for key, _ in json.loads(json.loads(_record(tmp_path).read_text())["calls"])]
    assert calls[-1] == "graph_fn"
    assert any(k.startswith("_fused_") for k in calls) and any(k.startswith("K.") for k in calls)
    source = _record(tmp_path).with_suffix(".py").read_text()
    for i, key in enumerate(calls):
        name = key.split(".")[-1]
        body = source.split(f"def {name}(", 1)[1].split("\n\n\n", 1)[0] if key[0] == "_" else ""
        callees = {k for k in calls if k != key and k.split(".")[-1] + "(" in body}
        assert callees <= set(calls[:i]), key


def test_a_new_process_loads_the_cached_code_and_publishes_its_callees_first(tmp_path):
    first, _ = _run(tmp_path)
    second, _ = _run(tmp_path)
    assert first[:2] == ["0", "1"] and second[:2] == ["1", "0"]
    assert first[2] == second[2]


@pytest.mark.parametrize("damage", ["missing", "garbage", "edited"])
def test_a_missing_or_damaged_record_recompiles_instead_of_loading(tmp_path, damage):
    first, _ = _run(tmp_path)
    record = _record(tmp_path)
    if damage == "missing":
        record.unlink()
    elif damage == "garbage":
        record.write_bytes(record.read_bytes()[:40])
    else:  # a valid file whose list no longer matches its checksum
        data = json.loads(record.read_text())
        data["calls"] = json.dumps(json.loads(data["calls"])[-1:])
        record.write_text(json.dumps(data))
    again, stderr = _run(tmp_path)
    assert again[:2] == ["0", "1"] and again[2] == first[2]   # compiled, same result
    if damage != "missing":
        assert stderr.count("is corrupted") == 1, stderr
    third, _ = _run(tmp_path)                                   # and the record is whole again
    assert third[:2] == ["1", "0"] and third[2] == first[2]


def test_the_record_sits_next_to_the_module_and_clear_removes_it(tmp_path):
    _run(tmp_path)
    record = _record(tmp_path)
    assert record.with_suffix(".py").exists()
    numba_cache.clear(tmp_path / "cache")
    assert not record.exists() and not record.with_suffix(".py").exists()


def test_linked_and_plain_loads_of_one_source_are_different_modules(tmp_path, monkeypatch):
    monkeypatch.setenv("STAGECRAFT_CACHE_DIR", str(tmp_path))
    source = "def inc(x):\n    return x + 1\n"
    plain = numba_cache.load(source, "inc")
    linked = numba_cache.load(source, "inc", link=lambda module, links: None)
    # Linked machine code calls published symbols: a plain load must never find its cache.
    assert plain.__stagecraft_path__ != linked.__stagecraft_path__
    assert plain(1) == linked(1) == 2


def test_records_of_two_processes_merge_instead_of_overwriting(tmp_path):
    path = tmp_path / "gen_x.links"
    first, second = numba_links.Links(path), numba_links.Links(path)
    first.record("a", (types.float32,))
    second.record("b", (types.int64,))      # read the file before "a" was listed
    first.record("c", (types.boolean,))
    listed = [key for key, _ in json.loads(json.loads(path.read_text())["calls"])]
    assert listed == ["a", "b", "c"]


def test_the_kernels_kept_inline_exist_and_every_other_kernel_is_linked(tmp_path):
    import types as pytypes

    import stagecraft.backends.numba_cpu.kernels.all as K
    from stagecraft.backends.numba_cpu import linking
    kernels = {n for n, v in vars(K).items() if isinstance(v, numba.core.dispatcher.Dispatcher)}
    assert linking.INLINED <= kernels
    module = pytypes.ModuleType("stagecraft_gen_test")
    module.K = K
    linking.link(module, numba_links.Links(tmp_path / "gen_test.links"))
    linked = {n for n in kernels if module.K.__dict__[n] is not getattr(K, n)}
    assert linked == kernels - linking.INLINED
