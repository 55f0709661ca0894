"""Runs a PTX type-check script of tests/backends/cuda/ (``ptx_check.py``,
``staged_ptx_check.py``) in a subprocess without the simulator: skipped when NVVM is
missing (the scripts exit with 77), failed with their output otherwise."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest


def check_ptx_script(script: str) -> None:
    """Runs ``script --quick`` with ``NUMBA_ENABLE_CUDASIM=0``; exit status 77 skips the test.

    >>> check_ptx_script  # doctest: +ELLIPSIS
    <function check_ptx_script at ...>
    """
    out = subprocess.run([sys.executable, script, "--quick"], capture_output=True, text=True,
                         env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"})
    if out.returncode == 77:
        pytest.skip(out.stdout.strip())
    assert out.returncode == 0, out.stdout + out.stderr
