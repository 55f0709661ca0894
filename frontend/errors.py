"""``stagecraft.errors``: the exception classes (defined in ``stagecraft.ir.errors`` so every
layer can raise them)."""
from stagecraft.ir.errors import (ConversionError, DataLossError, DeadlineExceededError,
                                  FailedPreconditionError, InaccessibleTensorError,
                                  InternalError, InvalidArgumentError, NotFoundError, OpError,
                                  OperatorNotAllowedInGraphError, OpTypeError, OutOfRangeError,
                                  StagingError, UnavailableError, UnimplementedError)

__all__ = ["ConversionError", "DataLossError", "DeadlineExceededError", "FailedPreconditionError",
           "InaccessibleTensorError", "InternalError", "InvalidArgumentError", "NotFoundError", "OpError",
           "OperatorNotAllowedInGraphError", "OpTypeError", "OutOfRangeError", "StagingError",
           "UnavailableError", "UnimplementedError"]
