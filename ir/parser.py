"""``parse``: reads the textual IR (what ``str(graph)`` prints) back into a ``Graph``.

The round trip is exact: ``str(parse(str(g))) == str(g)``. Printed names become value hints
(numbered names stay unnamed), large constants printed as ``digest(...)`` become zero arrays
that keep their digest, and ``python('qualname')`` callables become placeholders
(``ir.placeholders``).
"""
from __future__ import annotations

import ast
import re
from typing import Any

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import IRParseError
from stagecraft.ir.graph import Eqn, Graph, Literal, Value, make_attrs
from stagecraft.ir.placeholders import DigestArray, PythonRef
from stagecraft.ir.types import TensorType

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>[bB]?(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"))
  | (?P<value>%[A-Za-z0-9_.]+)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<arrow>->)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<comment>\#.*)
  | (?P<punct>[-\[\](){},=:@*?])
""", re.VERBOSE)

_REGION_HEADER = re.compile(r"^([A-Za-z_]\w*)\((.*)\) \{$")
_KEYWORDS = {"None": None, "True": True, "False": False, "nan": float("nan"),
             "inf": float("inf"), "np.True_": np.True_, "np.False_": np.False_}


def parse(text: str) -> Graph:
    """The graph that ``text`` (the printed IR of one graph) describes.

    >>> g = parse('''
    ... graph @f(%x: f32[?], %v: ref f32[2]) -> (f32[2]) {
    ...   %0: f32[2] = read %v
    ...   %1: f32[2] = multiply %0, 2.0:f32
    ...   return %1
    ... }''')
    >>> [str(p.type) for p in g.params], g.eqns[1].op, g.eqns[1].inputs[1].value
    (['f32[?]', 'f32[2]'], 'multiply', 2.0)
    >>> str(parse(str(g))) == str(g)
    True
    """
    return _Parser(text).parse()


class _Line:
    """The tokens of one line, consumed left to right."""

    def __init__(self, text: str, number: int):
        self.text, self.number = text, number
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise self.error(f"unexpected character {text[pos]!r} at column {pos + 1}")
            if m.lastgroup != "ws":
                self.tokens.append((m.lastgroup, m.group(), pos))
            pos = m.end()
        self.i = 0

    def error(self, message: str) -> IRParseError:
        return IRParseError(f"line {self.number}: {message}\n  {self.text.strip()}")

    def peek(self, offset: int = 0) -> tuple[str, str]:
        j = self.i + offset
        if j < len(self.tokens):
            kind, text, _ = self.tokens[j]
            return kind, text
        return "end", ""

    def next(self) -> tuple[str, str]:
        tok = self.peek()
        if tok[0] == "end":
            raise self.error("unexpected end of line")
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        kind, got = self.next()
        if got != text:
            raise self.error(f"expected {text!r}, found {got!r}")

    def accept(self, text: str) -> bool:
        if self.peek()[1] == text and self.peek()[0] in ("punct", "arrow", "ident"):
            self.i += 1
            return True
        return False

    def at_end(self) -> bool:
        return self.peek()[0] in ("end", "comment")

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error(f"unexpected {self.peek()[1]!r}")

    # ------------------------------------------------------------------ pieces
    def dtype(self) -> dt.DType:
        kind, text = self.next()
        try:
            return dt.as_dtype(text)
        except TypeError:
            raise self.error(f"unknown dtype {text!r}") from None

    def type(self) -> tuple[TensorType, bool]:
        ref = False
        if self.peek() == ("ident", "ref"):
            self.i += 1
            ref = True
        dtype = self.dtype()
        self.expect("[")
        if self.accept("*"):
            self.expect("]")
            return TensorType(dtype, None), ref
        dims: list = []
        while not self.accept("]"):
            if dims:
                self.expect(",")
            kind, text = self.next()
            if text == "?":
                dims.append(None)
            elif kind == "number" and text.isdigit():
                dims.append(int(text))
            else:
                raise self.error(f"expected a dimension (an int or ?), found {text!r}")
        return TensorType(dtype, tuple(dims)), ref

    def value(self) -> Any:
        """A Python-literal attribute value (or a literal operand's value)."""
        kind, text = self.next()
        if kind == "string":
            return ast.literal_eval(text)
        if kind == "number":
            return int(text) if text.isdigit() else float(text)
        if text == "-":
            v = self.value()
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.error(f"'-' must precede a number, found {v!r}")
            return -v
        if text == "(":
            items, trailing = self._sequence(")")
            return tuple(items) if trailing or len(items) != 1 else items[0]
        if text == "[":
            return self._sequence("]")[0]
        if text == "{":
            return self._dict()
        if kind != "ident":
            raise self.error(f"expected a value, found {text!r}")
        if text in _KEYWORDS:
            return _KEYWORDS[text]
        if text == "complex":  # complex(real, imag), as the printer writes complex literals
            self.expect("(")
            parts = self._sequence(")")[0]
            if len(parts) != 2 or not all(isinstance(p, (int, float)) and
                                          not isinstance(p, bool) for p in parts):
                raise self.error(f"complex(...) takes two real numbers, found {parts!r}")
            return complex(*parts)
        if text == "array":
            self.expect("(")
            data = self.value()
            self.expect(",")
            dtype = self.dtype()
            self.expect(")")
            return np.array(data, dtype=dtype.np)
        if text == "digest":
            self.expect("(")
            digest = self.value()
            self.expect(",")
            dtype = self.dtype()
            self.expect(",")
            shape = self.value()
            self.expect(")")
            return DigestArray(digest, dtype.np, tuple(shape))
        if text == "python":
            self.expect("(")
            qualname = self.value()
            self.expect(")")
            return PythonRef(qualname)
        if text.startswith("np.") and self.peek()[1] == "(":
            ctor = getattr(np, text[3:], None)
            if not (isinstance(ctor, type) and issubclass(ctor, np.generic)):
                raise self.error(f"unknown NumPy scalar type {text!r}")
            self.expect("(")
            v = self.value()
            self.expect(")")
            return ctor(v)
        try:
            return dt.as_dtype(text)
        except TypeError:
            raise self.error(f"unknown name {text!r} in a value") from None

    def _sequence(self, close: str) -> tuple[list, bool]:
        items: list = []
        trailing = False
        while not self.accept(close):
            if items:
                self.expect(",")
                if self.accept(close):
                    trailing = True
                    break
            items.append(self.value())
        return items, trailing

    def _dict(self) -> dict:
        out: dict = {}
        while not self.accept("}"):
            if out:
                self.expect(",")
            k = self.value()
            self.expect(":")
            out[k] = self.value()
        return out


class _Parser:
    def __init__(self, text: str):
        self.lines = [(n + 1, s) for n, s in enumerate(text.split("\n")) if s.strip()]
        self.pos = 0
        self.values: dict[str, Value] = {}

    def _line(self) -> _Line:
        if self.pos >= len(self.lines):
            n = self.lines[-1][0] if self.lines else 0
            raise IRParseError(f"line {n}: unexpected end of text (a block is not closed)")
        number, text = self.lines[self.pos]
        self.pos += 1
        return _Line(text, number)

    def parse(self) -> Graph:
        if not self.lines:
            raise IRParseError("line 1: empty text; expected 'graph @name(...) -> (...) {'")
        number, text = self.lines[self.pos]
        self.pos += 1
        stripped = text.strip()
        arrow = stripped.rfind(") -> (")
        if not stripped.startswith("graph @") or not stripped.endswith(") {") or arrow < 0:
            raise IRParseError(f"line {number}: expected 'graph @name(params) -> (types) {{'"
                               f"\n  {stripped}")
        left = stripped[len("graph @"):arrow]
        open_paren = left.rfind("(")
        if open_paren < 0:
            raise IRParseError(f"line {number}: expected '(' after the graph name\n  {stripped}")
        name = left[:open_paren]
        params = self._params(_Line(left[open_paren + 1:], number))
        out_line = _Line(stripped[arrow + len(") -> ("):-len(") {")], number)
        out_types = self._types(out_line)
        eqns, results = self._body("return")
        closing = self._line()
        if closing.text.strip() != "}":
            raise closing.error("expected '}' closing the graph")
        if self.pos != len(self.lines):
            raise _Line(*reversed(self.lines[self.pos])).error("text after the graph's '}'")
        graph = Graph(name, tuple(params), tuple(eqns), tuple(results))
        if [str(t) for t in out_types] != [str(r.type) for r in results]:
            raise IRParseError(f"line {number}: the header's result types "
                               f"({', '.join(map(str, out_types))}) differ from the returned "
                               f"values' ({', '.join(str(r.type) for r in results)})")
        return graph

    # ---------------------------------------------------------------- pieces
    def _define(self, line: _Line, name: str, type: TensorType, ref: bool) -> Value:
        key = name[1:]
        if key in self.values:
            raise line.error(f"{name} is defined twice (names are unique in a printout)")
        v = Value(type, None if key.isdigit() else key, ref)
        self.values[key] = v
        return v

    def _params(self, line: _Line) -> list[Value]:
        params: list[Value] = []
        while not line.at_end():
            if params:
                line.expect(",")
            kind, name = line.next()
            if kind != "value":
                raise line.error(f"expected a parameter name like %x, found {name!r}")
            line.expect(":")
            t, ref = line.type()
            params.append(self._define(line, name, t, ref))
        return params

    def _types(self, line: _Line) -> list[TensorType]:
        out: list[TensorType] = []
        while not line.at_end():
            if out:
                line.expect(",")
            out.append(line.type()[0])
        return out

    def _operands(self, line: _Line) -> list:
        out: list = []
        while not line.at_end():
            if out:
                line.expect(",")
            out.append(self._operand(line))
        return out

    def _operand(self, line: _Line) -> Value | Literal:
        kind, text = line.peek()
        if kind == "value":
            line.next()
            try:
                return self.values[text[1:]]
            except KeyError:
                raise line.error(f"{text} is used but not defined before this line") from None
        if text == "%":
            raise line.error("an undefined operand (%<undefined ...>) cannot be parsed")
        v = line.value()
        line.expect(":")
        return Literal(v, TensorType(line.dtype(), ()))

    def _body(self, terminator: str) -> tuple[list[Eqn], list]:
        """Equations up to the ``return``/``yield`` line, and the operands it names."""
        eqns: list[Eqn] = []
        while True:
            line = self._line()
            kind, text = line.peek()
            if kind == "ident" and text in ("return", "yield"):
                if text != terminator:
                    raise line.error(f"expected {terminator!r} here, found {text!r}")
                line.next()
                results = self._operands(line)
                line.expect_end()
                return eqns, results
            eqns.append(self._eqn(line))

    def _eqn(self, line: _Line) -> Eqn:
        outs: list[tuple[str, TensorType, bool]] = []
        if line.peek()[0] == "value":
            while True:
                _, name = line.next()
                line.expect(":")
                t, ref = line.type()
                outs.append((name, t, ref))
                if not line.accept(","):
                    break
            line.expect("=")
        kind, op = line.next()
        if kind != "ident":
            raise line.error(f"expected an op name, found {op!r}")
        attrs: dict = {}
        if line.accept("["):
            while not line.accept("]"):
                if attrs:
                    line.expect(",")
                kind, key = line.next()
                if kind != "ident":
                    raise line.error(f"expected an attribute name, found {key!r}")
                line.expect("=")
                attrs[key] = line.value()
        inputs = self._operands(line)
        loc = None
        kind, text = line.peek()
        if kind == "comment":
            loc = text[1:].strip()
        # Outputs are defined after the operands are read: an equation cannot use its outputs.
        outputs = [self._define(line, name, t, ref) for name, t, ref in outs]
        if op == "const" and isinstance(attrs.get("value"), np.ndarray) and len(outputs) == 1:
            attrs["value"] = _fit_const(attrs["value"], outputs[0].type)
        regions = []
        while self.pos < len(self.lines):
            m = _REGION_HEADER.match(self.lines[self.pos][1].strip())
            if m is None:
                break
            header = self._line()
            label = m.group(1)
            params = self._params(_Line(m.group(2), header.number))
            body, results = self._body("yield")
            closing = self._line()
            if closing.text.strip() != "}":
                raise closing.error(f"expected '}}' closing region {label!r}")
            name = attrs.get("name") if op == "call" and isinstance(attrs.get("name"), str) \
                else label
            regions.append(Graph(name, tuple(params), tuple(body), tuple(results)))
        return Eqn(op, tuple(inputs), tuple(outputs), make_attrs(attrs), tuple(regions), loc)


def _fit_const(value: np.ndarray, t: TensorType) -> np.ndarray:
    """Empty arrays print as ``array([], ...)``; the output type restores their shape."""
    if value.size == 0 and t.shape is not None and None not in t.shape \
            and int(np.prod(t.shape)) == 0 and value.shape != t.shape:
        return value.reshape(t.shape)
    return value
