"""``ClusterSpec`` (``tf.train.ClusterSpec``): the jobs of a cluster and their tasks'
addresses, as TensorFlow describes a cluster."""
from __future__ import annotations

from typing import Any


class ClusterSpec:
    """A cluster as a map from job names to their tasks' addresses: a list (task i is the
    i-th address) or a dict from task index to address, TensorFlow's two forms. Another
    ``ClusterSpec`` is copied.

    >>> import stagecraft as tf
    >>> spec = tf.train.ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": {3: "p:2222"}})
    >>> spec.jobs, spec.num_tasks("worker"), spec.task_indices("ps")
    (['ps', 'worker'], 2, [3])
    >>> spec.task_address("worker", 1)
    'w1:2222'
    >>> spec.as_dict()["worker"]
    ['w0:2222', 'w1:2222']
    """

    def __init__(self, cluster: Any):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            raise TypeError(f"ClusterSpec: expected a dict from job names to lists or dicts of "
                            f"task addresses (or a ClusterSpec), got {type(cluster).__name__}.")
        self._jobs: dict[str, dict[int, str]] = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not job:
                raise TypeError(f"ClusterSpec: job names must be non-empty strings, got "
                                f"{job!r}.")
            if isinstance(tasks, (list, tuple)):
                tasks = dict(enumerate(tasks))
            if not isinstance(tasks, dict):
                raise TypeError(f"ClusterSpec: the tasks of job '{job}' must be a list or a "
                                f"dict of addresses, got {type(tasks).__name__}.")
            for i, address in tasks.items():
                if not isinstance(i, int) or i < 0 or not isinstance(address, str):
                    raise TypeError(f"ClusterSpec: job '{job}' has task {i!r} -> {address!r}; "
                                    f"task indices are ints >= 0 and addresses strings.")
            self._jobs[job] = dict(sorted(tasks.items()))

    @property
    def jobs(self) -> list[str]:
        """The job names, sorted."""
        return sorted(self._jobs)

    def _job(self, job_name: str) -> dict[int, str]:
        if job_name not in self._jobs:
            raise ValueError(f"No such job in cluster: {job_name!r} (its jobs: {self.jobs}).")
        return self._jobs[job_name]

    def num_tasks(self, job_name: str) -> int:
        """How many tasks the job has."""
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The job's task indices, sorted."""
        return list(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """One task's address (ValueError for an unknown job or task)."""
        tasks = self._job(job_name)
        if task_index not in tasks:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r} (its "
                             f"tasks: {list(tasks)}).")
        return tasks[task_index]

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The addresses indexed by task (None where a dict form skips an index)."""
        tasks = self._job(job_name)
        return [tasks.get(i) for i in range(max(tasks) + 1)] if tasks else []

    def as_dict(self) -> dict:
        """The cluster as a dict: a list per job whose tasks are 0..n-1, else a dict."""
        out: dict = {}
        for job in self.jobs:
            tasks = self._jobs[job]
            out[job] = list(tasks.values()) if list(tasks) == list(range(len(tasks))) \
                else dict(tasks)
        return out

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ClusterSpec) and other._jobs == self._jobs

    def __ne__(self, other: Any) -> bool:
        return not self == other

    __hash__ = None  # mutable-looking, as in TensorFlow

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()!r})"
