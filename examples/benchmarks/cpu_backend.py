"""Staged CPU performance: six workloads, each written four ways -- stagecraft eager (plain calls
on tensors), stagecraft staged (the same Python function under ``stagecraft.function``), plain
NumPy, and a hand-written ``numba.njit`` version of the same algorithm. Prints the median time
per call of each variant and the ratios eager/staged and staged/numba; --json writes the numbers.

    python examples/benchmarks/cpu_backend.py [--backend reference] [--only l2hmc newton]
        [--repeat 5] [--number 10] [--quick] [--json out.json]

Without --backend, staged calls use stagecraft's default backend. All four variants of a workload
are run once and checked equal before anything is timed; that first call (trace and compile for
the staged and njit variants) is left out of the medians. The first call of the staged L2HMC
step is printed on its own line. Without --number each variant is timed in batches of about
0.1 s (at least one call). --quick shrinks every size and times one call, for the tests.

Workloads (full sizes; float32 unless noted):
  l2hmc           L2HMC sampler step ("TensorFlow Eager", Figure 4): 200 chains on a correlated
                  2-D Gaussian, 10 leapfrog steps modulated by three 2-10-10-2 MLPs (scale,
                  gradient transformation, translation); the energy gradient comes from a
                  GradientTape in stagecraft and is written analytically in NumPy and njit
  newton          cube roots of 1000 values in [1, 100] by Newton's method (float64), iterated
                  while max |dx| > 1e-6 (a tf.while_loop in stagecraft)
  rnn_forward     Elman RNN h = tanh(x_t W + h U + b), 100 steps, batch 16, 32 -> 64, final h
  rnn_backward    the same forward pass, then d(sum(h_T**2))/d(W, U, b) (hand-written BPTT in
                  NumPy and njit)
  mlp_train_step  one SGD step of a 784-128-10 relu MLP, batch 32, softmax cross-entropy
  collatz         Collatz step counts of 1..100 (int64): a scalar loop per value, nested in a
                  loop over the values (two tf.while_loops in stagecraft); the "numpy" column
                  is that loop in plain Python, the njit column the same source compiled
  matmul_chain    A @ B @ C @ D with 1024x1024 matrices

The numbers depend on the BLAS thread count (matmul_chain) and on other load on the machine.
"""
from __future__ import annotations

import functools
import json
import os
import platform
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import numba
import numpy as np

from timing import batches, benchmark_parser, time_ms  # noqa: E402 (sibling module)
import stagecraft as tf
from workloads_tf import (EPS, LEARNING_RATE, SIGMA, make_l2hmc_tf,  # noqa: E402
                          mlp_train_step_tf)
from stagecraft import backends

tf.config.set_compile_mode("sync")  # steady-state timings: compiled before the first timed call

VARIANTS = ("eager", "staged", "numpy", "numba")
NJIT = functools.partial(numba.njit, error_model="numpy", cache=False)


@dataclass(frozen=True)
class Sizes:
    """Problem sizes of every workload; ``QUICK`` shrinks them for the tests."""
    chains: int = 200
    leapfrog_steps: int = 10
    mlp_hidden: int = 10
    newton_values: int = 1000
    rnn_steps: int = 100
    rnn_batch: int = 16
    rnn_input: int = 32
    rnn_hidden: int = 64
    mlp_batch: int = 32
    mlp_layers: tuple[int, int, int] = (784, 128, 10)
    collatz_values: int = 100
    matmul_n: int = 1024


FULL = Sizes()
QUICK = replace(FULL, chains=20, leapfrog_steps=2, newton_values=50, rnn_steps=5, rnn_batch=4,
                mlp_batch=8, mlp_layers=(64, 16, 10), collatz_values=10, matmul_n=64)


def _result(out: Any) -> Any:
    return out


@dataclass
class Variant:
    """One way of running a workload: ``call`` is what gets timed; ``values`` turns its result
    into what the correctness check compares (by default the result itself)."""
    call: Callable[[], Any]
    values: Callable[[Any], Any] = _result


@dataclass
class Workload:
    name: str
    variants: dict[str, Variant]
    rtol: float = 1e-4
    atol: float = 1e-6
    repeat: int = 7  # default timed batches per variant


def stage(fn: Callable, backend: str | None) -> Callable:
    """``stagecraft.function(fn)``, on ``backend`` when one is named (None: the default)."""
    return tf.function(fn) if backend is None else tf.function(fn, backend=backend)


def four_variants(tf_fn: Callable, np_fn: Callable, nb_fn: Callable, backend: str | None,
                  tf_args: Callable[[], tuple], np_args: Callable[[], tuple],
                  values: Callable[[Any, tuple], Any] | None = None) -> dict[str, Variant]:
    """Eager and staged calls of the same stagecraft function, and the NumPy and njit versions.
    The argument factories are called once per variant, so workloads that update their
    arguments (SGD weights) give every variant its own copy of the same initial state."""
    variants = {}
    ways = (("eager", tf_fn, tf_args), ("staged", stage(tf_fn, backend), tf_args),
            ("numpy", np_fn, np_args), ("numba", nb_fn, np_args))
    for name, fn, make_args in ways:
        args = make_args()
        check = _result if values is None else functools.partial(values, args=args)
        variants[name] = Variant(functools.partial(fn, *args), check)
    return variants


# ---------------------------------------------------------------------------------------------
# 1. L2HMC sampler step



def _mlp_np(z: np.ndarray, nets: tuple, k: int) -> np.ndarray:
    w1, b1, w2, b2, w3, b3 = (a[k] for a in nets)
    h = np.maximum(z @ w1 + b1, 0)
    h = np.maximum(h @ w2 + b2, 0)
    return np.tanh(h @ w3 + b3)


def l2hmc_np(x0: np.ndarray, v0: np.ndarray, nets: tuple, sigma_inv: np.ndarray, steps: int,
             eps: np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    half = eps * np.float32(0.5)

    def energy(x):
        return np.float32(0.5) * np.sum((x @ sigma_inv) * x, axis=1)

    def momentum_update(x, v, logdet):
        s, q, t = [_mlp_np(x, nets, k) for k in range(3)]
        v = v * np.exp(half * s) - half * ((x @ sigma_inv) * np.exp(eps * q) + t)
        return v, logdet + half * np.sum(s, axis=1)

    x, v, logdet = x0, v0, np.zeros(x0.shape[0], x0.dtype)
    for _ in range(steps):
        v, logdet = momentum_update(x, v, logdet)
        s, q, t = [_mlp_np(v, nets, k) for k in range(3)]
        x = x * np.exp(eps * s) + eps * (v * np.exp(eps * q) + t)
        logdet = logdet + eps * np.sum(s, axis=1)
        v, logdet = momentum_update(x, v, logdet)
    h0 = energy(x0) + np.float32(0.5) * np.sum(v0 * v0, axis=1)
    h1 = energy(x) + np.float32(0.5) * np.sum(v * v, axis=1)
    return x, v, np.exp(np.minimum(h0 - h1 + logdet, np.float32(0)))


# The njit version keeps chains on the inner, contiguous axis (x and v are (2, chains)), so every
# loop over chains is a plain vectorizable loop; one chain at a time with scalar dot products
# was 3x slower.

@NJIT
def _nets_nb(z, nets, h1, h2, out):
    """out[k] = MLP k at the points z (2, chains); the MLPs' weights are stacked on axis 0."""
    w1, b1, w2, b2, w3, b3 = nets
    zero = np.float32(0)
    for k in range(w1.shape[0]):
        for j in range(h1.shape[0]):
            for c in range(z.shape[1]):
                h1[j, c] = max(z[0, c] * w1[k, 0, j] + z[1, c] * w1[k, 1, j] + b1[k, j], zero)
        for j in range(h2.shape[0]):
            h2[j] = b2[k, j]
            for i in range(h1.shape[0]):
                for c in range(z.shape[1]):
                    h2[j, c] += h1[i, c] * w2[k, i, j]
            for c in range(z.shape[1]):
                h2[j, c] = max(h2[j, c], zero)
        for j in range(2):
            out[k, j] = b3[k, j]
            for i in range(h2.shape[0]):
                for c in range(z.shape[1]):
                    out[k, j, c] += h2[i, c] * w3[k, i, j]
            for c in range(z.shape[1]):
                out[k, j, c] = np.tanh(out[k, j, c])


@NJIT
def _momentum_update_nb(x, v, logdet, sigma_inv, nets, eps, h1, h2, out):
    """Updates v and logdet in place from the positions x."""
    half = eps * np.float32(0.5)
    _nets_nb(x, nets, h1, h2, out)
    for j in range(2):
        for c in range(x.shape[1]):
            grad = x[0, c] * sigma_inv[0, j] + x[1, c] * sigma_inv[1, j]
            v[j, c] = (v[j, c] * np.exp(half * out[0, j, c])
                       - half * (grad * np.exp(eps * out[1, j, c]) + out[2, j, c]))
    for c in range(x.shape[1]):
        logdet[c] += half * (out[0, 0, c] + out[0, 1, c])


@NJIT
def _hamiltonian_nb(x, v, sigma_inv):
    half = np.float32(0.5)
    h = np.empty(x.shape[1], x.dtype)
    for c in range(x.shape[1]):
        quad = np.float32(0)
        for i in range(2):
            for j in range(2):
                quad += x[i, c] * sigma_inv[i, j] * x[j, c]
        h[c] = half * quad + half * (v[0, c] * v[0, c] + v[1, c] * v[1, c])
    return h


@NJIT
def l2hmc_nb(x0, v0, nets, sigma_inv, steps, eps):
    x, v = np.ascontiguousarray(x0.T), np.ascontiguousarray(v0.T)
    n, hidden = x.shape[1], nets[0].shape[2]
    h1, h2 = np.empty((hidden, n), x.dtype), np.empty((hidden, n), x.dtype)
    out = np.empty((3, 2, n), x.dtype)
    logdet = np.zeros(n, x.dtype)
    h_start = _hamiltonian_nb(x, v, sigma_inv)
    for _ in range(steps):
        _momentum_update_nb(x, v, logdet, sigma_inv, nets, eps, h1, h2, out)
        _nets_nb(v, nets, h1, h2, out)
        for j in range(2):
            for c in range(n):
                x[j, c] = x[j, c] * np.exp(eps * out[0, j, c]) + eps * (
                    v[j, c] * np.exp(eps * out[1, j, c]) + out[2, j, c])
        for c in range(n):
            logdet[c] += eps * (out[0, 0, c] + out[0, 1, c])
        _momentum_update_nb(x, v, logdet, sigma_inv, nets, eps, h1, h2, out)
    log_ratio = h_start - _hamiltonian_nb(x, v, sigma_inv) + logdet
    return x.T.copy(), v.T.copy(), np.exp(np.minimum(log_ratio, np.float32(0)))


def l2hmc(sizes: Sizes, backend: str | None) -> Workload:
    rng = np.random.default_rng(0)
    f32 = np.float32
    h = sizes.mlp_hidden
    # The three MLPs' weights (w1, b1, w2, b2, w3, b3), each stacked over the MLPs on axis 0;
    # small weights keep the exp() modulation of the leapfrog updates near 1.
    nets = (0.3 * rng.standard_normal((3, 2, h)), 0.1 * rng.standard_normal((3, h)),
            0.3 * rng.standard_normal((3, h, h)), 0.1 * rng.standard_normal((3, h)),
            0.3 * rng.standard_normal((3, h, 2)), 0.1 * rng.standard_normal((3, 2)))
    nets = tuple(a.astype(f32) for a in nets)
    nets_tf = [[(tf.Variable(nets[2 * i][k]), tf.Variable(nets[2 * i + 1][k])) for i in range(3)]
               for k in range(3)]
    sigma_inv = np.linalg.inv(SIGMA).astype(f32)
    x0 = rng.multivariate_normal([0, 0], SIGMA, size=sizes.chains).astype(f32)
    v0 = rng.standard_normal((sizes.chains, 2)).astype(f32)
    step_tf = make_l2hmc_tf(nets_tf, tf.constant(sigma_inv), sizes.leapfrog_steps)
    variants = four_variants(
        step_tf, l2hmc_np, l2hmc_nb, backend,
        tf_args=lambda: (tf.constant(x0), tf.constant(v0)),
        np_args=lambda: (x0, v0, nets, sigma_inv, sizes.leapfrog_steps, f32(EPS)))
    return Workload("l2hmc", variants, rtol=1e-4, atol=1e-5, repeat=5)


# ---------------------------------------------------------------------------------------------
# 2. Newton iteration for cube roots

TOL = 1e-6


def newton_tf(a: Any) -> Any:
    def body(x, dx):
        dx = (x * x * x - a) / (3.0 * x * x)
        return x - dx, dx

    # An explicit tf.while_loop runs the same way eagerly and staged (no AutoGraph needed).
    x, _ = tf.while_loop(lambda x, dx: tf.reduce_max(tf.abs(dx)) > TOL, body,
                         (a, tf.ones_like(a)))
    return x


def newton_np(a: np.ndarray) -> np.ndarray:
    x, dx = a, np.ones_like(a)
    while np.max(np.abs(dx)) > TOL:
        dx = (x * x * x - a) / (3.0 * x * x)
        x = x - dx
    return x


@NJIT
def newton_nb(a):
    """The same stopping rule (all values converged), one fused pass over x per iteration."""
    x = a.copy()
    largest = np.inf
    while largest > TOL:
        largest = 0.0
        for i in range(x.shape[0]):
            dx = (x[i] * x[i] * x[i] - a[i]) / (3.0 * x[i] * x[i])
            x[i] -= dx
            largest = max(largest, abs(dx))
    return x


def newton(sizes: Sizes, backend: str | None) -> Workload:
    a = np.linspace(1.0, 100.0, sizes.newton_values)
    variants = four_variants(newton_tf, newton_np, newton_nb, backend,
                             tf_args=lambda: (tf.constant(a),), np_args=lambda: (a,))
    return Workload("newton", variants, rtol=1e-10, atol=0.0)


# ---------------------------------------------------------------------------------------------
# 3. Elman RNN, forward and forward + backward

def rnn_tf(x: Any, w: Any, u: Any, b: Any) -> Any:
    """The final hidden state. The time loop is a tf.while_loop over t, so the staged graph does
    not grow with the sequence length."""
    def body(t, h):
        return t + 1, tf.tanh(tf.matmul(tf.gather(x, t), w) + tf.matmul(h, u) + b)

    h0 = tf.zeros([x.shape[1], u.shape[0]])
    return tf.while_loop(lambda t, h: t < x.shape[0], body, (tf.constant(0), h0))[1]


def rnn_grad_tf(x: Any, w: Any, u: Any, b: Any) -> tuple:
    """loss = sum(h_T**2) and its gradients with respect to w, u and b."""
    with tf.GradientTape() as tape:
        tape.watch([w, u, b])
        h = rnn_tf(x, w, u, b)
        loss = tf.reduce_sum(h * h)
    return (loss, *tape.gradient(loss, [w, u, b]))


def rnn_np(x: np.ndarray, w: np.ndarray, u: np.ndarray, b: np.ndarray) -> np.ndarray:
    h = np.zeros((x.shape[1], u.shape[0]), x.dtype)
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w + h @ u + b)
    return h


def _rnn_grad(x, w, u, b):
    """Forward keeping every hidden state, then backpropagation through time. Written once in
    NumPy-in-njit style: ``rnn_grad_np`` is this source run by Python, ``rnn_grad_nb`` the
    same source compiled."""
    steps = x.shape[0]
    hs = np.zeros((steps + 1, x.shape[1], u.shape[0]), x.dtype)
    for t in range(steps):
        hs[t + 1] = np.tanh(np.dot(x[t], w) + np.dot(hs[t], u) + b)
    loss = np.sum(hs[steps] * hs[steps])
    dw, du, db = np.zeros_like(w), np.zeros_like(u), np.zeros_like(b)
    u_t = np.ascontiguousarray(u.T)
    one = np.float32(1)  # typed constants: numba promotes float32 arrays with int or float to f64
    dh = (one + one) * hs[steps]
    for t in range(steps - 1, -1, -1):
        dz = dh * (one - hs[t + 1] * hs[t + 1])
        # Contiguous transposes: numba's np.dot is fastest (and silent) on contiguous operands.
        dw += np.dot(np.ascontiguousarray(x[t].T), dz)
        du += np.dot(np.ascontiguousarray(hs[t].T), dz)
        db += dz.sum(axis=0)
        dh = np.dot(dz, u_t)
    return loss, dw, du, db


rnn_grad_np = _rnn_grad
rnn_grad_nb = NJIT(_rnn_grad)


@NJIT
def rnn_nb(x, w, u, b):
    h = np.zeros((x.shape[1], u.shape[0]), x.dtype)
    for t in range(x.shape[0]):
        h = np.tanh(np.dot(x[t], w) + np.dot(h, u) + b)
    return h


def _rnn(name: str, sizes: Sizes, backend: str | None, fns: tuple) -> Workload:
    rng = np.random.default_rng(1)
    f32 = np.float32
    x = rng.standard_normal((sizes.rnn_steps, sizes.rnn_batch, sizes.rnn_input)).astype(f32)
    w = (rng.standard_normal((sizes.rnn_input, sizes.rnn_hidden)) /
         np.sqrt(sizes.rnn_input)).astype(f32)
    u = (rng.standard_normal((sizes.rnn_hidden, sizes.rnn_hidden)) /
         np.sqrt(sizes.rnn_hidden)).astype(f32)
    b = (0.1 * rng.standard_normal(sizes.rnn_hidden)).astype(f32)
    arrays = (x, w, u, b)
    variants = four_variants(*fns, backend, tf_args=lambda: tuple(map(tf.constant, arrays)),
                             np_args=lambda: arrays)
    # Gradients sum 100 steps x 16 rows in float32: compare with an absolute floor too.
    return Workload(name, variants, rtol=1e-4, atol=1e-4)


def rnn_forward(sizes: Sizes, backend: str | None) -> Workload:
    return _rnn("rnn_forward", sizes, backend, (rnn_tf, rnn_np, rnn_nb))


def rnn_backward(sizes: Sizes, backend: str | None) -> Workload:
    return _rnn("rnn_backward", sizes, backend, (rnn_grad_tf, rnn_grad_np, rnn_grad_nb))


# ---------------------------------------------------------------------------------------------
# 4. MLP training step



def _mlp_train_step(params, x, labels):
    """Forward, softmax cross-entropy, hand-written backward and an in-place SGD update, in
    NumPy-in-njit style: ``mlp_train_step_np`` runs this source in Python, ``..._nb`` compiled."""
    w1, b1, w2, b2 = params
    batch = x.shape[0]
    zero = np.float32(0)  # typed constants: numba promotes float32 arrays with int or float to f64
    hidden = np.maximum(np.dot(x, w1) + b1, zero)
    logits = np.dot(hidden, w2) + b2
    probs = np.empty_like(logits)
    loss = 0.0
    for i in range(batch):  # a row-wise log-sum-exp (numba has no axis= for np.max)
        shifted = logits[i] - logits[i].max()
        total = np.exp(shifted).sum()
        probs[i] = np.exp(shifted) / total
        loss += np.log(total) - shifted[labels[i]]
        probs[i, labels[i]] -= 1  # d loss / d logits = (softmax - one_hot) / batch
    dlogits = probs / np.float32(batch)
    dw2 = np.dot(np.ascontiguousarray(hidden.T), dlogits)
    dhidden = np.dot(dlogits, np.ascontiguousarray(w2.T)) * (hidden > 0)
    dw1 = np.dot(np.ascontiguousarray(x.T), dhidden)
    lr = np.float32(LEARNING_RATE)
    w1 -= lr * dw1
    b1 -= lr * dhidden.sum(axis=0)
    w2 -= lr * dw2
    b2 -= lr * dlogits.sum(axis=0)
    return np.float32(loss / batch)


mlp_train_step_np = _mlp_train_step
mlp_train_step_nb = NJIT(_mlp_train_step)


def mlp_train_step(sizes: Sizes, backend: str | None) -> Workload:
    rng = np.random.default_rng(2)
    n_in, n_hidden, n_out = sizes.mlp_layers
    init = [rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in), np.zeros(n_hidden),
            rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden), np.zeros(n_out)]
    init = [a.astype(np.float32) for a in init]
    x = rng.random((sizes.mlp_batch, n_in), dtype=np.float32)
    labels = rng.integers(0, n_out, sizes.mlp_batch).astype(np.int32)
    variants = four_variants(
        mlp_train_step_tf, mlp_train_step_np, mlp_train_step_nb, backend,
        # Each variant trains its own copy of the same initial weights (a tuple for njit).
        tf_args=lambda: ([tf.Variable(a) for a in init], tf.constant(x), tf.constant(labels)),
        np_args=lambda: (tuple(a.copy() for a in init), x, labels),
        values=lambda loss, args: (loss, args[0]))  # the loss and the updated weights
    return Workload("mlp_train_step", variants, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# 5. Collatz step counts

def collatz_tf(values: Any) -> Any:
    """An outer tf.while_loop over the values and an inner one per value, as the scalar loop is
    written in NumPy and njit; the counts are gathered in a TensorArray."""
    def steps_to_one(n):
        def body(n, steps):
            return tf.where(n % 2 == 0, n // 2, 3 * n + 1), steps + 1
        return tf.while_loop(lambda n, steps: n != 1, body, (n, tf.zeros([], n.dtype)))[1]

    def each_value(i, counts):
        return i + 1, counts.write(i, steps_to_one(tf.gather(values, i)))

    n_values = values.shape[0]
    # element_shape is required: a TensorArray loop variable needs it before the first write.
    counts = tf.TensorArray(values.dtype, size=n_values, element_shape=())
    return tf.while_loop(lambda i, counts: i < n_values, each_value,
                         (tf.constant(0), counts))[1].stack()


def _collatz(values):
    """Plain scalar code: ``collatz_np`` runs it in Python, ``collatz_nb`` compiled."""
    counts = np.zeros_like(values)
    for i in range(values.shape[0]):
        n, steps = int(values[i]), 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1
        counts[i] = steps
    return counts


collatz_np = _collatz
collatz_nb = NJIT(_collatz)


def collatz(sizes: Sizes, backend: str | None) -> Workload:
    values = np.arange(1, sizes.collatz_values + 1, dtype=np.int64)
    variants = four_variants(collatz_tf, collatz_np, collatz_nb, backend,
                             tf_args=lambda: (tf.constant(values),), np_args=lambda: (values,))
    return Workload("collatz", variants, rtol=0.0, atol=0.0, repeat=5)


# ---------------------------------------------------------------------------------------------
# 6. Chain of matrix products

def matmul_chain_tf(a: Any, b: Any, c: Any, d: Any) -> Any:
    return tf.matmul(tf.matmul(tf.matmul(a, b), c), d)


def matmul_chain_np(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    return a @ b @ c @ d


@NJIT
def matmul_chain_nb(a, b, c, d):
    return np.dot(np.dot(np.dot(a, b), c), d)


def matmul_chain(sizes: Sizes, backend: str | None) -> Workload:
    rng = np.random.default_rng(3)
    n = sizes.matmul_n
    # Positive entries of mean 1/n: no cancellation, so float32 results agree to rtol 1e-4.
    mats = tuple(rng.random((n, n), dtype=np.float32) * np.float32(2 / n) for _ in range(4))
    variants = four_variants(matmul_chain_tf, matmul_chain_np, matmul_chain_nb, backend,
                             tf_args=lambda: tuple(map(tf.constant, mats)),
                             np_args=lambda: mats)
    return Workload("matmul_chain", variants, rtol=1e-4, atol=0.0)


WORKLOADS: dict[str, Callable[[Sizes, str | None], Workload]] = {
    "l2hmc": l2hmc, "newton": newton, "rnn_forward": rnn_forward, "rnn_backward": rnn_backward,
    "mlp_train_step": mlp_train_step, "collatz": collatz, "matmul_chain": matmul_chain}


# ---------------------------------------------------------------------------------------------
# Checking, timing and reporting

def _arrays(value: Any) -> list[np.ndarray]:
    """The leaves of a (nested) result as NumPy arrays, copied so later calls cannot change
    them (the NumPy and njit SGD steps update their weights in place)."""
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays(v)]
    return [np.array(value.numpy() if hasattr(value, "numpy") else value)]


def check(workload: Workload, results: dict[str, Any]) -> None:
    """Every variant's outputs must match the NumPy variant's."""
    expected = results["numpy"]
    for name, got in results.items():
        assert len(got) == len(expected), f"{workload.name}: {name} returns {len(got)} values"
        for i, (g, e) in enumerate(zip(got, expected)):
            # Arrays must keep their dtype (numba silently promotes float32 to float64); scalars
            # are exempt: njit functions return them as Python floats.
            assert g.ndim == 0 or g.dtype == e.dtype, \
                f"{workload.name}: the {name} variant's output {i} is {g.dtype}, not {e.dtype}"
            np.testing.assert_allclose(
                g, e, rtol=workload.rtol, atol=workload.atol,
                err_msg=f"{workload.name}: the {name} variant's output {i} differs from numpy")




def measure(workload: Workload, repeat: int | None, number: int | None) -> dict:
    """First calls (checked against each other), then the timed batches of every variant."""
    first, results = {}, {}
    for name in VARIANTS:
        variant = workload.variants[name]
        start = time.perf_counter()
        out = variant.call()
        first[name] = (time.perf_counter() - start) * 1e3
        results[name] = _arrays(variant.values(out))
    check(workload, results)
    row: dict[str, Any] = {"workload": workload.name, "variants": {}}
    for name in VARIANTS:
        timing = time_ms(workload.variants[name].call, repeat or workload.repeat, number)
        row["variants"][name] = {**timing, "first_call_ms": first[name]}
    medians = {name: v["median_ms"] for name, v in row["variants"].items()}
    row["eager/staged"] = medians["eager"] / medians["staged"]
    row["staged/numba"] = medians["staged"] / medians["numba"]
    return row


def _fmt(value: float) -> str:
    """Three significant digits, without switching to exponent notation."""
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


def print_table(rows: list[dict], backend: str) -> None:
    print(f"median ms per call; staged on the {backend!r} backend")
    header = ["workload", *VARIANTS, "eager/staged", "staged/numba"]
    print(f"{header[0]:16s}" + "".join(f"{h:>13s}" for h in header[1:]))
    for r in rows:
        cells = [_fmt(r["variants"][v]["median_ms"]) for v in VARIANTS]
        cells += [_fmt(r["eager/staged"]), _fmt(r["staged/numba"])]
        print(f"{r['workload']:16s}" + "".join(f"{c:>13s}" for c in cells))
    for r in rows:
        if r["workload"] == "l2hmc":
            first = r["variants"]
            print(f"first call of the staged l2hmc step (trace + compile): "
                  f"{_fmt(first['staged']['first_call_ms'])} ms "
                  f"(njit compile + first call of the hand-written version: "
                  f"{_fmt(first['numba']['first_call_ms'])} ms)")


def machine(backend: str) -> dict:
    return {"platform": platform.platform(), "processor": platform.processor(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__,
            "stagecraft": tf.__version__, "backend": backend}


def _warm_up_numba() -> None:
    """Compile one trivial njit function, so numba's one-time initialization is not charged to
    the first workload's first call."""
    NJIT(lambda x: x + 1)(1)


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__, list(WORKLOADS))
    parser.add_argument("--backend", help="stagecraft backend for the staged variant "
                        f"(default: stagecraft's default, now {backends.DEFAULT!r})")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    repeat, number = batches(args)
    backend = args.backend or backends.DEFAULT
    _warm_up_numba()
    rows = [measure(WORKLOADS[name](sizes, args.backend), repeat, number)
            for name in (args.only or WORKLOADS)]
    print_table(rows, backend)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": machine(backend), "sizes": vars(sizes), "rows": rows}, fh,
                      indent=2)


if __name__ == "__main__":
    main()
