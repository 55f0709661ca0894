"""Transports: how requests reach the workers of a cluster. ``Transport`` is what the client
(``stagecraft.distribute.cluster``) needs; ``InProcessTransport`` runs the workers' servers in
this process (fast tests of everything above the wire), and ``ray_transport.RayTransport``
runs each task as a Ray actor.

A request is submitted without waiting (``submit`` returns a ``Pending``); requests to one
task run in the order they were submitted. ``Pending.result(timeout)`` waits and returns the
reply, or raises ``RemoteFailure`` (the worker raised), ``WorkerLost`` (the worker's process
is gone) or ``TimeoutError``.
"""
from __future__ import annotations

import abc
import contextvars
from typing import Any

from stagecraft.distribute.worker import RemoteFailure, WorkerServer, failure_of


class WorkerLost(Exception):
    """The worker's process died or cannot be reached; the message says why."""


class Pending(abc.ABC):
    """A submitted request's reply, to be waited for."""

    @abc.abstractmethod
    def result(self, timeout: float | None) -> Any:
        """The reply (waiting at most ``timeout`` seconds; None: forever)."""


class Transport(abc.ABC):
    """Starts and reaches the tasks of one job."""

    @abc.abstractmethod
    def start(self, job: str, num_workers: int, compile_mode: str,
              timeout: float | None) -> list[dict]:
        """Starts one worker per task and returns each one's ``hello()`` (waiting at most
        ``timeout`` seconds for each)."""

    @abc.abstractmethod
    def submit(self, task: int, request: str, *args: Any) -> Pending:
        """Sends ``request`` (a ``WorkerServer`` method name) to ``task``."""

    @abc.abstractmethod
    def kill(self, task: int) -> None:
        """Ends one worker's process at once (tests; recovering from a hung worker)."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Ends every worker (and what the transport started for them)."""


class _Done(Pending):
    __slots__ = ("_value", "_error")

    def __init__(self, value: Any, error: BaseException | None):
        self._value, self._error = value, error

    def result(self, timeout: float | None) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


class InProcessTransport(Transport):
    """Runs each task's ``WorkerServer`` in this process, synchronously: the fake backend that
    tests the placement, handle and function logic without Ray. A killed task's requests raise
    ``WorkerLost``; ``hang(task)`` makes its requests time out (as a stuck worker would).
    With ``gpus``, every task offers this process's GPU:0 too (the tests use Numba's CUDA
    simulator).

    >>> t = InProcessTransport()
    >>> [h["device"] for h in t.start("worker", 2, "eager")]
    ['/job:worker/replica:0/task:0/device:CPU:0', '/job:worker/replica:0/task:1/device:CPU:0']
    """

    def __init__(self, gpus: bool = False) -> None:
        self.gpus = gpus  # whether workers offer this process's GPU:0 (when it has one)
        self.servers: list[WorkerServer | None] = []
        self.hung: set[int] = set()
        self.requests = 0  # how many requests were submitted (tests count round trips)

    def start(self, job: str, num_workers: int, compile_mode: str,
              timeout: float | None = None) -> list[dict]:
        self.servers = [WorkerServer(job, i, compile_mode, self.gpus)
                        for i in range(num_workers)]
        return [s.hello() for s in self.servers]

    def submit(self, task: int, request: str, *args: Any) -> Pending:
        self.requests += 1
        server = self.servers[task]
        if server is None:
            return _Done(None, WorkerLost(f"the worker process of task {task} died"))
        if task in self.hung:
            return _Done(None, TimeoutError(f"no reply from task {task}"))
        try:
            # In a fresh context: the caller's device scopes and tapes are not the worker's.
            return _Done(contextvars.Context().run(server.handle, request, args), None)
        except RemoteFailure as e:
            return _Done(None, e)
        except Exception as e:  # a bug in the server itself: still reported as the worker's
            return _Done(None, RemoteFailure(*failure_of(e)))

    def hang(self, task: int) -> None:
        """Makes every later request to ``task`` time out."""
        self.hung.add(task)

    def kill(self, task: int) -> None:
        self.servers[task] = None

    def shutdown(self) -> None:
        self.servers = []
