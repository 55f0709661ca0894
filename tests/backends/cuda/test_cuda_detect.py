"""Detection and lazy import: importing stagecraft (or the CUDA backend's modules) never
imports numba.cuda; detect() answers without raising."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from stagecraft.backends.numba_cuda.detect import detect, implementation

from support.ptx import check_ptx_script

pytestmark = pytest.mark.cuda


def test_detect_reports_the_mode_and_implementation():
    assert detect() in ("gpu", "simulator")
    text = implementation()
    assert isinstance(text, str) and text
    if detect() == "simulator":
        assert text.startswith("Numba CUDA simulator")


def _imported_after(code: str, **env: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(sorted(m for m in "
                          "sys.modules if m == 'numba.cuda' or m.startswith('numba.cuda.')))"],
                         capture_output=True, text=True, env={**os.environ, **env}, check=True)
    return eval(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("sim", ["0", "1"])
def test_import_stagecraft_does_not_import_numba_cuda(sim):
    code = ("import stagecraft\nimport stagecraft.backends.numba_cuda.eager\n"
            "import stagecraft.backends.numba_cuda.memory as m\n"
            "import numpy as np\nassert not m.is_device_array(np.zeros(2))")
    assert _imported_after(code, NUMBA_ENABLE_CUDASIM=sim) == []


def test_detect_never_raises_without_cuda():
    code = ("from stagecraft.backends.numba_cuda.detect import detect, implementation\n"
            "print(detect(), implementation())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}, check=True)
    mode = out.stdout.split()[0]
    assert mode in ("gpu", "none")
    if mode == "none":
        from stagecraft.backends.numba_cuda.launch import cuda_module  # noqa: F401
        code = ("from stagecraft.backends.numba_cuda import memory\n"
                "try:\n    memory.to_device([1.0])\nexcept RuntimeError as e:\n    print(e)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}, check=True)
        assert out.stdout.startswith("CUDA is not available: ")
        assert "NUMBA_ENABLE_CUDASIM=1" in out.stdout


def test_kernels_compile_for_a_gpu():
    """The simulator runs kernels as Python; NVVM (numba-cuda[cu13], no GPU needed) compiles
    them for an H100 (sm_90) the way a real GPU would, catching typing errors."""
    check_ptx_script(os.path.join(os.path.dirname(__file__), "ptx_check.py"))
