"""``WorkerServer``: what one task of a cluster runs, whatever carries the requests to it (a Ray
actor wraps it; the tests' in-process transport calls it directly).

It holds the task's tensors (NumPy arrays by id), variables and compiled functions, and runs
eager ops and graph functions on them with this process's stagecraft. Requests and replies
are plain data (``wire``). A failed op does not raise through the transport (its results
may be awaited by nobody): its outputs are marked failed with the error and its remote
traceback, and whatever reads or uses them later gets that error. Fetching a failed value, a
call of a function never registered, or a malformed request raises ``RemoteFailure``, which
the transport carries back to the main program.
"""
from __future__ import annotations

import contextlib
import os
import traceback
from typing import Any, Sequence

import numpy as np

from stagecraft.backends import get_backend
from stagecraft.devices.device import device as device_scope
from stagecraft.devices.device import has_gpu
from stagecraft.eager.bind import bind
from stagecraft.eager.device_tensor import wrap_device
from stagecraft.eager.placement import to_device_array, to_host_array
from stagecraft.eager.tensor import wrap
from stagecraft.ir import serialize
from stagecraft.ir.passes.manager import optimize
from stagecraft.state.variables import Variable
from stagecraft.distribute import wire


class RemoteFailure(Exception):
    """An error raised on a worker, carried back as data: the exception's class name, its
    message and the worker's traceback (the main program raises its own error from them)."""

    def __init__(self, kind: str, message: str, remote_traceback: str):
        super().__init__(kind, message, remote_traceback)
        self.kind = kind
        self.message = message
        self.remote_traceback = remote_traceback

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def failure_of(error: BaseException) -> tuple:
    """An exception as data: (class name, message, formatted traceback)."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    message = getattr(error, "message", None) or str(error)
    return type(error).__name__, message, text


class WorkerServer:
    """The state and request handlers of one task (``/job:<job>/replica:0/task:<task>``).

    >>> w = WorkerServer("worker", 0, "eager")
    >>> w.hello()["device"]
    '/job:worker/replica:0/task:0/device:CPU:0'
    >>> w.put(1, np.arange(3.0)); w.fetch([1])[0].tolist()
    [0.0, 1.0, 2.0]
    """

    def __init__(self, job: str, task: int, compile_mode: str | None = None,
                 gpus: bool = False):
        self.job, self.task = job, task
        self.device = f"/job:{job}/replica:0/task:{task}/device:CPU:0"
        # The task's device kinds: its CPU, and GPU:0 when asked for and present.
        self.kinds = ["CPU"] + (["GPU"] if gpus and has_gpu() else [])
        # The compile mode is the process's: a worker process (a Ray actor) sets it when it
        # starts (ray_transport); one sharing this process (the in-process transport) must not
        # change the main program's.
        self.compile_mode = compile_mode
        self.tensors: dict[int, Any] = {}    # id -> NumPy array, or device array on GPU:0
        self.failed: dict[int, tuple] = {}   # id -> failure_of(the error that made it)
        self.variables: dict[int, Variable] = {}
        self.functions: dict[tuple, Any] = {}  # (digest, device kind) -> executable

    # The requests the transport may deliver (``handle``'s method names).
    REQUESTS = frozenset({"hello", "put", "fetch", "free", "free_variables", "op",
                          "has_function", "register", "call", "variable"})

    def handle(self, request: str, args: tuple) -> Any:
        """Runs one request; any error leaves as ``RemoteFailure`` (data the transport can
        carry whatever the exception's class)."""
        if request not in self.REQUESTS:
            raise RemoteFailure("InvalidArgumentError", f"unknown request {request!r}.", "")
        try:
            return getattr(self, request)(*args)
        except RemoteFailure:
            raise
        except Exception as e:
            raise RemoteFailure(*failure_of(e)) from None

    # ------------------------------------------------------------------ basics
    def hello(self) -> dict:
        """Who this worker is: its devices, process id and BLAS thread setting."""
        return {"device": self.device, "pid": os.getpid(),
                "devices": [self.device.replace("CPU", kind) for kind in self.kinds],
                "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")
                or os.environ.get("OMP_NUM_THREADS")}

    def put(self, tensor_id: int, value: Any) -> None:
        """Stores ``value`` under ``tensor_id``."""
        self.tensors[tensor_id] = wire.check_array(value, "put")

    def fetch(self, ids: Sequence[int], free: Sequence[int] = ()) -> list:
        """The values of tensors ``ids`` (RemoteFailure for one computed by a failed op)."""
        self.free(free)
        return [_host(self._value(i)) for i in ids]

    def free(self, ids: Sequence[int]) -> None:
        """Forgets tensors the main program no longer refers to."""
        for i in ids:
            self.tensors.pop(i, None)
            self.failed.pop(i, None)

    def free_variables(self, ids: Sequence[int]) -> None:
        for i in ids:
            self.variables.pop(i, None)

    def _value(self, tensor_id: int) -> Any:
        v = self.tensors.get(tensor_id)
        if v is not None:
            return v
        if tensor_id in self.failed:
            raise RemoteFailure(*self.failed[tensor_id])
        raise RemoteFailure("NotFoundError", f"{self.device} holds no tensor #{tensor_id} (it "
                                             f"was freed, or the worker restarted).", "")

    # ---------------------------------------------------------------- arguments
    def _scope(self, kind: str) -> Any:
        """Where work of device ``kind`` runs: this process's GPU:0 or its CPU."""
        if kind not in self.kinds:
            raise RemoteFailure("InvalidArgumentError", f"{self.device}: this task has no "
                                                        f"{kind} (it has {self.kinds}).", "")
        return device_scope("/gpu:0") if kind == "GPU" else contextlib.nullcontext()

    def _args(self, args: Sequence[tuple], kind: str = "CPU",
              temporaries: list | None = None) -> list:
        """The values of ``args``: buffers in the memory of device ``kind`` (copied between
        this task's CPU and GPU where needed), and variables."""
        out = []
        move = to_device_array if kind == "GPU" else _host
        for i, a in enumerate(args):
            tag = a[0]
            if tag == "h":
                out.append(move(self._value(a[1])))
            elif tag == "p":
                self.tensors[a[1]] = wire.unpack(a[2], f"argument {i}")
                out.append(move(self.tensors[a[1]]))
            elif tag == "v":
                out.append(move(wire.unpack(a[1], f"argument {i}")))
            elif tag == "var":
                if a[1] not in self.variables:
                    raise RemoteFailure("NotFoundError", f"{self.device} holds no variable "
                                                         f"#{a[1]}.", "")
                out.append(self.variables[a[1]])
            elif tag == "lv" and temporaries is not None:
                with self._scope(kind):
                    v = Variable(wire.unpack(a[1], f"argument {i}"))
                temporaries.append((i, v, v._value))
                out.append(v)
            else:
                raise RemoteFailure("InvalidArgumentError", f"argument {i}: unknown tag "
                                                            f"{tag!r}.", "")
        return out

    def _run(self, out_ids: Sequence[int], work: Any) -> tuple:
        """Runs ``work`` (returning the result arrays), stores them under ``out_ids``; the
        reply: ("ok", [result_entry...], extra) or ("error", failure) with the outputs marked
        failed."""
        try:
            values, extra = work()
        except RemoteFailure as e:
            failure = (e.kind, e.message, e.remote_traceback)
        except Exception as e:  # any op error: reported to the main program, not raised here
            failure = failure_of(e)
        else:
            values = [_buffer(v) for v in values]
            for i, v in zip(out_ids, values):
                self.tensors[i] = v
            return "ok", [wire.result_entry(v, _host) for v in values], extra
        for i in out_ids:
            self.failed[i] = failure
        return "error", failure, None

    # -------------------------------------------------------------------- eager ops
    def op(self, text: str, arrays: dict, args: Sequence[tuple], out_ids: Sequence[int],
           free: Sequence[int] = (), kind: str = "CPU") -> tuple:
        """Runs one eager op (an ``wire.encode_op`` document) on ``args`` on this task's
        device ``kind``; its results get ``out_ids``."""
        self.free(free)

        def work() -> tuple:
            op, attrs = wire.decode_op(text, arrays)
            with self._scope(kind):
                inputs = [_tensor(v) for v in self._args(args, kind)]
                out = bind(op, *inputs, **attrs)
            outs = out if isinstance(out, tuple) else (out,)
            return [t._value for t in outs], None
        return self._run(out_ids, work)

    # -------------------------------------------------------------------- functions
    def has_function(self, digest: str, kind: str = "CPU") -> bool:
        return (digest, kind) in self.functions

    def register(self, digest: str, text: str, arrays: dict, backend: str | None,
                 kind: str = "CPU") -> None:
        """Compiles a serialized graph function with this worker's backend (the ``"cuda"``
        backend for its GPU), kept by digest."""
        self._scope(kind)  # (checks the kind)
        if (digest, kind) in self.functions:
            return
        if wire.graph_digest(text, arrays) != digest:
            raise RemoteFailure("InvalidArgumentError", "the function's content does not "
                                                        "match its digest.", "")
        graph = serialize.loads(text, {k: wire.check_array(a, k) for k, a in arrays.items()})
        self.functions[digest, kind] = get_backend("cuda" if kind == "GPU" else backend).compile(
            optimize(graph))

    def call(self, digest: str, args: Sequence[tuple], out_ids: Sequence[int],
             free: Sequence[int] = (), kind: str = "CPU") -> tuple:
        """Calls a registered function; the reply's extra part lists (argument index, new
        value) for each variable of the main program that the call assigned."""
        self.free(free)

        def work() -> tuple:
            run = self.functions.get((digest, kind))
            if run is None:
                raise RemoteFailure("NotFoundError", f"unknown function {digest[:12]}", "")
            temporaries: list = []
            outs = run(self._args(args, kind, temporaries))
            assigned = [(i, _host(v._value)) for i, v, before in temporaries
                        if v._value is not before]
            return list(outs), assigned
        return self._run(out_ids, work)

    # -------------------------------------------------------------------- variables
    def variable(self, var_id: int, action: str, arg: tuple | None = None,
                 out_id: int | None = None, name: str = "Variable", trainable: bool = True,
                 free: Sequence[int] = (), kind: str = "CPU") -> Any:
        """Creates (``"new"``, on device ``kind``), reads into tensor ``out_id`` (``"read"``),
        fetches (``"fetch"``) or updates (``"assign"``, ``"add"``, ``"sub"``) a variable."""
        self.free(free)
        if action == "new":
            with self._scope(kind):
                (value,) = self._args([arg], kind)
                v = Variable(_tensor(value), trainable=trainable, name=name)
            self.variables[var_id] = v
            return None
        v = self.variables.get(var_id)
        if v is None:
            raise RemoteFailure("NotFoundError", f"{self.device} holds no variable #{var_id} "
                                                 f"(the worker restarted?).", "")
        if action == "read":
            self.tensors[out_id] = v._value
            return None
        if action == "fetch":
            return _host(v._value)
        (value,) = self._args([arg], "GPU" if v._device is not None else "CPU")
        update = {"assign": v.assign, "add": v.assign_add, "sub": v.assign_sub}.get(action)
        if update is None:
            raise RemoteFailure("InvalidArgumentError", f"unknown variable action "
                                                        f"{action!r}.", "")
        update(_tensor(value))
        return None


def _host(value: Any) -> np.ndarray:
    """A buffer (NumPy or device array) as a NumPy array."""
    return value if isinstance(value, np.ndarray) else to_host_array(value)


def _buffer(value: Any) -> Any:
    """A kernel's result as a stored buffer (NumPy scalars become 0-d arrays)."""
    return np.asarray(value) if isinstance(value, np.generic) else value


def _tensor(value: Any) -> Any:
    """A buffer as an eager tensor on its device."""
    return wrap(value) if isinstance(value, np.ndarray) else wrap_device(value)
