"""The runtime that converted code calls as ``sc__.*``: each operator runs plain Python for
Python values and eager tensors, and stages graph control flow for symbolic tensors."""
from stagecraft.converters.operators.builtins import abs_, float_, int_, len_, print_, range_
from stagecraft.converters.operators.calls import converted_call
from stagecraft.converters.operators.composites import ldu, set_attr, set_item
from stagecraft.converters.operators.control_flow import for_stmt, if_stmt, while_stmt
from stagecraft.converters.operators.exceptions import assert_stmt
from stagecraft.converters.operators.logical import and_, compare_chain, if_exp, not_, or_
from stagecraft.converters.operators.variables import (Undefined, UndefinedReturnValue,
                                                       is_undefined, retval)

__all__ = ["abs_", "float_", "int_", "len_", "print_", "range_", "assert_stmt",
           "converted_call", "ldu", "set_attr", "set_item", "for_stmt", "if_stmt", "while_stmt",
           "and_", "compare_chain", "if_exp", "not_", "or_", "Undefined", "UndefinedReturnValue",
           "is_undefined", "retval"]
