"""``RayTransport``: each task of the job is a Ray actor holding a ``WorkerServer``.

Why Ray: it is an existing, maintained distributed engine that already provides what the
paper's runtime needs (a long-lived process per task with ordered method calls, an object
store that moves NumPy arrays without copies where it can, failure detection, and a local
cluster on one machine for tests), so stagecraft adds only the placement logic above it.

Ray is optional (``pip install "stagecraft[distributed]"``): it is imported when a program
connects, never by ``import stagecraft``. With no address a local cluster is started, bound
to 127.0.0.1 (no dashboard), and shut down again on disconnect; with an address (or when Ray
is already initialized in this process) the existing cluster is used and left running.
"""
from __future__ import annotations

from typing import Any

from stagecraft import backends
from stagecraft.distribute.transport import Pending, Transport, WorkerLost
from stagecraft.distribute.worker import RemoteFailure, WorkerServer

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "NUMBA_NUM_THREADS")
_ray: Any = None
_actor_class: Any = None


def ray_module() -> Any:
    """The ``ray`` package, imported on first use (ImportError says how to install it)."""
    global _ray
    if _ray is None:
        try:
            # lazy import: Ray is an optional extra and takes about a second to import
            import ray
        except ImportError:
            raise ImportError("stagecraft.distribute needs Ray: pip install \"ray>=2.9\" (or "
                              "install stagecraft with the 'distributed' extra).") from None
        _ray = ray
    return _ray


class _Actor:
    """The body of each task's actor: one entry point that delivers requests to its server."""

    def __init__(self, job: str, task: int, compile_mode: str, gpus: bool):
        if compile_mode is not None:  # the actor's own process
            backends.set_compile_mode(compile_mode)
        self.server = WorkerServer(job, task, compile_mode, gpus)

    def handle(self, request: str, args: tuple) -> Any:
        return self.server.handle(request, args)


def _actor() -> Any:
    global _actor_class
    if _actor_class is None:
        _actor_class = ray_module().remote(_Actor)
    return _actor_class


class _RayPending(Pending):
    __slots__ = ("_ref", "_task")

    def __init__(self, ref: Any, task: int):
        self._ref, self._task = ref, task

    def result(self, timeout: float | None) -> Any:
        ray = ray_module()
        try:
            return ray.get(self._ref, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise TimeoutError(f"no reply from task {self._task}") from None
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, RemoteFailure):
                raise RemoteFailure(cause.kind, cause.message, cause.remote_traceback) from None
            raise RemoteFailure(type(cause or e).__name__, str(cause or e), str(e)) from None
        except ray.exceptions.RayActorError as e:
            raise WorkerLost(f"the worker process of task {self._task} died "
                             f"({_first_line(e)})") from None
        except ray.exceptions.RayError as e:  # the reply, its node or Ray itself was lost
            raise WorkerLost(f"Ray lost the reply of task {self._task} ({_first_line(e)})") \
                from None


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


class RayTransport(Transport):
    """Tasks as Ray actors; ``address`` joins an existing cluster (None: start a local one,
    or use the one this process already initialized). ``init_options`` go to ``ray.init``
    when a local cluster is started. Actors reserve ``worker_cpus`` CPUs each (0: Ray's
    default for placing an actor, so that tests on a small machine never wait for cores) and
    ``worker_gpus`` GPUs (more than 0: the task offers its GPU:0)."""

    def __init__(self, address: str | None = None, worker_cpus: float = 0,
                 init_options: dict | None = None, worker_gpus: float = 0):
        self.address = address
        self.worker_cpus = worker_cpus
        self.worker_gpus = worker_gpus
        self.init_options = dict(init_options or {})
        self.actors: list = []
        self.started_ray = False

    def start(self, job: str, num_workers: int, compile_mode: str,
              timeout: float | None = None) -> list[dict]:
        ray = ray_module()
        if not ray.is_initialized():
            if self.address is None:
                options = {"num_cpus": max(num_workers, 1), "include_dashboard": False,
                           "log_to_driver": False, "_node_ip_address": "127.0.0.1",
                           "configure_logging": False}
                options.update(self.init_options)
                ray.init(**options)
            else:
                ray.init(address=self.address, log_to_driver=False)
            self.started_ray = True
        options: dict = {"num_cpus": self.worker_cpus, "num_gpus": self.worker_gpus}
        if self.worker_cpus >= 1:
            # As many BLAS / OpenMP / Numba threads as reserved cores: a pool larger than its
            # share of the machine spins and slows every worker down.
            n = str(int(self.worker_cpus))
            options["runtime_env"] = {"env_vars": {k: n for k in _THREAD_VARIABLES}}
        actor = _actor().options(**options)
        self.actors = [actor.remote(job, i, compile_mode, self.worker_gpus > 0)
                       for i in range(num_workers)]
        return [self.submit(i, "hello").result(timeout) for i in range(num_workers)]

    def submit(self, task: int, request: str, *args: Any) -> Pending:
        return _RayPending(self.actors[task].handle.remote(request, args), task)

    def kill(self, task: int) -> None:
        ray_module().kill(self.actors[task], no_restart=True)

    def shutdown(self) -> None:
        ray = ray_module()
        for a in self.actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # already dead or Ray already shut down: nothing to end
                pass
        self.actors = []
        if self.started_ray and ray.is_initialized():
            ray.shutdown()
        self.started_ray = False
