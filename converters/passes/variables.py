"""``del x`` → ``x = sc__.Undefined('x')`` (as AutoGraph's variables converter does): the
carried state of converted control flow reads locals through closures, and a deleted local
would leave an empty cell that reads as ``NameError: cannot access free variable``. Reading
the name afterwards still raises ``UnboundLocalError``. Items and attributes are deleted as
before; names declared ``global`` are deleted for real.

    >>> import gast, astunparse
    >>> from stagecraft.converters.context import Context, Namer
    >>> tree = gast.parse("def f(x, d):\\n    del x, d['k']").body[0]
    >>> out = convert(tree, Context("f.py", "f", Namer(set())))
    >>> print(astunparse.unparse(gast.gast_to_ast(out)).strip())
    def f(x, d):
        x = sc__.Undefined('x')
        del d['k']
"""
from __future__ import annotations

import gast

from stagecraft.converters.analysis.activity import declared
from stagecraft.converters.context import RUNTIME, Context
from stagecraft.converters.templates import copy_location, template


class _Deletes(gast.NodeTransformer):
    def __init__(self, fn: gast.FunctionDef):
        self.globals = declared(fn)[0]

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        return _Deletes(node).generic_visit(node)  # its own global declarations

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Delete(self, node: gast.Delete) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for target in node.targets:
            if isinstance(target, gast.Name) and target.id not in self.globals:
                out += template(f"{target.id} = {RUNTIME}.Undefined({target.id!r})")
            else:
                out.append(gast.Delete(targets=[target]))
        return copy_location(out, node)


def convert(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Replaces the deletion of local names by ``Undefined`` placeholders."""
    return _Deletes(node).generic_visit(node)
