"""Test-wide checks: every graph any test traces must pass ``ir.verify`` and print/parse back
to the same text (the style guide's "always verify")."""
from __future__ import annotations

# Numba reads NUMBA_ENABLE_CUDASIM once, when numba is first imported (through the imports
# below), so it is set first: without a CUDA driver the CUDA tests run on Numba's simulator.
# It affects numba.cuda only; the CPU backend compiles and runs the same code.
import ctypes.util
import os

if ctypes.util.find_library("cuda") is None:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import functools
from typing import Callable, Iterator

import pytest

# Most tests check semantics, not a backend, so they run on the reference interpreter (no
# compile cost). The Numba backend runs tests/backends/test_numba_*.py and every module listed
# in NUMBA_MODULES (the staged tests of the staging and AutoGraph issues).
os.environ.setdefault("STAGECRAFT_BACKEND", "reference")
NUMBA_MODULES = ("test_numba_backend", "test_function", "test_control_flow", "test_py_function", "test_tensor_array",
                 "test_reference_behaviours", "test_module", "test_variables")

from stagecraft.devices import device
from stagecraft.ir.graph import Graph
from stagecraft.ir.parser import parse
from stagecraft.ir.verify import verify
from stagecraft.staging import function, tracing


def check_graph(graph: Graph) -> None:
    """Verifies ``graph`` and checks the exact printer/parser round trip."""
    verify(graph)
    text = str(graph)
    again = str(parse(text))
    if again != text:
        import difflib
        diff = "\n".join(difflib.unified_diff(text.splitlines(), again.splitlines(),
                                              "printed", "parsed and printed", lineterm=""))
        raise AssertionError(f"IR round trip changed graph @{graph.name}:\n{diff}")


_WRAPPER = """
def traced(*args, **kwargs):
    result = trace(*args, **kwargs)
    check_graph(result.graph)
    return result
"""


def _checked(trace: Callable) -> Callable:
    # Defined with a stagecraft module name so that ``user_location`` (which blames the first
    # frame outside stagecraft) skips this wrapper, as it skips the real ``trace``.
    namespace: dict = {"__name__": "stagecraft.staging.tracing", "trace": trace,
                       "check_graph": check_graph}
    exec(compile(_WRAPPER, __file__, "exec"), namespace)
    traced = functools.wraps(trace)(namespace["traced"])
    traced.__wrapped_for_checks__ = True
    return traced


@pytest.fixture(autouse=True)
def _verify_every_trace(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Every trace (of a Function, and of a staged call's backward pass) goes through it.
    if not getattr(tracing.trace_graph, "__wrapped_for_checks__", False):
        monkeypatch.setattr(tracing, "trace_graph", _checked(tracing.trace_graph))
    yield


# The staged tests of the staging and AutoGraph issues also run a second time inside
# `tf.device("/gpu:0")` (marker `cuda`): eager ops on the GPU op library, functions on the
# staged CUDA backend; on Numba's CUDA simulator when there is no GPU.
GPU_MODULES = ("test_function", "test_control_flow", "test_py_function", "test_tensor_array",
               "test_reference_behaviours", "test_module", "test_variables")


def _gpu_available() -> bool:
    return device.gpu_kind() != "none"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    name = metafunc.module.__name__.rsplit(".", 1)[-1]
    if name in GPU_MODULES and _gpu_available():
        metafunc.fixturenames.append("_placement")  # every test of the module takes it
        metafunc.parametrize("_placement", ["cpu", pytest.param("gpu", marks=pytest.mark.cuda)],
                             indirect=True)


@pytest.fixture
def _placement(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(autouse=True)
def _fresh_retrace_monitor() -> None:
    """Each test starts with no retracing history: the monitor counts calls per code object,
    and the two placements of one test share their code objects."""
    monitor = function._MONITOR
    monitor.history.clear()
    monitor.warnings.clear()


@pytest.fixture(autouse=True)
def _device_for_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """Runs the GPU_MODULES' "gpu" variants inside a GPU device scope."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("_placement") != "gpu":
        yield
        return
    import stagecraft as tf
    with tf.device("/gpu:0"):
        yield


@pytest.fixture(autouse=True)
def _backend_for_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """Runs the NUMBA_MODULES on the Numba backend (what users get by default)."""
    from stagecraft import backends
    name = request.module.__name__.rsplit(".", 1)[-1]
    if name not in NUMBA_MODULES:
        yield
        return
    saved, backends.DEFAULT = backends.DEFAULT, "numba"
    try:
        yield
    finally:
        backends.DEFAULT = saved


# The full dtype × shape × construct matrices are opt-in (`--full-matrix`): the default run
# keeps a sample that covers every op, construct and source once per backend.
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full-matrix", action="store_true",
                     help="also run the cases marked full_matrix (the whole generated matrices)")


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    if config.getoption("--full-matrix"):
        return
    kept = [i for i in items if i.get_closest_marker("full_matrix") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept
