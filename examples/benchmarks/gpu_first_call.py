"""The first GPU calls of a fresh process, with empty caches and then with the caches the first
process filled (a program's second start): how long the first eager and staged MLP training
steps take on the GPU while their kernels compile or load from the disk cache, and how many
kernel signatures compiled and how many loaded (``kernel_module.cache_stats``), beside
PyTorch's first step in a fresh process.

    python examples/benchmarks/gpu_first_call.py [--quick] [--json FILE]

Each row is a new process (MLP 784-128-10, batch 32, SGD, float32, TF32 off). The steps are
timed after the parameters are on the GPU, so making the CUDA context is not in them, for
PyTorch neither. With warm caches every kernel should load (none compiled).
``NUMBA_ENABLE_CUDASIM=1 ... --quick`` runs it on the simulator (a test does), where nothing
compiles and the times mean nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = textwrap.dedent("""
    import json, sys, time
    start = time.perf_counter()
    import numpy as np
    import stagecraft as tf
    imported = time.perf_counter() - start
    sys.path.insert(0, {here!r})
    import workloads_tf as w
    from stagecraft.backends.numba_cuda import kernel_module

    tf.config.experimental.enable_tensor_float_32_execution(False)
    rng = np.random.default_rng(0)
    times = {{"import_s": imported}}
    with tf.device("/gpu:0"):
        params = [tf.Variable(rng.normal(size=({n}, {h})).astype(np.float32) * 0.05),
                  tf.Variable(np.zeros({h}, np.float32)),
                  tf.Variable(rng.normal(size=({h}, {k})).astype(np.float32) * 0.05),
                  tf.Variable(np.zeros({k}, np.float32))]
        x = tf.constant(rng.random(({b}, {n}), np.float32))
        labels = tf.constant(rng.integers(0, {k}, {b}))
        staged = tf.function(lambda x, labels: w.mlp_train_step_tf(params, x, labels))
        for name, step in (("eager", lambda: w.mlp_train_step_tf(params, x, labels)),
                           ("staged", lambda: staged(x, labels))):
            for call in ("first", "second"):
                t0 = time.perf_counter()
                step().numpy()   # (reads the loss: waits for the GPU)
                times[f"{{name}}_{{call}}_s"] = time.perf_counter() - t0
    times.update(kernel_module.cache_stats())
    print(json.dumps(times))
""")

TORCH_CHILD = textwrap.dedent("""
    import json, time
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    times = {}
    g = torch.Generator().manual_seed(0)
    w1 = (torch.randn(784, 128, generator=g) * 0.05).cuda().requires_grad_()
    b1 = torch.zeros(128).cuda().requires_grad_()
    w2 = (torch.randn(128, 10, generator=g) * 0.05).cuda().requires_grad_()
    b2 = torch.zeros(10).cuda().requires_grad_()
    x = torch.rand(32, 784, generator=g).cuda()
    labels = torch.randint(0, 10, (32,), generator=g).cuda()
    torch.cuda.synchronize()
    t0 = time.perf_counter()   # (as stagecraft's: the parameters, and the context, made)
    for call in ("first", "second"):
        loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, labels)
        loss.backward()
        with torch.no_grad():
            for p in (w1, b1, w2, b2):
                p -= 0.1 * p.grad
                p.grad = None
        loss.item()
        times[f"eager_{call}_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
    print(json.dumps(times))
""")


def run(code: str, caches: tuple[str, str] | None) -> dict:
    env = dict(os.environ, STAGECRAFT_COMPILE_MODE="sync")
    if caches is not None:
        env.update(STAGECRAFT_CACHE_DIR=caches[0], NUMBA_CACHE_DIR=caches[1])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def torch_row() -> dict | None:
    """PyTorch's first step in a fresh process, or None without PyTorch and a GPU."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except Exception:   # noqa: BLE001 - no PyTorch (or a broken one): no anchor row
        return None
    return run(TORCH_CHILD, None)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--quick", action="store_true",
                        help="an MLP of 16-8-4, batch 4 (for the simulator), and no PyTorch")
    args = parser.parse_args()
    sizes = dict(n=16, h=8, k=4, b=4) if args.quick else dict(n=784, h=128, k=10, b=32)
    child = CHILD.format(here=HERE, **sizes)
    rows: dict = {}
    with tempfile.TemporaryDirectory() as root:
        caches = tuple(os.path.join(root, k) for k in ("stagecraft", "numba"))
        for folder in caches:
            os.makedirs(folder, mode=0o700)
        rows["empty caches"] = run(child, caches)
        rows["warm caches"] = run(child, caches)   # (what the first filled)
    anchor = None if args.quick else torch_row()
    if anchor is not None:
        rows["PyTorch"] = anchor
    print(f"first GPU calls in fresh processes (MLP {sizes['n']}-{sizes['h']}-{sizes['k']}, "
          f"batch {sizes['b']}, SGD; ms)")
    print(f"  {'':14s}{'import':>8s}{'eager 1st':>11s}{'eager 2nd':>11s}{'staged 1st':>12s}"
          f"{'staged 2nd':>12s}{'kernels compiled/loaded':>25s}")
    for name, r in rows.items():
        kernels = (f"{r['compiled']}/{r['loaded']}" if "compiled" in r else "-")
        print(f"  {name:14s}{_ms(r.get('import_s')):>8s}{_ms(r.get('eager_first_s')):>11s}"
              f"{_ms(r.get('eager_second_s')):>11s}{_ms(r.get('staged_first_s')):>12s}"
              f"{_ms(r.get('staged_second_s')):>12s}{kernels:>25s}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
