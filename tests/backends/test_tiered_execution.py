"""Tiered execution: in "background" mode a new function answers at once from the reference
interpreter, switches to the compiled code once the worker has compiled it, and stays on the
interpreter (with a warning) when the background compile fails; "eager" never compiles;
``jit_compile=True`` compiles before it runs; slow compiles log their start and end."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import stagecraft as tf
from stagecraft import backends
from stagecraft.backends import compile_worker, reference
from stagecraft.backends.numba_cpu import tiered

pytestmark = pytest.mark.backend("numba")


@pytest.fixture
def mode():
    saved = backends.compile_mode()

    def set_mode(m):
        tf.config.set_compile_mode(m)
    yield set_mode
    tf.config.set_compile_mode(saved)


def staged():
    @tf.function(backend="numba")
    def f(x):
        total = tf.constant(0.0)
        for i in tf.range(4):
            if tf.reduce_max(x) > 0.0:
                total += tf.reduce_sum(x * tf.cast(i, tf.float32))
        return total
    return f


X = tf.constant(np.linspace(0.1, 1, 50, dtype=np.float32))


def test_background_answers_from_the_interpreter_then_switches(mode):
    mode("background")
    f = staged()
    first = float(f(X))
    exe = f.get_concrete_function(X).executable
    assert isinstance(exe, tiered.TieredExecutable)
    assert exe.compiled is None  # the first call did not wait for the compiler
    assert exe.wait(timeout=300), exe.fallback_reason
    assert float(f(X)) == pytest.approx(first, rel=1e-6)  # ulps apart at most
    assert f.get_concrete_function(X).executable.compiled is exe.compiled


def test_a_failed_background_compile_warns_and_stays_on_the_interpreter(mode, monkeypatch,
                                                                       caplog):
    mode("background")

    def failing(name, *rest):
        job = compile_worker.CompileJob(name)
        job._finish("NumbaError: simulated", 0.1, False)
        return job
    monkeypatch.setattr(compile_worker, "submit", failing)
    f = staged()
    expected = float(f(X))
    exe = f.get_concrete_function(X).executable
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        assert not exe.wait(timeout=30)
        assert float(f(X)) == expected
    (record,) = [r for r in caplog.records if "background failed" in r.getMessage()]
    assert record.getMessage().startswith("stagecraft: 'f': compiling it in the background "
                                          "failed (NumbaError: simulated)")
    assert 'backend="reference"' in record.getMessage()


def test_a_dead_worker_fails_its_jobs_and_a_new_one_starts(mode, tmp_path):
    mode("background")
    job = compile_worker.submit("junk", str(tmp_path / "cache"), "x = 1\n", "nothing", "", {},
                                [])
    assert job.wait(120) and "AttributeError" in job.error  # a job's error is reported
    worker = compile_worker._worker
    worker.process.kill()
    worker.process.wait()
    f = staged()
    f(X)
    exe = f.get_concrete_function(X).executable
    assert exe.wait(timeout=300), exe.fallback_reason  # compiled by a new worker
    assert compile_worker._worker is not worker


def test_eager_mode_and_jit_compile(mode):
    mode("eager")
    f = staged()
    f(X)
    assert type(f.get_concrete_function(X).executable).__module__ == reference.__name__
    mode("background")
    g = tf.function(staged().python_function, jit_compile=True, backend="numba")
    g(X)
    assert isinstance(g.get_concrete_function(X).executable, tiered.SyncExecutable)


def test_a_slow_compile_logs_its_start_and_end(caplog):
    from stagecraft.ir.graph import GraphBuilder
    from stagecraft.ir import dtypes
    from stagecraft.ir.types import TensorType
    b = GraphBuilder("slow")
    x = b.param(TensorType(dtypes.float32, (2,)), "x")
    graph = b.build([x])
    with caplog.at_level(logging.INFO, logger="stagecraft"):
        progress = tiered.Progress("slow", graph, "with Numba", after=0.0)
        progress._timer.join()
        progress.finish(cache_hit=False, seconds=2.5)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["stagecraft: compiling 'slow' (0 equations) with Numba...",
                     "stagecraft: compiled 'slow' (0 equations) in 2.5 s (not cached before)"]
