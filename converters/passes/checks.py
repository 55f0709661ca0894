"""The front-door check: constructs AutoGraph cannot convert are rejected by name, with the
user's file:line, before any rewriting."""
from __future__ import annotations

import gast

from stagecraft.converters.context import RUNTIME, Context
from stagecraft.ir.errors import ConversionError


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Raises ConversionError for generators, async code and reserved names."""
    for sub in gast.walk(node):
        what = None
        if isinstance(sub, (gast.Yield, gast.YieldFrom)):
            what = "a generator (yield)"
        elif isinstance(sub, (gast.Await, gast.AsyncFor, gast.AsyncWith, gast.AsyncFunctionDef)):
            what = "async code"
        elif isinstance(sub, gast.Name) and sub.id.startswith(RUNTIME):
            what = f"the reserved name '{sub.id}'"
        if what is not None:
            raise ConversionError(
                f"{ctx.loc(sub)}: cannot convert '{ctx.function_name}': it contains {what}, "
                f"which @function cannot stage. Move it out of the function, or use "
                f"tf.function(autograph=False) if no tensor-dependent control flow is needed.")
    return node
