"""A compile worker: one process that compiles generated Numba modules into the disk
cache while the main process goes on (Numba's compiler holds the GIL, so a thread would stall
the main program). The main process later loads the machine code from the cache (a fraction of
a second). The worker ends with the main process (a compile that nobody waits for is
abandoned; what was already written to the cache stays); a worker that dies on its own fails its
pending jobs (they then say why) and is restarted by the next job."""
from __future__ import annotations

import itertools
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from typing import Any

__all__ = ["CompileJob", "submit", "describe_argument"]

_log = logging.getLogger("stagecraft")


class CompileJob:
    """The handle of a job: ``done()``; then ``error`` (None on success), ``seconds`` and
    ``cache_hit``."""

    def __init__(self, name: str):
        self.name = name
        self.error: str | None = None
        self.seconds = 0.0
        self.cache_hit = False
        self._event = threading.Event()

    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def _finish(self, error: str | None, seconds: float, cache_hit: bool) -> None:
        self.error, self.seconds, self.cache_hit = error, seconds, cache_hit
        self._event.set()


def describe_argument(value: Any) -> tuple:
    """What Numba's type of an argument depends on, without importing Numba: ``("array",
    dtype name, rank, readonly)`` for an array (C-contiguous: the wrapper copies others),
    ``("scalar", dtype name)`` for a NumPy scalar, ``("int",)`` for a Python int."""
    import numpy as np
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.name, value.ndim, not value.flags.writeable)
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.name)
    if isinstance(value, (bool, int)):
        return ("int",)
    raise TypeError(f"cannot describe a compiled function's argument of type "
                    f"{type(value).__name__}")


def numba_signature(described: list[tuple]) -> tuple:
    """The Numba argument types of ``describe_argument``'s descriptions."""
    import numba
    import numpy as np
    types = []
    for d in described:
        if d[0] == "array":
            types.append(numba.types.Array(numba.from_dtype(np.dtype(d[1])), d[2], "C",
                                           readonly=d[3]))
        elif d[0] == "scalar":
            types.append(numba.from_dtype(np.dtype(d[1])))
        else:
            types.append(numba.types.int64)
    return tuple(types)


def _compile(job: tuple) -> tuple:
    """Runs one job in the worker: (id, error or None, seconds, cache hit)."""
    job_id, cache_dir, source, entry, extra, options, described = job
    start = time.perf_counter()
    try:
        os.environ["STAGECRAFT_CACHE_DIR"] = cache_dir
        from stagecraft.backends import numba_cache
        from stagecraft.backends.numba_cpu import linking
        dispatcher = numba_cache.load(source, entry, extra=extra, njit_options=options,
                                      link=linking.link)
        dispatcher.compile(numba_signature(described))
        hits = sum(dispatcher.stats.cache_hits.values())
        return job_id, None, time.perf_counter() - start, hits > 0
    except BaseException as e:  # noqa: BLE001 - reported to the main process
        first = str(e).splitlines()[0] if str(e) else ""
        return job_id, f"{type(e).__name__}: {first}", time.perf_counter() - start, False


def _send(stream: Any, message: Any) -> None:
    data = pickle.dumps(message)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _receive(stream: Any) -> Any:
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError("the other end closed the pipe")
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(size))  # our own process's message, never a file


def _exit_with_parent(parent: int) -> None:
    """Ends this worker when the main process is gone (its pid no longer our parent): a
    compile nobody waits for must not keep using a core."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def serve() -> None:
    """The worker process's loop (``python -m stagecraft.backends.compile_worker``): jobs
    on stdin, results on stdout, until stdin closes or the main process exits."""
    jobs, results = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # what compiling prints must not corrupt the result pipe
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    while True:
        try:
            job = _receive(jobs)
        except EOFError:
            return
        try:
            _send(results, _compile(job))
        except (BrokenPipeError, OSError):  # the main process went away meanwhile
            return


class _Worker:
    """The worker process (a plain subprocess: ``multiprocessing``'s spawn would import the
    user's main module again in it) and a thread reading its results."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "stagecraft.backends.compile_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ))
        self.jobs: dict[int, CompileJob] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._listen, name="stagecraft-compile-results",
                         daemon=True).start()

    def submit(self, job_id: int, job: CompileJob, payload: tuple) -> None:
        with self.lock:
            self.jobs[job_id] = job
            try:
                _send(self.process.stdin, (job_id, *payload))
            except (BrokenPipeError, OSError):
                self.jobs.pop(job_id, None)
                job._finish("the compile worker process is gone", 0.0, False)

    def alive(self) -> bool:
        return self.process.poll() is None

    def _listen(self) -> None:
        while True:
            try:
                job_id, error, seconds, hit = _receive(self.process.stdout)
            except (EOFError, OSError, pickle.UnpicklingError):
                code = self.process.wait()
                self._fail_all(f"the compile worker process died (exit code {code})")
                return
            with self.lock:
                job = self.jobs.pop(job_id, None)
            if job is not None:
                job._finish(error, seconds, hit)

    def _fail_all(self, reason: str) -> None:
        with self.lock:
            pending, self.jobs = list(self.jobs.values()), {}
        for job in pending:
            job._finish(reason, 0.0, False)


_worker: _Worker | None = None
_worker_lock = threading.Lock()
_ids = itertools.count()


def submit(name: str, cache_dir: str, source: str, entry: str, extra: str, options: dict,
           described: list[tuple]) -> CompileJob:
    """Queues the compile of ``entry`` of ``source`` for the argument types ``described``;
    the returned job completes when the machine code is in the disk cache."""
    global _worker
    job = CompileJob(name)
    with _worker_lock:
        if _worker is None or not _worker.alive():
            _worker = _Worker()
        worker = _worker
    worker.submit(next(_ids), job, (cache_dir, source, entry, extra, options, described))
    return job


if __name__ == "__main__":
    serve()
