"""Exception classes shared by every layer (TensorFlow's names where TensorFlow has them).

They live in ``stagecraft.ir`` (the bottom layer) so that ``ir``, ``backends``, ``converters``
and the frontend can all raise them without import cycles; users reach them as
``stagecraft.errors``.
"""
from __future__ import annotations


class OpError(Exception):
    """Base of the runtime errors TensorFlow raises as ``tf.errors.OpError``."""

    def __init__(self, message: str, node_def=None, op=None, error_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.node_def = node_def
        self.op = op
        self.error_code = error_code


class InvalidArgumentError(OpError, ValueError):
    """An op received an argument of the wrong dtype, shape or value.

    Also a ``ValueError`` so that code written against NumPy-style errors still catches it.
    """


def kernel_failed(op: str, error: Exception, loc: str) -> InvalidArgumentError:
    """The error of a kernel of ``op`` that raised ``error`` at ``loc``, naming the op once
    (kernels' messages may start with it already). A variant of a public op keeps the public
    name its kernel gives (``reshape_dynamic``'s ``reshape: ...``, what the user called).

    >>> str(kernel_failed("gather", IndexError("gather: index 5 is out of range"), "f.py:3"))
    'gather: index 5 is out of range\\n  at f.py:3'
    >>> str(kernel_failed("reshape_dynamic", ValueError("reshape: 5 values, not 4"), "f.py:4"))
    'reshape: 5 values, not 4\\n  at f.py:4'
    """
    text = str(error)
    head = text.split(":", 1)[0]
    if not (head == op or head.isidentifier() and op.startswith(head + "_")):
        text = f"{op}: {text}"
    return InvalidArgumentError(f"{text}\n  at {loc}")


class NotFoundError(OpError):
    """A file, checkpoint or kernel that was asked for does not exist."""


class UnavailableError(OpError):
    """A device or remote worker cannot be reached."""


class DeadlineExceededError(OpError):
    """An operation did not finish within its time limit (e.g. a call to a remote worker)."""


class FailedPreconditionError(OpError):
    """The system is not in a state in which the operation can run (e.g. uninitialized)."""


class OutOfRangeError(OpError):
    """An index or iteration went past the end of its range."""


class UnimplementedError(OpError):
    """The operation is valid but not supported for these arguments."""


class DataLossError(OpError):
    """A file is truncated, corrupted, of another format or of a newer version (TensorFlow
    raises ``tf.errors.DataLossError`` for unreadable checkpoints). The first line of the
    message names the file and what is wrong."""


class InternalError(OpError):
    """An invariant of stagecraft itself was broken: please report it."""


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation (``bool()``, iteration) was applied to a symbolic tensor."""


class InaccessibleTensorError(ValueError):
    """A symbolic tensor was used outside the graph that produced it."""


class ConversionError(Exception):
    """AutoGraph could not convert a function (stagecraft-only)."""


class StagingError(Exception):
    """A Python function could not be traced into a graph function (stagecraft-only)."""


class OpTypeError(TypeError):
    """Shape or dtype inference rejected an op's inputs at trace time (stagecraft-only)."""


class VerificationError(InternalError):
    """``ir.verify`` found a graph that breaks an IR invariant (stagecraft-only). The message's
    first line says what is wrong; the printed IR around the equation follows."""


class IRParseError(ValueError):
    """``ir.parse`` could not read IR text (stagecraft-only); the message names the line."""
