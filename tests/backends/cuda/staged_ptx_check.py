"""Type-checks the kernels of staged GPU functions for a real GPU without one: stages graphs
(every elementwise op of the op table, broadcasting chains, unknown dims, cond/while, variable
updates with casts), runs their host functions with kernel launches replaced by
``numba.cuda.compile_ptx`` (``ptx_check``'s fakes), and reports the generated kernels that
Numba's CUDA target refuses. The simulator runs kernels as Python and cannot catch these.

Needs NVVM (``pip install "numba-cuda[cu13]"``, no GPU or driver). Run it as a script:

    NUMBA_ENABLE_CUDASIM=0 python tests/backends/cuda/staged_ptx_check.py [--quick]

``--quick`` checks the first dtype of each op only. Exit status: 0 all compiled, 1 some
failed or a host function raised (listed), 77 no NVVM (nothing checked).
"""
from __future__ import annotations

import itertools
import os
import sys
import tempfile
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
os.environ["STAGECRAFT_CACHE_DIR"] = tempfile.mkdtemp(prefix="stagecraft-ptx-")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ptx_check  # noqa: E402  (sets up nothing until install_fakes)


def _applying(bind, op, attrs):
    return lambda *a: bind(op, *a, **attrs)


def _graphs(quick: bool) -> list:
    """(label, graph, host arguments) to stage; traced on the CPU, never run there."""
    import stagecraft as tf
    from stagecraft.eager.bind import bind
    from stagecraft.ir import OPS
    from stagecraft.ir.ops import Kind
    from support.op_examples import examples

    def concrete(fn, *args, **kw):
        return tf.function(fn, **kw).get_concrete_function(*args).optimized_graph

    out = []
    for name, op in sorted(OPS.items()):
        if op.kind is not Kind.ELEMENTWISE:
            continue
        for d in (op.test_dtypes or op.dtypes)[:1 if quick else None]:
            for k, ex in enumerate(examples(name, d)):
                xs = [tf.constant(np.asarray(x)) for x in ex.inputs]
                graph = concrete(_applying(bind, op, ex.attrs), *xs)
                out.append((f"{name}[{d.name}] #{k}", graph, [x.numpy() for x in xs]))
    x = tf.constant(np.linspace(-1, 1, 6).reshape(2, 3), tf.float32)
    y = tf.constant([0.5, -1.0, 2.0], tf.float32)
    n = tf.constant([[1, 2, 3], [4, 5, 6]], tf.int32)
    out.append(("broadcast chain", concrete(
        lambda x, y, n: (tf.tanh(x * y + 1.0) - y, tf.cast(n // 2, tf.float32) * x, x > y),
        x, y, n), [x.numpy(), y.numpy(), n.numpy()]))
    a, b = tf.constant(3.5), tf.constant(7)
    out.append(("scalar chain", concrete(
        lambda a, b: (tf.sqrt(a * 2.0 + 1.0) > 2.0, tf.cast(b // 2, tf.float32) - a), a, b),
        [a.numpy(), b.numpy()]))
    spec = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None], tf.float32)]
    out.append(("unknown dims", concrete(lambda x, y: tf.exp(x) * y - 1.0, x, y,
                                         input_signature=spec), [x.numpy(), y.numpy()]))

    def control(x, k):
        if tf.reduce_sum(x) > 0.0:
            x = x * 2.0
        else:
            x = -x
        i = tf.constant(0)
        while i < k:
            x = tf.sin(x) + 0.5
            i += 1
        return x, i

    out.append(("cond and while", concrete(control, x, tf.constant(2)),
                [x.numpy(), np.int32(2)]))
    v = tf.Variable([1.0, 2.0, 3.0], dtype=tf.float64)

    def update(z):
        v.assign_add(tf.cast(z, tf.float64))
        v.assign(tf.cast(z * 2.0, tf.float64))
        return v.read_value()

    z = tf.constant([1.0, 2.0, 3.0])
    out.append(("variable updates", concrete(update, z), [z.numpy(), v]))
    return out


def main(quick: bool = False) -> int:
    if not ptx_check.nvvm_available():
        print("NVVM is not installed (pip install 'numba-cuda[cu13]'); nothing checked")
        return 77
    ptx_check.install_fakes()
    from stagecraft.backends.numba_cuda import config, memory
    from stagecraft.backends.numba_cuda.staged import compile as compile_cuda
    from stagecraft.backends.numba_cuda.staged import runtime
    config.THREADS_PER_BLOCK = 4
    flips = itertools.cycle([True, False])   # both branches; loops run one iteration
    runtime.predicate = lambda *test, **where: next(flips)
    start = time.time()
    errors = []
    for label, graph, args in _graphs(quick):
        values = []
        for a in args:
            if hasattr(a, "_value"):
                a._value = memory.to_device(np.asarray(a._value))
                values.append(a)
            else:
                values.append(memory.to_device(np.asarray(a)))
        try:
            compile_cuda(graph)(values)
        except Exception as e:   # (every graph is reported, not only the first that fails)
            errors.append(f"{label}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    generated = {k: v for k, v in ptx_check.Recorder.compiled.items()
                 if os.path.basename(k[1]).startswith("gen_")}
    failures = {k: v for k, v in ptx_check.Recorder.failures.items()
                if os.path.basename(k[1]).startswith("gen_")}
    print(f"compiled {len(generated)} staged kernel signatures to PTX in "
          f"{time.time() - start:.0f} s; {len(failures)} failed")
    for line in errors:
        print(f"host function raised (fake buffers): {line}")
    for (qualname, filename, sig), message in sorted(failures.items(), key=str):
        print(f"FAILED {qualname} ({os.path.basename(filename)}) {sig}: {message}")
    # A host function that raises (none does on these graphs) left its kernels unchecked:
    # a fake that no longer matches the launch path shows here first.
    return 1 if failures or errors or not generated else 0


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv[1:]))
