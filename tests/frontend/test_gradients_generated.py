"""Gradient checks generated from the op table.

For every op with a VJP rule (``stagecraft.autodiff.vjps.VJPS``) and every float64 example its
``OpDef.examples`` produces, the tape gradient of ``sum(out * w)`` (``w`` a fixed random weight,
so symmetric errors do not cancel) is compared with central finite differences, and the
Hessian-vector product ``d/dx (grad(x) . v)`` computed with nested tapes is compared with
finite differences of the first-order tape gradient (there the objective gets a quadratic term,
``sum(out**2 * u) / 2``, so that even for linear ops the gradient depends on x and the nested
tape runs the rules of the ops inside each VJP rule). Integer / bool inputs (indices, conditions) are never differentiated
and must get a None gradient; ops without a rule (``NOT_DIFFERENTIABLE``) must give None.
The examples keep away from kinks (``sampling.values(avoid=...)``); as a safety net, an example
closer than ``KINK_MARGIN`` to one (ties of maximum / reduce_max, integer steps of floor, ...,
see ``KINKS``) is left out, and ``test_kink_filter_keeps_most_examples`` makes sure that stays
rare.

The composite ops of the frontend (softmax, cross-entropies, stack, slicing, ...) get the same
first- and second-order checks from a small table of cases below.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.eager.bind import bind
from stagecraft.autodiff.vjps import NOT_DIFFERENTIABLE, UNDEFINED, VJPS
from stagecraft.ir import OPS
from stagecraft.ir import dtypes as dt

from support.gradients import weights as _weights_like
from support.op_examples import as_list as _as_list
from support.op_examples import examples as _examples
from support.op_examples import seed as _seed

EPS = 1e-6
RTOL = ATOL = 1e-5

# Ops whose examples are unsuitable for finite differences, with the reason. Keep this tiny:
# prefer fixing the op's `examples` (or giving it `avoid=`) in ir/ops/*.py.
EXCLUDED: dict[str, str] = {
    "cholesky": "TensorFlow's gradient is symmetrized (perturbations of A taken symmetric) while "
                "the op reads only the lower triangle; checked with symmetric perturbations in "
                "tests/frontend/test_linalg_gradients.py",
    "random_gamma": "the gradient in alpha is TensorFlow's implicit reparameterization (the "
                    "sample moved at a fixed CDF value), not the derivative of the rejection "
                    "sampler's transform that finite differences of samples see; checked in "
                    "tests/frontend/test_gamma_gradient.py",
    "zeta": "TensorFlow defines its gradient in q only (None in x, where the function is not "
            "constant); checked to second order in tests/frontend/test_special_ops.py",
}

# Ops whose gradient is None by definition although the function is not constant: checked for
# None instead of against finite differences.
NO_GRADIENT_BY_DESIGN: dict[str, str] = {
    "stop_gradient": "the identity on values, but gradients must not flow through it",
}


# Distance of an example to the nearest point where its op is not smooth; finite differences
# with step EPS are meaningless closer than KINK_MARGIN (the examples are meant to stay far away).
KINK_MARGIN = 1e-4


def _off_steps(v: Any, offset: float = 0.0) -> float:
    v = np.asarray(v, np.float64) - offset
    return float(np.min(np.abs(v - np.round(v)), initial=np.inf))


def _min_abs(v: Any) -> float:
    return float(np.min(np.abs(np.asarray(v, np.float64)), initial=np.inf))


def _extreme_gap(ex) -> float:
    """Smallest gap between the extreme and the runner-up along the reduced axes (both ends)."""
    x, axes = np.asarray(ex.inputs[0], np.float64), ex.attrs["axes"]
    axes = tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)
    kept = tuple(i for i in range(x.ndim) if i not in axes)
    s = np.sort(np.transpose(x, kept + axes).reshape([x.shape[i] for i in kept] + [-1]), -1)
    if s.shape[-1] < 2:
        return np.inf
    return float(min(np.min(s[..., -1] - s[..., -2]), np.min(s[..., 1] - s[..., 0])))


KINKS: dict[str, Callable[[Any], float]] = {
    "abs": lambda ex: _min_abs(ex.inputs[0]),
    "relu": lambda ex: _min_abs(ex.inputs[0]),
    "sign": lambda ex: _min_abs(ex.inputs[0]),
    "floor": lambda ex: _off_steps(ex.inputs[0]),
    "ceil": lambda ex: _off_steps(ex.inputs[0]),
    "round": lambda ex: _off_steps(ex.inputs[0], 0.5),
    "floordiv": lambda ex: _off_steps(np.divide(*ex.inputs)),
    "floormod": lambda ex: _off_steps(np.divide(*ex.inputs)),
    "maximum": lambda ex: _min_abs(np.subtract(*ex.inputs)),
    "minimum": lambda ex: _min_abs(np.subtract(*ex.inputs)),
    "reduce_max": _extreme_gap,
    "reduce_min": _extreme_gap,
}


def _near_kink(name: str, ex) -> bool:
    return name in KINKS and KINKS[name](ex) < KINK_MARGIN


# ------------------------------------------------------------------------- helpers

def _is_float(a: Any) -> bool:
    return np.asarray(a).dtype.kind == "f"


def _fmt(v: Any) -> str:
    if isinstance(v, dt.DType):
        return v.name
    if isinstance(v, tuple) and v and all(isinstance(i, tuple) for i in v):  # slice specs
        return ",".join(":".join("" if x is None else str(x) for x in i) for i in v)
    return repr(v).replace(" ", "")


def _example_id(name: str, i: int, ex) -> str:
    shapes = "_".join(f"{np.asarray(x).dtype.name[0]}{list(np.shape(x))}".replace(" ", "")
                      for x in ex.inputs)
    attrs = "-".join(f"{k}={_fmt(v)}" for k, v in ex.attrs.items())
    return "-".join(p for p in (f"{name}[{i}]", shapes, attrs) if p)


def _op_cases(names) -> list:
    cases = []
    for name in sorted(names):
        op = OPS[name]
        if dt.float64 not in op.dtypes:
            continue
        # seeded by the op alone: float64 is the only dtype drawn
        for i, ex in enumerate(_examples(name, dt.float64, key=(name,))):
            if _near_kink(name, ex):
                continue  # finite differences would straddle the kink
            marks = ()
            if name in EXCLUDED:
                marks = (pytest.mark.xfail(reason=EXCLUDED[name], strict=True),)
            cases.append(pytest.param(op, ex, id=_example_id(name, i, ex), marks=marks))
    return cases


_BY_PRECISION = (dt.bfloat16, dt.float16, dt.float32, dt.float64)


def _tolerances(dtype: dt.DType) -> tuple[float, float]:
    """(eps, tol) for finite differences of an output of ``dtype`` (float32 and the half
    formats only for casts: steps wide enough to span many of the format's values)."""
    return {dt.float64: (EPS, RTOL), dt.float32: (1e-3, 2e-3), dt.float16: (0.25, 3e-2),
            dt.bfloat16: (1.0, 6e-2)}[dtype]


class Fn:
    """A function of arrays to check: ``fn(*tensors) -> tensor or list of tensors``."""

    def __init__(self, fn: Callable, arrays: Sequence, seed: int, quadratic: bool = False):
        self.fn = fn
        self.quadratic = quadratic
        self.arrays = [np.asarray(a) for a in arrays]
        self.floats = [i for i, a in enumerate(self.arrays) if _is_float(a)]
        outs = _as_list(fn(*[tf.constant(a) for a in self.arrays]))
        self.out_dtypes = [o.dtype for o in outs]
        # (complex outputs: real weights; the objective is the real part of the sum)
        self.weights = [_weights_like(o.numpy(), seed + k)
                        if o.dtype.is_floating or o.dtype.is_complex else None
                        for k, o in enumerate(outs)]
        self.weights2 = [None if w is None else _weights_like(w, seed + 100 + k)
                         for k, w in enumerate(self.weights)]
        rng = np.random.default_rng(seed + 1000)
        self.v = {i: rng.uniform(-1.0, 1.0, self.arrays[i].shape) for i in self.floats}
        float_outs = [d.real_dtype for d in self.out_dtypes if d.is_floating or d.is_complex]
        # the least precise output's
        self.eps, self.tol = _tolerances(next((d for d in _BY_PRECISION if d in float_outs),
                                              dt.float64))

    def objective(self, ts: list) -> Any:
        """sum_k sum(out_k * w_k) over the float outputs (None if there are none); with
        ``quadratic``, plus sum(out_k**2 * u_k) / 2, so that the gradient depends on the output
        even for linear ops and the Hessian-vector product runs the VJP rules' own rules."""
        total = None
        for o, w, u in zip(_as_list(self.fn(*ts)), self.weights, self.weights2):
            if w is None:
                continue
            term = tf.reduce_sum(o * tf.constant(w.astype(o.dtype.np)))
            if self.quadratic:
                term = term + tf.reduce_sum(o * o * tf.constant((0.5 * u).astype(o.dtype.np)))
            term = tf.math.real(term) if term.dtype.is_complex else term
            total = term if total is None else total + term
        return total

    def value(self, arrays: list) -> float:
        y = self.objective([tf.constant(a) for a in arrays])
        return float(np.asarray(y.numpy(), np.float64))

    def tape_grads(self, arrays: list) -> list:
        """The tape gradient w.r.t. every input (None entries kept)."""
        ts = [tf.constant(a) for a in arrays]
        with tf.GradientTape() as tape:
            for i in self.floats:
                tape.watch(ts[i])
            y = self.objective(ts)
        if y is None:
            return [None] * len(ts)
        return tape.gradient(y, ts)

    def dense_grads(self, arrays: list) -> dict:
        gs = self.tape_grads(arrays)
        return {i: np.zeros(arrays[i].shape) if gs[i] is None
                else np.asarray(gs[i].numpy(), np.float64) for i in self.floats}

    def hvp(self) -> list:
        """d/dx (grad(x) . v) with nested tapes."""
        ts = [tf.constant(a) for a in self.arrays]
        with tf.GradientTape() as outer:
            for i in self.floats:
                outer.watch(ts[i])
            with tf.GradientTape() as inner:
                for i in self.floats:
                    inner.watch(ts[i])
                y = self.objective(ts)
            gs = [None] * len(ts) if y is None else inner.gradient(y, ts)
            hv = None
            for i in self.floats:
                if gs[i] is not None:
                    term = tf.reduce_sum(gs[i] * tf.constant(self.v[i].astype(gs[i].dtype.np)))
                    hv = term if hv is None else hv + term
        if hv is None:
            return [None] * len(ts)
        return outer.gradient(hv, ts)

    def perturbed(self, i: int, j: int, delta: float) -> list:
        arrays = [a.copy() for a in self.arrays]
        flat = arrays[i].reshape(-1)
        flat[j] += delta
        return arrays


def _fd(f: Callable[[list], float], fn: Fn, i: int) -> np.ndarray:
    a = fn.arrays[i]
    out = np.zeros(a.size)
    for j in range(a.size):
        out[j] = (f(fn.perturbed(i, j, fn.eps)) - f(fn.perturbed(i, j, -fn.eps))) / (2 * fn.eps)
    return out.reshape(a.shape)


def check_first_order(fn: Fn) -> None:
    grads = fn.tape_grads(fn.arrays)
    assert len(grads) == len(fn.arrays)
    for i, a in enumerate(fn.arrays):
        if i not in fn.floats:
            assert grads[i] is None, f"input {i} ({a.dtype}) must get no gradient"
            continue
        if not any(d.is_floating or d.is_complex for d in fn.out_dtypes):
            assert grads[i] is None, f"input {i}: a non-float output must give no gradient"
            continue
        g = grads[i]
        if g is not None:
            assert tuple(g.shape.as_list()) == a.shape, f"input {i}: gradient shape"
            assert g.dtype.np == a.dtype, f"input {i}: gradient dtype"
            g = np.asarray(g.numpy(), np.float64)
        else:
            g = np.zeros(a.shape)
        num = _fd(fn.value, fn, i)
        np.testing.assert_allclose(g, num, rtol=fn.tol, atol=fn.tol,
                                   err_msg=f"d/d input {i}: tape vs finite differences")


def check_second_order(fn: Fn) -> None:
    hv = fn.hvp()
    for i, a in enumerate(fn.arrays):
        if i not in fn.floats:
            assert hv[i] is None, f"input {i} ({a.dtype}) must get no gradient"
            continue
        got = np.zeros(a.shape) if hv[i] is None else np.asarray(hv[i].numpy(), np.float64)

        def g_dot_v(arrays: list) -> float:
            gs = fn.dense_grads(arrays)
            return float(sum(np.sum(gs[k] * fn.v[k]) for k in fn.floats))

        num = _fd(g_dot_v, fn, i)
        np.testing.assert_allclose(got, num, rtol=fn.tol, atol=fn.tol,
                                   err_msg=f"d/d input {i} of (grad . v): nested tapes vs "
                                           f"finite differences of the tape gradient")


def check_no_gradient(fn: Fn) -> None:
    assert all(g is None for g in fn.tape_grads(fn.arrays))


def _op_fn(op, ex, quadratic: bool = False) -> Fn:
    return Fn(lambda *ts: bind(op, *ts, **ex.attrs), ex.inputs, _seed(op.name, "w"), quadratic)


# -------------------------------------------------------------- generated: primitives

PRIMITIVE_CASES = _op_cases(VJPS)


def test_every_op_has_a_rule_or_is_marked_not_differentiable():
    assert set(OPS) == set(VJPS) | NOT_DIFFERENTIABLE
    assert not set(VJPS) & NOT_DIFFERENTIABLE
    assert set(EXCLUDED) <= set(VJPS)


def test_every_differentiable_op_is_checked():
    checked = {p.values[0].name for p in PRIMITIVE_CASES}
    # (the ops of complex tensors only: test_complex_gradients.py checks them)
    checked |= {n for n in VJPS if all(d.is_complex for d in OPS[n].dtypes)}
    assert checked == set(VJPS), f"no usable float64 example: {sorted(set(VJPS) - checked)}"


def test_kink_filter_keeps_most_examples():
    for name in sorted(KINKS):
        examples = _examples(name, dt.float64, key=(name,))
        near = sum(_near_kink(name, ex) for ex in examples)
        assert near <= len(examples) // 4, (
            f"{name}: {near} of {len(examples)} float64 examples lie within {KINK_MARGIN} of a "
            f"kink; keep them away (sampling.values(avoid=...)) in ir/ops")


@pytest.mark.parametrize("op, ex", PRIMITIVE_CASES)
def test_first_order(op, ex):
    if op.name in NO_GRADIENT_BY_DESIGN:
        check_no_gradient(_op_fn(op, ex))
        return
    check_first_order(_op_fn(op, ex))


@pytest.mark.parametrize("op, ex", PRIMITIVE_CASES)
def test_second_order(op, ex):
    if op.name in NO_GRADIENT_BY_DESIGN:
        assert all(h is None for h in _op_fn(op, ex, quadratic=True).hvp())
        return
    check_second_order(_op_fn(op, ex, quadratic=True))


@pytest.mark.parametrize("op, ex", _op_cases(NOT_DIFFERENTIABLE))
def test_not_differentiable_ops_give_none(op, ex):
    ts = [tf.constant(np.asarray(a)) for a in ex.inputs]
    with tf.GradientTape() as tape:
        for t in ts:
            if t.dtype.is_floating:
                tape.watch(t)
        out = bind(op, *ts, **ex.attrs)
    if op.name in UNDEFINED:  # a float output that depends on the inputs: raises, not None
        with pytest.raises(tf.errors.UnimplementedError, match=f"^{op.name}: "):
            tape.gradient(out, ts)
        return
    grads = tape.gradient(out, ts)
    assert all(g is None for g in grads)


# ---------------------------------------------------------------- composite frontend ops

def _vals(rng, shape, lo=-2.0, hi=2.0, avoid=()):
    from stagecraft.ir.ops.sampling import values
    return values(rng, dt.float64, shape, lo, hi, avoid)


def _composite_cases() -> list:
    rng = np.random.default_rng(1234)
    r = lambda *s, **k: _vals(rng, s, **k)  # noqa: E731
    labels = rng.uniform(0.1, 1.0, (3, 4))
    labels /= labels.sum(-1, keepdims=True)
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    cases = [
        ("softmax", lambda x: tf.nn.softmax(x), [r(3, 5)]),
        ("elu", lambda x: tf.nn.elu(x), [r(3, 5)]),
        ("clip_by_norm-clipped", lambda x: tf.clip_by_norm(x * 3.0, 1.0), [r(3, 5)]),
        ("clip_by_norm-axes", lambda x: tf.clip_by_norm(x, 1.5, axes=[1]), [r(3, 5)]),
        ("softmax-axis0", lambda x: tf.nn.softmax(x, axis=0), [r(3, 5)]),
        ("log_softmax", lambda x: tf.nn.log_softmax(x), [r(3, 5)]),
        ("log_softmax-axis0", lambda x: tf.nn.log_softmax(x, axis=0), [r(3, 5)]),
        ("softmax_xent-labels_and_logits",
         lambda lab, x: tf.nn.softmax_cross_entropy_with_logits(lab, x), [labels, r(3, 4)]),
        ("softmax_xent-axis0",
         lambda lab, x: tf.nn.softmax_cross_entropy_with_logits(lab, x, axis=0),
         [labels, r(3, 4)]),
        ("sparse_softmax_xent",
         lambda lab, x: tf.nn.sparse_softmax_cross_entropy_with_logits(lab, x),
         [i32(3, 0, 1), r(3, 4)]),
        ("relu6", lambda x: tf.nn.relu6(x), [r(4, 5, lo=-8.0, hi=8.0, avoid=(0.0, 6.0))]),
        ("clip_by_value-tensor_bounds", lambda x, lo, hi: tf.clip_by_value(x, lo, hi),
         [r(4, 5, avoid=(-1.0, 1.0)), np.array(-1.0), np.array(1.0)]),
        ("clip_by_value-python_bounds", lambda x: tf.clip_by_value(x, -0.5, 1.0),
         [r(4, 5, avoid=(-0.5, 1.0))]),
        ("add_n", lambda a, b, c: tf.add_n([a, b, c]), [r(2, 3), r(2, 3), r(2, 3)]),
        ("add_n-single", lambda a: tf.add_n([a]), [r(2, 3)]),
        ("stack-axis0", lambda a, b: tf.stack([a, b]), [r(2, 3), r(2, 3)]),
        ("stack-axis-1", lambda a, b, c: tf.stack([a, b, c], axis=-1), [r(2, 3), r(2, 3), r(2, 3)]),
        ("unstack-axis0", lambda x: tf.unstack(x), [r(3, 4)]),
        ("unstack-axis1", lambda x: tf.unstack(x, axis=1), [r(3, 4)]),
        ("concat-axis1", lambda a, b: tf.concat([a, b], axis=1), [r(2, 3), r(2, 2)]),
        ("concat-axis0-three", lambda a, b, c: tf.concat([a, b, c], 0),
         [r(1, 3), r(2, 3), r(3, 3)]),
        ("linalg.diag-vector", lambda v: tf.linalg.diag(v), [r(3)]),
        ("linalg.diag-batch", lambda v: tf.linalg.diag(v), [r(2, 3)]),
        ("linalg.diag_part-square", lambda x: tf.linalg.diag_part(x), [r(3, 3)]),
        ("linalg.diag_part-wide", lambda x: tf.linalg.diag_part(x), [r(3, 5)]),
        ("linalg.diag_part-tall", lambda x: tf.linalg.diag_part(x), [r(5, 3)]),
        ("linalg.diag_part-batch_wide", lambda x: tf.linalg.diag_part(x), [r(2, 3, 4)]),
        ("linalg.diag_part-batch_tall", lambda x: tf.linalg.diag_part(x), [r(2, 4, 2)]),
        ("gather-axis0", lambda p, i: tf.gather(p, i), [r(4, 3), i32(3, 1, 3, 0)]),
        ("gather-batch_dims1-axis1", lambda p, i: tf.gather(p, i, axis=1, batch_dims=1),
         [r(2, 4, 3), np.array([[0, 3, 3], [2, 1, 0]], np.int64)]),
        ("gather-batch_dims1-axis2", lambda p, i: tf.gather(p, i, axis=2, batch_dims=1),
         [r(2, 4, 3), i32([2, 2, 0, 1, 0], [1, 0, 2, 2, 1])]),
        ("gather-batch_dims-1", lambda p, i: tf.gather(p, i, axis=1, batch_dims=-1),
         [r(3, 4), i32([0, 0], [3, 1], [2, 3])]),
        ("one_hot-on_off", lambda i, on, off: tf.one_hot(i, 4, on_value=on, off_value=off),
         [i32(0, 3, 3, -1, 9), np.array(1.7), np.array(-0.3)]),
        ("one_hot-on_off-axis0",
         lambda i, on, off: tf.one_hot(i, 3, on_value=on, off_value=off, axis=0),
         [i32([0, 2], [1, 1]), np.array(0.8), np.array(0.4)]),
        ("tile-2d", lambda x: tf.tile(x, [2, 3]), [r(2, 3)]),
        ("tile-3d", lambda x: tf.tile(x, [1, 2, 2]), [r(2, 1, 3)]),
        ("slice-[1:,::2]", lambda x: x[1:, ::2], [r(4, 5)]),
        ("slice-[::-1,1]", lambda x: x[::-1, 1], [r(4, 5)]),
        ("slice-[...,newaxis,-2:]", lambda x: x[..., tf.newaxis, -2:], [r(2, 3, 4)]),
        ("slice-[tensor_i]", lambda x, i: x[i], [r(4, 5), np.int32(2)]),
        ("slice-[:,tensor_i]", lambda x, i: x[:, i], [r(4, 5), np.int64(3)]),
        ("slice-[tensor_i:]", lambda x, i: x[i:, 1], [r(4, 5), np.int32(1)]),
        ("matmul-operator", lambda a, b: a @ b, [r(3, 4), r(4, 2)]),
        ("matmul-adjoint_a", lambda a, b: tf.matmul(a, b, adjoint_a=True), [r(4, 3), r(4, 2)]),
        ("matmul-batch_rank_broadcast", lambda a, b: tf.matmul(a, b), [r(3, 4), r(2, 4, 5)]),
        ("matmul-batch_broadcast_ta",
         lambda a, b: tf.matmul(a, b, transpose_a=True), [r(2, 1, 4, 3), r(3, 4, 2)]),
        ("matmul-batch_broadcast_tb",
         lambda a, b: tf.matmul(a, b, transpose_b=True), [r(1, 3, 4), r(2, 5, 4)]),
        ("matmul-batch_broadcast_ta_tb",
         lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
         [r(2, 4, 3), r(1, 5, 4)]),
    ]
    for fname in ("cumsum", "cumprod"):
        for exclusive in (False, True):
            for reverse in (False, True):
                for axis in (0, 1, -1):
                    def f(x, _f=getattr(tf, fname), _a=axis, _e=exclusive, _r=reverse):
                        return _f(x, axis=_a, exclusive=_e, reverse=_r)
                    lo, hi = (0.5, 1.5) if fname == "cumprod" else (-2.0, 2.0)
                    cases.append((f"{fname}-axis{axis}-exclusive={exclusive}-reverse={reverse}",
                                  f, [r(3, 4, lo=lo, hi=hi)]))
    return [pytest.param(f, arrays, id=name) for name, f, arrays in cases]


COMPOSITE_CASES = _composite_cases()


@pytest.mark.parametrize("fn, arrays", COMPOSITE_CASES)
def test_composite_first_order(fn, arrays, request):
    check_first_order(Fn(fn, arrays, _seed(request.node.callspec.id)))


@pytest.mark.parametrize("fn, arrays", COMPOSITE_CASES)
def test_composite_second_order(fn, arrays, request):
    check_second_order(Fn(fn, arrays, _seed(request.node.callspec.id), quadratic=True))


# ------------------------------------------------------------------- None gradients

def _grad(f: Callable, x: Any, **kw) -> Any:
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x, **kw)


@pytest.mark.parametrize("to", [tf.int32, tf.int64, tf.bool], ids=lambda d: d.name)
def test_int_cast_gives_none(to):
    assert _grad(lambda x: tf.cast(x, to), np.array([0.5, -2.5])) is None
    # Going through an integer and back to float cuts the gradient too.
    assert _grad(lambda x: tf.cast(tf.cast(x, to), tf.float64) * 3.0,
                 np.array([0.5, -2.5])) is None


def test_int_outputs_give_none():
    x = np.array([[0.5, -2.5, 1.0], [3.0, 0.1, -0.2]])
    assert _grad(lambda x: tf.argmax(x, axis=1), x) is None
    assert _grad(lambda x: tf.shape(x), x) is None
    assert _grad(lambda x: x > 0.0, x) is None
    assert _grad(lambda x: tf.where(x > 0.0), x) is None
    g = _grad(lambda x: tf.argmax(x, axis=1), x, unconnected_gradients="zero")
    np.testing.assert_array_equal(g.numpy(), np.zeros_like(x))


def test_int_path_does_not_contribute():
    x = np.array([0.5, -2.5, 1.7])
    g = _grad(lambda x: x * tf.cast(tf.cast(x, tf.int32), tf.float64), x)
    np.testing.assert_allclose(g.numpy(), np.trunc(x))


def test_stop_gradient_gives_none():
    x = np.array([1.5, -2.0])
    assert _grad(lambda x: tf.stop_gradient(x), x) is None
    assert _grad(lambda x: tf.stop_gradient(x * x) * 2.0, x) is None
    g = _grad(lambda x: x * tf.stop_gradient(x), x)
    np.testing.assert_allclose(g.numpy(), x)


def test_stop_gradient_second_order_is_none():
    x = tf.constant(np.array([1.5, -2.0]))
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(x * tf.stop_gradient(x))
        g = inner.gradient(y, x)  # = stop_gradient(x): constant
    np.testing.assert_allclose(g.numpy(), x.numpy())
    assert outer.gradient(g, x) is None
