"""stagecraft's language: dtypes, tensor types and shapes, the op table (and, with staging,
the graph IR). It imports nothing from the frontend, the converters or the backends."""
from stagecraft.ir import dtypes
from stagecraft.ir.ops import OPS, Example, Kind, OpDef
from stagecraft.ir.shapes import TensorShape
from stagecraft.ir.types import TensorType

__all__ = ["dtypes", "OPS", "OpDef", "Kind", "Example", "TensorShape", "TensorType"]
