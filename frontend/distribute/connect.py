"""Connecting this program to a cluster of workers, and disconnecting (also at exit)."""
from __future__ import annotations

import atexit
from typing import Any

from stagecraft import backends
from stagecraft.devices import device as _device
from stagecraft.eager import remote as _remote
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.distribute.cluster import Cluster
from stagecraft.distribute.cluster_spec import ClusterSpec
from stagecraft.distribute.transport import InProcessTransport, Transport

DEFAULT_TIMEOUT = 60.0
_exit_hook = [False]


def connect(num_workers: int = 1, job: str = "worker", address: str | None = None, *,
            timeout: float | None = DEFAULT_TIMEOUT, transport: str | Transport = "ray",
            worker_cpus: float = 0, worker_gpus: float = 0) -> None:
    """★ Starts ``num_workers`` workers, the tasks ``/job:<job>/replica:0/task:<i>``, and
    connects this program to them: their devices (``/job:worker/replica:0/task:1/device:CPU:0``)
    appear in ``tf.list_devices()`` and ``tf.config.list_logical_devices()``, and ops,
    ``tf.function`` calls and variables under ``tf.device("/job:worker/task:1")`` run there.

    Each task is a Ray actor (``transport="ray"``, the default; Ray is the optional
    ``distributed`` extra). With no ``address`` a local Ray cluster is started on 127.0.0.1
    (or the one this process already initialized is used); with an address
    (``"ray://host:10001"``, ``"auto"``) the tasks are placed on that Ray cluster.
    ``transport="in_process"`` runs the workers inside this process instead (for tests and
    examples without Ray). ``timeout`` bounds every wait for a worker, in seconds (None: no
    limit); a worker that does not answer in time raises ``DeadlineExceededError``, one that
    died ``UnavailableError``. ``worker_cpus`` and ``worker_gpus`` are the CPUs and GPUs Ray
    reserves per task; with ``worker_gpus`` each task offers its GPU:0
    (``/job:worker/replica:0/task:1/device:GPU:0``), where ops and functions run on
    stagecraft's GPU backend (``transport="in_process"``: this process's GPU).
    Connecting again first disconnects from the current cluster.

    >>> import stagecraft as tf
    >>> tf.distribute.connect(num_workers=2, transport="in_process")
    >>> tf.list_devices()[-1]
    '/job:worker/replica:0/task:1/device:CPU:0'
    >>> with tf.device("/job:worker/task:1"):
    ...     y = tf.constant([1.0, 2.0]) * 3.0
    >>> y.device, y.numpy().tolist()
    ('/job:worker/replica:0/task:1/device:CPU:0', [3.0, 6.0])
    >>> tf.distribute.disconnect()
    """
    if not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"connect: num_workers must be an int >= 1, got {num_workers!r}.")
    if not isinstance(job, str) or not job or job == "localhost" or "/" in job:
        raise ValueError(f"connect: job must be a name other than 'localhost' (this process) "
                         f"without '/', got {job!r}.")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"connect: timeout must be a positive number of seconds or None, got "
                         f"{timeout!r}.")
    if isinstance(transport, str):
        transport = _make_transport(transport, address, worker_cpus, worker_gpus)
    elif not isinstance(transport, Transport):
        raise TypeError(f"connect: transport must be 'ray', 'in_process' or a Transport, got "
                        f"{type(transport).__name__}.")
    disconnect()
    cluster = Cluster(transport, job, num_workers, backends.compile_mode(), timeout,
                      backends.DEFAULT)
    _remote.RUNTIME[0] = cluster
    _device.REMOTE_DEVICES[:] = cluster.device_names()
    if not _exit_hook[0]:
        atexit.register(disconnect)
        _exit_hook[0] = True


def _make_transport(kind: str, address: str | None, worker_cpus: float,
                    worker_gpus: float) -> Transport:
    if kind == "in_process":
        return InProcessTransport(gpus=worker_gpus > 0)
    if kind == "ray":
        # lazy import: Ray (and its transport) load only when a program connects
        from stagecraft.distribute.ray_transport import RayTransport
        return RayTransport(address, worker_cpus, worker_gpus=worker_gpus)
    raise ValueError(f"connect: unknown transport {kind!r}; use 'ray' or 'in_process'.")


def disconnect() -> None:
    """★ Ends the connected cluster's workers (and the local Ray cluster ``connect`` started);
    their devices leave ``tf.list_devices()``. Remote tensors and variables made before raise
    ``UnavailableError`` when used. Does nothing when not connected; also runs at exit.

    >>> import stagecraft as tf
    >>> tf.distribute.disconnect()
    """
    cluster = _remote.RUNTIME[0]
    _remote.RUNTIME[0] = None
    _device.REMOTE_DEVICES[:] = []
    if cluster is not None:
        cluster.close()


def connected() -> Cluster | None:
    """The connected cluster (``stagecraft.distribute.cluster.Cluster``), or None.

    >>> import stagecraft as tf
    >>> tf.distribute.connected() is None
    True
    """
    return _remote.RUNTIME[0]


def experimental_connect_to_cluster(cluster_spec_or_resolver: Any, job_name: str = "localhost",
                                    task_index: int = 0, protocol: str | None = None,
                                    make_master_device_default: bool = True,
                                    cluster_device_filters: Any = None) -> None:
    """TensorFlow's ``tf.config.experimental_connect_to_cluster``: connects to the tasks of a
    ``tf.train.ClusterSpec`` (or a dict, or an object with ``cluster_spec()``). This program
    is task ``task_index`` of ``job_name`` (``"localhost"``: it is not part of the spec); the
    spec's other job is started as that many Ray actors, with the spec's task numbering. Ray
    places them: a common ``ray://`` address of every task names the Ray cluster to use,
    otherwise a local one is started. ``protocol`` ``"in_process"`` runs the tasks in this
    process (tests). One remote job is supported.

    >>> import stagecraft as tf
    >>> spec = tf.train.ClusterSpec({"worker": ["localhost:2222", "localhost:2223"]})
    >>> tf.config.experimental_connect_to_cluster(spec, protocol="in_process")
    >>> [d.name for d in tf.config.list_logical_devices("CPU")][-1]
    '/job:worker/replica:0/task:1/device:CPU:0'
    >>> tf.distribute.disconnect()
    """
    spec = cluster_spec_or_resolver
    if hasattr(spec, "cluster_spec") and callable(spec.cluster_spec):
        spec = spec.cluster_spec()
    spec = ClusterSpec(spec)
    jobs = [j for j in spec.jobs if j != job_name]
    if len(jobs) != 1:
        raise InvalidArgumentError(
            f"experimental_connect_to_cluster: stagecraft connects to one remote job, but the "
            f"cluster spec has {jobs or 'none'} besides this program's job '{job_name}'. Give "
            f"a spec with one job of workers (e.g. {{'worker': [addresses]}}).")
    job = jobs[0]
    if spec.task_indices(job) != list(range(spec.num_tasks(job))):
        raise InvalidArgumentError(
            f"experimental_connect_to_cluster: the tasks of job '{job}' must be numbered 0.."
            f"{spec.num_tasks(job) - 1}, got {spec.task_indices(job)}.")
    addresses = set(spec.job_tasks(job))
    address = addresses.pop() if len(addresses) == 1 else None
    address = address if address is not None and address.startswith("ray://") else None
    connect(spec.num_tasks(job), job, address,
            transport="in_process" if protocol == "in_process" else "ray")
