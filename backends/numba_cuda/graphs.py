"""Replays of recorded device work (``recording.py``): on a GPU one CUDA graph, launched with a
single driver call; under Numba's CUDA simulator the recorded launches issued again in order.

A CUDA graph is made by capturing the recorded work on a private non-blocking stream
(``cuStreamBeginCapture`` ... ``cuStreamEndCapture``): kernel launches are issued again with
their packed parameters, library calls (cuBLAS) are told the capture stream, and uploads become
device-to-device copies from a device copy of their host bytes made once. Nothing runs during a
capture; ``launch()`` then runs the whole graph on the legacy default stream, where all other
work of this backend runs, so it is ordered with everything before and after it. A replay
writes into the very buffers the recording used: the caller owns keeping them (the recording
holds them) and copying inputs in and results out.

>>> import numpy as np
>>> from stagecraft.backends.numba_cuda import memory, recording
>>> from stagecraft.backends.numba_cuda.kernels.shape import copy_view
>>> x = memory.to_device(np.float32([1, 2]))
>>> with recording.recording() as rec:
...     y = copy_view(x, lambda v: v)
>>> graph = build(rec)
>>> memory.copy_into(x, memory.to_device(np.float32([5, 6])))
>>> graph.launch()
True
>>> memory.to_host(y)
array([5., 6.], dtype=float32)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from stagecraft.backends.numba_cuda import guards, launcher, memory
from stagecraft.backends.numba_cuda.launch import context_here, simulated
from stagecraft.backends.numba_cuda.memory import address
from stagecraft.backends.numba_cuda.recording import (Copy, Guard, HostStep, LibraryCall,
                                                      Launch, NotReplayable, Recording,
                                                      Upload)


def build(rec: Recording, results: Sequence[Any] = ()) -> Any:
    """The replay of ``rec`` (which must not be spoiled), whose call returned the device
    arrays ``results``: CUDA graphs on a GPU, the launches issued again under the simulator,
    guards merged (``guards.py``); its host steps (``print``, asserts) run between the
    graphs of the work before and after them. ``launch()`` says whether the guards held.
    Raises NotReplayable when a launch has no driver form, or when a guard follows a host
    step (a replay found invalid after a ``print`` could not take the print back)."""
    if rec.spoiled is not None:
        raise NotReplayable(rec.spoiled)
    segments: list[list] = [[]]
    hosts = []
    for item in guards.merge(rec.items, results, rec.allocations):
        if isinstance(item, HostStep):
            hosts.append(item.fn)
            segments.append([])
        else:
            segments[-1].append(item)
    if any(isinstance(i, Guard) for segment in segments[1:] for i in segment):
        raise NotReplayable("it reads a device value on the host after a print or an assert "
                            "(a replay found invalid then could not take the print back)")
    graphs = [graph(segment) for segment in segments]
    return graphs[0] if not hosts else Segmented(graphs, hosts)


def graph(items: list) -> Any:
    """One replayable graph of recorded ``items`` (guards included: ``read()`` runs the work
    and returns the bytes the guards read, ``launch()`` whether they are the recorded ones)."""
    return SimulatedGraph(items) if simulated() else DriverGraph(items)


class Segmented:
    """Graphs with host steps between them: the first graph holds every guard, so a replay
    is found valid or not before any host step runs."""

    def __init__(self, graphs: list, hosts: list):
        self.graphs, self.hosts = graphs, hosts
        self.size = sum(g.size for g in graphs) + len(hosts)

    def launch(self) -> bool:
        if not self.graphs[0].launch():
            return False
        for host, graph in zip(self.hosts, self.graphs[1:]):
            host()   # (its copies to the host wait for the graph before it)
            graph.launch()
        return True


class SimulatedGraph:
    """The recorded work issued again, in order, through the simulator."""

    def __init__(self, items: list):
        self.items = items
        self.size = sum(not isinstance(i, Guard) for i in items)
        self.expected = b"".join(g.value.tobytes() for g in items if isinstance(g, Guard))

    def launch(self) -> bool:
        """Replays the work; False when a guard reads another value than when recorded (the
        host code would have done something else: the results are not valid)."""
        return self.read() == self.expected

    def read(self) -> bytes:
        """Replays the work and returns the bytes its guards read, each where the host code
        read it (a later step may rewrite the buffer: a loop's own buffers are)."""
        read = []
        for item in self.items:
            if isinstance(item, Guard):
                read.append(np.asarray(item.array.copy_to_host()).tobytes())
            elif isinstance(item, Launch):
                launcher.launch_now(item.kernel, item.dims, item.args)
            elif isinstance(item, LibraryCall):
                item.call(0)
            elif isinstance(item, Copy):
                if item.src.size:
                    item.dst.copy_to_device(item.src)
            else:
                item.device.copy_to_device(item.host)
        return b"".join(read)


class DriverGraph:
    """One instantiated CUDA graph of the recorded work (``cuGraphLaunch`` per replay)."""

    def __init__(self, items: list):
        from cuda.bindings import driver
        from cuda.core import Stream
        guards = [i for i in items if isinstance(i, Guard)]
        self.size = len(items) - len(guards)
        self._sources = []   # device copies of the uploads' host bytes, read by the graph
        self.items = items   # (and their buffers: merged guards' are held only here)
        # Every guard's bytes are copied into one buffer, each at its place in the graph, so
        # that one device-to-host copy after a launch checks them all.
        self.expected = b"".join(g.value.tobytes() for g in guards)
        self._summary = memory.empty((len(self.expected),), np.uint8) if guards else None
        self._host = np.empty(len(self.expected), np.uint8)
        self._exec = self._graph = self._stream = None
        if not items:
            return
        context_here()
        for item in items:
            if isinstance(item, Launch) and item.prepared is None:
                raise NotReplayable(f"kernel {getattr(item.kernel, '__name__', item.kernel)} "
                                    f"has no driver-level launch")
        # (made before the capture: nothing may allocate or copy synchronously during it)
        sources = {id(i): memory.to_device(i.host) for i in items
                   if isinstance(i, Upload) and i.host.nbytes}
        self._sources = list(sources.values())
        stream = _check(driver.cuStreamCreate(driver.CUstream_flags.CU_STREAM_NON_BLOCKING.value))
        self._stream = stream
        core_stream, handle = Stream.from_handle(int(stream)), int(stream)
        _check(driver.cuStreamBeginCapture(
            stream, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
        try:
            at = 0   # (each guard's bytes are copied where the host code read them)
            for item in items:
                if isinstance(item, Guard):
                    _check(driver.cuMemcpyDtoDAsync(address(self._summary) + at,
                                                    address(item.array), item.value.nbytes,
                                                    handle))
                    at += item.value.nbytes
                elif isinstance(item, Launch):
                    launcher.enqueue(item.prepared, core_stream)
                elif isinstance(item, LibraryCall):
                    item.call(handle)
                elif isinstance(item, Copy) and item.src.size:
                    _check(driver.cuMemcpyDtoDAsync(address(item.dst), address(item.src),
                                                    item.src.nbytes, handle))
                elif isinstance(item, Upload) and id(item) in sources:
                    _check(driver.cuMemcpyDtoDAsync(address(item.device),
                                                    address(sources[id(item)]),
                                                    item.host.nbytes, handle))
        except BaseException as e:
            partial = driver.cuStreamEndCapture(stream)   # (ends the capture: ours to free)
            if partial[0] == driver.CUresult.CUDA_SUCCESS and partial[1] is not None:
                driver.cuGraphDestroy(partial[1])
            if isinstance(e, Exception) and not isinstance(e, NotReplayable):
                # Nothing runs during a capture: a library or launch error here is about
                # capturing, and the call then runs plainly (where a real error shows)
                raise NotReplayable(f"capturing the recorded work into a CUDA graph failed: "
                                    f"{type(e).__name__}: {e}") from e
            raise
        self._graph = _check(driver.cuStreamEndCapture(stream))
        self._exec = _check(driver.cuGraphInstantiate(self._graph, 0))

    def launch(self) -> bool:
        """Launches the graph; with guards, waits for it and says whether they all read what
        they read when recorded (False: the results are not valid)."""
        return self.read() == self.expected

    def read(self) -> bytes:
        """Launches the graph; with guards, waits for it and returns the bytes they read."""
        from cuda.bindings import driver
        if self._exec is None:   # (nothing recorded: an empty segment)
            return b""
        context_here()   # (a thread's first replay may come before any other work of it)
        _check(driver.cuGraphLaunch(self._exec, 0))
        if self._summary is None:
            return b""
        _check(driver.cuMemcpyDtoH(self._host.ctypes.data, address(self._summary),
                                   self._host.nbytes))
        return self._host.tobytes()

    def __del__(self) -> None:
        try:
            from cuda.bindings import driver
            if self._exec is not None:
                driver.cuGraphExecDestroy(self._exec)
            if self._graph is not None:
                driver.cuGraphDestroy(self._graph)
            if self._stream is not None:
                driver.cuStreamDestroy(self._stream)
        except Exception:   # interpreter shutdown: the driver may already be gone
            pass


def _check(result: tuple) -> Any:
    """The value of a ``cuda.bindings`` call (``(error, value...)``), raising on an error."""
    from cuda.bindings import driver
    error, *values = result if isinstance(result, tuple) else (result,)
    if error != driver.CUresult.CUDA_SUCCESS:
        name = driver.cuGetErrorName(error)[1]
        raise NotReplayable(f"the CUDA driver failed to build or launch the graph: "
                            f"{name.decode() if isinstance(name, bytes) else name}")
    return values[0] if len(values) == 1 else (tuple(values) or None)
