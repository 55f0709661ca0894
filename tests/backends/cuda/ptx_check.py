"""Type-checks the CUDA kernels for a real GPU without one: runs every op-table example through
the eager CUDA path with launches replaced by ``numba.cuda.compile_ptx`` (the simulator runs
kernels as Python, so it cannot catch what Numba's CUDA target would refuse to compile).

Needs numba-cuda with the CUDA toolkit wheels (``pip install "numba-cuda[cu13]"``: NVVM, no GPU
or driver needed). Run it as a script, without the simulator:

    NUMBA_ENABLE_CUDASIM=0 python tests/backends/cuda/ptx_check.py [--quick]

``--quick`` checks the first dtype of each op only. Exit status: 0 all compiled, 1 some
failed (listed), 77 no NVVM (nothing checked). ``--cache-keys`` compiles nothing (no NVVM
needed) and prints, per kernel signature reached, the digest of the values its closure holds,
which numba-cuda's disk cache pickles into the kernel's key: the test suite runs it in two
processes with different hash seeds and compares.

Device buffers become NumPy arrays of ones, so values are meaningless; kernels that a
value-dependent branch skips would be missing from the list of kernels reached.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
import types

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
# tests/ on the path for tests/support (the op examples as the test suite draws them).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda.cudadrv import devicearray  # noqa: E402


CC = (9, 0)


class FakeDeviceArray(np.ndarray):
    """A host array standing in for a device array (what the eager path calls on it)."""

    __cuda_ndarray__ = True   # what memory.is_device_array reads (Numba's classes carry it)

    @property
    def gpu_data(self) -> types.SimpleNamespace:
        # memory.address reads the first element's address here (a host address will do:
        # nothing is launched)
        return types.SimpleNamespace(device_pointer_value=self.ctypes.data)

    def is_c_contiguous(self) -> bool:
        return bool(self.flags.c_contiguous)

    def copy_to_host(self) -> np.ndarray:
        return np.array(self)


class Recorder:
    """Stands in for a kernel: each launch compiles PTX for its argument types once."""

    compiled: dict = {}
    failures: dict = {}

    def __init__(self, fn):
        self.py_func = fn

    def __getitem__(self, launch):
        return self.launch

    def launch(self, *args):
        sig = tuple(numba.typeof(np.asarray(a) if isinstance(a, np.ndarray) else a)
                    for a in args)
        key = (self.py_func.__qualname__, self.py_func.__code__.co_filename, sig)
        try:
            if CACHE_KEYS:
                Recorder.compiled.setdefault(key, set()).add(closure_digest(self.py_func))
            elif key not in Recorder.compiled and key not in Recorder.failures:
                cuda.compile_ptx(self.py_func, sig, cc=CC)
                Recorder.compiled[key] = True
        except Exception as e:   # report every failing kernel, not just the first
            Recorder.failures[key] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"


# --cache-keys: instead of compiling, record the part of numba-cuda's disk-cache key that
# depends on the values a closure holds (numba pickles them): it must be computable for every
# kernel and the same in every process, or a cached kernel is never found again.
CACHE_KEYS = False


def closure_digest(fn) -> str:
    from numba.cuda.serialize import dumps
    cells = tuple(c.cell_contents for c in fn.__closure__ or ())
    return hashlib.sha256(dumps(cells)).hexdigest()[:16]


def install_fakes() -> None:
    real_jit = cuda.jit

    def jit(fn=None, **options):
        if options.get("device"):
            return real_jit(fn, **options) if fn is not None else \
                (lambda f: real_jit(f, **options))
        return Recorder(fn) if fn is not None else Recorder

    cuda.jit = jit
    cuda.to_device = lambda a: np.array(a).view(FakeDeviceArray)
    # Ones, not zeros: value-dependent launches (where_indices' rows) then happen.
    cuda.device_array = lambda shape, dtype: np.ones(shape, dtype).view(FakeDeviceArray)
    from stagecraft.backends.numba_cuda import config
    config.POOL_BYTES = 0  # every array through the faked cuda.device_array
    devicearray.is_cuda_ndarray = lambda x: isinstance(x, FakeDeviceArray)
    # Device functions compile for "the current device"; there is none, so name an H100's.
    from numba.cuda import dispatcher
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=CC)
    from stagecraft.backends.numba_cuda import detect
    detect._probe = lambda: ("gpu", "compile_ptx check (no device)")


def nvvm_available() -> bool:
    try:
        cuda.compile_ptx(lambda a: None, "void(float32[::1])", cc=CC)
        return True
    except Exception:   # NvvmSupportError and friends: the toolkit wheels are missing
        return False


def main(quick: bool = False, cache_keys: bool = False) -> int:
    global CACHE_KEYS
    CACHE_KEYS = cache_keys
    if not cache_keys and not nvvm_available():
        print("NVVM is not installed (pip install 'numba-cuda[cu13]'); nothing checked")
        return 77
    install_fakes()
    from stagecraft.backends.numba_cuda import config, eager, memory
    # Small blocks, as in the simulator tests: the examples then reach both reduction paths
    # (tree for reductions longer than a block, one thread per row for shorter ones).
    config.THREADS_PER_BLOCK, config.MATMUL_TILE, config.MATMUL_WORK = 4, (4, 4, 2), (2, 2)
    from stagecraft.ir import OPS
    from support.op_examples import examples
    start = time.time()
    for name, op in sorted(OPS.items()):
        for d in (op.test_dtypes or op.dtypes)[:1 if quick else None]:
            for ex in examples(name, d):
                try:
                    eager.run(name, [memory.to_device(np.asarray(x)) for x in ex.inputs],
                              dict(ex.attrs))
                except Exception:
                    pass   # zero-filled buffers can trip value checks; launches so far count
    if cache_keys:
        for (qualname, filename, sig), digests in sorted(Recorder.compiled.items(), key=str):
            print(f"KEY {qualname} {os.path.basename(filename)} {sig} {sorted(digests)}")
    print(f"{'keyed' if cache_keys else 'compiled'} {len(Recorder.compiled)} kernel signatures"
          f"{'' if cache_keys else ' to PTX'} in {time.time() - start:.0f} s; "
          f"{len(Recorder.failures)} failed")
    kernels = sorted({q.rsplit(".", 1)[-1] for q, f, _ in Recorder.compiled
                      if not os.path.basename(f).startswith("gen_")})
    print(f"library kernels reached: {', '.join(kernels)} (+ generated elementwise kernels)")
    for (qualname, filename, sig), message in sorted(Recorder.failures.items(), key=str):
        print(f"FAILED {qualname} ({os.path.basename(filename)}) {sig}: {message}")
    return 1 if Recorder.failures else 0


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv[1:], cache_keys="--cache-keys" in sys.argv[1:]))
