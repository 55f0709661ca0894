"""Tests generated from the op table ``stagecraft.ir.OPS`` (never written op by op).

* completeness of every ``OpDef`` (doc, infer, kernel, examples for every test dtype, attrs);
* inference vs kernel: for every op, dtype and example, the eager result of ``bind`` has the
  dtype and shape that ``op.infer`` predicts, and the value of the NumPy reference kernel;
* dtype rejection: a dtype outside ``op.dtypes`` is refused by ``infer`` and by eager ``bind``
  with an ``InvalidArgumentError`` whose message starts with ``"<op>:"``;
* every op has a VJP rule or is explicitly not differentiable;
* hypothesis tests of the shape rules against NumPy.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import stagecraft as tf
from stagecraft.autodiff import vjps as gradients
from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.errors import InvalidArgumentError
from stagecraft.ir import OPS, Example, Kind, OpDef
from stagecraft.ir import dtypes as dt
from stagecraft.ir import shapes
from stagecraft.ir.ops.slicing import sliced_dims
from stagecraft.ir.types import TensorType

from support.op_examples import dtypes_to_test, examples

# STAGECRAFT_HYPOTHESIS_EXAMPLES=3000 explores further (a few minutes) before a release.
SETTINGS = settings(max_examples=int(os.environ.get("STAGECRAFT_HYPOTHESIS_EXAMPLES", 50)),
                    deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------- helpers

def _test_dtypes(op: OpDef) -> tuple:
    return dtypes_to_test(op.name)


def _examples(op: OpDef, d: dt.DType) -> list[Example]:
    return examples(op.name, d)


def _type_of(x) -> TensorType:
    a = np.asarray(x)
    return TensorType(dt.from_numpy(a.dtype), tuple(a.shape))


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else ""


def _assert_matches_type(value: np.ndarray, t: TensorType, what: str) -> None:
    assert dt.from_numpy(value.dtype) is t.dtype, (
        f"{what}: dtype {value.dtype} but infer predicts {t.dtype.name}")
    if t.shape is None:
        return
    assert len(value.shape) == len(t.shape), (
        f"{what}: shape {value.shape} but infer predicts {shapes.format_dims(t.shape)}")
    for got, want in zip(value.shape, t.shape):
        assert want is None or got == want, (
            f"{what}: shape {value.shape} but infer predicts {shapes.format_dims(t.shape)}")


CASES = [pytest.param(op, d, i, ex, id=f"{op.name}-{d.name}-{i}")
         for op in OPS.values() for d in _test_dtypes(op)
         for i, ex in enumerate(_examples(op, d))]


# -------------------------------------------------------------------- completeness

def test_table_is_not_empty_and_keys_match_names():
    assert len(OPS) > 50
    for name, op in OPS.items():
        assert isinstance(op, OpDef)
        assert op.name == name


@pytest.mark.parametrize("op", list(OPS.values()), ids=list(OPS))
def test_opdef_is_complete(op: OpDef):
    assert isinstance(op.kind, Kind)
    assert isinstance(op.doc, str) and op.doc.strip(), f"{op.name} has no doc"
    assert callable(op.infer) and callable(op.kernel)
    assert op.dtypes and all(isinstance(d, dt.DType) for d in op.dtypes)
    assert all(d in op.dtypes for d in _test_dtypes(op)), "test_dtypes must be a subset of dtypes"
    assert op.num_outputs >= 1
    if isinstance(op.unify, str):
        assert op.unify == "all"
    else:
        n = len(op.inputs)
        assert all(0 <= i < n or (op.variadic and i >= n - 1) for i in op.unify)
    for d in _test_dtypes(op):
        examples = _examples(op, d)
        assert examples, f"{op.name} has no example for {d.name}"
        for ex in examples:
            assert isinstance(ex, Example)
            missing = set(op.attrs) - set(ex.attrs)
            assert not missing, f"{op.name} example lacks attrs {sorted(missing)}"
            extra = set(ex.attrs) - set(op.attrs)
            assert not extra, f"{op.name} example has undeclared attrs {sorted(extra)}"
            if op.variadic:
                assert len(ex.inputs) >= len(op.inputs) - 1
            else:
                assert len(ex.inputs) == len(op.inputs), (
                    f"{op.name} takes {op.inputs}, example gives {len(ex.inputs)} inputs")
            # The example's unified inputs really have the dtype it was generated for.
            unify = range(len(ex.inputs)) if op.unify == "all" else op.unify
            for i in unify:
                if i < len(ex.inputs):
                    assert np.asarray(ex.inputs[i]).dtype == d.np, (
                        f"{op.name} example input {i} is {np.asarray(ex.inputs[i]).dtype}, "
                        f"expected {d.name}")


# --------------------------------------------------------- inference vs the kernel

@pytest.mark.parametrize("op,d,i,ex", CASES)
def test_eager_result_matches_inference_and_kernel(op: OpDef, d, i, ex: Example):
    arrays = [np.asarray(x) for x in ex.inputs]
    before = [a.copy() for a in arrays]
    types = [_type_of(a) for a in arrays]
    predicted = list(op.infer(types, **ex.attrs))
    assert len(predicted) == op.num_outputs
    assert all(isinstance(t, TensorType) for t in predicted)

    result = bind(op, *[convert_to_tensor(a) for a in arrays], **ex.attrs)
    results = (result,) if op.num_outputs == 1 else tuple(result)
    assert len(results) == op.num_outputs
    expected = op.kernel(*[a.copy() for a in arrays], **ex.attrs)
    expected = (expected,) if op.num_outputs == 1 else tuple(expected)
    for k, (r, t, e) in enumerate(zip(results, predicted, expected)):
        assert isinstance(r, tf.Tensor)
        value = r._value
        assert isinstance(value, (np.ndarray, np.generic)), type(value)
        _assert_matches_type(np.asarray(value), t, f"{op.name} output {k} (eager)")
        _assert_matches_type(np.asarray(e), t, f"{op.name} output {k} (kernel)")
        assert r.dtype is t.dtype
        assert tuple(r.shape.as_list()) == np.shape(e)
        np.testing.assert_array_equal(r.numpy(), e)  # NaNs compare equal
    for a, b in zip(arrays, before):  # kernels must not write into their inputs
        np.testing.assert_array_equal(a, b)


RANDOM_CASES = [c for c in CASES if c.values[0].kind is Kind.RANDOM]


def test_random_cases_exist():
    assert len(RANDOM_CASES) >= 3


@pytest.mark.parametrize("op,d,i,ex", RANDOM_CASES)
def test_random_ops_are_pure_functions_of_the_seed(op: OpDef, d, i, ex: Example):
    inputs = [convert_to_tensor(np.asarray(x)) for x in ex.inputs]
    first = bind(op, *inputs, **ex.attrs).numpy()
    again = bind(op, *inputs, **ex.attrs).numpy()
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, op.kernel(*[np.asarray(x) for x in ex.inputs],
                                                   **ex.attrs))
    if np.size(first) > 1:
        a, b, c = ex.inputs[0].tolist()
        for other in [(a + 1, b, c), (a, b + 1, c), (a, b, c + 1)]:
            seed = convert_to_tensor(np.asarray(other, np.int64))
            moved = bind(op, seed, *inputs[1:], **ex.attrs).numpy()
            assert not np.array_equal(first, moved), f"seed {other} gives the same stream"


# ------------------------------------------------------------------ dtype rejection

def _rejection_cases():
    out = []
    for op in OPS.values():
        if not isinstance(op.unify, tuple) or not op.unify:
            continue
        for bad in dt.ALL:
            if bad in op.dtypes:
                continue
            good = _test_dtypes(op)[0]
            ex = _examples(op, good)[0]
            out.append(pytest.param(op, bad, ex, id=f"{op.name}-{bad.name}"))
    return out


REJECTIONS = _rejection_cases()


def test_rejection_cases_exist():
    # Many ops are float-only or numeric-only; if none were generated the generator is broken.
    assert len(REJECTIONS) > 40


@pytest.mark.parametrize("op,bad,ex", REJECTIONS)
def test_disallowed_dtype_is_rejected(op: OpDef, bad, ex: Example):
    arrays = [np.asarray(x) for x in ex.inputs]
    for i in op.unify:
        arrays[i] = arrays[i].astype(bad.np)
    types = [_type_of(a) for a in arrays]
    with pytest.raises(InvalidArgumentError) as info:
        op.infer(types, **ex.attrs)
    assert _first_line(info.value).startswith(f"{op.name}:"), str(info.value)
    assert bad.name in str(info.value)
    with pytest.raises(InvalidArgumentError) as info:
        bind(op, *[convert_to_tensor(a) for a in arrays], **ex.attrs)
    assert _first_line(info.value).startswith(f"{op.name}:"), str(info.value)


def _mixed_cases():
    out = []
    for op in OPS.values():
        unify = op.unify
        if not isinstance(unify, tuple) or len(unify) < 2:
            continue
        good = _test_dtypes(op)[0]
        other = next((d for d in op.dtypes if d is not good), None)
        if other is not None:
            out.append(pytest.param(op, other, _examples(op, good)[0],
                                    id=f"{op.name}-{good.name}-{other.name}"))
    return out


@pytest.mark.parametrize("op,other,ex", _mixed_cases())
def test_unified_inputs_of_different_allowed_dtypes_are_rejected(op: OpDef, other, ex: Example):
    arrays = [np.asarray(x) for x in ex.inputs]
    j = op.unify[-1]
    arrays[j] = arrays[j].astype(other.np)
    types = [_type_of(a) for a in arrays]
    with pytest.raises(InvalidArgumentError) as info:
        op.infer(types, **ex.attrs)
    assert _first_line(info.value).startswith(f"{op.name}:"), str(info.value)
    with pytest.raises(InvalidArgumentError) as info:
        bind(op, *[convert_to_tensor(a) for a in arrays], **ex.attrs)
    assert _first_line(info.value).startswith(f"{op.name}:"), str(info.value)


# ------------------------------------------------------------------- gradient table

def test_every_op_has_a_vjp_or_is_explicitly_not_differentiable():
    names = set(OPS)
    vjps, opted_out = set(gradients.VJPS), set(gradients.NOT_DIFFERENTIABLE)
    assert not names - vjps - opted_out, f"ops with no VJP rule: {sorted(names - vjps - opted_out)}"
    assert not vjps & opted_out, f"both a rule and opted out: {sorted(vjps & opted_out)}"
    assert not vjps - names, f"VJP rules for unknown ops: {sorted(vjps - names)}"
    assert not opted_out - names, f"unknown ops opted out: {sorted(opted_out - names)}"
    assert all(callable(f) for f in gradients.VJPS.values())


@pytest.mark.parametrize("name", sorted(gradients.NOT_DIFFERENTIABLE))
def test_not_differentiable_ops_have_no_float_outputs_from_tensor_inputs(name):
    # The opt-out is only sound when no float gradient could flow: the op takes no tensor
    # inputs (creation/random from attributes) or none of its outputs is a float computed
    # from its inputs.
    # (or a gradient reaching it raises: autodiff.vjps.UNDEFINED)
    if name in gradients.UNDEFINED:
        return
    op = OPS[name]
    for d in _test_dtypes(op):
        for ex in _examples(op, d):
            if not ex.inputs:
                continue
            for t in op.infer([_type_of(x) for x in ex.inputs], **ex.attrs):
                assert not t.dtype.is_floating or op.kind in (Kind.CREATION, Kind.RANDOM), (
                    f"{name} outputs {t.dtype.name} from tensor inputs but has no VJP rule")


# --------------------------------------------------- hypothesis: shapes vs NumPy

def _dims(max_rank=4, max_dim=4, min_rank=0):
    return st.lists(st.integers(0, max_dim), min_size=min_rank, max_size=max_rank).map(tuple)


def _infer_shape(name: str, *in_shapes: tuple, **attrs):
    types = [TensorType(dt.float32, s) for s in in_shapes]
    return tuple(OPS[name].infer(types, **attrs)[0].shape)


def _broadcastable_pair():
    # Mostly shapes that are likely to broadcast (dims drawn from {1, n}), some arbitrary.
    def pair(base):
        def pick(d, draw_one):
            return 1 if draw_one else d
        return st.tuples(
            st.lists(st.booleans(), min_size=len(base), max_size=len(base)),
            st.lists(st.booleans(), min_size=len(base), max_size=len(base)),
            st.integers(0, len(base)), st.integers(0, len(base)),
        ).map(lambda t: (tuple(pick(d, o) for d, o in zip(base, t[0]))[t[2]:],
                         tuple(pick(d, o) for d, o in zip(base, t[1]))[t[3]:]))
    return st.one_of(_dims().flatmap(pair), st.tuples(_dims(), _dims()))


@SETTINGS
@given(_broadcastable_pair())
def test_broadcast_matches_numpy(pair):
    a, b = pair
    try:
        want = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(ValueError):
            shapes.broadcast(a, b)
        with pytest.raises(InvalidArgumentError) as info:
            _infer_shape("add", a, b)
        assert _first_line(info.value).startswith("add:")
        event("error")
        return
    event("ok")
    assert shapes.broadcast(a, b) == want
    assert shapes.broadcast(b, a) == want
    assert _infer_shape("add", a, b) == want
    # Unknown dims: the result is compatible with NumPy's and keeps every dim it can know.
    unknown_a = tuple(None for _ in a)
    got = shapes.broadcast(unknown_a, b)
    assert shapes.is_compatible(got, want)


@SETTINGS
@given(_dims(max_rank=4, max_dim=4), st.data())
def test_reshape_with_minus_one_matches_numpy(shape, data):
    x = np.empty(shape)
    # A target built from a factorisation of the size (valid) or random dims (often invalid).
    n = x.size
    dims = []
    rest = n
    for _ in range(data.draw(st.integers(0, 3))):
        divisors = [k for k in range(1, 7) if rest % k == 0] if rest else [0, 1, 2]
        k = data.draw(st.sampled_from(divisors))
        dims.append(k)
        rest = rest // k if k else rest
    valid = dims + [-1]
    target = data.draw(st.one_of(
        st.permutations(valid).map(tuple),
        st.lists(st.integers(-1, 5), max_size=4).map(tuple)))
    try:
        want = np.reshape(x, target).shape
    except ValueError:
        with pytest.raises(InvalidArgumentError) as info:
            _infer_shape("reshape", shape, shape=target)
        assert _first_line(info.value).startswith("reshape:")
        event("error")
        return
    event("ok")
    assert _infer_shape("reshape", shape, shape=target) == want
    # Unknown input dims: -1 becomes unknown, the other dims are kept.
    if shape:
        partial = _infer_shape("reshape", (None,) + shape[1:], shape=target)
        assert shapes.is_compatible(partial, want)


@SETTINGS
@given(_dims(max_rank=5), st.data())
def test_transpose_matches_numpy(shape, data):
    perm = data.draw(st.one_of(
        st.permutations(range(len(shape))).map(tuple),
        st.lists(st.integers(0, 5), max_size=5).map(tuple)))
    try:
        want = np.transpose(np.empty(shape), perm).shape
    except ValueError:
        with pytest.raises(InvalidArgumentError) as info:
            _infer_shape("transpose", shape, perm=perm)
        assert _first_line(info.value).startswith("transpose:")
        event("error")
        return
    event("ok")
    assert _infer_shape("transpose", shape, perm=perm) == want


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
@SETTINGS
@given(_dims(max_rank=4), st.data(), st.booleans(), st.sampled_from(
    ["reduce_sum", "reduce_mean", "reduce_max", "reduce_prod"]))
def test_reductions_match_numpy(shape, data, keepdims, name):
    rank = len(shape)
    axes = data.draw(st.one_of(
        st.none(),
        st.lists(st.integers(-rank - 1, rank), max_size=rank + 1).map(tuple)))
    x = np.ones(shape)
    try:
        want = np.sum(x, axis=axes, keepdims=keepdims).shape
    except ValueError:  # AxisError, duplicate axes
        with pytest.raises(InvalidArgumentError) as info:
            _infer_shape(name, shape, axes=axes, keepdims=keepdims)
        assert _first_line(info.value).startswith(f"{name}:")
        event("error")
        return
    event("ok")
    assert _infer_shape(name, shape, axes=axes, keepdims=keepdims) == want
    # Eager agrees (empty max reductions give TF's identity instead of NumPy's error).
    out = bind(OPS[name], tf.constant(x), axes=axes, keepdims=keepdims)
    assert tuple(out.shape.as_list()) == want


@SETTINGS
@given(_dims(max_rank=4, min_rank=0), st.integers(1, 3), st.data())
def test_concat_matches_numpy(shape, n, data):
    rank = len(shape)
    axis = data.draw(st.integers(-rank - 1, rank))
    parts = []
    for _ in range(n):
        s = list(shape)
        if rank and -rank <= axis < rank:
            s[axis] = data.draw(st.integers(0, 3))
        if data.draw(st.integers(0, 9)) == 0:  # sometimes a mismatching part
            s = list(data.draw(_dims(max_rank=4)))
        parts.append(tuple(s))
    try:
        want = np.concatenate([np.empty(p) for p in parts], axis=axis).shape
    except ValueError:
        with pytest.raises(InvalidArgumentError) as info:
            _infer_shape("concat", *parts, axis=axis)
        assert _first_line(info.value).startswith("concat:")
        event("error")
        return
    event("ok")
    assert _infer_shape("concat", *parts, axis=axis) == want


_index_item = st.one_of(
    st.integers(-6, 6).map(lambda i: ("index", i)),
    st.tuples(st.one_of(st.none(), st.integers(-6, 6)), st.one_of(st.none(), st.integers(-6, 6)),
              st.one_of(st.none(), st.integers(-3, 3))).map(lambda t: ("slice",) + t),
    st.just(("newaxis",)),
    st.just(("ellipsis",)),
)


def _np_key(spec):
    out = []
    for item in spec:
        tag = item[0]
        if tag == "index":
            out.append(item[1])
        elif tag == "slice":
            out.append(slice(*item[1:]))
        elif tag == "newaxis":
            out.append(np.newaxis)
        else:
            out.append(Ellipsis)
    return tuple(out)


@SETTINGS
@given(_dims(max_rank=4, max_dim=5), st.lists(_index_item, max_size=5).map(tuple))
def test_strided_slice_matches_numpy(shape, spec):
    try:
        want = np.empty(shape)[_np_key(spec)].shape
    except (IndexError, ValueError):
        with pytest.raises(InvalidArgumentError) as info:
            sliced_dims("strided_slice", shape, spec)
        assert _first_line(info.value).startswith("strided_slice:")
        event("error")
        return
    event("ok")
    assert sliced_dims("strided_slice", shape, spec) == want
    assert _infer_shape("strided_slice", shape, spec=spec) == want
    # Unknown dims: the result stays compatible and the rank is known.
    unknown = sliced_dims("strided_slice", tuple(None for _ in shape), spec)
    assert shapes.is_compatible(unknown, want)


@SETTINGS
@given(st.lists(st.sampled_from([1, 1, 2, 3]), max_size=4).map(tuple), st.data())
def test_squeeze_matches_numpy(shape, data):
    rank = len(shape)
    axis = data.draw(st.one_of(
        st.none(),
        st.sets(st.integers(0, max(rank - 1, 0)), max_size=rank).map(
            lambda s: tuple(a - rank if i % 2 else a for i, a in enumerate(sorted(s)))),
        st.lists(st.integers(-rank - 2, rank + 1), min_size=1, max_size=1).map(tuple)))
    try:
        want = np.squeeze(np.empty(shape), axis=axis).shape
    except ValueError:
        with pytest.raises(InvalidArgumentError) as info:
            _infer_shape("squeeze", shape, axis=axis)
        assert _first_line(info.value).startswith("squeeze:")
        event("error")
        return
    event("ok")
    assert _infer_shape("squeeze", shape, axis=axis) == want
    out = bind(OPS["squeeze"], tf.constant(np.empty(shape)), axis=axis)
    assert tuple(out.shape.as_list()) == want


@SETTINGS
@given(_dims(max_rank=4), st.data())
def test_expand_dims_matches_numpy(shape, data):
    rank = len(shape)
    axis = data.draw(st.integers(-rank - 3, rank + 2))
    try:
        want = np.expand_dims(np.empty(shape), axis).shape
    except ValueError:
        with pytest.raises(InvalidArgumentError) as info:
            _infer_shape("expand_dims", shape, axis=axis)
        assert _first_line(info.value).startswith("expand_dims:")
        event("error")
        return
    event("ok")
    assert _infer_shape("expand_dims", shape, axis=axis) == want
    out = bind(OPS["expand_dims"], tf.constant(np.empty(shape)), axis=axis)
    assert tuple(out.shape.as_list()) == want
