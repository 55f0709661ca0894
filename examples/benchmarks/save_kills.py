"""Fault injection for crash-safe saves (issue 15, item 3): a child process overwrites a
checkpoint (``Checkpoint.write`` to one prefix, ``Checkpoint.save``, ``CheckpointManager.save``)
or a SavedModel again and again, each version holding one generation number in every element of
a 1 MB variable, and is killed with SIGKILL at a random time; the parent then restores the path
as a user would after a crash, checks it holds exactly the last completed generation ("old") or
the one being written ("new"), counts the temporary / unnamed files the killed save left, saves
once more itself and counts again. Prints one table row per kind of save.

    python examples/benchmarks/save_kills.py --kills 100

Linux/POSIX only (``os.fork``). Runs on the reference backend (no compilation involved).
"""
from __future__ import annotations

import argparse
import os
import random
import re
import signal
import sys
import tempfile
import time

os.environ.setdefault("STAGECRAFT_BACKEND", "reference")

import numpy as np  # noqa: E402

import stagecraft as tf  # noqa: E402
from stagecraft.state.checkpoint import format as fmt  # noqa: E402

SIZE = 1 << 18  # float32 elements: 1 MB per version


class Model(tf.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = tf.Variable(np.zeros(SIZE, np.float32))

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def __call__(self, x):
        return self.w[0] + x


class Target:
    """One kind of save: ``save(gen)`` writes a version, ``restore()`` returns the generation
    the path holds (raising if it holds none), ``leftovers()`` counts what killed saves left."""

    def __init__(self, kind: str, root: str):
        self.kind, self.root = kind, root
        self.model = Model()
        self.ckpt = tf.train.Checkpoint(model=self.model)
        self.path = os.path.join(root, "m" if kind == "saved_model" else "ckpt")

    def save(self, gen: int) -> None:
        self.model.w.assign(np.full(SIZE, gen, np.float32))
        if self.kind == "write":
            self.ckpt.write(self.path)
        elif self.kind == "save":
            self.ckpt.save(self.path)
        elif self.kind == "manager":
            tf.train.CheckpointManager(self.ckpt, self.root, max_to_keep=2).save()
        else:
            tf.saved_model.save(self.model, self.path)

    def restore(self) -> int:
        if self.kind == "saved_model":
            w = tf.saved_model.load(self.path).w.numpy()
        else:
            if self.kind == "write":  # write/read: no save counter
                self.ckpt.read(self.path).assert_existing_objects_matched()
            else:  # restore the save counter too, so that the next save numbers on
                self.ckpt.restore(tf.train.latest_checkpoint(self.root)) \
                    .assert_existing_objects_matched()
            w = self.model.w.numpy()
        if not np.all(w == w[0]):
            raise ValueError("a mix of two versions")
        return int(w[0])

    def leftovers(self) -> int:
        """Temporary files/directories and checkpoint data files no index names."""
        names = os.listdir(self.root)
        named = {fmt.read_index(os.path.join(self.root, n[:-len(fmt.INDEX_SUFFIX)]))
                 ["data_file"] for n in names if n.endswith(fmt.INDEX_SUFFIX)}
        return sum(1 for n in names if n.startswith(".") or
                   (re.search(r"\.data-", n) is not None and n not in named))


def _child(target: Target, start: int, out: int) -> None:
    """Saves generations start+1, start+2, ... until killed, reporting each completed one."""
    try:
        gen = start
        while True:
            gen += 1
            target.save(gen)
            os.write(out, f"{gen}\n".encode())
    finally:
        os._exit(1)


def run(kind: str, kills: int, max_delay: float, rng: random.Random) -> dict:
    root = tempfile.mkdtemp(prefix=f"save_kills_{kind}_")
    target = Target(kind, root)
    target.model(tf.constant(0.0))
    target.save(0)
    gen = 0
    row = {"kind": kind, "kills": 0, "old": 0, "new": 0, "lost": 0, "left_after_kill": 0,
           "left_after_next_save": 0}
    for _ in range(kills):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(target, gen, write)
        os.close(write)
        time.sleep(rng.uniform(0.0, max_delay))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(read) as fh:
            done = [int(line) for line in fh.read().split()]
        old = done[-1] if done else gen
        row["kills"] += 1
        row["left_after_kill"] += target.leftovers()
        try:
            got = target.restore()
        except Exception as e:  # noqa: BLE001 - counted and reported
            print(f"  {kind}: lost after kill {row['kills']}: {type(e).__name__}: {e}",
                  file=sys.stderr)
            row["lost"] += 1
            target.save(old)  # start again from a known version
            gen = old
            continue
        if got == old:
            row["old"] += 1
        elif got == old + 1:
            row["new"] += 1
        else:
            row["lost"] += 1
        gen = got
        target.save(gen)  # the next save, by the survivor: sweeps what the killed one left
        row["left_after_next_save"] += target.leftovers()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10, help="kills per kind of save")
    parser.add_argument("--kinds", default="write,save,manager,saved_model")
    parser.add_argument("--max-delay", type=float, default=0.25,
                        help="kill after a uniform random delay up to this many seconds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not hasattr(os, "fork"):
        sys.exit("save_kills.py needs os.fork (Linux/POSIX).")
    rng = random.Random(args.seed)
    header = ("kind", "kills", "restored old", "restored new", "lost",
              "temp files after kill", "temp files after next save")
    print(" | ".join(header))
    for kind in args.kinds.split(","):
        r = run(kind, args.kills, args.max_delay, rng)
        print(" | ".join(str(x) for x in (
            r["kind"], r["kills"], r["old"], r["new"], r["lost"], r["left_after_kill"],
            r["left_after_next_save"])), flush=True)


if __name__ == "__main__":
    main()
