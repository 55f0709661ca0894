"""``bind``: the single entry point of every op, eager or staged, on every device.

Eagerly it checks dtypes, runs the op table's NumPy kernel and tells the recording tapes; shape
inference runs only when the kernel fails, to turn NumPy's error into the same message staged
code gets (NumPy already checks shapes, so the hot path does not repeat that work).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import CONVERTERS, convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.ops.opdef import OpDef
from stagecraft.ir.types import TensorType
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.devices import device as _device
from stagecraft.devices.device import GPU_DEVICE
from stagecraft.eager.device_tensor import DeviceTensor, wrap_device
from stagecraft.eager.remote import RemoteTensor, is_remote, is_remote_spec, runtime
from stagecraft.eager.locations import leaked, user_location
from stagecraft.eager import placement as _placement

_new = object.__new__

def bind(op: OpDef, *inputs: Any, **attrs: Any) -> Any:
    """Applies ``op`` to ``inputs``: runs it now (eager) or records it (while tracing).

    Returns one tensor, or a tuple when the op has several outputs.

    >>> import stagecraft as tf
    >>> from stagecraft.ir import OPS
    >>> bind(OPS["add"], tf.constant(1.), 2.)
    <stagecraft.Tensor: shape=(), dtype=float32, numpy=3.0>
    """
    state = STATE.get()
    if state.graph is not None:
        return state.graph.bind(op, inputs, attrs)
    if state.place is not None:  # inside `with device(...)` naming a device other than the CPU
        if len(inputs) == 2 and type(inputs[0]) is DeviceTensor and \
                type(inputs[1]) is DeviceTensor and state.device in _GPU_SPECS:
            return _run_gpu(op, inputs, attrs, state, (inputs[0]._value, inputs[1]._value))
        return execute(op, inputs, attrs, state)   # (GPU tensors above: as execute)
    # GPU tensors are DeviceTensors, not Tensors: the type tests below send them (and every
    # input that is not a CPU tensor) to the general path, which routes them to their device.
    # Unrolled for the common arities: this is the hottest line of eager execution.
    if len(inputs) == 2:
        a, b = inputs
        ta, tb = type(a), type(b)
        if ta is Tensor and tb is Tensor:
            values = (a._value, b._value)
        elif ta is Tensor and (tb is float or tb is int) and op.unify_indices == (0, 1) and \
                _exact_scalar(b, a._value.dtype):
            values = (a._value, a._value.dtype.type(b))  # `x * 2.0`: the scalar adopts x's dtype
            inputs = (a, wrap(values[1]))
        elif tb is Tensor and (ta is float or ta is int) and op.unify_indices == (0, 1) and \
                _exact_scalar(a, b._value.dtype):
            values = (b._value.dtype.type(a), b._value)
            inputs = (wrap(values[0]), b)
        elif ta is DeviceTensor and tb is DeviceTensor and state.device is None:
            return _run_gpu(op, inputs, attrs, state, (a._value, b._value))   # (as execute)
        elif ta is DeviceTensor or tb is DeviceTensor or _gpu_variable(a) or _gpu_variable(b):
            return execute(op, inputs, attrs, state)   # (it normalizes: reads variables once)
        else:
            values = [x._value for x in inputs if type(x) is Tensor]
    elif len(inputs) == 1 and type(inputs[0]) is Tensor:
        values = (inputs[0]._value,)
    elif len(inputs) == 1 and type(inputs[0]) is DeviceTensor and state.device is None:
        return _run_gpu(op, inputs, attrs, state, (inputs[0]._value,))   # (as execute)
    elif len(inputs) == 1 and (type(inputs[0]) is DeviceTensor or _gpu_variable(inputs[0])):
        return execute(op, inputs, attrs, state)
    else:
        values = [x._value for x in inputs if type(x) is Tensor]
    if len(values) != len(inputs):
        normalized = normalize(op, inputs)
        for x in normalized:
            if type(x) is not Tensor:
                if type(x) is DeviceTensor or type(x) is RemoteTensor:
                    # (the raw inputs: Python values are not copies)
                    return execute(op, inputs, attrs)
                if x._value is None:
                    raise leaked(op, normalized)
        inputs = normalized
        values = [x._value for x in inputs]
    unify = op.unify_indices
    kernel = op.kernel
    if unify:
        d = values[unify[0]].dtype
        if d not in op.np_dtypes:
            raise diagnose(op, values, attrs, None)
        if d.itemsize != 2:  # not float16/bfloat16: no half wrapper (ir/ops/half.py) needed
            kernel = op.plain_kernel
        for i in unify[1:]:
            # Identity is the fast path; equality covers dtype objects that are equal but
            # not numpy's singletons (Numba's disk cache unpickles the dtypes it boxes with).
            if values[i].dtype is not d and values[i].dtype != d:
                raise diagnose(op, values, attrs, None)
    elif op.unify == "all" and (len({v.dtype for v in values}) > 1
                                or values[0].dtype not in op.np_dtypes):
        raise diagnose(op, values, attrs, None)
    try:
        out = kernel(*values, **attrs) if attrs else kernel(*values)
    except (ValueError, IndexError, TypeError, ZeroDivisionError) as e:  # AxisError is both
        raise diagnose(op, values, attrs, e) from None
    if op.num_outputs == 1:
        result = _new(Tensor)
        result._value = out
        if state.tapes:
            for tape in state.tapes:
                tape.record(op, attrs, inputs, (result,))
        return result
    results = tuple(wrap(o) for o in out)
    for tape in state.tapes:
        tape.record(op, attrs, inputs, results)
    return results


def _exact_scalar(x: Any, dtype: np.dtype) -> bool:
    """Whether Python number ``x`` converts to ``dtype`` exactly (else the general path raises
    TensorFlow's error): floats into float dtypes, ints into float or fitting int dtypes."""
    kind = dtype.kind
    if kind == "f" or dtype is _BF16:   # (ml_dtypes' bfloat16 has kind 'V')
        return True
    if type(x) is not int or kind not in "iu":
        return False
    lo, hi = _INT_RANGES[dtype]
    return lo <= x <= hi


_BF16 = _dt.bfloat16.np
# The integer dtypes' ranges, for the scalar fast path (np.iinfo is slow to ask every time).
_INT_RANGES = {d.np: (int(d.min), int(d.max)) for d in _dt.INTEGERS}


def unify_target(op: OpDef, inputs: Sequence[Any]) -> _dt.DType | None:
    """The dtype the dtype-sharing inputs take: the first tensor's (or variable's), else the
    first NumPy array's. As in TensorFlow, NumPy arrays and Python values then adopt it
    (``x_f32 + np.ones(3)`` is float32; lossy conversions, float to int, raise).

    >>> import numpy as np, stagecraft as tf
    >>> from stagecraft.ir import OPS
    >>> unify_target(OPS["add"], (np.ones(2), tf.constant([1.0, 2.0]))).name
    'float32'
    """
    unify = range(len(inputs)) if op.unify == "all" else op.unify_indices
    array = None
    for i in unify:
        x = inputs[i] if i < len(inputs) else None
        if isinstance(x, Tensor) or type(x) in CONVERTERS:
            return x.dtype
        if array is None and isinstance(x, np.ndarray):
            array = x
    return None if array is None else convert_to_tensor(array).dtype


def normalize(op: OpDef, inputs: tuple) -> tuple:
    """Converts every input to a tensor; NumPy arrays and Python values in the dtype-sharing
    group adopt ``unify_target``'s dtype, as TensorFlow's ops do."""
    unify = range(len(inputs)) if op.unify == "all" else op.unify_indices
    target = unify_target(op, inputs)
    out = []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor):  # CPU, GPU and (leaked) symbolic tensors stay as they are
            out.append(x)
        elif target is not None and i in unify and type(x) not in CONVERTERS:
            out.append(_adopt(op, x, target, i))
        else:
            out.append(convert_to_tensor(x))
    return tuple(out)


def _adopt(op: OpDef, x: Any, dtype: _dt.DType, i: int) -> Tensor:
    """A Python value converted to ``dtype``; lossy conversions raise TypeError."""
    kind = type(x)
    if kind is float and dtype.is_floating or kind is int and (
            dtype.is_floating or dtype.is_integer and _exact_scalar(x, dtype.np)):
        return wrap(dtype.np.type(x))  # the common `x * 2.0` case, without the general path
    try:
        return convert_to_tensor(x, dtype)
    except (TypeError, ValueError) as e:
        name = op.inputs[min(i, len(op.inputs) - 1)]
        raise TypeError(f"{op.name}: cannot use {x!r} as '{name}' with a {dtype.name} tensor: "
                        f"{e}") from None


def diagnose(op: OpDef, values: list, attrs: dict, error: Exception | None) -> Exception:
    """The error for a failed eager op: inference's message when it rejects the inputs (the
    same one staged code gets), else the kernel's own, with the user's file:line."""
    types = [TensorType(_dt.from_numpy(np.asarray(v).dtype), np.shape(v)) for v in values]
    try:
        op.infer(types, **attrs)
    except InvalidArgumentError as e:
        return type(e)(f"{e}\n  at {user_location()}")
    text = str(error) if error is not None else "invalid inputs"
    return InvalidArgumentError(f"{op.name}: {text}\n  at {user_location()}")


# ------------------------------------------------ ops on other devices (eager/placement.py)

def execute(op: OpDef, inputs: tuple, attrs: dict, state: Any = None) -> Any:
    """Runs ``op`` eagerly on its device: the ``device`` scope's if it names one, else the
    device of its (GPU or remote) inputs. Inputs elsewhere are copied there first. ``state``:
    the context (``STATE.get()``) when the caller has it."""
    if state is None:
        state = STATE.get()
    if state.device is None or _gpu_here(state):   # (the first test inline: the hot case)
        ready = _gpu_values(op, inputs, state)
        if ready is not None:
            return _run_gpu(op, ready[0], attrs, state, ready[1])
    given = [isinstance(x, Tensor) or hasattr(x, "read_value") for x in inputs]
    inputs = normalize(op, inputs)
    if any(x._value is None for x in inputs):
        raise leaked(op, inputs)
    if state.place is not None or state.device is not None and \
            state.device.device_type is not None:
        target = _placement.resolve(state.device, f"op '{op.name}'")
    else:
        target = _placement.inputs_device(inputs)
    moved = []
    for i, x in enumerate(inputs):
        if _placement.device_of(x) != target:
            if given[i]:
                _policy_check(x, target, op, i)
            x = _placement.copy(x, target)
        moved.append(x)
    if target == _placement.GPU_DEVICE:
        return _run_gpu(op, moved, attrs, state)
    if is_remote(target):
        return _run_remote(op, moved, attrs, state, target)
    if state.place is None:
        return bind(op, *moved, **attrs)
    token = STATE.set(state.replace(place=None))  # CPU inputs only: bind's own eager path
    try:
        return bind(op, *moved, **attrs)
    finally:
        STATE.reset(token)


# Device specs (of `with device(...)` scopes) known to name this process's GPU:0.
_GPU_SPECS: set = set()


def _gpu_here(state: Any) -> bool:
    """Whether ops on GPU inputs run on this process's GPU under ``state``'s device scope:
    none, or one naming this GPU."""
    return state.device is None or state.device in _GPU_SPECS or _local_gpu(state.device)


def _local_gpu(spec: Any) -> bool:
    """Whether ops under device spec ``spec`` run on this process's GPU (``placement.resolve``
    gives GPU_DEVICE whatever the soft-placement setting); remembered for the next op."""
    if spec.device_type != "GPU" or spec.device_index not in (None, 0) or \
            is_remote_spec(spec) or not _device.has_gpu():
        return False
    _GPU_SPECS.add(spec)
    return True


def _gpu_values(op: OpDef, inputs: tuple, state: Any) -> tuple[list, list] | None:
    """``(tensors, device values)`` of an op that runs on the GPU with no copy or conversion:
    its inputs are GPU tensors or GPU variables (read as ``normalize`` reads them: tapes see
    the reads), or two inputs one of which is a Python number the other's dtype holds exactly
    (``x * 2.0``: outside gradient tapes the number is a NumPy scalar that the elementwise
    kernel takes as an argument; tapes record tensors, so under them it is a GPU constant,
    see :func:`_device_constant`). None otherwise, before anything is read: the general path
    decides."""
    if len(inputs) == 2:
        a, b = inputs
        ta, tb = type(a), type(b)
        if ta is DeviceTensor and tb is DeviceTensor:
            return [a, b], [a._value, b._value]
        if (ta is DeviceTensor and (tb is float or tb is int) or
                tb is DeviceTensor and (ta is float or ta is int)) and \
                op.unify_indices == (0, 1) and not state.tapes:   # (`x * 2.0`, `1.0 - x`)
            if ta is DeviceTensor:
                number = _device_scalar(b, a._value.dtype)
                values = [a._value, number]
            else:
                number = _device_scalar(a, b._value.dtype)
                values = [number, b._value]
            return None if number is None else ([a, b], values)
    number = None
    for i, x in enumerate(inputs):
        kind = type(x)
        if kind is DeviceTensor or kind in CONVERTERS and \
                getattr(x, "_device", None) == GPU_DEVICE:
            continue
        if (kind is float or kind is int) and number is None and len(inputs) == 2 and \
                op.unify_indices == (0, 1):
            number = i
            continue
        return None
    if not inputs:
        return None
    made = None
    if number is not None:   # (a GPU tensor's or variable's device array gives the dtype)
        dtype = inputs[1 - number]._value.dtype
        made = (_device_constant if state.tapes else _device_scalar)(inputs[number], dtype)
        if made is None:
            return None
    tensors = [x if i == number or type(x) is DeviceTensor else CONVERTERS[type(x)](x, None)
               for i, x in enumerate(inputs)]
    if number is not None and state.tapes:
        tensors[number] = made   # (a GPU constant: the tape records it as an input)
        number = None
    values = [made if i == number else x._value for i, x in enumerate(tensors)]
    return tensors, values


def gpu_constant_beside(tensor: Any, x: int | float, dtype: np.dtype) -> DeviceTensor | None:
    """Python number ``x`` as a rank-0 GPU constant of ``dtype``, kept per number object, when
    an op on ``tensor`` runs on this process's GPU (a GPU tensor, outside a device scope or in
    one naming this GPU); None otherwise, or where ``x`` does not convert exactly. For an op's
    default operands (``one_hot``'s 1 and 0), which would otherwise be uploaded at every call.

    >>> import stagecraft as tf
    >>> print(gpu_constant_beside(tf.constant([1.0]), 1, np.dtype(np.float32)))
    None
    """
    if type(tensor) is not DeviceTensor or not _gpu_here(STATE.get()):
        return None
    return _device_constant(x, dtype)


def _device_constant(x: Any, dtype: np.dtype) -> DeviceTensor | None:
    """Python number ``x`` as a rank-0 GPU tensor of ``dtype`` (what a gradient tape records
    of ``x * 2.0``), or None where it does not convert exactly. Kept per number object
    (device arrays are never written once made): a constant of the user's code is uploaded
    once, not at every step."""
    return _kept_per_number(_DEVICE_CONSTANTS, x, dtype, lambda: wrap_device(
        _placement.to_device_array(np.asarray(dtype.type(x)))))


def _device_scalar(x: Any, dtype: np.dtype) -> Any:
    """Python number ``x`` as a NumPy scalar of ``dtype`` (an elementwise GPU kernel's
    argument), or None where it does not convert exactly. Kept per number object: a constant
    of the user's code (``x * 0.5`` in a loop) is then a launch argument passed again, which
    is not packed again."""
    return _kept_per_number(_DEVICE_SCALARS, x, dtype, lambda: dtype.type(x))


def _kept_per_number(kept: dict, x: Any, dtype: np.dtype, make: Callable[[], Any]) -> Any:
    """``make()``, made once per number object ``x`` and dtype and kept in ``kept`` (at most
    256 entries); None where ``x`` does not convert to ``dtype`` exactly (see
    :func:`_exact_scalar`). Numbers that compare equal but differ (0.0 and -0.0, 1 and 1.0)
    are other objects, with their own entries."""
    key = (id(x), dtype)
    found = kept.get(key)
    if found is not None and found[0] is x:
        return found[1]
    if not _exact_scalar(x, dtype):
        return None
    made = make()
    if len(kept) >= 256:
        kept.clear()
    kept[key] = (x, made)   # (x is kept with it: while the entry lives, no other has its id)
    return made


# (id(number), dtype) -> (number, what _device_constant / _device_scalar made of it)
_DEVICE_CONSTANTS: dict = {}
_DEVICE_SCALARS: dict = {}


def _gpu_variable(x: Any) -> bool:
    """Whether ``x`` is a variable on this process's GPU."""
    return getattr(x, "_device", None) == GPU_DEVICE and type(x) in CONVERTERS


def _run_gpu(op: OpDef, inputs: Sequence[Any], attrs: dict, state: Any,
             values: list | None = None) -> Any:
    if values is None:
        values = [x._value for x in inputs]
    # (the common unary or binary op, one dtype which the op takes, needs no general check)
    n = len(values)
    if not (n == 2 and values[0].dtype is values[1].dtype and values[0].dtype in op.np_dtypes
            or n == 1 and values[0].dtype in op.np_dtypes):
        _check_gpu_dtypes(op, values, attrs)
    try:
        out = (_placement._cuda_eager or _placement.kernels()).run(op.name, values, attrs)
    except NotImplementedError as e:   # (a Python number among the inputs becomes a tensor)
        return _no_gpu_kernel(op, normalize(op, tuple(inputs)), attrs, state, e)
    except (ValueError, IndexError, TypeError, ZeroDivisionError) as e:
        # The kernels run the op's inference (InvalidArgumentError is a ValueError):
        # diagnose gives the same message as on the CPU and in staged code, with file:line.
        raise diagnose(op, [_placement.to_host_array(v) for v in values], attrs, e) from None
    if op.num_outputs == 1:
        result = _new(DeviceTensor)   # wrap_device, inlined: every GPU op's result
        result._value = out
        for tape in state.tapes:
            tape.record(op, attrs, inputs, (result,))
        return result
    results = tuple(wrap_device(o) for o in out)
    for tape in state.tapes:
        tape.record(op, attrs, inputs, results)
    return results


def _check_gpu_dtypes(op: OpDef, values: list, attrs: dict) -> None:
    """Raises the reference error when the inputs ``op`` unifies differ in dtype or the op
    does not take their dtype."""
    unify = range(len(values)) if op.unify == "all" else op.unify_indices
    dtype = None
    for i in unify:
        if i < len(values):
            d = values[i].dtype
            if dtype is None:
                dtype = d
            elif d is not dtype and d != dtype:
                dtype = False
                break
    if dtype is False or dtype is not None and dtype not in op.np_dtypes:
        raise diagnose(op, [_placement.to_host_array(v) for v in values], attrs, None)


def _run_remote(op: OpDef, inputs: list, attrs: dict, state: Any, target: str) -> Any:
    """Runs ``op`` on a remote worker (``stagecraft.distribute``); recorded like a local op."""
    results = runtime().run_op(op, inputs, attrs, target)
    for tape in state.tapes:
        tape.record(op, attrs, inputs, results)
    return results[0] if op.num_outputs == 1 else results


def _no_gpu_kernel(op: OpDef, inputs: list, attrs: dict, state: Any, error: Exception) -> Any:
    """An op without a GPU kernel: soft placement runs it on the CPU (TensorFlow's rule)."""
    if not _device.get_soft_device_placement():
        raise InvalidArgumentError(
            f"Could not satisfy device specification '{_placement.GPU_DEVICE}' for op '{op.name}': it has "
            f"no GPU kernel ({error}). Turn soft placement on "
            f"(tf.config.set_soft_device_placement(True)) to run it on the CPU, or run it "
            f"under `with tf.device('/cpu:0'):`.\n  at {user_location()}") from None
    host = [_placement.copy(x, _placement.CPU_DEVICE) for x in inputs]
    token = STATE.set(state.replace(place=None, device=None))
    try:
        return bind(op, *host, **attrs)
    finally:
        STATE.reset(token)


# ------------------------------------------------------- graph functions on the GPU


def _policy_check(x: Tensor, target: str, op: OpDef, i: int) -> None:
    policy = _device.get_device_policy()
    if policy == "silent" or policy == "silent_for_int32" and x.dtype == _dt.int32:
        return
    text = (f"{op.name}: input #{i} was expected to be on {target} but is actually on "
            f"{_placement.device_of(x)} (operation running on {target}).")
    if policy == "warn":
        _placement.logger.warning("%s It is copied; copy it yourself to silence this warning.", text)
        return
    raise InvalidArgumentError(
        f"Tensors on conflicting devices: {text} The device policy is '{policy}'. Copy it "
        f"explicitly (`with tf.device(name): x = tf.identity(x)`, or x.gpu() / x.cpu()), or "
        f"call tf.config.experimental.set_device_policy('silent').\n  at {user_location()}")
