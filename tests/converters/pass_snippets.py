"""Helpers for the single-pass before/after tests: parse a def, run one pass, unparse."""
from __future__ import annotations

import textwrap

import astunparse
import gast

from stagecraft.converters.context import Context, Namer


def convert_one(pass_module, source: str) -> gast.FunctionDef:
    """``source`` (one def) after ``pass_module.convert`` alone, with file name 'f.py'."""
    (fn,) = gast.parse(textwrap.dedent(source)).body
    return pass_module.convert(fn, Context("f.py", fn.name, Namer.for_tree(fn)))


def after(pass_module, source: str) -> str:
    return astunparse.unparse(gast.gast_to_ast(convert_one(pass_module, source))).strip()


def expect(text: str) -> str:
    return textwrap.dedent(text).strip()
