"""The stagecraft versions of the benchmark workloads that more than one script times (the
CPU-backend comparison and the first-call benchmark): the paper's L2HMC sampler step and an
MLP training step. NumPy only, no Numba: a script timing a cold start imports this."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import stagecraft as tf

EPS = 0.1
SIGMA = np.array([[1.0, 0.95], [0.95, 1.0]])
LEARNING_RATE = 0.1


def _mlp_tf(z: Any, layers: list) -> Any:
    (w1, b1), (w2, b2), (w3, b3) = layers
    h = tf.nn.relu(tf.matmul(z, w1) + b1)
    h = tf.nn.relu(tf.matmul(h, w2) + b2)
    return tf.tanh(tf.matmul(h, w3) + b3)


def make_l2hmc_tf(nets: list, sigma_inv: Any, steps: int) -> Callable:
    """The stagecraft step ``(x, v) -> (x', v', acceptance probability)``; ``nets`` are the
    scale, gradient-transformation and translation MLPs (lists of (weight, bias) Variables)."""
    eps, half = EPS, 0.5 * EPS

    def energy(x):
        return 0.5 * tf.reduce_sum(tf.matmul(x, sigma_inv) * x, axis=1)

    def grad_energy(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(energy(x))
        return tape.gradient(total, x)

    def momentum_update(x, v, logdet):
        s, q, t = [_mlp_tf(x, net) for net in nets]
        v = v * tf.exp(half * s) - half * (grad_energy(x) * tf.exp(eps * q) + t)
        return v, logdet + half * tf.reduce_sum(s, axis=1)

    def l2hmc_step(x0, v0):
        x, v, logdet = x0, v0, tf.zeros([x0.shape[0]])
        for _ in range(steps):  # a Python loop: unrolled when staged
            v, logdet = momentum_update(x, v, logdet)
            s, q, t = [_mlp_tf(v, net) for net in nets]
            x = x * tf.exp(eps * s) + eps * (v * tf.exp(eps * q) + t)
            logdet = logdet + eps * tf.reduce_sum(s, axis=1)
            v, logdet = momentum_update(x, v, logdet)
        h0 = energy(x0) + 0.5 * tf.reduce_sum(v0 * v0, axis=1)
        h1 = energy(x) + 0.5 * tf.reduce_sum(v * v, axis=1)
        return x, v, tf.exp(tf.minimum(h0 - h1 + logdet, 0.0))

    return l2hmc_step


def mlp_train_step_tf(params: list, x: Any, labels: Any) -> Any:
    """One SGD step on ``params`` = [w1, b1, w2, b2] (Variables); returns the loss before it."""
    w1, b1, w2, b2 = params
    with tf.GradientTape() as tape:
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    for var, grad in zip(params, tape.gradient(loss, params)):
        var.assign_sub(LEARNING_RATE * grad)
    return loss
