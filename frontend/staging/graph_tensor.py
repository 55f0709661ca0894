"""``GraphTensor``: the symbolic tensors a trace works with (a value of the graph being built)."""
from __future__ import annotations

from typing import Any

from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import OperatorNotAllowedInGraphError
from stagecraft.ir.graph import Value
from stagecraft.ir.shapes import TensorShape
from stagecraft.eager.tensor import Tensor


class GraphTensor(Tensor):
    """A tensor of a graph under construction: it has a dtype and a static shape (with unknown
    dimensions as None) but no value; ops on it add equations to its graph.

    It cannot be used as a Python bool, iterated, or converted to NumPy: those need a value,
    which only exists when the graph runs. Inside ``@function`` use ``tf.cond``/``tf.while_loop``
    (or let AutoGraph convert ``if``/``while``) instead.
    """

    __slots__ = ("_node", "_graph")

    @property
    def dtype(self) -> _dt.DType:
        return self._node.type.dtype

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._node.type.shape)

    @property
    def ndim(self) -> int:
        rank = self._node.type.rank
        if rank is None:
            raise ValueError("The rank of this symbolic tensor is unknown.")
        return rank

    @property
    def name(self) -> str:
        return f"{self._node.hint or 'tensor'}:0"

    @property
    def graph(self) -> Any:
        return self._graph

    def numpy(self) -> Any:
        raise AttributeError(
            "A symbolic tensor (inside @function) has no value yet, so it has no .numpy(). "
            "Return it from the function and call .numpy() on the result, or use "
            "tf.print / tf.py_function to look at it while the function runs.")

    def __bool__(self) -> bool:
        raise OperatorNotAllowedInGraphError(
            "Using a symbolic `tf.Tensor` as a Python `bool` is not allowed inside @function: "
            "its value is not known while tracing. Use tf.cond / tf.where (or keep AutoGraph "
            "enabled so `if` on tensors is converted).")

    def __iter__(self):
        raise OperatorNotAllowedInGraphError(
            "Iterating over a symbolic tf.Tensor is not allowed inside @function: its length is "
            "not known to Python while tracing. Use tf.range / tf.while_loop, or tf.unstack for a "
            "statically known first dimension.")

    def __len__(self) -> int:
        raise TypeError("len is not well defined for a symbolic Tensor inside @function; use "
                        "tf.shape(x)[0] (a tensor) or x.shape[0] (static, may be None).")

    def __index__(self) -> int:
        raise TypeError("A symbolic tensor cannot be used as a Python index inside @function; "
                        "index tensors with it instead (x[i]) or use tf.gather.")

    def __int__(self) -> int:
        raise TypeError("int() of a symbolic tensor is not possible inside @function: its value "
                        "is only known when the function runs.")

    def __float__(self) -> float:
        raise TypeError("float() of a symbolic tensor is not possible inside @function: its "
                        "value is only known when the function runs.")

    def __array__(self, dtype: Any = None, copy: Any = None):
        raise TypeError(f"Cannot convert a symbolic tensor ({self.name}) to a NumPy array: it has "
                        f"no value while tracing. Use tf ops on it, or tf.py_function.")

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)

    def __repr__(self) -> str:
        return f"<stagecraft.Tensor '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("Symbolic tensors cannot be pickled.")


_new = object.__new__


def graph_tensor(node: Value, graph: Any) -> GraphTensor:
    t = _new(GraphTensor)
    t._value = None
    t._node = node
    t._graph = graph
    return t
