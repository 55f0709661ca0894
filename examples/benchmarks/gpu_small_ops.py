"""The sections of gpu_backend.py that compare stagecraft with PyTorch (and CuPy) op for op:
one eager add, a ten-op elementwise expression (eager and staged), an MLP training step
(eager and staged) and a classifier's loss gradient (sparse softmax cross-entropy, eager and
staged, against PyTorch's cross_entropy). Each variant runs once and is checked against a
float64 NumPy reference before it is timed; times are per call of a loop with one synchronize
after it (timing.loop_us).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from cpu_backend import _fmt  # sibling script modules
from gpu_baselines import Baselines, check_close, synchronize
from timing import loop_us
import stagecraft as tf


@dataclass(frozen=True)
class OpSizes:
    """Sizes and loop lengths of these sections; ``OPS_QUICK`` shrinks them for the tests."""
    elements: int = 1000  # the add's and the expression's float32 vectors
    add_loop: int = 1000
    expression_loop: int = 100
    mlp: tuple[int, int, int, int] = (1024, 1024, 4096, 1024)  # batch, in, hidden, out
    mlp_loop: int = 10
    classifier: tuple[int, int] = (1024, 1000)   # batch, classes
    classifier_loop: int = 100
    repeat: int = 7


OPS_FULL = OpSizes()
OPS_QUICK = OpSizes(elements=8, add_loop=2, expression_loop=1, mlp=(4, 4, 8, 4), mlp_loop=1,
                    classifier=(4, 3), classifier_loop=1, repeat=1)
# The MLP's gradient check takes one step with a learning rate large enough that the update
# of every weight is far above float32 rounding of the weight itself (the mean over
# batch x out elements makes the gradients small); the timed steps use a stable one.
CHECK_LR, TRAIN_LR = 100.0, 0.1
# Relative-norm limits against float64: exact float32 arithmetic lands near 1e-7 (ops) and
# 1e-6 (the MLP's loss and second layer); TF32 matmuls near 1e-3 there (measured by rounding
# the operands in NumPy), so the MLP's limit also tells that TF32 is off in every variant.
# The first layer's updates get a looser one: a pre-activation within rounding of 0 can take
# the other side of the relu in float32, and one such flip moves the w1 update by 2e-4 at full
# size (TF32 moves it by 1e-2).
ELEMENTWISE_LIMIT, MLP_LIMIT = 1e-5, 1e-4
MLP_LIMITS = (3e-3, 3e-3, MLP_LIMIT, MLP_LIMIT)  # updates of w1, b1, w2, b2


def _on_gpu(section: str, variant: str, value: Any) -> None:
    assert value.device.endswith("GPU:0"), f"{section}: {variant} returned a tensor on " \
                                           f"{value.device}, not the GPU"


def _library_array(baselines: Baselines, name: str, value: np.ndarray) -> Any:
    if name == "torch":
        return baselines.torch.from_numpy(value).cuda()
    return baselines.cupy.asarray(value)


def _timed(section: str, calls: dict[str, tuple[Callable[[], Any], Callable[[], None]]],
           expected: np.ndarray, limit: float, loop: int, repeat: int) -> dict:
    """Checks every variant's first result (on the GPU for stagecraft's), times it, and checks
    its result once more (a staged GPU function replays a recorded CUDA graph from its second
    or third call on)."""
    row: dict[str, Any] = {"variants": {}}
    for variant, (call, sync) in calls.items():
        errors = []
        for when in ("first", "after timing"):
            out = call()
            if variant.startswith("stagecraft"):
                _on_gpu(section, variant, out)
            errors.append(check_close(section, variant, f"result ({when})", out, expected,
                                      limit))
            if when == "first":
                timing = loop_us(call, sync, loop, repeat)
        row["variants"][variant] = {**timing, "relative_errors": errors}
    _ratios(row)
    return row


def _ratios(row: dict) -> None:
    """Each variant's time over PyTorch's (None without PyTorch)."""
    torch = row["variants"].get("torch")
    for timing in row["variants"].values():
        timing["per_torch"] = None if torch is None else \
            timing["per_call_us"] / torch["per_call_us"]


def _vectors(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return tuple(rng.standard_normal(n).astype(np.float32) for _ in range(2))


def measure_add(sizes: OpSizes, baselines: Baselines) -> dict:
    """``x + y`` on two float32 vectors already on the GPU, eagerly: the host cost of one op."""
    x, y = _vectors(sizes.elements)
    with tf.device("/gpu:0"):
        tx, ty = tf.constant(x), tf.constant(y)
    calls = {"stagecraft": (lambda: tx + ty, synchronize)}
    for name in baselines.available():
        lx, ly = _library_array(baselines, name, x), _library_array(baselines, name, y)
        calls[name] = ((lambda lx=lx, ly=ly: lx + ly), baselines.sync(name))
    row = _timed("add", calls, x.astype(np.float64) + y, ELEMENTWISE_LIMIT, sizes.add_loop,
                 sizes.repeat)
    return {"elements": sizes.elements, **row}


def expression(x: Any, y: Any, tanh: Callable[[Any], Any]) -> Any:
    """Ten elementwise ops (*, +, *, -, tanh, *, +, *, +, /), written once for every library."""
    return (tanh((x * y + x) * 0.5 - y) * x + 1.0) / (y * y + 1.0)


def expression_tf(x: Any, y: Any) -> Any:
    return expression(x, y, tf.tanh)


def measure_expression(sizes: OpSizes, baselines: Baselines) -> dict:
    """The ten-op expression eagerly and staged in stagecraft, eagerly in the others."""
    x, y = _vectors(sizes.elements)
    with tf.device("/gpu:0"):
        tx, ty = tf.constant(x), tf.constant(y)
    staged = tf.function(expression_tf)
    calls = {"stagecraft_eager": (lambda: expression_tf(tx, ty), synchronize),
             "stagecraft_staged": (lambda: staged(tx, ty), synchronize)}
    for name, library in baselines.available().items():
        lx, ly = _library_array(baselines, name, x), _library_array(baselines, name, y)
        calls[name] = ((lambda lx=lx, ly=ly, t=library.tanh: expression(lx, ly, t)),
                       baselines.sync(name))
    expected = expression(x.astype(np.float64), y.astype(np.float64), np.tanh)
    row = _timed("expression", calls, expected, ELEMENTWISE_LIMIT, sizes.expression_loop,
                 sizes.repeat)
    return {"elements": sizes.elements, "ops": 10, **row}


# ---------------------------------------------------------------------------------------------
# A classifier's loss: the gradient of the mean sparse softmax cross-entropy in the logits

def classifier_gradient_tf(labels: Any, logits: Any) -> Any:
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    return tape.gradient(loss, logits)


def measure_classifier_loss(sizes: OpSizes, baselines: Baselines) -> dict:
    """The loss and its gradient eagerly and staged in stagecraft, eagerly in PyTorch
    (``cross_entropy`` and ``autograd.grad``; CuPy has no gradients); the gradient is checked:
    (softmax(logits) - one_hot(labels)) / batch."""
    batch, classes = sizes.classifier
    rng = np.random.default_rng(6)
    logits = (3 * rng.standard_normal((batch, classes))).astype(np.float32)
    labels = rng.integers(0, classes, batch)
    e = np.exp(logits - logits.max(1, keepdims=True).astype(np.float64))
    expected = (e / e.sum(1, keepdims=True) - np.eye(classes)[labels]) / batch
    with tf.device("/gpu:0"):
        tl, tx = tf.constant(labels.astype(np.int32)), tf.constant(logits)
    staged = tf.function(classifier_gradient_tf)
    calls = {"stagecraft_eager": (lambda: classifier_gradient_tf(tl, tx), synchronize),
             "stagecraft_staged": (lambda: staged(tl, tx), synchronize)}
    if baselines.torch is not None:
        torch = baselines.torch
        lx = torch.from_numpy(logits).cuda().requires_grad_()
        ll = torch.from_numpy(labels.astype(np.int64)).cuda()
        calls["torch"] = (lambda: torch.autograd.grad(
            torch.nn.functional.cross_entropy(lx, ll), lx)[0], baselines.sync("torch"))
    row = _timed("classifier_loss", calls, expected, ELEMENTWISE_LIMIT, sizes.classifier_loop,
                 sizes.repeat)
    return {"shape": [batch, classes], **row}


# ---------------------------------------------------------------------------------------------
# MLP training step: relu hidden layer, mean squared error, plain SGD

def mlp_loss(x: Any, target: Any, params: list, relu: Callable, square: Callable,
             mean: Callable) -> Any:
    """The forward pass and loss, written once for stagecraft, PyTorch and NumPy."""
    w1, b1, w2, b2 = params
    return mean(square(relu(x @ w1 + b1) @ w2 + b2 - target))


def mlp_step_tf(params: list, x: Any, target: Any, lr: Any) -> Any:
    """One SGD step on the Variables ``params``; returns the loss before it."""
    with tf.GradientTape() as tape:
        loss = mlp_loss(x, target, params, tf.nn.relu, tf.square, tf.reduce_mean)
    for var, grad in zip(params, tape.gradient(loss, params)):
        var.assign_sub(lr * grad)
    return loss


def _mlp_step_torch(torch: Any) -> Callable:
    def step(params: list, x: Any, target: Any, lr: float) -> Any:
        loss = mlp_loss(x, target, params, torch.relu, torch.square, torch.mean)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for param, grad in zip(params, grads):
                param.sub_(lr * grad)
        return loss
    return step


def mlp_init(shape: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray, list]:
    """Inputs, targets and [w1, b1, w2, b2] (weights scaled by 1/sqrt(fan-in)), float32."""
    batch, n_in, hidden, n_out = shape
    rng = np.random.default_rng(6)
    f32 = np.float32
    params = [rng.standard_normal((n_in, hidden)) / np.sqrt(n_in),
              0.1 * rng.standard_normal(hidden),
              rng.standard_normal((hidden, n_out)) / np.sqrt(hidden),
              0.1 * rng.standard_normal(n_out)]
    return (rng.standard_normal((batch, n_in)).astype(f32),
            rng.standard_normal((batch, n_out)).astype(f32), [p.astype(f32) for p in params])


def mlp_reference(x: np.ndarray, target: np.ndarray, params: list) -> tuple[float, list]:
    """The loss and its gradients in float64, by hand (the relu's derivative taken as 0 at 0)."""
    x, target = x.astype(np.float64), target.astype(np.float64)
    w1, b1, w2, b2 = (p.astype(np.float64) for p in params)
    z = x @ w1 + b1
    h = np.maximum(z, 0)
    diff = h @ w2 + b2 - target
    d_out = 2 * diff / diff.size
    d_z = (d_out @ w2.T) * (z > 0)
    return float(np.mean(diff * diff)), [x.T @ d_z, d_z.sum(0), h.T @ d_out, d_out.sum(0)]


def measure_mlp_step(sizes: OpSizes, baselines: Baselines) -> dict:
    """The step eagerly and staged in stagecraft and eagerly in PyTorch (TF32 off is set by the
    caller), each on its own copy of the same initial weights: one checked step with CHECK_LR,
    the weights reset, the timed steps with TRAIN_LR, and from the initial weights again one
    more checked step."""
    x, target, init = mlp_init(sizes.mlp)
    loss_ref, grads_ref = mlp_reference(x, target, init)
    updates_ref = [-CHECK_LR * g for g in grads_ref]
    variants: dict[str, tuple[Callable, list, Callable, Callable]] = {}
    with tf.device("/gpu:0"):
        tx, tt = tf.constant(x), tf.constant(target)
        lrs = tf.constant(np.float32(CHECK_LR)), tf.constant(np.float32(TRAIN_LR))
        for name, step in (("stagecraft_eager", mlp_step_tf),
                           ("stagecraft_staged", tf.function(mlp_step_tf))):
            params = [tf.Variable(p) for p in init]
            variants[name] = (lambda lr, step=step, params=params: step(params, tx, tt, lrs[lr]),
                              params, lambda params=params: [v.assign(p) for v, p in
                                                             zip(params, init)], synchronize)
    if baselines.torch is not None:
        torch = baselines.torch
        step = _mlp_step_torch(torch)
        lx, lt = (torch.from_numpy(a).cuda() for a in (x, target))
        params = [torch.from_numpy(p).cuda().requires_grad_() for p in init]

        def reset(params: list = params) -> None:
            with torch.no_grad():
                for param, value in zip(params, init):
                    param.copy_(torch.from_numpy(value))
        variants["torch"] = (lambda lr: step(params, lx, lt, (CHECK_LR, TRAIN_LR)[lr]), params,
                             reset, torch.cuda.synchronize)
    batch, n_in, hidden, n_out = sizes.mlp
    flop = 2 * batch * (2 * n_in * hidden + 3 * hidden * n_out)  # 2 matmuls forward, 3 back
    row: dict[str, Any] = {"shape": list(sizes.mlp), "flop_per_step": flop,
                           "check_lr": CHECK_LR, "train_lr": TRAIN_LR, "variants": {}}
    for name, (call, params, reset, sync) in variants.items():
        errors = {}
        for when in ("first", "after timing"):  # the staged step replays a CUDA graph later
            reset()
            where = f"{name} ({when})"
            errors[f"loss, {when}"] = check_close("mlp_step", where, "loss", call(0),
                                                  np.array(loss_ref), MLP_LIMIT)
            for i, (param, start, update, limit) in enumerate(zip(params, init, updates_ref,
                                                                  MLP_LIMITS)):
                errors[f"update {i}, {when}"] = check_close(
                    "mlp_step", where, f"update of param {i}", _host(param) - start, update,
                    limit)
            if when == "first":
                reset()
                timing = loop_us(lambda call=call: call(1), sync, sizes.mlp_loop, sizes.repeat)
        row["variants"][name] = {**timing, "relative_errors": errors,
                                 "tflop_s": flop / (timing["per_call_us"] * 1e6)}
    _ratios(row)
    return row


def _host(param: Any) -> np.ndarray:
    """A parameter's values in float64 (a stagecraft Variable or a torch tensor)."""
    if hasattr(param, "detach"):
        return param.detach().cpu().numpy().astype(np.float64)
    return param.numpy().astype(np.float64)


def print_section(title: str, row: dict, columns: dict[str, Callable[[dict], float | None]],
                  missing: dict[str, str]) -> None:
    """One table: a line per variant (and per library that is missing, with why)."""
    print(title)
    print(f"  {'variant':22s}" + "".join(f"{c:>12s}" for c in columns))
    for variant, timing in row["variants"].items():
        cells = [(lambda v: "n/a" if v is None else _fmt(v))(get(timing))
                 for get in columns.values()]
        print(f"  {variant:22s}" + "".join(f"{c:>12s}" for c in cells))
    for name, why in missing.items():
        print(f"  {name:22s}" + "".join(f"{'n/a':>12s}" for _ in columns) + f"  ({why})")


def print_small_ops(name: str, row: dict, missing: dict[str, str]) -> None:
    """The table of section ``name`` ("add", "expression", "classifier_loss" or
    "mlp_step")."""
    us, per_torch = (lambda t: t["per_call_us"]), (lambda t: t["per_torch"])
    if name == "add":
        print_section(f"add of two {row['elements']}-element float32 vectors, us per op "
                      f"(loop of ops, one synchronize)", row, {"us/op": us, "/torch": per_torch},
                      missing)
    elif name == "expression":
        print_section(f"10-op expression on {row['elements']}-element float32 vectors, us per "
                      f"call (loop of calls, one synchronize)", row,
                      {"us/call": us, "/torch": per_torch}, missing)
    elif name == "classifier_loss":
        batch, classes = row["shape"]
        print_section(f"sparse softmax cross-entropy's gradient, {batch}x{classes} float32 "
                      f"logits, us per call (loop of calls, one synchronize)", row,
                      {"us/call": us, "/torch": per_torch},
                      {k: v for k, v in missing.items() if k == "torch"})
    else:
        batch, n_in, hidden, n_out = row["shape"]
        print_section(f"MLP training step, batch {batch}, {n_in}->{hidden}->{n_out} float32, "
                      f"TF32 off, ms per step (loop of steps, one synchronize)", row,
                      {"ms/step": lambda t: t["per_call_us"] / 1e3,
                       "TFLOP/s": lambda t: t["tflop_s"], "/torch": per_torch},
                      {k: v for k, v in missing.items() if k == "torch"})
