"""Fault injection for the disk cache: random byte damage to every kind of cache file.

Each trial restores a filled cache (generated module, code plan, constants, symbol-link record,
Numba's index and machine-code files for the generated module and for the kernel library),
damages one file at random (flipped bytes, a truncation, or a zeroed run), then runs a staged
function twice, each time in a new process with a timeout. The first run must give the right
result, however the damage is noticed (the cache logs one warning and rebuilds the entry); the
second must give it again without an error. The table counts, per kind of file:

* ``wrong``: a run printed a result different from the undamaged one;
* ``crash``: a run died from a signal (an LLVM abort, a segfault);
* ``hang``: a run passed the timeout;
* ``error``: the first run exited with an error;
* ``repeat``: the second run failed in any of these ways, or warned again (not rebuilt);
* ``warned``: first runs that logged a ``stagecraft cache`` warning (the damage was noticed;
  a file is not read at all, hence not noticed, when stagecraft's sources change during the
  run, since the cache keys cover them).

    python examples/benchmarks/cache_damage.py --trials 100

The helpers are also used by ``tests/backends/test_numba_cache_integrity.py``.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap

#: The staged function every run calls: a matmul and an axis reduction from the kernel library
#: (called through published symbols, so there is a link record), a non-uniform constant (kept
#: in the plan's ``.npz``) and a variable.
CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import stagecraft as tf

    w = tf.Variable(np.full((4, 4), 0.25, np.float32))
    c = np.arange(4, dtype=np.float32) / 7

    @tf.function
    def step(x):
        for _ in range(3):
            x = tf.tanh(tf.matmul(x, w)) * 0.5 + x + tf.constant(c)
        return tf.reduce_sum(x, axis=1)

    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
    print(json.dumps(step(x).numpy().tolist()))
""")

#: The log line prefix of every cache repair (``stagecraft.backends.numba_cache.discard``).
WARNING = "stagecraft cache:"


def _numba_files(root: pathlib.Path, suffix: str, generated: bool) -> list[pathlib.Path]:
    return sorted(p for p in (root / "numba").rglob(f"*{suffix}")
                  if p.name.startswith("gen_") == generated)


#: Kind of cache file -> the files of that kind in a filled cache under ``root``.
KINDS = {
    "module": lambda root: sorted((root / "cache").glob("gen_*.py")),
    "plan": lambda root: sorted((root / "cache").glob("plan_*.json")),
    "constants": lambda root: sorted((root / "cache").glob("plan_*.npz")),
    "links": lambda root: sorted((root / "cache").glob("gen_*.links")),
    "index": lambda root: _numba_files(root, ".nbi", True),
    "machine code": lambda root: _numba_files(root, ".nbc", True),
    "kernel index": lambda root: _numba_files(root, ".nbi", False),
    "kernel machine code": lambda root: _numba_files(root, ".nbc", False),
}


@dataclasses.dataclass
class Run:
    """One run of :data:`CHILD`: exit status (None after a timeout), result, log."""
    returncode: int | None
    result: object
    stderr: str

    @property
    def warnings(self) -> int:
        return self.stderr.count(WARNING)


def run_child(root: pathlib.Path, timeout: float = 300) -> Run:
    """Runs :data:`CHILD` in a new process with its caches under ``root/work`` (stagecraft's in
    ``cache``, Numba's, kernel library included, in ``numba``)."""
    work = root / "work"
    script = root / "child.py"  # a file, so that AutoGraph can read the function's source
    if not script.exists():
        script.write_text(CHILD)
    env = dict(os.environ, STAGECRAFT_BACKEND="numba", STAGECRAFT_COMPILE_MODE="sync",
               STAGECRAFT_CACHE_DIR=str(work / "cache"), NUMBA_CACHE_DIR=str(work / "numba"))
    try:
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
        return Run(None, None, err or "")
    result = None
    if done.returncode == 0 and done.stdout.strip():
        result = json.loads(done.stdout.strip().splitlines()[-1])
    return Run(done.returncode, result, done.stderr)


def seed(root: pathlib.Path, timeout: float = 600) -> Run:
    """Fills the caches under ``root/work`` with a first run and keeps a copy in ``root/seed``
    (:func:`restore` puts it back at the same paths, which Numba's index records)."""
    shutil.rmtree(root / "work", ignore_errors=True)
    shutil.rmtree(root / "seed", ignore_errors=True)
    first = run_child(root, timeout)
    if first.returncode != 0:
        raise RuntimeError(f"the undamaged run failed:\n{first.stderr}")
    shutil.copytree(root / "work", root / "seed", symlinks=True)  # copy2 keeps the mtimes
    return first


def restore(root: pathlib.Path) -> pathlib.Path:
    """Puts the filled caches back in ``root/work``; returns it."""
    shutil.rmtree(root / "work", ignore_errors=True)
    shutil.copytree(root / "seed", root / "work", symlinks=True)
    return root / "work"


def damage(path: pathlib.Path, rng: random.Random) -> str:
    """Damages ``path`` at random; returns what was done."""
    data = bytearray(path.read_bytes())
    mode = rng.choice(["flip", "flip", "flip", "truncate", "zero"])
    if mode == "truncate" or not data:
        cut = rng.randrange(len(data)) if data else 0
        path.write_bytes(bytes(data[:cut]))
        return f"truncated to {cut} of {len(data)} bytes"
    if mode == "zero":
        start = rng.randrange(len(data))
        end = min(len(data), start + rng.randint(1, 64))
        data[start:end] = bytes(end - start)
        if bytes(data) == path.read_bytes():  # already zeros: flip one instead
            data[start] ^= 0xFF
        path.write_bytes(bytes(data))
        return f"zeroed bytes {start}:{end}"
    spots = sorted(rng.randrange(len(data)) for _ in range(rng.randint(1, 8)))
    for i in spots:
        data[i] ^= rng.randint(1, 255)
    path.write_bytes(bytes(data))
    return f"flipped bytes at {spots}"


def trial(root: pathlib.Path, kind: str, rng: random.Random, reference: object,
          timeout: float) -> dict[str, bool]:
    """One damage trial of a file of ``kind``; the outcome flags of the table's columns."""
    work = restore(root)
    files = KINDS[kind](work)
    what = damage(rng.choice(files), rng)
    first, second = run_child(root, timeout), run_child(root, timeout)

    def failed(run: Run) -> dict[str, bool]:
        return {"hang": run.returncode is None,
                "crash": run.returncode is not None and run.returncode < 0,
                "error": run.returncode is not None and run.returncode > 0,
                "wrong": run.returncode == 0 and run.result != reference}

    one, two = failed(first), failed(second)
    out = {**one, "repeat": any(two.values()) or second.warnings > 0,
           "warned": first.warnings > 0}
    out["wrong"] = one["wrong"] or two["wrong"]
    out["crash"] = one["crash"] or two["crash"]
    out["hang"] = one["hang"] or two["hang"]
    if not out["warned"]:  # unnoticed: the file was not read (say, the stagecraft sources
        # changed since the seed run, which changes every key), or the damage was missed
        print(f"  {kind}: {what}: no warning", file=sys.stderr)
    if any(out[k] for k in ("wrong", "crash", "hang", "error", "repeat")):
        print(f"  {kind}: {what}: first run {first.returncode}, second {second.returncode}\n"
              + textwrap.indent((first.stderr + second.stderr)[-2000:], "    "), file=sys.stderr)
    return out


COLUMNS = ("trials", "wrong", "crash", "hang", "error", "repeat", "warned")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=16, help="damage trials (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per run")
    parser.add_argument("--dir", help="work folder (default: a new temporary one)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    root = pathlib.Path(args.dir or tempfile.mkdtemp(prefix="stagecraft-damage-"))
    root.mkdir(parents=True, exist_ok=True)
    reference = seed(root).result
    missing = [k for k in KINDS if not KINDS[k](root / "work")]
    if missing:
        raise RuntimeError(f"the filled cache has no file of kind {missing}")
    table: dict[str, collections.Counter] = {k: collections.Counter() for k in KINDS}
    kinds = list(KINDS)
    for i in range(args.trials):
        kind = kinds[i % len(kinds)]
        outcome = trial(root, kind, rng, reference, args.timeout)
        table[kind]["trials"] += 1
        table[kind].update({k for k, v in outcome.items() if v})
    total = sum(table.values(), collections.Counter())
    width = max(map(len, KINDS)) + 2
    print("kind".ljust(width) + "".join(c.rjust(8) for c in COLUMNS))
    for name, counts in [*table.items(), ("total", total)]:
        print(name.ljust(width) + "".join(str(counts[c]).rjust(8) for c in COLUMNS))
    if not args.dir:
        shutil.rmtree(root, ignore_errors=True)
    bad = sum(total[c] for c in ("wrong", "crash", "hang", "error", "repeat"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
