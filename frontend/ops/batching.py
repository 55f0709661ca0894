"""Batching rules: how each op of a graph traced for ONE element runs on a batch of elements
at once (``tf.vectorized_map``; TensorFlow's pfor, JAX's vmap).

``run_batched(graph, args)`` re-runs ``graph``'s equations through the frontend (eagerly, or
into the graph being traced, so tapes record them and gradients come free) on values that
either carry a leading batch dimension (``batched``) or are the same for every element (a
capture, a constant, a shape). An equation whose inputs are all unbatched runs as traced; one
with a batched input runs its op's rule in ``RULES``, which rewrites it for the leading
dimension: elementwise ops line ranks up and broadcast, reductions and axis attributes shift
by one, matmul broadcasts its batch dimensions, reshape/transpose/concat/gather/slicing keep
the batch dimension first, ``cond`` on a batched predicate runs each (side-effect free)
branch on the elements that take it and scatters the results back, a ``while`` runs while any
element's condition holds with finished elements keeping their values. ``unbatchable(graph, batched)`` finds, before anything runs, the
first op that has no rule for the way it is used (side effects, stateful random draws, loop
variables that change shape, data-dependent shapes): the caller then falls back to a loop.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from stagecraft.autodiff.rule_table import RuleTable
from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir.graph import Graph, Literal, is_stateful, walk_eqns
from stagecraft.ir.ops.opdef import Kind
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

__all__ = ["Batch", "RULES", "run_batched", "unbatchable", "Unbatchable"]


class Unbatchable(Exception):
    """An op that has no batching rule for the way it is used (the message says why)."""

    def __init__(self, op: str, why: str):
        super().__init__(f"{op}: {why}")
        self.op, self.why = op, why


class Batch:
    """The batch size (an int when known when traced, else a scalar int32 tensor) and the
    helpers rules share."""

    def __init__(self, size: Any):
        self.size = size

    def rank(self, t: Tensor, op: str) -> int:
        r = t.shape.rank
        if r is None:
            raise Unbatchable(op, "the rank of an input is unknown when traced")
        return r

    def lead(self) -> list:
        return [self.size]

    def full(self, t: Tensor) -> Tensor:
        """``t`` (the same for every element) repeated along a new leading batch dimension."""
        dims = t.shape.as_list() if t.shape.rank is not None else None
        if dims is not None and None not in dims:
            return _a.broadcast_to(t, self.lead() + dims)
        return _a.broadcast_to(t, _a.concat([_a.reshape(self.size, [1]),
                                             _a.shape(t)], 0))

    def lift(self, t: Tensor, elem_rank: int, op: str) -> Tensor:
        """Batched ``t`` with size-1 dimensions inserted after the batch dimension until its
        elements have rank ``elem_rank`` (NumPy broadcasting aligns the trailing ones)."""
        for _ in range(elem_rank - (self.rank(t, op) - 1)):
            t = _a.expand_dims(t, 1)
        return t

    def with_lead(self, dims: Any) -> Any:
        """A shape: the batch size followed by ``dims`` (a list of ints or a 1-D tensor)."""
        if isinstance(dims, Tensor):
            return _a.concat([_m.cast(_a.reshape(self.size, [1]), dims.dtype), dims], 0)
        return self.lead() + list(dims)


Rule = Callable[[Batch, list, list, dict], list]
# op -> rule(batch, inputs, batched flags, attrs) -> outputs (RuleTable: the VJP tables' kind)
RULES = RuleTable()
rule = RULES.rule
# op -> (input flags) -> which outputs are batched, where that is not "any input is"
OUT_BATCHED: dict[str, Callable[[list], bool]] = {}


def _norm(axis: int, rank: int) -> int:
    return axis % rank if rank else 0


def _outs(res: Any, op: str) -> list:
    return list(res) if OPS[op].num_outputs > 1 else [res]


# ------------------------------------------------------------------------ elementwise

def _elementwise(b: Batch, xs: list, flags: list, attrs: dict, op: str) -> list:
    ranks = [b.rank(x, op) - f for x, f in zip(xs, flags)]
    top = max(ranks)
    xs = [b.lift(x, top, op) if f else x for x, f in zip(xs, flags)]
    return _outs(bind(OPS[op], *xs, **attrs), op)


for _name, _op in OPS.items():
    if _op.kind is Kind.ELEMENTWISE:
        RULES[_name] = (lambda _n: lambda b, xs, f, a: _elementwise(b, xs, f, a, _n))(_name)


# ------------------------------------------------------------------------- reductions

def _reducer(op: str) -> Rule:
    def run(b: Batch, xs: list, flags: list, attrs: dict) -> list:
        r = b.rank(xs[0], op) - 1
        axes = attrs["axes"]
        axes = tuple(range(1, r + 1)) if axes is None else tuple(_norm(a, r) + 1 for a in axes)
        return [bind(OPS[op], xs[0], **{**attrs, "axes": axes})]
    return run


def _along_axis(op: str) -> Rule:
    def run(b: Batch, xs: list, flags: list, attrs: dict) -> list:
        r = b.rank(xs[0], op) - 1
        return _outs(bind(OPS[op], *xs, **{**attrs, "axis": _norm(attrs["axis"], r) + 1}), op)
    return run


for _name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
              "reduce_all", "reduce_any"):
    RULES[_name] = _reducer(_name)
for _name in ("argmax", "argmin", "cumsum", "cumprod", "cumulative_logsumexp", "argsort",
              "softmax", "log_softmax"):
    RULES[_name] = _along_axis(_name)


# ------------------------------------------------------------------------------ shapes

@rule("shape")
def _shape(b, xs, flags, attrs):
    return [bind(OPS["shape"], xs[0], **attrs)[1:]]


OUT_BATCHED["shape"] = lambda flags: False


@rule("reshape")
def _reshape(b, xs, flags, attrs):
    return [_a.reshape(xs[0], b.with_lead(attrs["shape"]))]


@rule("reshape_dynamic")
def _reshape_dynamic(b, xs, flags, attrs):
    if flags[1]:
        raise Unbatchable("reshape", "the target shape differs between elements")
    return [_a.reshape(xs[0], b.with_lead(xs[1]))]


@rule("reshape_like")
def _reshape_like(b, xs, flags, attrs):
    x = xs[0] if flags[0] else b.full(xs[0])
    if flags[1]:
        return [bind(OPS["reshape_like"], x, xs[1])]
    return [_a.reshape(x, b.with_lead(_a.shape(xs[1])))]


@rule("broadcast_to", "fill")
def _broadcast_to(b, xs, flags, attrs):
    # (fill broadcasts its scalar value: the same rule)
    dims = list(attrs["shape"] if "shape" in attrs else attrs["dims"])
    return [_a.broadcast_to(b.lift(xs[0], len(dims), "broadcast_to"), b.with_lead(dims))]


@rule("broadcast_to_dynamic", "fill_dynamic")
def _broadcast_to_dynamic(b, xs, flags, attrs):
    if flags[1]:
        raise Unbatchable("broadcast_to", "the target shape differs between elements")
    x = b.lift(xs[0], len(attrs["static"]), "broadcast_to")
    return [_a.broadcast_to(x, b.with_lead(xs[1]))]


@rule("broadcast_like")
def _broadcast_like(b, xs, flags, attrs):
    x, like = xs
    if flags[1]:
        if not flags[0]:
            return [bind(OPS["broadcast_like"], x, like)]
        x = b.lift(x, b.rank(like, "broadcast_like") - 1, "broadcast_like")
        return [_a.broadcast_to(x, _a.shape(like))]
    x = b.lift(x, b.rank(like, "broadcast_like"), "broadcast_like")
    return [_a.broadcast_to(x, b.with_lead(_a.shape(like)))]


@rule("sum_like")
def _sum_like(b, xs, flags, attrs):
    x, like = xs
    if not flags[0]:   # the same sum for every element: like supplies only its shape
        return [bind(OPS["sum_like"], x, like[0])]
    r = b.rank(like, "sum_like") - flags[1]
    extra = b.rank(x, "sum_like") - 1 - r
    if extra:
        x = _a_reduce_sum(x, tuple(range(1, extra + 1)))
    if flags[1]:
        return [bind(OPS["sum_like"], x, like)]
    dims, want = x.shape.as_list()[1:], like.shape.as_list()
    if None in dims or None in want:
        raise Unbatchable("sum_like", "the shapes are unknown when traced")
    keep = tuple(i + 1 for i, (d, w) in enumerate(zip(dims, want)) if w == 1 and d != 1)
    if keep:
        x = bind(OPS["reduce_sum"], x, axes=keep, keepdims=True)
    return [x]


OUT_BATCHED["sum_like"] = lambda flags: flags[0]


def _a_reduce_sum(x: Tensor, axes: tuple) -> Tensor:
    return bind(OPS["reduce_sum"], x, axes=axes, keepdims=False)


@rule("transpose")
def _transpose(b, xs, flags, attrs):
    return [bind(OPS["transpose"], xs[0], perm=(0,) + tuple(p + 1 for p in attrs["perm"]))]


@rule("concat")
def _concat(b, xs, flags, attrs):
    xs = [x if f else b.full(x) for x, f in zip(xs, flags)]
    r = b.rank(xs[0], "concat") - 1
    return [bind(OPS["concat"], *xs, axis=_norm(attrs["axis"], r) + 1)]


@rule("squeeze")
def _squeeze(b, xs, flags, attrs):
    x = xs[0]
    r = b.rank(x, "squeeze") - 1
    axis = attrs["axis"]
    if axis is None:
        dims = x.shape.as_list()[1:]
        if None in dims:
            raise Unbatchable("squeeze", "squeezing every size-1 dimension of a shape unknown "
                                         "when traced")
        axis = tuple(i for i, d in enumerate(dims) if d == 1)
    return [bind(OPS["squeeze"], x, axis=tuple(_norm(a, r) + 1 for a in axis))]


@rule("expand_dims")
def _expand_dims(b, xs, flags, attrs):
    r = b.rank(xs[0], "expand_dims")   # the element's rank + 1: that of the result
    return [bind(OPS["expand_dims"], xs[0], axis=_norm(attrs["axis"], r) + 1)]


@rule("tile")
def _tile(b, xs, flags, attrs):
    return [bind(OPS["tile"], xs[0], multiples=(1,) + tuple(attrs["multiples"]))]


@rule("tile_dynamic")
def _tile_dynamic(b, xs, flags, attrs):
    if flags[1]:
        raise Unbatchable("tile", "the multiples differ between elements")
    one = _a.ones([1], xs[1].dtype)
    return [_a.tile(xs[0], _a.concat([one, xs[1]], 0))]


@rule("one_hot")
def _one_hot(b, xs, flags, attrs):
    if flags[1] or flags[2]:
        raise Unbatchable("one_hot", "on_value / off_value differ between elements")
    axis = attrs["axis"]
    return [bind(OPS["one_hot"], *xs, **{**attrs, "axis": axis if axis < 0 else axis + 1})]


@rule("gather")
def _gather(b, xs, flags, attrs):
    params, indices = xs
    axis, bd = attrs["axis"], attrs["batch_dims"]
    if flags[0] and not flags[1]:
        if bd:
            indices = b.full(indices)
        else:
            r = b.rank(params, "gather") - 1
            return [bind(OPS["gather"], params, indices, axis=_norm(axis, r) + 1, batch_dims=0)]
    if flags[1] and not flags[0]:
        r = b.rank(params, "gather")
        axis = _norm(axis, r)
        if bd == 0:
            out = bind(OPS["gather"], params, indices, axis=axis, batch_dims=0)
            if axis == 0:
                return [out]
            rank = b.rank(out, "gather")   # move the batch dimension (at `axis`) first
            perm = (axis,) + tuple(i for i in range(rank) if i != axis)
            return [bind(OPS["transpose"], out, perm=perm)]
        params = b.full(params)
    else:
        axis = _norm(axis, b.rank(params, "gather") - 1)
    return [bind(OPS["gather"], params, indices, axis=axis + 1, batch_dims=bd + 1)]


@rule("gather_grad")
def _gather_grad(b, xs, flags, attrs):
    grad, indices, like = (x if f else b.full(x) for x, f in zip(xs, flags))
    axis = _norm(attrs["axis"], b.rank(like, "gather_grad") - 1)
    return [bind(OPS["gather_grad"], grad, indices, like, axis=axis + 1,
                 batch_dims=attrs["batch_dims"] + 1)]


_FULL = ("slice", None, None, None)


@rule("strided_slice")
def _strided_slice(b, xs, flags, attrs):
    x, *bounds = xs
    spec = attrs["spec"]
    if any(flags[1:]):
        # x[i] with i differing between elements (x the same for all): a gather
        if not flags[0] and len(spec) == 1 and spec[0][0] == "index" and len(bounds) == 1:
            return [bind(OPS["gather"], x, bounds[0], axis=0, batch_dims=0)]
        raise Unbatchable("strided_slice", "slice bounds that differ between elements")
    return [bind(OPS["strided_slice"], x, *bounds, spec=(_FULL,) + tuple(spec))]


@rule("strided_slice_grad")
def _strided_slice_grad(b, xs, flags, attrs):
    if any(flags[2:]):
        raise Unbatchable("strided_slice_grad", "slice bounds that differ between elements")
    grad, like = (x if f else b.full(x) for x, f in zip(xs[:2], flags[:2]))
    return [bind(OPS["strided_slice_grad"], grad, like, *xs[2:],
                 spec=(_FULL,) + tuple(attrs["spec"]))]


def _example_ids(b: Batch, like: Tensor, dtype: Any) -> Tensor:
    """Each element's position in the batch, broadcast to ``like``'s shape (batched)."""
    ids = _m.cast(_a.range(b.size), dtype)
    for _ in range(b.rank(like, "scatter") - 1):
        ids = _a.expand_dims(ids, -1)
    return ids + _a.zeros_like(like)


@rule("scatter_nd")
def _scatter_nd(b, xs, flags, attrs):
    # each element's index rows get its batch position in front: one scatter into the batch
    x, indices, updates = (t if f else b.full(t) for t, f in zip(xs, flags))
    first = _example_ids(b, indices[..., :1], indices.dtype)
    return [bind(OPS["scatter_nd"], x, _a.concat([first, indices], -1), updates, **attrs)]


@rule("segment_reduce")
def _segment_reduce(b, xs, flags, attrs):
    # element i's segment s becomes segment i * num_segments + s of one flat reduction
    if flags[2]:
        raise Unbatchable("segment_reduce", "num_segments differs between elements")
    data, ids = (t if f else b.full(t) for t, f in zip(xs[:2], flags[:2]))
    num = xs[2]
    k = b.rank(ids, "segment_reduce") - 1
    rest = data.shape.as_list()[1 + k:]
    if None in rest:
        raise Unbatchable("segment_reduce", "data dimensions unknown when traced")
    offset = _m.multiply(_example_ids(b, ids, ids.dtype), _m.cast(num, ids.dtype))
    flat_ids = _a.reshape(_m.add(ids, offset), [-1])
    static = attrs["static"][0]
    total = _m.multiply(_m.cast(num, ids.dtype), _m.cast(b.size, ids.dtype))
    out = bind(OPS["segment_reduce"], _a.reshape(data, [-1] + rest), flat_ids, total,
               **{**attrs, "static": (static * b.size if static is not None and
                                      isinstance(b.size, int) else None,)})
    return [_a.reshape(out, [b.size if isinstance(b.size, int) else -1,
                             -1 if static is None else static] + rest)]


# ---------------------------------------------------------------------- linear algebra

@rule("matmul")
def _matmul(b, xs, flags, attrs):
    a, w = xs
    dims, wdims = a.shape.as_list(), w.shape.as_list()
    if flags == [True, False] and len(wdims) == 2 and not attrs["transpose_a"] and \
            None not in dims[1:] + wdims:
        # batched rows times one shared matrix: a single 2-D product over all the rows (one
        # GEMM; and Numba's batched matmul needs static shapes, which the batch may lack)
        out = bind(OPS["matmul"], _a.reshape(a, [-1, dims[-1]]), w, **attrs)
        return [_a.reshape(out, [-1] + dims[1:-1] + out.shape.as_list()[-1:])]
    # line the matrices' own batch dimensions up behind the vectorized one
    top = max(b.rank(x, "matmul") - f for x, f in zip(xs, flags))
    xs = [b.lift(x, top, "matmul") if f else x for x, f in zip(xs, flags)]
    return [bind(OPS["matmul"], *xs, **attrs)]


def _per_matrix(op: str) -> Rule:
    """Ops already batched over every leading dimension: all inputs take the batch one."""
    def run(b: Batch, xs: list, flags: list, attrs: dict) -> list:
        xs = [x if f else b.full(x) for x, f in zip(xs, flags)]
        return _outs(bind(OPS[op], *xs, **attrs), op)
    return run


for _name in ("diag", "diag_part", "matrix_inverse", "matrix_determinant",
              "log_matrix_determinant", "cholesky", "qr", "svd", "eigh", "matrix_solve",
              "triangular_solve", "lu"):
    RULES[_name] = _per_matrix(_name)


def _merged_batch(op: str, images: tuple = (0,), shape_attr: str | None = None,
                  inner: str = "image dimensions") -> Rule:
    """Convolutions, pools and the fused cross-entropy (and their adjoints) of batched
    images or rows [B, N, ...]: the two leading dimensions merge into the op's own batch one,
    which splits again after it. The inputs at ``images`` take the merge; the others
    (filters) must be shared. ``shape_attr`` names an input-shape attribute whose batch entry
    is then left unknown; ``inner`` names the dimensions after the two (messages)."""
    def run(b: Batch, xs: list, flags: list, attrs: dict) -> list:
        if any(f for i, f in enumerate(flags) if i not in images):
            raise Unbatchable(op, "filters that differ between elements")
        xs = [(x if f else b.full(x)) if i in images else x
              for i, (x, f) in enumerate(zip(xs, flags))]
        dims = xs[images[0]].shape.as_list()
        if any(None in xs[i].shape.as_list()[2:] for i in images):
            raise Unbatchable(op, f"{inner} unknown when traced")
        xs = [_a.reshape(x, [-1] + x.shape.as_list()[2:]) if i in images else x
              for i, x in enumerate(xs)]
        if shape_attr is not None:
            attrs = {**attrs, shape_attr: (None,) + tuple(attrs[shape_attr][1:])}
        out = bind(OPS[op], *xs, **attrs)
        lead = [b.size if dims[0] is None else dims[0], -1 if dims[1] is None else dims[1]]
        return [_a.reshape(out, lead + out.shape.as_list()[1:])]
    return run


for _name in ("conv", "max_pool", "avg_pool"):
    RULES[_name] = _merged_batch(_name)
RULES["max_pool_grad"] = _merged_batch("max_pool_grad", (0, 1))
RULES["max_pool_grad_grad"] = _merged_batch("max_pool_grad_grad", (0, 1))
RULES["avg_pool_grad"] = _merged_batch("avg_pool_grad", (0,), "input_shape")
RULES["conv_backprop_input"] = _merged_batch("conv_backprop_input", (1,), "input_shape")
# the fused cross-entropy's rows: the batch dimension merges into theirs
RULES["sparse_softmax_cross_entropy_with_logits"] = _merged_batch(
    "sparse_softmax_cross_entropy_with_logits", (0, 1), inner="the number of classes")
RULES["sparse_softmax_cross_entropy_with_logits_grad"] = _merged_batch(
    "sparse_softmax_cross_entropy_with_logits_grad", (0, 1, 2), inner="the number of classes")


@rule("conv_backprop_filter")
def _conv_backprop_filter(b, xs, flags, attrs):
    # per-example filter gradients: the examples become groups of one grouped convolution
    # (example i's channels feed only its own block of output channels)
    if not isinstance(b.size, int):
        raise Unbatchable("conv_backprop_filter", "per-example filter gradients need the "
                          "batch size when traced")
    n = b.size
    x, dy = (t if f else b.full(t) for t, f in zip(xs, flags))
    xd, dd = x.shape.as_list(), dy.shape.as_list()
    if None in xd[2:] + dd[2:]:
        raise Unbatchable("conv_backprop_filter", "image dimensions unknown when traced")
    k = len(xd) - 3   # spatial rank

    def channels_last(t: Tensor, d: list) -> Tensor:   # [n, N, *s, C] -> [N, *s, n * C]
        perm = [1] + list(range(2, 2 + k)) + [0, 2 + k]
        return _a.reshape(_a.transpose(t, perm), [-1] + d[2:2 + k] + [n * d[-1]])

    shape = list(attrs["filter_shape"])
    out = bind(OPS["conv_backprop_filter"], channels_last(x, xd), channels_last(dy, dd),
               **{**attrs, "filter_shape": tuple(shape[:-1] + [n * shape[-1]]),
                  "groups": attrs["groups"] * n})
    out = _a.reshape(out, shape[:-1] + [n, shape[-1]])
    return [_a.transpose(out, [k + 1] + list(range(k + 1)) + [k + 2])]


# --------------------------------------------------------------------- the interpreter

_NEVER = frozenset({"assign", "print", "assert", "py_function"})


def _never_why(op: str) -> str | None:
    if op in _NEVER:
        return "a side effect, which a loop performs once per element"
    o = OPS.get(op)
    if o is not None and o.stateful:
        return "a stateful op, which a loop runs once per element"
    return None


# Ops that can fail on values (an index out of range, an integer division by zero, a matrix
# that is not positive definite), by the inputs that decide it. The body of a loop run past an
# element's last iteration sees values a loop would never give it: such an op there, on
# batched values, means a loop instead.
_MAY_FAIL = {"gather": (1,), "gather_grad": (1,), "scatter_nd": (1,), "segment_reduce": (1,),
             "strided_slice": "bounds", "strided_slice_grad": "bounds",
             "floordiv": (1,), "floormod": (1,), "truncatediv": (1,),
             "cholesky": (0,), "matrix_inverse": (0,), "matrix_solve": (0,),
             "triangular_solve": (0,), "lu": (0,)}


def _may_fail(eqn: Any, ins: list) -> bool:
    which = _MAY_FAIL.get(eqn.op)
    if which is None:
        return False
    if which == "bounds":
        first = 1 if eqn.op == "strided_slice" else 2
        return any(ins[first:])
    if eqn.op in ("floordiv", "floormod", "truncatediv") and \
            not eqn.inputs[1].type.dtype.is_integer:
        return False
    return any(ins[i] for i in which)


def unbatchable(graph: Graph, batched: Sequence[bool],
                strict: bool = False) -> Unbatchable | None:
    """The first reason ``graph`` cannot run batched with parameters flagged ``batched``
    (None: every op it runs has a rule), found without running anything. ``strict``: the
    graph also runs for elements that would not run it (see ``_MAY_FAIL``).

    >>> import stagecraft as tf
    >>> spec = tf.TensorSpec([3], tf.float32)
    >>> g = tf.function(lambda x: tf.reduce_sum(x * 2.0)).get_concrete_function(spec).graph
    >>> unbatchable(g, [True]) is None
    True
    >>> g = tf.function(lambda x: tf.unique(x)[1]).get_concrete_function(spec).graph
    >>> str(unbatchable(g, [True]))
    'unique_index: no batching rule'
    """
    eqns = list(walk_eqns(graph))
    if any(e.op == "assign" for e in eqns):   # a stateful draw: named rather than its seed update
        draw = next((e.op for e in eqns if e.op in OPS and OPS[e.op].kind is Kind.RANDOM), None)
        if draw is not None:
            return Unbatchable(draw, "a random draw from a stateful seed (a loop draws new "
                                     "numbers for each element)")
    flags = {p.uid: f for p, f in zip(graph.params, batched)}

    def flag(x: Any) -> bool:
        return not isinstance(x, Literal) and flags.get(x.uid, False)

    for eqn in graph.eqns:
        ins = [flag(x) for x in eqn.inputs]
        why = _never_why(eqn.op)
        if why is not None:
            return Unbatchable(eqn.op, why)
        if strict and _may_fail(eqn, ins):
            return Unbatchable(eqn.op, "it may fail on the values of elements whose loop "
                                       "has ended")
        if eqn.op == "call":
            inner = unbatchable(eqn.regions[0], ins, strict)
            if inner is not None:
                return inner
            out = any(ins)   # (conservative: every result counts as batched)
        elif eqn.op == "while":
            problem = _while_problem(eqn, ins, strict)
            if problem is not None:
                return problem
            out = any(ins)
        elif eqn.op == "cond":
            if ins[0] and any(is_stateful(e) for g in eqn.regions for e in walk_eqns(g)):
                return Unbatchable("cond", "a branch with side effects on a condition that "
                                           "differs between elements")
            if ins[0] and any(v.type.shape is None or None in v.type.shape
                              for v in eqn.outputs):
                return Unbatchable("cond", "a result whose shape is unknown when traced, on a "
                                           "condition that differs between elements")
            for g in eqn.regions:
                inner = unbatchable(g, ins[1:], strict)
                if inner is not None:
                    return inner
            out = any(ins)
        elif eqn.op in ("const", "read", "capture") or not any(ins):
            out = False
        elif eqn.op not in RULES:
            return Unbatchable(eqn.op, "no batching rule")
        else:
            out = OUT_BATCHED.get(eqn.op, any)(ins)
        for v in eqn.outputs:
            flags[v.uid] = out
    return None


def _while_problem(eqn: Any, ins: list, strict: bool) -> Unbatchable | None:
    """Why a ``while`` with batched inputs cannot run as one loop over the batch (None: it
    can). Every carried value is then batched; the loop runs while any element's condition
    holds, and an element whose condition fails keeps its values (so the body must be free
    of side effects and keep each carried value's static shape)."""
    if not any(ins):
        return None
    n = dict(eqn.attrs)["carry"]
    if any(is_stateful(e) for g in eqn.regions for e in walk_eqns(g)):
        return Unbatchable("while", "a loop with side effects whose inputs differ between "
                                    "elements")
    for v, o in zip(eqn.inputs[:n], eqn.outputs):
        shape = o.type.shape
        if shape is None or None in shape or tuple(shape) != tuple(v.type.shape or ()):
            return Unbatchable("while", "a loop variable whose shape changes or is unknown")
    cond_g, body_g = eqn.regions
    for g, body in ((cond_g, False), (body_g, True)):
        # (the body also runs for elements whose loop has ended)
        inner = unbatchable(g, [True] * n + list(ins[n:]), strict or body)
        if inner is not None:
            return inner
    return None


def _while(eqn: Any, pairs: list, b: Batch) -> list[tuple]:
    from stagecraft.staging.while_loop import while_loop

    n = dict(eqn.attrs)["carry"]
    cond_g, body_g = eqn.regions
    carried = [t if f else b.full(t) for t, f in pairs[:n]]
    rest = pairs[n:]

    def going(vs: Sequence) -> tuple:   # (each element's condition, whether it is batched)
        return run_batched(cond_g, [(v, True) for v in vs] + rest, b)[0]

    def cond(*vs: Tensor) -> Tensor:
        p, batched = going(vs)
        return bind(OPS["reduce_any"], p, axes=(0,), keepdims=False) if batched else p

    def body(*vs: Tensor) -> tuple:
        p, batched = going(vs)
        new = run_batched(body_g, [(v, True) for v in vs] + rest, b)
        out = []
        for (t, f), old in zip(new, vs):
            t = t if f else b.full(t)
            keep = b.lift(p, b.rank(old, "while") - 1, "while") if batched else p
            out.append(bind(OPS["select"], keep, t, old))   # finished elements keep theirs
        return tuple(out)

    return [(o, True) for o in while_loop(cond, body, tuple(carried))]


def run_batched(graph: Graph, args: Sequence[tuple], b: Batch) -> list[tuple]:
    """``graph``'s results for ``args``, pairs (tensor or Variable, batched), as pairs.

    >>> import stagecraft as tf
    >>> spec = tf.TensorSpec([3], tf.float32)
    >>> g = tf.function(lambda x: tf.reduce_sum(x * 2.0)).get_concrete_function(spec).graph
    >>> [(t.numpy().tolist(), f) for t, f in run_batched(g, [(tf.ones([2, 3]), True)], Batch(2))]
    [([6.0, 6.0], True)]
    """
    from stagecraft.autodiff.replay import inline_graph
    from stagecraft.staging.cond import cond

    env: dict[int, tuple] = {p.uid: a for p, a in zip(graph.params, args)}

    def get(x: Any) -> tuple:
        if isinstance(x, Literal):
            return convert_to_tensor(x.type.dtype.np.type(x.value)), False
        return env[x.uid]

    for eqn in graph.eqns:
        pairs = [get(x) for x in eqn.inputs]
        ins, flags = [p[0] for p in pairs], [p[1] for p in pairs]
        op = eqn.op
        if op == "call":
            outs = run_batched(eqn.regions[0], pairs, b)
        elif op == "cond":
            outs = _cond(eqn, pairs, b, cond)
        elif op == "while" and any(flags):
            outs = _while(eqn, pairs, b)
        elif not any(flags):
            sub = Graph("eqn", tuple(x for x in eqn.inputs if not isinstance(x, Literal)),
                        (eqn,), eqn.outputs)
            res = inline_graph(sub, [p[0] for x, p in zip(eqn.inputs, pairs)
                                     if not isinstance(x, Literal)])
            outs = [(r, False) for r in res]
        else:
            res = RULES[op](b, ins, flags, dict(eqn.attrs))
            out = OUT_BATCHED.get(op, any)(flags)
            outs = [(r, out) for r in res]
        for v, o in zip(eqn.outputs, outs):
            env[v.uid] = o
    return [get(r) for r in graph.results]


def _cond(eqn: Any, pairs: list, b: Batch, cond: Callable) -> list[tuple]:
    then_g, else_g = eqn.regions
    (pred, batched), rest = pairs[0], pairs[1:]

    def branch(g: Graph) -> Callable:
        def run() -> list:
            return [t if f else b.full(t) for t, f in run_batched(g, rest, b)]
        return run

    if not batched:
        outs = cond(pred, branch(then_g), branch(else_g))
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        return [(o, True) for o in outs]
    # a predicate per element: each branch runs on the elements that take it (gathered, as
    # TF's pfor partitions them), its results scattered back into place; a branch no element
    # takes does not run. So no element runs the branch it would not take (values a loop
    # would never compute, NaN gradients through the untaken side).
    results = [_a.zeros(b.with_lead(list(v.type.shape)), v.type.dtype) for v in eqn.outputs]
    for g, mask in ((then_g, pred), (else_g, _m.logical_not(pred))):
        rows = _a.reshape(bind(OPS["where_indices"], mask), [-1, 1])
        results = _scatter_branch(g, rows, rest, results, cond)
    return [(r, True) for r in results]


def _scatter_branch(g: Graph, rows: Tensor, rest: list, results: list,
                    cond: Callable) -> list:
    def run() -> list:
        sub = Batch(_a.shape(rows)[0])
        picked = [(bind(OPS["gather"], t, rows[:, 0], axis=0, batch_dims=0), True) if f
                  else (t, False) for t, f in rest]
        outs = run_batched(g, picked, sub)
        return [bind(OPS["scatter_nd"], r, rows, o if f else sub.full(o), mode="update")
                for r, (o, f) in zip(results, outs)]

    if not results:
        return results
    taken = _m.greater(bind(OPS["shape"], rows, out_type=rows.dtype)[0], 0)
    outs = cond(taken, run, lambda: list(results))
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]
