"""``GradientTape``: records the ops that touch watched tensors and runs them backwards.

The tape stores data, not closures: each record holds the op, its attributes, its input and
output tensors. ``gradient`` walks the records in reverse, calling each op's VJP rule (written
in stagecraft ops, so an outer tape records the backward pass: higher-order derivatives).
"""
from __future__ import annotations

import contextlib
import enum
import logging
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from stagecraft.eager import nest
from stagecraft.eager.context import STATE
from stagecraft.autodiff.vjps import UNDEFINED, VJPS
from stagecraft.ir.errors import UnimplementedError
from stagecraft.ir.ops.opdef import OpDef
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.eager.placement import device_of
from stagecraft.devices.device import CPU_DEVICE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ops.array_ops import ones_like, reshape, stack, transpose, zeros, zeros_like
from stagecraft.ops.math_ops import add, cast
from stagecraft.state.variables import Variable

logger = logging.getLogger("stagecraft")

# ``tf.vectorized_map``, which the Jacobians use; stagecraft.ops.vectorize_ops puts it here when
# imported (it imports this module through the loops it falls back to: no import cycle).
VECTORIZE: list[Callable] = []


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


class Record:
    """One recorded operation. ``backward(grads_of_outputs) -> grads_of_inputs`` overrides the
    op's VJP rule (variable reads, custom gradients, staged calls). Of several outputs, those
    no gradient reached get zeros, or None where ``backward.takes_none`` is true."""

    __slots__ = ("op", "attrs", "inputs", "outputs", "backward")

    def __init__(self, op: OpDef | None, attrs: dict, inputs: Sequence, outputs: Sequence,
                 backward: Callable | None = None):
        self.op, self.attrs, self.inputs, self.outputs = op, attrs, tuple(inputs), tuple(outputs)
        self.backward = backward

    def vjp(self, gouts: list) -> Sequence:
        if self.backward is not None:
            return self.backward(gouts)
        rule = VJPS.get(self.op.name)
        if rule is None:
            if self.op.name in UNDEFINED and any(g is not None for g in gouts):
                raise UnimplementedError(UNDEFINED[self.op.name])
            return (None,) * len(self.inputs)
        if len(self.outputs) == 1:
            return rule(gouts[0], self.outputs[0], *self.inputs, **self.attrs)
        return rule(tuple(gouts), self.outputs, *self.inputs, **self.attrs)


def trainable(dtype: Any) -> bool:
    """A dtype gradients flow through (TensorFlow's: floating or complex).

    >>> import stagecraft as tf
    >>> trainable(tf.complex64), trainable(tf.int32)
    (True, False)
    """
    return dtype.is_floating or dtype.is_complex


def is_float(x: Any) -> bool:
    """A tensor of a trainable dtype."""
    return trainable(x.dtype)


def key(x: Any) -> Any:
    """The identity of a tensor or variable on a tape: the object for eager values, the graph
    value for symbolic tensors (several Python wrappers may stand for one graph value)."""
    return id(x) if x._value is not None else ("graph", x._node.uid)


_int_watch_warnings = 0


class GradientTape:
    """Records operations for reverse-mode automatic differentiation.

    Ops on watched tensors (and on trainable variables, watched on first read) that run inside
    ``with tape:`` are recorded; ``tape.gradient(target, sources)`` then returns d target /
    d sources in the structure of ``sources``. A non-persistent tape answers once; tapes nest
    for higher-order derivatives.

    >>> import stagecraft as tf
    >>> x = tf.constant(3.0)
    >>> with tf.GradientTape() as outer:
    ...     outer.watch(x)
    ...     with tf.GradientTape() as inner:
    ...         inner.watch(x)
    ...         y = x * x
    ...     dy = inner.gradient(y, x)
    >>> float(dy), float(outer.gradient(dy, x))
    (6.0, 2.0)
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        self._records: list[Record] = []
        self._ids: dict[int, Any] = {}        # id -> watched or recorded object (kept alive)
        self._variables: dict[int, Any] = {}  # id -> watched variable
        self._recording = False
        self._released = False
        self._warned_persistent = False

    # ------------------------------------------------------------------ context protocol
    def __enter__(self) -> "GradientTape":
        if self._recording:
            raise ValueError("Tape is still recording: this GradientTape is already active "
                             "(nested `with tape:` of the same tape). Use a second tape for "
                             "higher-order gradients.")
        self._push()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._recording:
            self._pop()

    def _push(self) -> None:
        state = STATE.get()
        STATE.set(state.replace(tapes=state.tapes + (self,)))
        self._recording = True

    def _pop(self) -> None:
        state = STATE.get()
        STATE.set(state.replace(tapes=tuple(t for t in state.tapes if t is not self)))
        self._recording = False

    # ------------------------------------------------------------------------ recording
    def record(self, op: OpDef | None, attrs: dict, inputs: Sequence, outputs: Sequence,
               backward: Callable | None = None) -> None:
        """Records an op if one of its float inputs is watched (called by ``bind``)."""
        ids = self._ids
        for x in inputs:
            if key(x) in ids and is_float(x):
                break
        else:
            return
        floats = [o for o in outputs if is_float(o)]
        if not floats:
            return
        self._records.append(Record(op, attrs, inputs, outputs, backward))
        for o in floats:
            ids[key(o)] = o

    def record_composite(self, inputs: Sequence, outputs: Sequence, backward: Callable) -> None:
        """Records an op made of a traced graph (a staged call, ``cond`` or ``while``) whose
        ``inputs`` may include the variables it reads inside: those are watched as a direct
        read would watch them, so gradients reach variables read only inside the graph."""
        if self._watch_accessed_variables:
            for x in inputs:
                if isinstance(x, Variable) and x.trainable:
                    self._watch_variable(x)
        self.record(None, {}, inputs, outputs, backward)

    def record_read(self, variable: Any, value: Tensor) -> None:
        """Called when a variable is read: watches it if it should be, and links the value."""
        if self._watch_accessed_variables and variable.trainable:
            self._watch_variable(variable)
        if id(variable) in self._ids and is_float(value):
            self._records.append(Record(None, {}, (variable,), (value,), _identity_backward))
            self._ids[key(value)] = value

    def watch(self, tensor: Any) -> None:
        """Ensures ``tensor`` (a tensor, variable, or nested structure of them) is traced."""
        for t in nest.flatten(tensor):
            if isinstance(t, Variable):
                self._watch_variable(t)
            elif isinstance(t, Tensor):
                if not is_float(t):
                    _warn_int_watch(t)
                self._ids[key(t)] = t
            else:
                raise ValueError(f"Passed in object {t!r} of type '{type(t).__name__}', not "
                                 f"tf.Tensor or tf.Variable. Convert it first with "
                                 f"tf.constant(...) (or use a tf.Variable).")

    def _watch_variable(self, v: Any) -> None:
        if id(v) not in self._variables:
            self._variables[id(v)] = v
            self._ids[id(v)] = v

    def watched_variables(self) -> tuple:
        """The variables this tape watched, in creation order."""
        return tuple(sorted(self._variables.values(), key=lambda v: v._uid))

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops run inside this block are not recorded by this tape.

        >>> import stagecraft as tf
        >>> x = tf.constant(2.0)
        >>> with tf.GradientTape() as t:
        ...     t.watch(x)
        ...     with t.stop_recording():
        ...         y = x * x
        >>> print(t.gradient(y, x))
        None
        """
        if not self._recording:
            raise RuntimeError("Cannot stop recording a tape which is not recording. Use "
                               "stop_recording() inside the tape's `with` block.")
        self._pop()
        try:
            yield
        finally:
            self._push()

    def reset(self) -> None:
        """Forgets everything recorded and watched so far (only inside the `with` block)."""
        if not self._recording:
            raise ValueError("Tape is not recording: reset() is only valid inside the tape's "
                             "`with` block.")
        self._records.clear()
        self._ids.clear()
        self._variables.clear()

    # ---------------------------------------------------------------------- gradients
    def _begin_backward(self, what: str) -> None:
        if self._released:
            raise RuntimeError(f"A non-persistent GradientTape can only be used to compute one "
                               f"set of gradients (or jacobians); {what}() was called again. "
                               f"Create the tape with GradientTape(persistent=True) to call it "
                               f"several times.")
        if self._recording:
            if not self._persistent:
                self._pop()  # stop recording: later ops in the block are not recorded
            elif not self._warned_persistent:
                self._warned_persistent = True
                logger.warning("Calling GradientTape.%s on a persistent tape inside its "
                               "context is significantly less efficient than calling it "
                               "outside the context (it causes the gradient ops to be "
                               "recorded on the tape, leading to increased CPU and memory "
                               "usage). Only call it inside the context if you actually want "
                               "to trace the gradient in order to compute higher order "
                               "derivatives.", what)

    def _end_backward(self) -> None:
        if not self._persistent:
            self._released = True
            self._records = []
            self._ids = {}

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = UnconnectedGradients.NONE) -> Any:
        """d sum(target) / d sources, in the nested structure of ``sources``.

        Multiple targets are summed; ``output_gradients`` gives one seed per flattened target
        (None = ones); sources the target does not depend on give None (or zeros with
        ``unconnected_gradients='zero'``).
        """
        mode = _unconnected(unconnected_gradients)
        self._begin_backward("gradient")
        flat_sources = nest.flatten(sources)
        targets = nest.flatten(target)
        seeds = [None] * len(targets) if output_gradients is None else \
            nest.flatten(output_gradients)
        if len(seeds) != len(targets):
            raise ValueError(f"output_gradients has {len(seeds)} entries but there are "
                             f"{len(targets)} targets; give one per target (None for ones).")
        try:
            grads = self._backward(targets, seeds, flat_sources)
        finally:
            self._end_backward()
        return nest.pack_sequence_as(sources, _fill_unconnected(grads, flat_sources, mode))

    def _backward(self, targets: list, seeds: list, sources: list) -> list:
        grads: dict[int, Tensor] = {}
        for t, s in zip(targets, seeds):
            if not hasattr(t, "dtype") or not is_float(t):
                continue
            if s is None:
                s = _seed(t)
            else:
                s = cast(convert_to_tensor(s), t.dtype)
            k = key(t)
            grads[k] = add(grads[k], s) if k in grads else s
        for rec in reversed(self._records[:]):
            gouts = [grads.get(key(o)) for o in rec.outputs]
            if all(g is None for g in gouts):
                continue
            if len(gouts) > 1 and not getattr(rec.backward, "takes_none", False):
                gouts = [zeros_like(o) if g is None else g for g, o in zip(gouts, rec.outputs)]
            for x, gx in zip(rec.inputs, rec.vjp(gouts)):
                if gx is None or not is_float(x):
                    continue
                k = key(x)
                grads[k] = add(grads[k], gx) if k in grads else gx
        return [grads.get(key(s)) if is_float(s) else None for s in sources]

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: Any =
                 UnconnectedGradients.NONE, parallel_iterations: Any = None,
                 experimental_use_pfor: bool = True) -> Any:
        """The full Jacobian: for each source, shape ``target.shape + source.shape``.

        >>> import stagecraft as tf
        >>> x = tf.constant([1., 2.])
        >>> with tf.GradientTape() as t:
        ...     t.watch(x)
        ...     y = x * x
        >>> t.jacobian(y, x).numpy().tolist()
        [[2.0, 0.0], [0.0, 4.0]]
        """
        mode = _unconnected(unconnected_gradients)
        if not experimental_use_pfor and not self._persistent and not self._released:
            raise RuntimeError("GradientTape must be created with persistent=True to compute "
                               "the jacobian with experimental_use_pfor=False.")
        self._begin_backward("jacobian")
        flat_sources = nest.flatten(sources)
        try:
            columns = self._columns(target, flat_sources, False, experimental_use_pfor)
        finally:
            self._end_backward()
        return nest.pack_sequence_as(sources, self._assemble(columns, target, flat_sources,
                                                             mode, batch=False))

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: Any =
                       UnconnectedGradients.NONE, parallel_iterations: Any = None,
                       experimental_use_pfor: bool = True) -> Any:
        """Per-example Jacobians: target [b, y...] and source [b, x...] give [b, y..., x...]."""
        mode = _unconnected(unconnected_gradients)
        ts, ss = target.shape, source.shape
        if ts.rank is None or ts.rank < 2 or ss.rank is None or ss.rank < 2:
            raise ValueError(f"batch_jacobian: target and source must have rank at least 2, got "
                             f"shapes {ts} and {ss}. Add a batch dimension with "
                             f"tf.expand_dims(x, 0), or use jacobian().")
        if ts[0] != ss[0]:
            raise ValueError(f"Need first dimension of target shape {ts} and source shape {ss} "
                             f"to match (it is the batch dimension).")
        self._begin_backward("batch_jacobian")
        try:
            columns = self._columns(target, [source], True, experimental_use_pfor)
        finally:
            self._end_backward()
        return self._assemble(columns, target, [source], mode, batch=True)[0]

    def _columns(self, target: Tensor, sources: list, batch: bool, pfor: bool) -> list:
        """For each source, the gradients of every target element (one per seed row of the
        identity; with ``batch`` the same row for every example) stacked along a new first
        axis, or None where no gradient flows. With ``pfor`` the backward pass is traced once
        and vectorized over the seeds (``tf.vectorized_map``, as TensorFlow's pfor); otherwise
        it runs once per seed."""
        shape = target.shape.as_list()
        n = int(np.prod(shape[1:] if batch else shape))
        eye = np.eye(n, dtype=target.dtype.np)
        seeds = (np.broadcast_to(eye[:, None], (n, shape[0], n)) if batch else eye)
        seeds = seeds.reshape((n, *shape))
        if n and pfor and VECTORIZE:
            return list(VECTORIZE[0](lambda seed: self._backward([target], [seed], sources),
                                     wrap(np.ascontiguousarray(seeds)), warn=False))
        rows = [self._backward([target], [wrap(seed)], sources) for seed in seeds]
        return [None if not rows or all(r[j] is None for r in rows) else
                stack([zeros(s.shape.as_list(), s.dtype) if r[j] is None else r[j]
                       for r in rows]) for j, s in enumerate(sources)]

    @staticmethod
    def _assemble(columns: list, target: Tensor, sources: list, mode: UnconnectedGradients,
                  batch: bool) -> list:
        out = []
        tshape = target.shape.as_list()
        for column, s in zip(columns, sources):
            sshape = s.shape.as_list()
            full = tshape + (sshape[1:] if batch else sshape)
            if column is None:
                out.append(zeros(full, s.dtype) if mode is UnconnectedGradients.ZERO or batch
                           else None)
                continue
            if batch:   # [rows, b, ...] -> [b, rows, ...]
                column = transpose(column, [1, 0] + list(range(2, len(sshape) + 1)))
            out.append(reshape(column, full))
        return out


def _identity_backward(gouts: list) -> tuple:
    return (gouts[0],)


def _unconnected(value: Any) -> UnconnectedGradients:
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients)
                                    else value)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}. Use "
                         f"UnconnectedGradients.NONE ('none') or UnconnectedGradients.ZERO "
                         f"('zero').") from None


def _seed(t: Any) -> Tensor:
    """Ones like target ``t``, which no tape records: on the host for a host value, made
    where ``t`` lives for one off the host (a GPU loss's seed is a fill on the GPU: an upload
    in every backward pass made the host wait for the whole forward pass), symbolic while
    tracing."""
    if t._value is None:
        return ones_like(t)
    if device_of(t) == CPU_DEVICE:
        return wrap(np.ones(t.shape.as_list(), t.dtype.np))
    token = STATE.set(STATE.get().replace(tapes=()))
    try:
        return ones_like(t)
    finally:
        STATE.reset(token)


def _fill_unconnected(grads: list, sources: list, mode: UnconnectedGradients) -> list:
    if mode is UnconnectedGradients.NONE:
        return grads
    return [zeros(s.shape.as_list(), s.dtype) if g is None and is_float(s) else g
            for g, s in zip(grads, sources)]


def _warn_int_watch(t: Tensor) -> None:
    global _int_watch_warnings
    if _int_watch_warnings < 5:
        _int_watch_warnings += 1
        logger.warning("The dtype of the watched tensor must be floating (e.g. tf.float32), "
                       "got %r; its gradients will be None.", t.dtype)
