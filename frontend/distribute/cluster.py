"""``Cluster``: the connected runtime (``stagecraft.eager.remote.Runtime``) that runs eager ops,
copies, graph functions and variables on the tasks of a job, over any ``Transport``.

Remote tensors are handles (``RemoteHandle``): an id on one task, with the dtype and shape the
main program already knows. Ops are dispatched without waiting when shape inference gives
their result shapes (else they wait for the reply, which carries them); requests to one task
run in order, so a later op may use a result before it is computed. Reading a value waits:
small results come back in the reply of the op that computed them (one round trip for op and
read), larger ones are fetched. A failed op's results carry its error to whoever reads or
uses them; a dead or silent worker raises ``UnavailableError`` / ``DeadlineExceededError``
naming its device.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Sequence

import numpy as np

from stagecraft.devices.device import get_soft_device_placement
from stagecraft.devices.device_spec import DeviceSpec
from stagecraft.eager.locations import user_location
from stagecraft.eager.remote import RemoteTensor, Runtime, wrap_remote
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir import errors as _errors
from stagecraft.ir import serialize
from stagecraft.ir.types import TensorType
from stagecraft.state.variables import Variable
from stagecraft.distribute import wire
from stagecraft.distribute.transport import Transport, WorkerLost
from stagecraft.distribute.worker import RemoteFailure

_BUILTIN_ERRORS = {"ValueError": ValueError, "TypeError": TypeError,
                   "IndexError": IndexError, "ZeroDivisionError": ZeroDivisionError}


class RemoteHandle:
    """A tensor held by a task: its id there, dtype (NumPy) and shape, and how to get its
    value (the reply of the request that computes it, or a fetch)."""

    __slots__ = ("cluster", "device", "task", "id", "dtype", "shape", "pending", "slot",
                 "value", "unsent", "__weakref__")

    def __init__(self, cluster: "Cluster", device: str, dtype: np.dtype, shape: tuple):
        self.cluster, self.device = cluster, device
        self.task = cluster.task_of(device)
        self.id = next(cluster.ids)
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)
        self.pending: Any = None  # the Pending reply of the request that computes it
        self.slot = 0             # which result of that request it is
        self.value: np.ndarray | None = None  # the value, once known here
        self.unsent = False       # a copy not yet sent: the next request to its task carries it

    def fetch(self) -> np.ndarray:
        """The value (waits for the ops computing it; raises their error if they failed)."""
        if self.value is None:
            self.value = self.cluster.fetch(self)
        return self.value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.fetch()
        return a if dtype is None else a.astype(dtype)

    def __int__(self) -> int:  # (code that reads an eager scalar's ``_value`` as a number)
        return int(self.fetch())

    __index__ = __int__

    def __del__(self) -> None:
        cluster = self.cluster
        if not cluster.closed and not self.unsent:
            cluster.garbage[self.task].append(self.id)  # freed with the next request


class VariableHandle:
    """A variable held by a task (``RemoteVariable._value``)."""

    __slots__ = ("cluster", "device", "task", "id", "dtype", "shape")

    def __init__(self, cluster: "Cluster", device: str, dtype: np.dtype, shape: tuple):
        self.cluster, self.device, self.id = cluster, device, next(cluster.ids)
        self.task = cluster.task_of(device)
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.cluster.variable_value(self)
        return a if dtype is None else a.astype(dtype)

    def __del__(self) -> None:
        cluster = self.cluster
        if not cluster.closed:
            cluster.dead_variables[self.task].append(self.id)


class Cluster(Runtime):
    """The tasks of one job reached through ``transport`` (see the module docstring).
    ``timeout`` bounds every wait for a worker, in seconds (None: no limit)."""

    def __init__(self, transport: Transport, job: str, num_workers: int, compile_mode: str,
                 timeout: float | None, backend: str):
        self.transport, self.job, self.timeout, self.backend = transport, job, timeout, backend
        self.closed = False
        self.ids = itertools.count(1)
        self.lock = threading.RLock()
        try:
            hellos = transport.start(job, num_workers, compile_mode, timeout)
        except (WorkerLost, TimeoutError, RemoteFailure) as e:
            transport.shutdown()
            raise _errors.UnavailableError(f"Could not start the {num_workers} worker(s) of job "
                                           f"'{job}': {e}") from None
        self.tasks = [h["device"] for h in hellos]  # each task's CPU:0, which names it
        self.devices = [d for h in hellos for d in h["devices"]]
        self._task_of = {d: i for i, h in enumerate(hellos) for d in h["devices"]}
        self.specs = [DeviceSpec.from_string(d) for d in self.devices]
        self.resolved: dict[tuple, str] = {}  # (spec, soft placement) -> device (resolve's)
        self.lost: dict[int, str] = {}  # task -> why it is unavailable
        self.garbage: list[list[int]] = [[] for _ in self.tasks]
        self.dead_variables: list[list[int]] = [[] for _ in self.tasks]
        self.registered: list[set[tuple]] = [set() for _ in self.tasks]  # (digest, kind)
        self.shipped: "weakref.WeakKeyDictionary[Any, tuple]" = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ names
    def device_names(self) -> list[str]:
        return list(self.devices)

    def resolve(self, spec: DeviceSpec, what: str) -> str:
        """The task device ``spec`` names. A device the task lacks (a GPU, CPU:1) means its
        CPU:0 with soft placement on (TensorFlow's rule), else InvalidArgumentError."""
        key = (spec, get_soft_device_placement())
        name = self.resolved.get(key)
        if name is None:
            name = self.resolved[key] = self._resolve(spec, what, key[1])
        return name

    def _resolve(self, spec: DeviceSpec, what: str, soft: bool) -> str:
        tasks = {full.task for full in self.specs if spec.job in (None, full.job)
                 and spec.replica in (None, 0) and spec.task in (None, full.task)}
        if len(tasks) == 1:
            (task,) = tasks
            kind = spec.device_type or "CPU"
            for full in self.specs:
                if full.task == task and full.device_type == kind and \
                        spec.device_index in (None, 0):
                    return full.to_string()
            if soft:
                return self.tasks[task]
        why = ("it names no task and the job has several: add /task:<i>" if len(tasks) > 1
               else "the task has no such device" if tasks else "no such task")
        raise _errors.InvalidArgumentError(
            f"Could not satisfy device specification '{spec.to_string()}' for {what}: {why}. "
            f"The connected cluster has the devices [{', '.join(self.devices)}] (and this "
            f"process's /job:localhost devices); e.g. tf.device('{self.devices[0]}').\n"
            f"  at {user_location()}")

    def task_of(self, device: str) -> int:
        return self._task_of[device]

    # ------------------------------------------------------------------ requests
    def submit(self, task: int, request: str, *args: Any) -> Any:
        """Sends a request to ``task`` (UnavailableError at once if the task is lost)."""
        self._check(task)
        return self.transport.submit(task, request, *args)

    def wait(self, task: int, pending: Any) -> Any:
        """A request's reply; transport errors become stagecraft's, naming the device."""
        try:
            return pending.result(self.timeout)
        except RemoteFailure as e:
            raise self.error(task, e) from None
        except WorkerLost as e:
            self.lost[task] = str(e)
            raise self._unavailable(task) from None
        except TimeoutError:
            raise _errors.DeadlineExceededError(
                f"No reply from {self.tasks[task]} within {self.timeout} s: the worker is "
                f"busy or stuck. Raise the limit with tf.distribute.connect(..., timeout=...), "
                f"or disconnect (tf.distribute.disconnect()) and connect again.\n"
                f"  at {user_location()}") from None

    def _check(self, task: int) -> None:
        if self.closed:
            raise _errors.UnavailableError(
                f"{self.tasks[task]} belongs to a cluster this program disconnected from: "
                f"its tensors and variables are gone. Fetch values with .numpy() before "
                f"disconnecting.\n  at {user_location()}")
        if task in self.lost:
            raise self._unavailable(task)

    def _unavailable(self, task: int) -> _errors.UnavailableError:
        return _errors.UnavailableError(
            f"The worker {self.tasks[task]} is unavailable: {self.lost[task]}. Its tensors "
            f"and variables are lost. Disconnect (tf.distribute.disconnect()) and connect "
            f"again to start new workers.\n  at {user_location()}")

    def error(self, task: int, failure: RemoteFailure) -> Exception:
        """The main program's exception for an error raised on ``task``: the same class
        (stagecraft's errors, ValueError, TypeError...; else InternalError), naming the device
        and quoting the remote traceback."""
        cls = getattr(_errors, failure.kind, None) or _BUILTIN_ERRORS.get(failure.kind)
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            cls = _errors.InternalError
        tb = failure.remote_traceback.strip()
        text = (f"{failure.kind}: {failure.message}" if cls is _errors.InternalError
                else failure.message)
        where = f"\n  at {user_location()}"
        if tb:
            text += f"\n\nRemote traceback (on {self.tasks[task]}):\n{tb}"
        return cls(f"on {self.tasks[task]}: {text}{where}")

    def _free_lists(self, task: int) -> list:
        """The ids of ``task``'s tensors that died here, to send with the next request (and
        its dead variables, sent now without waiting)."""
        dead = self.dead_variables[task]
        if dead:
            self.dead_variables[task] = []
            self.transport.submit(task, "free_variables", dead)
        garbage = self.garbage[task]
        if not garbage:
            return []
        self.garbage[task] = []
        return garbage

    # ------------------------------------------------------------------ values
    def fetch(self, handle: RemoteHandle) -> np.ndarray:
        with self.lock:
            if handle.unsent:
                return handle.value
            task = handle.task
            self._check(task)
            if handle.pending is not None:
                reply = self.wait(task, handle.pending)
                if reply[0] == "error":
                    raise self.error(task, RemoteFailure(*reply[1]))
                dtype, shape, small = reply[1][handle.slot]
                if small is not None:
                    return wire.unpack((dtype, shape, small), "a reply")
            pending = self.submit(task, "fetch", [handle.id], self._free_lists(task))
            return self.wait(task, pending)[0]

    def argument(self, x: Any, task: int) -> tuple:
        """How tensor ``x`` (local, GPU or remote) is passed to a request for ``task``. A
        tensor of another task is fetched here and sent on: a worker fetching it from that
        task itself could deadlock two tasks exchanging tensors, as each task runs its
        requests one at a time, in order."""
        if type(x) is RemoteTensor:
            h = x._value
            if h.task == task and h.cluster is self:
                if h.unsent:
                    h.unsent = False
                    return "p", h.id, wire.pack(h.value)
                return "h", h.id
            return "v", wire.pack(h.fetch())
        return "v", wire.pack(x._host() if isinstance(x, Tensor) else x)

    def transfer(self, x: Any, target: str) -> Any:
        value = np.asarray(x._host())  # a local copy (fetched when x is remote)
        if target not in self._task_of:
            return wrap(value)  # to this process's CPU (placement moves it on to a GPU)
        with self.lock:
            task = self.task_of(target)
            self._check(task)
            h = RemoteHandle(self, target, value.dtype, value.shape)
            h.value, h.unsent = value, True  # sent with the first request that uses it
            return wrap_remote(h)

    # ------------------------------------------------------------------ eager ops
    def run_op(self, op: Any, inputs: Sequence[Any], attrs: dict, target: str) -> tuple:
        task = self.task_of(target)
        in_types = [TensorType(x.dtype, x._value.shape) for x in inputs]
        try:
            out_types = op.infer(in_types, **attrs)
        except _errors.InvalidArgumentError as e:
            raise type(e)(f"{e}\n  at {user_location()}") from None
        with self.lock:
            self._check(task)
            text, arrays = wire.encode_op(op, attrs, in_types, out_types)
            args = [self.argument(x, task) for x in inputs]
            return self._dispatch(target, "op", (text, arrays, args), out_types)[0]

    def kind(self, device: str) -> str:
        """A task device's type: "CPU" or "GPU"."""
        return "GPU" if device.endswith("/device:GPU:0") else "CPU"

    def _dispatch(self, device: str, request: str, args: tuple, out_types: Sequence[Any]
                  ) -> tuple:
        """Sends an op or call for ``device`` whose results have ``out_types``; returns their
        tensors and the request's Pending. Known shapes: without waiting; else after the
        reply, which gives them."""
        task = self.task_of(device)
        known = all(t.shape is not None and None not in t.shape for t in out_types)
        handles = [RemoteHandle(self, device, t.dtype.np, t.shape if known else ())
                   for t in out_types]
        pending = self.submit(task, request, *args, [h.id for h in handles],
                              self._free_lists(task), self.kind(device))
        for i, h in enumerate(handles):
            h.pending, h.slot = pending, i
        if not known:
            reply = self.wait(task, pending)
            if reply[0] == "error":
                raise self.error(task, RemoteFailure(*reply[1]))
            for h, (dtype, shape, _) in zip(handles, reply[1]):
                h.dtype, h.shape = np.dtype(dtype), tuple(shape)
        return tuple(wrap_remote(h) for h in handles), pending

    # ------------------------------------------------------------------ functions
    def _shipment(self, concrete: Any) -> tuple:
        """(digest, document, arrays, backend) of a concrete function's graph (made once)."""
        entry = self.shipped.get(concrete)
        if entry is None:
            try:
                text, arrays = serialize.dumps(concrete.graph)
            except ValueError as e:
                raise _errors.InvalidArgumentError(
                    f"{concrete.name}: cannot run on a remote device: its graph cannot be "
                    f"sent to a worker ({e})\n  at {user_location()}") from None
            entry = (wire.graph_digest(text, arrays), text, arrays,
                     concrete._backend_name or self.backend)
            self.shipped[concrete] = entry
        return entry

    def call_function(self, concrete: Any, args: Sequence[Any], target: str) -> list:
        task = self.task_of(target)
        digest, text, arrays, backend = self._shipment(concrete)
        with self.lock:
            self._check(task)
            kind = self.kind(target)
            if (digest, kind) not in self.registered[task]:
                self.submit(task, "register", digest, text, arrays, backend, kind)
                self.registered[task].add((digest, kind))
            wired, local_vars = [], []
            for i, a in enumerate(args):
                if isinstance(a, Variable):
                    wired.append(self._variable_argument(a, target, concrete.name))
                    if wired[-1][0] == "lv":
                        local_vars.append((i, a))
                else:
                    wired.append(self.argument(a, task))
            out_types = [r.type for r in concrete.graph.results]
            outs, pending = self._dispatch(target, "call", (digest, wired), out_types)
            if local_vars:  # write back what the call assigned to this process's variables
                reply = self.wait(task, pending)
                if reply[0] == "error":
                    raise self.error(task, RemoteFailure(*reply[1]))
                for i, value in reply[2]:
                    args[i].assign(value, read_value=False)
            return list(outs)

    def _variable_argument(self, v: Variable, target: str, name: str) -> tuple:
        handle = v._value
        if isinstance(handle, VariableHandle):
            if handle.cluster is self and handle.device == target:
                return "var", handle.id
            raise _errors.InvalidArgumentError(
                f"{name}: the variable '{v.name}' lives on {v.device}, but the function runs "
                f"on {target}. Call it under tf.device('{v.device}'), or pass the "
                f"variable's value as an argument.\n  at {user_location()}")
        return "lv", wire.pack(v._host())

    # ------------------------------------------------------------------ variables
    def new_variable(self, initial: Any, target: str, name: str, trainable: bool
                     ) -> VariableHandle:
        task = self.task_of(target)
        with self.lock:
            self._check(task)
            handle = VariableHandle(self, target, initial.dtype.np,
                                    tuple(initial.shape.as_list()))
            arg = self.argument(initial, task)
            self.wait(task, self.submit(task, "variable", handle.id, "new", arg, None, name,
                                        trainable, self._free_lists(task), self.kind(target)))
            return handle

    def read_variable(self, handle: VariableHandle, shape: tuple) -> RemoteTensor:
        with self.lock:
            self._check(handle.task)
            out = RemoteHandle(self, handle.device, handle.dtype, shape)
            # (not waited for: reading the tensor later fetches it, after this request)
            self.submit(handle.task, "variable", handle.id, "read", None, out.id)
            return wrap_remote(out)

    def update_variable(self, handle: VariableHandle, action: str, value: Any) -> None:
        with self.lock:
            self._check(handle.task)
            arg = self.argument(value, handle.task)
            self.wait(handle.task, self.submit(handle.task, "variable", handle.id, action, arg,
                                               None, "", True, self._free_lists(handle.task)))

    def variable_value(self, handle: VariableHandle) -> np.ndarray:
        with self.lock:
            self._check(handle.task)
            return self.wait(handle.task, self.submit(handle.task, "variable", handle.id,
                                                      "fetch"))

    # ------------------------------------------------------------------ ending
    def kill(self, task: int) -> None:
        """Ends one worker's process (tests of failure handling)."""
        self.transport.kill(task)

    def close(self) -> None:
        """Ends every worker; handles made by this cluster raise UnavailableError after."""
        if not self.closed:
            self.closed = True
            self.transport.shutdown()

