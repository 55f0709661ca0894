"""Snapshots of the generated source: what the Numba CPU and the staged CUDA code generators
write for a dozen representative functions, compared with files under ``snapshots/``.

A change to a code generator shows here as a diff of generated text; moving code between
modules must show none. Each function is traced through the public API, optimized as for a
call (``ConcreteFunction.optimized_graph``), and given to both generators (the CUDA one
writes source without a GPU; nothing is compiled here). Locations in the source (assert
messages) name files relative to the repository, so the snapshots do not depend on where it
is checked out.

Regenerate after an intended change of the generated code, then review the diff::

    STAGECRAFT_UPDATE_SNAPSHOTS=1 python -m pytest -n 0 tests/backends/test_generated_snapshots.py
"""
from __future__ import annotations

import difflib
import os
from typing import Any, Callable

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.backends.numba_cpu import codegen as cpu_codegen
from stagecraft.backends.numba_cuda.staged import codegen as cuda_codegen

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPSHOTS = os.path.join(HERE, "snapshots")
ROOT = os.path.dirname(os.path.dirname(HERE))


# ---------------------------------------------------------------------- the functions

def fused_elementwise(x, y):
    return tf.tanh(x) * 2.0 + y * y - tf.exp(-x)


def reductions(x):
    return (tf.reduce_sum(x, axis=1), tf.reduce_max(x), tf.reduce_mean(x, axis=0, keepdims=True),
            tf.argmax(x, axis=1))


def dense_layer(x, w, b):
    return tf.nn.relu(tf.matmul(x, w) + b)


def slicing_and_gather(x, idx):
    rows = tf.gather(x, idx)
    return x[1:, ::2], rows[:, 0] * 2.0, x[::-1]


def branch(x):
    if tf.reduce_sum(x) > 0.0:
        y = x * 2.0
    else:
        y = -x
    return y


def loop_with_break(x):
    total = tf.constant(0.0)
    i = tf.constant(0)
    while i < 10:
        total += tf.reduce_sum(x) * tf.cast(i, tf.float32)
        if total > 100.0:
            break
        i += 1
    return total, i


def nested_loops(x):
    acc = tf.zeros_like(x)
    for i in tf.range(3):
        for j in tf.range(2):
            acc = acc + x * tf.cast(i * j, tf.float32)
    return acc


def tensor_array(x):
    ta = tf.TensorArray(tf.float32, size=4, element_shape=(3,))
    for i in tf.range(4):
        ta = ta.write(i, x * tf.cast(i, tf.float32))
    return ta.stack()


def random_normal(x):
    return x + tf.random.normal((3,), seed=7)


def print_and_assert(x):
    tf.debugging.Assert(tf.reduce_all(x > -100.0), ["x out of range"])
    tf.print("x:", x, "sum:", tf.reduce_sum(x))
    return x + 1.0


def loop_gradient(x, w):
    with tf.GradientTape() as tape:
        tape.watch(w)
        h = x
        for _ in tf.range(3):
            h = tf.tanh(tf.matmul(h, w))
        loss = tf.reduce_sum(h * h)
    return loss, tape.gradient(loss, w)


class _Counter(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(tf.zeros((3,)))
        self.n = tf.Variable(0)

    def __call__(self, x):
        self.v.assign_add(x * 2.0)
        self.n.assign(self.n + 1)
        self.v.assign(self.v - 1.0)
        return self.v.read_value() + x


def _f32(*shape: int, seed: int = 0) -> Any:
    return tf.constant(np.random.default_rng(seed).normal(size=shape), tf.float32)


CASES: dict[str, tuple[Callable, Callable[[], tuple]]] = {
    "fused_elementwise": (fused_elementwise, lambda: (_f32(4, 3), _f32(3, seed=1))),
    "reductions": (reductions, lambda: (_f32(4, 3),)),
    "dense_layer": (dense_layer, lambda: (_f32(2, 4), _f32(4, 3, seed=1), _f32(3, seed=2))),
    "slicing_and_gather": (slicing_and_gather, lambda: (_f32(4, 3), tf.constant([2, 0]))),
    "branch": (branch, lambda: (_f32(3),)),
    "loop_with_break": (loop_with_break, lambda: (_f32(3),)),
    "nested_loops": (nested_loops, lambda: (_f32(2, 2),)),
    "tensor_array": (tensor_array, lambda: (_f32(3),)),
    "random_normal": (random_normal, lambda: (_f32(3),)),
    "print_and_assert": (print_and_assert, lambda: (_f32(3),)),
    "loop_gradient": (loop_gradient, lambda: (_f32(2, 3), _f32(3, 3, seed=1) * 0.5)),
    "variable_assign": (None, lambda: (_f32(3),)),   # a Module's method: see _graph
}


def _graph(name: str) -> Any:
    fn, args = CASES[name]
    tf.random.set_seed(1234)
    if fn is None:
        fn = _Counter().__call__
    concrete = tf.function(fn, backend="numba").get_concrete_function(*args())
    return concrete.optimized_graph


def _portable(text: str) -> str:
    """``text`` with the repository's absolute path replaced (locations in messages)."""
    return text.replace(ROOT + os.sep, "").replace(ROOT, "<root>")


def _rendered(name: str) -> dict[str, str]:
    graph = _graph(name)
    return {"cpu": _portable(cpu_codegen.generate(graph).source),
            "cuda": _portable(cuda_codegen.generate(graph).source)}


def _updating() -> bool:
    return os.environ.get("STAGECRAFT_UPDATE_SNAPSHOTS", "") not in ("", "0")


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_snapshot(name: str) -> None:
    rendered = _rendered(name)
    for backend, text in rendered.items():
        path = os.path.join(SNAPSHOTS, f"{name}.{backend}.py.txt")
        if _updating():
            os.makedirs(SNAPSHOTS, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            continue
        if not os.path.exists(path):
            pytest.fail(f"No snapshot {path}: write it with STAGECRAFT_UPDATE_SNAPSHOTS=1.")
        with open(path, encoding="utf-8") as f:
            stored = f.read()
        if stored != text:
            diff = "".join(difflib.unified_diff(stored.splitlines(True), text.splitlines(True),
                                                f"snapshots/{os.path.basename(path)}",
                                                "generated now"))
            pytest.fail(f"The {backend} source generated for '{name}' changed (if intended, "
                        f"regenerate with STAGECRAFT_UPDATE_SNAPSHOTS=1 and review):\n{diff}")


def test_generation_is_deterministic() -> None:
    """Two traces of one function give the same text (no ids, hashes or counters leak in)."""
    assert _rendered("loop_gradient") == _rendered("loop_gradient")
