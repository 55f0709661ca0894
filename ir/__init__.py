"""stagecraft's language: dtypes, tensor types and shapes, the op table (and, with staging,
the graph IR: ``parse`` reads its text, ``verify`` checks its invariants). It imports nothing
from the frontend, the converters or the backends."""
from stagecraft.ir import dtypes
from stagecraft.ir.ops import OPS, Example, Kind, OpDef
from stagecraft.ir.shapes import TensorShape
from stagecraft.ir.types import TensorType
from stagecraft.ir import printer as _printer  # noqa: F401 (installs Graph.__str__)
from stagecraft.ir.parser import parse
from stagecraft.ir.verify import verify  # shadows the module name; import the module by path

__all__ = ["dtypes", "OPS", "OpDef", "Kind", "Example", "TensorShape", "TensorType", "parse",
           "verify"]
