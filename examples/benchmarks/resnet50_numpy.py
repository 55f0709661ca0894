"""A hand-written NumPy ResNet-50 training step: the baseline the staged stagecraft model is
measured against (issue 18's target: staged within 1.5x of this).

The same layers as ``examples/resnet50.py`` (convolutions as im2col + one BLAS matmul, batch
normalization in training mode with moving statistics, ReLU, 3x3/2 max pooling, global
average pooling, a dense layer, softmax cross-entropy and plain SGD), each written as a
forward function returning its output and a closure that maps the output's gradient to the
input's (accumulating the parameters' gradients). channels_last, float32.

    python examples/benchmarks/resnet50_numpy.py --batch 1 --size 224
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

Backward = Callable[[np.ndarray], np.ndarray]
F32 = np.float32


def _same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


class Params:
    """Named float32 parameters, their gradients and the BN layers' moving statistics."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.values: dict[str, np.ndarray] = {}
        self.grads: dict[str, np.ndarray] = {}
        self.moving: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple, init: str) -> np.ndarray:
        if name not in self.values:
            if init == "glorot":
                fan_in = int(np.prod(shape[:-1]))
                fan_out = int(np.prod(shape[:-2])) * shape[-1] if len(shape) > 2 else shape[-1]
                limit = np.sqrt(6.0 / (fan_in + fan_out))
                self.values[name] = self.rng.uniform(-limit, limit, shape).astype(F32)
            else:
                self.values[name] = np.full(shape, 1.0 if init == "ones" else 0.0, F32)
        return self.values[name]

    def add_grad(self, name: str, g: np.ndarray) -> None:
        self.grads[name] = self.grads[name] + g if name in self.grads else g

    def sgd(self, lr: float) -> None:
        for name, g in self.grads.items():
            self.values[name] -= F32(lr) * g
        self.grads.clear()


def conv(p: Params, name: str, x: np.ndarray, filters: int, k: int, stride: int = 1,
         same: bool = False) -> tuple[np.ndarray, Backward]:
    """Conv2D with bias: im2col, then one matmul."""
    n, h, w, c = x.shape
    wt = p.get(name + "/kernel", (k, k, c, filters), "glorot")
    b = p.get(name + "/bias", (filters,), "zeros")
    (pt, pb), (pl, pr) = (_same_pads(h, k, stride), _same_pads(w, k, stride)) if same \
        else ((0, 0), (0, 0))
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0))) if pt + pb + pl + pr else x
    ho, wo = (xp.shape[1] - k) // stride + 1, (xp.shape[2] - k) // stride + 1
    if k == 1:
        cols = np.ascontiguousarray(xp[:, ::stride, ::stride, :]).reshape(-1, c)
    else:
        win = sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::stride, ::stride]
        cols = np.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(-1, k * k * c)
    w2 = wt.reshape(-1, filters)
    y = (cols @ w2 + b).reshape(n, ho, wo, filters)

    def backward(dy: np.ndarray) -> np.ndarray:
        d2 = dy.reshape(-1, filters)
        p.add_grad(name + "/kernel", (cols.T @ d2).reshape(wt.shape))
        p.add_grad(name + "/bias", d2.sum(0))
        dcols = (d2 @ w2.T).reshape(n, ho, wo, k, k, c)
        dxp = np.zeros(xp.shape, F32)
        for i in range(k):
            for j in range(k):
                dxp[:, i:i + stride * (ho - 1) + 1:stride,
                    j:j + stride * (wo - 1) + 1:stride, :] += dcols[:, :, :, i, j, :]
        return dxp[:, pt:pt + h, pl:pl + w, :]
    return y, backward


def batch_norm(p: Params, name: str, x: np.ndarray, momentum: float = 0.99,
               eps: float = 1e-3) -> tuple[np.ndarray, Backward]:
    """BatchNormalization in training mode (batch statistics; moving ones updated)."""
    c = x.shape[-1]
    gamma = p.get(name + "/gamma", (c,), "ones")
    beta = p.get(name + "/beta", (c,), "zeros")
    mean = x.mean((0, 1, 2))
    var = x.var((0, 1, 2))
    for stat, value in (("moving_mean", mean), ("moving_variance", var)):
        old = p.moving.get(f"{name}/{stat}", np.zeros(c, F32) if stat == "moving_mean"
                           else np.ones(c, F32))
        p.moving[f"{name}/{stat}"] = old * F32(momentum) + value * F32(1 - momentum)
    inv = F32(1) / np.sqrt(var + F32(eps))
    xhat = (x - mean) * inv
    y = xhat * gamma + beta

    def backward(dy: np.ndarray) -> np.ndarray:
        m = F32(x.shape[0] * x.shape[1] * x.shape[2])
        dgamma = (dy * xhat).sum((0, 1, 2))
        dbeta = dy.sum((0, 1, 2))
        p.add_grad(name + "/gamma", dgamma)
        p.add_grad(name + "/beta", dbeta)
        return gamma * inv * (dy - dbeta / m - xhat * dgamma / m)
    return y, backward


def relu(x: np.ndarray) -> tuple[np.ndarray, Backward]:
    mask = x > 0
    return x * mask, lambda dy: dy * mask


def max_pool_3x3_s2(x: np.ndarray) -> tuple[np.ndarray, Backward]:
    """3x3 max pooling, stride 2, VALID; the gradient goes to each window's first maximum."""
    win = sliding_window_view(x, (3, 3), axis=(1, 2))[:, ::2, ::2]
    y = win.max(axis=(-2, -1))
    ho, wo = y.shape[1], y.shape[2]

    def backward(dy: np.ndarray) -> np.ndarray:
        dx = np.zeros_like(x)
        taken = np.zeros(y.shape, bool)
        for i in range(3):
            for j in range(3):
                hit = (win[..., i, j] == y) & ~taken
                taken |= hit
                dx[:, i:i + 2 * (ho - 1) + 1:2, j:j + 2 * (wo - 1) + 1:2, :] += dy * hit
        return dx
    return y, backward


def block(p: Params, name: str, x: np.ndarray, filters: tuple[int, int, int], stride: int,
          projection: bool) -> tuple[np.ndarray, Backward]:
    """A bottleneck block: 1x1, 3x3, 1x1 convolutions with BN, plus the shortcut."""
    f1, f2, f3 = filters
    steps: list[Backward] = []
    h = x
    for i, (f, k, s) in enumerate(((f1, 1, stride), (f2, 3, 1), (f3, 1, 1))):
        h, b1 = conv(p, f"{name}/conv{i}", h, f, k, s, same=(k == 3))
        h, b2 = batch_norm(p, f"{name}/bn{i}", h)
        steps += [b1, b2]
        if i < 2:
            h, b3 = relu(h)
            steps.append(b3)
    short_steps: list[Backward] = []
    short = x
    if projection:
        short, b1 = conv(p, f"{name}/shortcut", x, f3, 1, stride)
        short, b2 = batch_norm(p, f"{name}/shortcut_bn", short)
        short_steps = [b1, b2]
    out, back_relu = relu(h + short)

    def backward(dy: np.ndarray) -> np.ndarray:
        d = back_relu(dy)
        dmain = d
        for b in reversed(steps):
            dmain = b(dmain)
        dshort = d
        for b in reversed(short_steps):
            dshort = b(dshort)
        return dmain + dshort
    return out, backward


STAGES = (((64, 64, 256), 3, 1), ((128, 128, 512), 4, 2), ((256, 256, 1024), 6, 2),
          ((512, 512, 2048), 3, 2))


def train_step(p: Params, images: np.ndarray, onehot: np.ndarray, lr: float = 0.1) -> float:
    """One SGD step of ResNet-50 on a batch; returns the mean softmax cross-entropy."""
    steps: list[Backward] = []
    h, b = conv(p, "conv1", images, 64, 7, 2, same=True)
    steps.append(b)
    h, b = batch_norm(p, "bn_conv1", h)
    steps.append(b)
    h, b = relu(h)
    steps.append(b)
    h, b = max_pool_3x3_s2(h)
    steps.append(b)
    for s, (filters, count, stride) in enumerate(STAGES):
        for i in range(count):
            h, b = block(p, f"stage{s + 2}/{i}", h, filters, stride if i == 0 else 1, i == 0)
            steps.append(b)
    pooled = h.mean((1, 2))
    hw = h.shape[1] * h.shape[2]
    w = p.get("fc1000/kernel", (pooled.shape[1], onehot.shape[1]), "glorot")
    bias = p.get("fc1000/bias", (onehot.shape[1],), "zeros")
    logits = pooled @ w + bias
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = float(-(onehot * logp).sum(1).mean())
    dlogits = (np.exp(logp) - onehot) / F32(len(onehot))
    p.add_grad("fc1000/kernel", pooled.T @ dlogits)
    p.add_grad("fc1000/bias", dlogits.sum(0))
    dpooled = dlogits @ w.T
    d = np.broadcast_to(dpooled[:, None, None, :] / F32(hw), h.shape).astype(F32)
    for b in reversed(steps):
        d = b(d)
    p.sgd(lr)
    return loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    images = rng.random((args.batch, args.size, args.size, 3), F32)
    onehot = np.eye(1000, dtype=F32)[rng.integers(0, 1000, args.batch)]
    p = Params()
    train_step(p, images, onehot)
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        train_step(p, images, onehot)
        times.append(time.perf_counter() - start)
    print(f"NumPy ResNet-50, batch {args.batch}, {args.size}x{args.size}: "
          f"median {np.median(times):.3f} s/step")


if __name__ == "__main__":
    main()
