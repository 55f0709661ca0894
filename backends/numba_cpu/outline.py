"""Fused loop nests as separate, deduplicated njit functions ("kernels") of the module.

Numba's compile time is dominated by loops: every loop nest costs tens of milliseconds of
typing, lowering and LLVM optimization, and an unrolled Python loop (L2HMC's ten leapfrog
steps) repeats the same nests dozens of times.  So each fused elementwise group is emitted as
its own function whose text is made canonical (local names renumbered in order of appearance);
identical groups then share one function, compiled once, and the graph function only calls it.
"""
from __future__ import annotations

from stagecraft.backends.codegen.canonical import canonical

INLINE_BELOW = 2  # call sites: see Kernels.used_once
DECORATOR = ('@numba.njit(cache=True, error_model="numpy", nogil=True, no_cpython_wrapper=True, '
             'no_cfunc_wrapper=True)')


class Kernels:
    """The kernels of one generated module, deduplicated by their canonical text."""

    def __init__(self) -> None:
        self.by_text: dict[str, str] = {}   # canonical text (name-free) -> kernel name
        self.sources: list[str] = []
        self.uses: dict[str, int] = {}      # canonical text -> call sites

    @staticmethod
    def _lines(params: list[str], body: list[str], results: list[str]) -> list[str]:
        # One result is returned bare: a returned tuple costs Numba about twice the compile
        # time per call site.
        ret = results[0] if len(results) == 1 else \
            "(" + "".join(r + ", " for r in results).rstrip(" ") + ")"
        return ["def kernel(" + ", ".join(params) + "):", *body, "    return " + ret]

    def text(self, params: list[str], body: list[str], results: list[str]) -> str:
        """The canonical text identifying a kernel."""
        return canonical(self._lines(params, body, results))

    def used_once(self) -> frozenset:
        """The canonical texts of the kernels worth inlining: those called from one place. A
        kernel is compiled once and called through its symbol (``numba_links``), so two copies
        of a loop nest already cost more than a function (the L2HMC step's first call: 4.7 s
        with this threshold at 2, 4.9 s at 5)."""
        return frozenset(t for t, n in self.uses.items() if n < INLINE_BELOW)

    def add(self, params: list[str], body: list[str], results: list[str],
            prefix: str = "fused") -> str:
        """The name of the kernel ``def _(params): body; return results`` (one per text)."""
        text = self.text(params, body, results)
        self.uses[text] = self.uses.get(text, 0) + 1
        name = self.by_text.get(text)
        if name is None:
            name = self.by_text[text] = f"_{prefix}_{len(self.by_text)}"
            # v0 is the function's own name: the first name renamed.
            self.sources.append(DECORATOR + "\n" + text.replace("def v0(", f"def {name}(", 1))
        return name

    def source(self) -> str:
        return "".join(s + "\n\n\n" for s in self.sources)
