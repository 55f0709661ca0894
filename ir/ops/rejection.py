"""Random primitives drawn by rejection on the Philox stream of ``ir/ops/philox.py``:
``random_gamma`` (Marsaglia and Tsang, "A simple method for generating gamma variables",
2000) and ``random_poisson`` (for rates below 10 the product of uniforms, Knuth's method;
from 10 on Hormann's transformed rejection with squeeze, "The transformed rejection method for
generating Poisson random variables", 1993).

Element ``i`` of the result draws from its own Philox blocks: counter words 0 and 1 hold ``i``,
words 2 and 3 the call counter with the block number in word 3's upper 16 bits (so, as for
truncated normals, call counters stay below 2**48). Block 0 gives the boost uniform of
``alpha < 1``; attempt ``t`` uses blocks ``2t + 1`` (a normal) and ``2t + 2`` (the acceptance
uniform). A Poisson sample uses blocks 1, 2, ... one per attempt (two uniforms each). A value
depends only on the seed, ``i`` and the parameter, never on how the work is split.
``gamma_one`` and ``poisson_one`` are written with ``math`` and ``np.uint64`` only, so Numba
compiles them for the CPU and as CUDA device functions; the NumPy kernels are their
vectorized twins.
"""
from __future__ import annotations

import math

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.infer import check_dtype, fail
from stagecraft.ir.ops.opdef import Example, Kind, OpDef
from stagecraft.ir.ops.philox import ATTEMPT_SHIFT, INV_2_53, MASK, TWO_PI, key, philox
from stagecraft.ir.types import TensorType

MAX_BLOCK = (1 << 16) - 1   # block numbers fit the upper 16 bits of counter word 3


def uniform_pair(i, block, k0, k1, c2, c3):
    """Two uniforms of element ``i``'s Philox block ``block``: one in (0, 1], one in [0, 1)
    (all uint64 arguments)."""
    mask, shift = np.uint64(MASK), np.uint64(32)
    w0, w1, w2, w3 = philox(i & mask, i >> shift, c2,
                            c3 | (block << np.uint64(ATTEMPT_SHIFT)), k0, k1)
    x = (w0 << shift) | w1
    y = (w2 << shift) | w3
    return (((x >> np.uint64(11)) + np.uint64(1)) * INV_2_53, (y >> np.uint64(11)) * INV_2_53)



def gamma_one(alpha, i, k0, k1, c2, c3):
    """One Gamma(alpha, 1) sample of element ``i`` (NaN unless alpha > 0)."""
    if not alpha > 0.0:
        return math.nan
    a = alpha + 1.0 if alpha < 1.0 else alpha
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    v = 1.0
    block = np.uint64(1)
    while block < np.uint64(MAX_BLOCK):
        u1, u2 = uniform_pair(i, block, k0, k1, c2, c3)
        u3, _ = uniform_pair(i, block + np.uint64(1), k0, k1, c2, c3)
        block += np.uint64(2)
        x = math.sqrt(-2.0 * math.log(u1)) * math.cos(TWO_PI * u2)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        if math.log(u3) < 0.5 * x * x + d - d * v + d * math.log(v):
            break
    out = d * v
    if alpha < 1.0:
        u, _ = uniform_pair(i, np.uint64(0), k0, k1, c2, c3)
        out *= math.pow(u, 1.0 / alpha)
    return out


def poisson_one(lam, i, k0, k1, c2, c3):
    """One Poisson(lam) sample of element ``i`` as a float (0 for lam == 0, NaN for a negative
    or NaN rate)."""
    if not lam >= 0.0:
        return math.nan
    if lam == 0.0:
        return 0.0
    block = np.uint64(1)
    if lam < 10.0:
        floor = math.exp(-lam)
        prod = 1.0
        k = 0.0
        while block < np.uint64(MAX_BLOCK):
            u1, u2 = uniform_pair(i, block, k0, k1, c2, c3)
            block += np.uint64(1)
            prod *= u1
            if prod <= floor:
                return k
            prod *= u2
            if prod <= floor:
                return k + 1.0
            k += 2.0
        return k
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    k = 0.0
    while block < np.uint64(MAX_BLOCK):
        v, u = uniform_pair(i, block, k0, k1, c2, c3)
        block += np.uint64(1)
        u -= 0.5
        us = 0.5 - abs(u)
        if us <= 0.0:
            continue
        k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return k
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        if math.log(v) + math.log(inv_alpha) - math.log(a / (us * us) + b) <= \
                -lam + k * loglam - math.lgamma(k + 1.0):
            return k
    return k


def _uniform_pairs(idx: np.ndarray, block: int, words: tuple) -> tuple[np.ndarray, np.ndarray]:
    k0, k1, c2, c3 = words
    n = idx.size
    return uniform_pair(idx, np.uint64(block), k0, k1, np.full(n, c2), np.full(n, c3))


def gamma_sample(alpha: np.ndarray, seed) -> np.ndarray:
    """``gamma_one`` for every element of the float64 vector ``alpha``, vectorized."""
    words = key(seed)
    n = alpha.size
    idx = np.arange(n, dtype=np.uint64)
    a = np.where(alpha < 1.0, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    with np.errstate(invalid="ignore", divide="ignore"):
        c = 1.0 / np.sqrt(9.0 * d)
    out = np.full(n, np.nan)
    todo = np.flatnonzero(alpha > 0.0)
    block = 1
    while todo.size and block < MAX_BLOCK:
        u1, u2 = _uniform_pairs(idx[todo], block, words)
        u3, _ = _uniform_pairs(idx[todo], block + 1, words)
        block += 2
        x = np.sqrt(-2.0 * np.log(u1)) * np.cos(TWO_PI * u2)
        v = 1.0 + c[todo] * x
        ok = v > 0.0
        v = np.where(ok, v * v * v, 1.0)
        dt_ = d[todo]
        accept = ok & (np.log(u3) < 0.5 * x * x + dt_ - dt_ * v + dt_ * np.log(v))
        out[todo[accept]] = dt_[accept] * v[accept]
        todo = todo[~accept]
    small = np.flatnonzero((alpha > 0.0) & (alpha < 1.0))
    if small.size:
        u, _ = _uniform_pairs(idx[small], 0, words)
        out[small] *= np.power(u, 1.0 / alpha[small])
    return out


_LGAMMA = np.frompyfunc(math.lgamma, 1, 1)   # math's, as compiled code uses


def poisson_sample(lam: np.ndarray, seed) -> np.ndarray:
    """``poisson_one`` for every element of the float64 vector ``lam``, vectorized."""
    words = key(seed)
    n = lam.size
    idx = np.arange(n, dtype=np.uint64)
    out = np.where(lam == 0.0, 0.0, np.nan)
    knuth = np.flatnonzero((lam > 0.0) & (lam < 10.0))
    floor, prod, k = np.exp(-lam[knuth]), np.ones(knuth.size), np.zeros(knuth.size)
    block = 1
    while knuth.size and block < MAX_BLOCK:
        u1, u2 = _uniform_pairs(idx[knuth], block, words)
        block += 1
        prod = prod * u1
        first = prod <= floor
        prod = prod * u2
        second = ~first & (prod <= floor)
        out[knuth[first]] = k[first]
        out[knuth[second]] = k[second] + 1.0
        keep = ~(first | second)
        knuth, floor, prod, k = knuth[keep], floor[keep], prod[keep], k[keep] + 2.0
    todo = np.flatnonzero(lam >= 10.0)
    lt = lam[todo]
    b = 0.931 + 2.53 * np.sqrt(lt)
    a = -0.059 + 0.02483 * b
    log_inv_alpha = np.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    loglam = np.log(lt)
    block = 1
    while todo.size and block < MAX_BLOCK:
        v, u = _uniform_pairs(idx[todo], block, words)
        block += 1
        u = u - 0.5
        us = 0.5 - np.abs(u)
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.floor((2.0 * a / us + b) * u + lt + 0.43)
        live = us > 0.0
        accept = live & (us >= 0.07) & (v <= vr)
        test = live & ~accept & ~((k < 0.0) | ((us < 0.013) & (v > us)))
        if test.any():
            t = np.flatnonzero(test)
            bound = -lt[t] + k[t] * loglam[t] - _LGAMMA(k[t] + 1.0).astype(np.float64)
            lhs = np.log(v[t]) + log_inv_alpha[t] - np.log(a[t] / (us[t] * us[t]) + b[t])
            accept[t[lhs <= bound]] = True
        out[todo[accept]] = k[accept]
        keep = ~accept
        todo, lt, a, b, log_inv_alpha, vr, loglam = (
            todo[keep], lt[keep], a[keep], b[keep], log_inv_alpha[keep], vr[keep], loglam[keep])
    return out


def _sampler_op(name: str, param: str, sample, cases: list, doc: str) -> OpDef:
    """A primitive drawing ``sample(flat float64 parameters, seed)`` for every element of
    ``shape + param.shape`` (the parameter repeats over the leading ``shape``)."""
    def infer(types, shape):
        seed, p = types
        if seed.dtype is not dt.int64 or seed.shape not in ((3,), (None,), None):
            raise fail(name, f"seed must be an int64 tensor of shape [3] (global seed, op seed, "
                             f"counter), got {seed}.")
        check_dtype(name, param, p, dt.FLOATS)
        if any(n < 0 for n in shape):
            raise fail(name, f"shape must be non-negative, got {list(shape)}.")
        return [TensorType(p.dtype, None if p.shape is None else tuple(shape) + tuple(p.shape))]

    def kernel(seed, p, shape):
        p = np.asarray(p)
        flat = np.tile(p.reshape(-1).astype(np.float64), int(np.prod(shape, dtype=np.int64)))
        return sample(flat, seed).astype(p.dtype).reshape(tuple(shape) + p.shape)

    return OpDef(
        name=name, kind=Kind.RANDOM, inputs=("seed", param), attrs=("shape",), infer=infer,
        kernel=kernel, dtypes=dt.FLOATS, unify=(1,),
        examples=lambda rng, d: [Example((np.asarray((1, 2, 3), np.int64), np.asarray(v, d.np)),
                                         {"shape": s}) for v, s in cases],
        doc=doc)


random_gamma_op = _sampler_op(
    "random_gamma", "alpha", gamma_sample,
    [(2.5, (4,)), ([0.3, 1.0, 7.0], (2,)), ([[0.5], [3.0]], ())],
    "Gamma(alpha, 1) samples of shape `shape + alpha.shape` (Marsaglia-Tsang rejection; NaN "
    "where alpha <= 0).")
random_poisson_op = _sampler_op(
    "random_poisson", "lam", poisson_sample, [(3.5, (4,)), ([0.0, 0.7, 12.0, 250.0], (3,))],
    "Poisson(lam) counts (as floats of lam's dtype) of shape `shape + lam.shape`; 0 where lam "
    "is 0, NaN where it is negative.")


# ------------------------------------------------------------------------------ binomial
# ``random_binomial`` (TensorFlow's stateless_random_binomial): for n * min(p, 1 - p) below 10
# the count of geometric waiting times that fit in n trials (inversion, two per Philox block);
# from 10 on Hormann's BTRS ("The generation of binomial random variates", 1993), one block per
# attempt, accepted against the exact log-probability ratio (lgamma) instead of Stirling's
# tail series. p above 1/2 draws n - Binomial(n, 1 - p). As in TensorFlow, n <= 0 or p <= 0
# gives 0 and p >= 1 gives n; n is used as given (a float).

BTRS_FROM = 10.0


def binomial_one(n, p, i, k0, k1, c2, c3):
    """One Binomial(n, p) sample of element ``i`` as a float (NaN for a NaN parameter)."""
    if n != n or p != p:
        return math.nan
    if n <= 0.0 or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return n
    q = 1.0 - p if p > 0.5 else p
    k = 0.0
    block = np.uint64(1)
    if n * q < BTRS_FROM:
        log_q = math.log1p(-q)
        total = 0.0
        while block < np.uint64(MAX_BLOCK):
            u1, u2 = uniform_pair(i, block, k0, k1, c2, c3)
            block += np.uint64(1)
            total += math.ceil(math.log(u1) / log_q)
            if total > n:
                break
            k += 1.0
            total += math.ceil(math.log(1.0 - u2) / log_q)
            if total > n:
                break
            k += 1.0
    else:
        sd = math.sqrt(n * q * (1.0 - q))
        b = 1.15 + 2.53 * sd
        a = -0.0873 + 0.0248 * b + 0.01 * q
        c = n * q + 0.5
        vr = 0.92 - 4.2 / b
        log_r = math.log(q / (1.0 - q))
        alpha = (2.83 + 5.1 / b) * sd
        m = math.floor((n + 1.0) * q)
        log_fm = math.lgamma(m + 1.0) + math.lgamma(n - m + 1.0)
        while block < np.uint64(MAX_BLOCK):
            v, u = uniform_pair(i, block, k0, k1, c2, c3)
            block += np.uint64(1)
            u -= 0.5
            us = 0.5 - abs(u)
            if us <= 0.0:
                continue
            k = math.floor((2.0 * a / us + b) * u + c)
            if k < 0.0 or k > n:
                continue
            if us >= 0.07 and v <= vr:
                break
            bound = log_fm - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0) + (k - m) * log_r
            if math.log(v * alpha / (a / (us * us) + b)) <= bound:
                break
    return n - k if p > 0.5 else k


def binomial_sample(n: np.ndarray, p: np.ndarray, seed) -> np.ndarray:
    """``binomial_one`` for every element of the float64 vectors ``n`` and ``p``,
    vectorized."""
    words = key(seed)
    size = n.size
    idx = np.arange(size, dtype=np.uint64)
    out = np.where((n <= 0.0) | (p <= 0.0), 0.0, np.where(p >= 1.0, n, np.nan))
    live = ~(np.isnan(n) | np.isnan(p)) & (n > 0.0) & (p > 0.0) & (p < 1.0)
    q = np.where(p > 0.5, 1.0 - p, p)
    flip = p > 0.5
    small = np.flatnonzero(live & (n * q < BTRS_FROM))
    big = np.flatnonzero(live & (n * q >= BTRS_FROM))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_q = np.log1p(-q[small])
        total, k, ns = np.zeros(small.size), np.zeros(small.size), n[small]
        block = 1
        while small.size and block < MAX_BLOCK:
            u1, u2 = _uniform_pairs(idx[small], block, words)
            block += 1
            total = total + np.ceil(np.log(u1) / log_q)
            first = total > ns
            k = k + ~first
            total = total + np.ceil(np.log(1.0 - u2) / log_q)
            done = first | (total > ns)
            k = k + ~done
            out[small[done]] = k[done]
            keep = ~done
            small, log_q, total, k, ns = small[keep], log_q[keep], total[keep], k[keep], ns[keep]
    nb, qb = n[big], q[big]
    sd = np.sqrt(nb * qb * (1.0 - qb))
    b = 1.15 + 2.53 * sd
    a = -0.0873 + 0.0248 * b + 0.01 * qb
    c = nb * qb + 0.5
    vr = 0.92 - 4.2 / b
    log_r = np.log(qb / (1.0 - qb))
    alpha = (2.83 + 5.1 / b) * sd
    m = np.floor((nb + 1.0) * qb)
    log_fm = (_LGAMMA(m + 1.0) + _LGAMMA(nb - m + 1.0)).astype(np.float64)
    block = 1
    while big.size and block < MAX_BLOCK:
        v, u = _uniform_pairs(idx[big], block, words)
        block += 1
        u = u - 0.5
        us = 0.5 - np.abs(u)
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.floor((2.0 * a / us + b) * u + c)
        ok = (us > 0.0) & (k >= 0.0) & (k <= nb)
        accept = ok & (us >= 0.07) & (v <= vr)
        test = np.flatnonzero(ok & ~accept)
        if test.size:
            t = test
            bound = (log_fm[t] - _LGAMMA(k[t] + 1.0).astype(np.float64)
                     - _LGAMMA(nb[t] - k[t] + 1.0).astype(np.float64) + (k[t] - m[t]) * log_r[t])
            lhs = np.log(v[t] * alpha[t] / (a[t] / (us[t] * us[t]) + b[t]))
            accept[t[lhs <= bound]] = True
        out[big[accept]] = k[accept]
        keep = ~accept
        big, nb, a, b, c, vr, log_r, alpha, m, log_fm = (
            big[keep], nb[keep], a[keep], b[keep], c[keep], vr[keep], log_r[keep], alpha[keep],
            m[keep], log_fm[keep])
    return np.where(flip & live, n - out, out)


def _binomial_infer(types):
    seed, counts, probs = types
    name = "random_binomial"
    if seed.dtype is not dt.int64 or seed.shape not in ((3,), (None,), None):
        raise fail(name, f"seed must be an int64 tensor of shape [3] (global seed, op seed, "
                         f"counter), got {seed}.")
    check_dtype(name, "counts", counts, dt.FLOATS)
    if counts.dtype is not probs.dtype:
        raise fail(name, f"counts and probs must have one dtype, got {counts.dtype.name} and "
                         f"{probs.dtype.name}.")
    if counts.shape is not None and probs.shape is not None and \
            len(counts.shape) != len(probs.shape):
        raise fail(name, f"counts and probs must have one shape (broadcast them first), got "
                         f"{list(counts.shape)} and {list(probs.shape)}.")
    shape = counts.shape if counts.shape is not None else probs.shape
    if counts.shape is not None and probs.shape is not None:
        shape = tuple(x if x is not None else y for x, y in zip(counts.shape, probs.shape))
        if any(x is not None and y is not None and x != y
               for x, y in zip(counts.shape, probs.shape)):
            raise fail(name, f"counts and probs must have one shape (broadcast them first), "
                             f"got {list(counts.shape)} and {list(probs.shape)}.")
    return [TensorType(counts.dtype, shape)]


def _binomial_kernel(seed, counts, probs):
    counts, probs = np.asarray(counts), np.asarray(probs)
    flat = binomial_sample(counts.reshape(-1).astype(np.float64),
                           probs.reshape(-1).astype(np.float64), seed)
    return flat.astype(counts.dtype).reshape(counts.shape)


random_binomial_op = OpDef(
    name="random_binomial", kind=Kind.RANDOM, inputs=("seed", "counts", "probs"), attrs=(),
    infer=_binomial_infer, kernel=_binomial_kernel, dtypes=dt.FLOATS, unify=(1, 2),
    examples=lambda rng, d: [
        Example((np.asarray((1, 2, 3), np.int64), np.asarray(n, d.np), np.asarray(p, d.np)))
        for n, p in [([5.0, 40.0, 0.0, 3.0], [0.3, 0.6, 0.5, 1.0]),
                     ([[100.0, 7.0], [1000.0, 12.0]], [[0.02, 0.9], [0.5, 0.0]])]],
    doc="Binomial(counts, probs) samples (as floats of the parameters' dtype) of the shape "
        "both share; 0 where counts <= 0 or probs <= 0, counts where probs >= 1 (inversion "
        "below 10 expected successes, BTRS rejection from 10 on).")
