"""Canonical text of a generated function: local names renumbered in order of appearance, so
that two loop nests (CPU) or kernels (CUDA) that differ only in their names compare equal and
are emitted once."""
from __future__ import annotations

import keyword
import re

# Names that keep their meaning inside a kernel: modules, builtins, and the error it raises.
GLOBALS = frozenset(("np", "K", "rt", "numba", "range", "min", "max", "abs", "int", "float",
                     "bool", "len", "ValueError", "IndexError", "True", "False", "None",
                     "complex", "cmath"))

_STRING = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""")
_NAME = re.compile(r"(?<![\w.])([A-Za-z_]\w*)")
# Other kernels of the module, called by name; local names never start with "_" (Namer).
_KERNEL = re.compile(r"_(fused|repeated)_\d+")


def canonical(lines: list[str]) -> str:
    """``lines`` with every local name renamed ``v0, v1, ...`` by first appearance (string
    literals, attributes, keywords and :data:`GLOBALS` untouched).

    >>> print(canonical(["def f(x, y):", "    z = np.float32(x + y)", "    return (z,)"]))
    def v0(v1, v2):
        v3 = np.float32(v1 + v2)
        return (v3,)
    """
    names: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        word = m.group(1)
        if word in GLOBALS or keyword.iskeyword(word) or _KERNEL.fullmatch(word):
            return word
        return names.setdefault(word, f"v{len(names)}")

    out = []
    for line in lines:
        parts, pos = [], 0
        for s in _STRING.finditer(line):
            parts.append(_NAME.sub(rename, line[pos:s.start()]))
            parts.append(s.group(0))
            pos = s.end()
        parts.append(_NAME.sub(rename, line[pos:]))
        out.append("".join(parts))
    return "\n".join(out)
