"""Test-wide settings: every graph any test traces is verified and printed/parsed back
(``stagecraft.config.enable_checks``, the style guide's "always verify"); the backend and the
GPU placements of a module come from its markers (``backend``, ``gpu_placements``); shared
helpers live in tests/support/."""
from __future__ import annotations

# Numba reads NUMBA_ENABLE_CUDASIM once, when numba is first imported (through the imports
# below), so it is set first: without a CUDA driver the CUDA tests run on Numba's simulator.
# It affects numba.cuda only; the CPU backend compiles and runs the same code.
import ctypes.util
import os

if ctypes.util.find_library("cuda") is None:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import sys
from typing import Iterator

import pytest

# Most tests check semantics, not a backend, so they run on the reference interpreter (no
# compile cost). A module marked `pytest.mark.backend("numba")` runs on Numba instead.
os.environ.setdefault("STAGECRAFT_BACKEND", "reference")
# Tests of the Numba backend test its compiled code: compile before the first call returns
# (the default "background" mode runs early calls on the interpreter; its own tests ask for it).
os.environ.setdefault("STAGECRAFT_COMPILE_MODE", "sync")
# tests/ on the path for the shared helpers (`from support.op_examples import ...`).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import stagecraft
from stagecraft.devices import device
from stagecraft.staging import function

# Every traced graph (of a Function, and of a staged call's backward pass) is verified and
# round-tripped through the printer and parser as it is traced.
stagecraft.config.enable_checks(True)
# Exact float32 matmuls and convolutions on a GPU (TensorFlow's default, kept by stagecraft,
# rounds them to TensorFloat-32), so GPU results compare tightly with the CPU's.
stagecraft.config.experimental.enable_tensor_float_32_execution(False)


def _gpu_available() -> bool:
    return device.gpu_kind() != "none"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module marked `gpu_placements` runs each test twice, "cpu" and "gpu" (marker `cuda`):
    eager ops on the GPU op library, functions on the staged CUDA backend, inside
    `tf.device("/gpu:0")`; on Numba's CUDA simulator when there is no GPU."""
    if metafunc.definition.get_closest_marker("gpu_placements") and _gpu_available():
        metafunc.fixturenames.append("_placement")  # every test of the module takes it
        marks = [pytest.mark.cuda]
        # The simulator interprets every kernel thread in Python: a test marked
        # `heavy_on_simulator` runs its "gpu" variant there only with --full-matrix.
        if metafunc.definition.get_closest_marker("heavy_on_simulator") and \
                device.gpu_kind() == "simulator":
            marks.append(pytest.mark.full_matrix)
        metafunc.parametrize("_placement", ["cpu", pytest.param("gpu", marks=marks)],
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
    """Runs the "gpu" variants of `gpu_placements` modules inside a GPU device scope."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("_placement") != "gpu":
        yield
        return
    import stagecraft as tf
    with tf.device("/gpu:0"):
        yield


@pytest.fixture(autouse=True)
def _backend_for_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """Runs a test marked `backend(name)` (usually its module's `pytestmark`) on that backend."""
    from stagecraft import backends
    marker = request.node.get_closest_marker("backend")
    if marker is None:
        yield
        return
    saved, backends.DEFAULT = backends.DEFAULT, marker.args[0]
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
