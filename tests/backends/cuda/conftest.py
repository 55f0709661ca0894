"""The CUDA backend's tests: skipped as a folder when numba.cuda cannot run (no GPU and no
simulator); under Numba's CUDA simulator (tests/conftest.py turns it on when there is no CUDA
driver) the launch parameters shrink so that each kernel runs a few dozen Python threads."""
from __future__ import annotations

import os
from typing import Iterator

import pytest

from stagecraft.backends.numba_cuda import config as launch_config
from stagecraft.backends.numba_cuda.detect import detect, implementation

MODE = detect()
SIMULATED = MODE == "simulator"


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Without a GPU or the simulator nothing here can run: skip this folder's tests, saying
    why (the hook sees the whole session's items, so it filters by path)."""
    if MODE != "none":
        return
    skip = pytest.mark.skip(reason=f"CUDA cannot run here: {implementation()}")
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if os.path.abspath(str(item.fspath)).startswith(here + os.sep):
            item.add_marker(skip)


# The simulator runs each thread as a Python thread (~150 us each, more with barriers), so
# tests use tiny blocks: grid-stride loops and tiling still run several iterations (a tile
# of 3 also leaves partial tiles for the examples' dims of 2, 4 and 5).
SIMULATOR_CONFIG = {"THREADS_PER_BLOCK": 4, "MAX_BLOCKS": 2, "MATMUL_TILE": (4, 6, 3),
                    "MATMUL_WORK": (2, 3)}


@pytest.fixture(autouse=True)
def _small_launches(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if SIMULATED:
        for name, value in SIMULATOR_CONFIG.items():
            monkeypatch.setattr(launch_config, name, value)
    yield
