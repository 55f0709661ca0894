"""What the last trace did with each converted control-flow statement: ran it as Python or
staged it, and which variables it carried (``show_converted(f, trace=True)`` prints it).

``if_stmt``/``while_stmt``/``for_stmt`` call ``record`` when they decide; a ``recording()``
block (``stagecraft.function`` opens one per trace) collects those decisions. Each statement's
latest entry is also kept process-wide (``latest``), so a plain converted function, run eagerly
or called from a traced function, has a report too.

    >>> with recording() as rec:
    ...     record("if", "f.py:2", "staged", ("y",))
    ...     record("while", "f.py:4", "python", ("i",))
    ...     record("while", "f.py:4", "python", ("i",))
    >>> for e in rec.entries():
    ...     print(e.describe())
    f.py:2  if     staged  carries: y
    f.py:4  while  python  carries: i
    >>> rec.get("f.py:4").count  # decided twice (e.g. inside a Python loop)
    2
"""
from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterator, Sequence

PYTHON, STAGED = "python", "staged"


@dataclass
class Entry:
    """The decisions one statement (``loc``, 'file:line') got during one trace."""

    kind: str                    # 'if', 'while' or 'for'
    loc: str
    modes: list[str] = field(default_factory=list)   # 'python'/'staged', first seen first
    names: tuple[str, ...] = ()  # the variables it carries
    count: int = 0               # how many times it was decided: once per iteration of an
                                 # enclosing Python loop, once per tracing of an enclosing
                                 # staged body (which may be traced more than once)

    @property
    def mode(self) -> str:
        """'python', 'staged', or 'python+staged' when the trace decided both ways."""
        return "+".join(self.modes)

    def describe(self) -> str:
        """One line: ``file:line  kind  mode  carries: names``.

        >>> Entry("for", "f.py:3", ["staged"], ("i", "s"), 1).describe()
        'f.py:3  for    staged  carries: i, s'
        """
        carried = ", ".join(self.names) if self.names else "nothing"
        return f"{self.loc}  {self.kind:5s}  {self.mode}  carries: {carried}"


class Report:
    """The decisions of one trace, one ``Entry`` per statement in first-decided order."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}

    def add(self, kind: str, loc: str, mode: str, names: Sequence[str]) -> None:
        entry = self._entries.get(loc)
        if entry is None:
            entry = self._entries[loc] = Entry(kind, loc)
        if mode not in entry.modes:
            entry.modes.append(mode)
        entry.names = tuple(names)
        entry.count += 1

    def entries(self) -> list[Entry]:
        """Every statement decided in the trace, first decided first."""
        return list(self._entries.values())

    def get(self, loc: str) -> Entry | None:
        """The entry of the statement at ``loc``, or None when the trace never reached it."""
        return self._entries.get(loc)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<trace report: {len(self._entries)} statement(s)>"


_current: contextvars.ContextVar[Report | None] = contextvars.ContextVar(
    "stagecraft_trace_report", default=None)

_LATEST_LIMIT = 4096  # statements remembered from runs outside any recording
_latest: "OrderedDict[str, Entry]" = OrderedDict()
_latest_lock = threading.Lock()


def record(kind: str, loc: str, mode: str, names: Sequence[str]) -> None:
    """Notes that the statement at ``loc`` ran as ``mode`` ('python' or 'staged') carrying
    ``names``, in the current recording (or, outside one, as that statement's latest run)."""
    report = _current.get()
    if report is not None:
        report.add(kind, loc, mode, names)
        return
    with _latest_lock:
        _remember(Entry(kind, loc, [mode], tuple(names), 1))


def _remember(entry: Entry) -> None:
    _latest[entry.loc] = entry
    _latest.move_to_end(entry.loc)
    while len(_latest) > _LATEST_LIMIT:
        _latest.popitem(last=False)


@contextlib.contextmanager
def recording() -> Iterator[Report]:
    """Collects the decisions made inside the block (a nested block collects its own).

    >>> with recording() as outer:
    ...     with recording() as inner:
    ...         record("if", "g.py:1", "python", ())
    ...     record("if", "f.py:1", "python", ())
    >>> [e.loc for e in outer.entries()], [e.loc for e in inner.entries()]
    (['f.py:1'], ['g.py:1'])
    """
    report = Report()
    token = _current.set(report)
    try:
        yield report
    finally:
        _current.reset(token)
        with _latest_lock:
            for entry in report.entries():
                _remember(entry)


def latest(loc: str) -> Entry | None:
    """What the statement at ``loc`` did the last time it ran anywhere (in the last trace that
    reached it, or its last eager run), or None."""
    with _latest_lock:
        return _latest.get(loc)
