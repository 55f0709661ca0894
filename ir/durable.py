"""Crash-safe file writes, shared by checkpoints, SavedModels and the compile cache.

It lives in ``ir``, the bottom layer, because writers in every layer (the frontend's state,
the backends' cache) need it and no layer may import one above it.

The rules every writer here follows:

* a new version is written under a name nobody reads (a temporary or a not-yet-referenced
  file), flushed and fsynced, and made visible by **one** atomic rename (``os.replace``, or
  ``exchange`` for directories), after which the directory is fsynced: a crash at any instant
  leaves the path holding either the old or the new complete version;
* every file or directory a writer creates is ``flock``ed by it until its version is committed,
  so ``sweep`` (run by the next writer of the same path, in any process) deletes the leftovers of
  killed or failed writes and never a file another writer is still using (a killed process's
  locks are released by the kernel).

All syscalls go through ``os`` attributes looked up at call time, so tests can inject faults by
monkeypatching ``os.replace``/``os.fsync``/... (``tests/frontend/test_crash_safe_saves.py``).
"""
from __future__ import annotations

import ctypes
import errno
import logging
import os
import re
import shutil
import sys
import tempfile
from typing import BinaryIO, Callable, Iterator

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; sweeping is then limited to dead temps
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("stagecraft")

__all__ = ["LockedFile", "create_locked", "temp_dir_locked", "write_atomic", "write_synced",
           "fsync_directory", "exchange", "sweep"]


class LockedFile:
    """A file created (exclusively) and ``flock``ed by this writer: ``path``, its open binary
    file object ``fh``. ``close()`` releases the lock; call it after the commit."""

    def __init__(self, path: str, fh: BinaryIO):
        self.path, self.fh = path, fh

    def sync(self) -> None:
        """Flushes and fsyncs the file's contents."""
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        try:
            self.fh.close()
        except OSError:
            pass

    def discard(self) -> None:
        """Removes the file (a failed write) and releases it."""
        try:
            os.remove(self.path)
        except OSError:
            pass
        self.close()


def _lock(fd: int, blocking: bool = True) -> bool:
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        return True
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


def _still_there(path: str, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a sweeper may have removed it
    between its creation and our lock)."""
    try:
        st, fst = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (fst.st_dev, fst.st_ino)


def create_locked(directory: str, names: Iterator[str]) -> LockedFile:
    """Creates the first of ``names`` (base names in ``directory``) that does not exist yet,
    exclusively, and locks it; raises ``FileExistsError`` if ``names`` runs out."""
    for name in names:
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o644)
        except FileExistsError:
            continue
        try:
            _lock(fd)
            if not _still_there(path, fd):  # swept before we held the lock: try another name
                os.close(fd)
                continue
        except BaseException:
            os.close(fd)
            raise
        return LockedFile(path, os.fdopen(fd, "wb"))
    raise FileExistsError(f"could not create a new file in {directory!r}: every candidate name "
                          f"exists")


def temp_names(base: str, kind: str) -> Iterator[str]:
    """Endless fresh temporary names ``.{base}.{kind}.<random>.tmp`` (see ``temp_pattern``)."""
    while True:
        yield f".{base}.{kind}.{os.urandom(6).hex()}.tmp"


def temp_pattern(base: str) -> "re.Pattern[str]":
    """Matches the names of ``temp_names(base, ...)`` and ``temp_dir_locked(..., base)`` (and
    the ``mkstemp`` names earlier versions used), not those of other bases.

    >>> p = temp_pattern("ckpt-1")
    >>> [bool(p.match(n)) for n in (".ckpt-1.index.0a1b2c.tmp", ".ckpt-1.tmp-x_9Q",
    ...                              ".ckpt-12.index.0a1b2c.tmp", "ckpt-1.index")]
    [True, True, False, False]
    """
    return re.compile(re.escape(f".{base}.") + r"[a-z]+[.-][0-9a-zA-Z_]+\.?(tmp)?$")


def temp_dir_locked(parent: str, base: str) -> tuple[str, int]:
    """A fresh, locked temporary directory ``{parent}/.{base}.tmp-<random>``: ``(path, fd)``;
    ``os.close(fd)`` releases it."""
    while True:
        path = tempfile.mkdtemp(prefix=f".{base}.tmp-", dir=parent)
        fd = os.open(path, os.O_RDONLY)
        try:
            _lock(fd)
            if _still_there(path, fd):
                return path, fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def write_atomic(path: str, data: bytes, *, replace: bool = True) -> None:
    """Replaces the file ``path`` with ``data`` in one step (locked temporary file, fsync,
    rename, directory fsync), after sweeping temporaries that killed writes of ``path`` left.

    With ``replace=False`` an existing ``path`` is kept (it is created only if absent, by a
    hard link where the file system has them): for content-addressed files, whose every
    version holds the same bytes, this keeps the winner of a race and its mtime.

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "f"); write_atomic(p, b"one"); write_atomic(p, b"2")
    >>> write_atomic(p, b"3", replace=False)
    >>> open(p, "rb").read(), os.listdir(os.path.dirname(p))
    (b'2', ['f'])
    """
    directory = os.path.dirname(path) or "."
    base = os.path.basename(path)
    tmp = create_locked(directory, temp_names(base, "new"))
    try:
        tmp.fh.write(data)
        tmp.sync()
        if replace:
            os.replace(tmp.path, path)
        else:
            _create_if_absent(tmp.path, path)
    except BaseException:
        tmp.discard()
        raise
    tmp.close()
    fsync_directory(directory)
    sweep(directory, temp_pattern(base))


def _create_if_absent(tmp: str, path: str) -> None:
    try:
        os.link(tmp, path)  # atomic create-if-absent
    except FileExistsError:
        pass
    except OSError:  # file systems without hard links
        os.replace(tmp, path)
        return
    os.remove(tmp)


def write_synced(path: str, data: "bytes | Callable[[BinaryIO], object]") -> None:
    """Writes ``data`` (bytes, or a function writing to the open file, which avoids a copy of
    large arrays) to a new file ``path`` and fsyncs it, for files inside a directory that is
    not visible yet (a SavedModel's temporary directory): the directory's own rename commits
    them, so no per-file rename is needed.

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "f"); write_synced(p, b"x"); open(p, "rb").read()
    b'x'
    """
    with open(path, "wb") as f:
        if callable(data):
            data(f)
        else:
            f.write(data)
        f.flush()
        os.fsync(f.fileno())


def fsync_directory(directory: str) -> None:
    """Makes the renames in ``directory`` durable (a no-op where directories cannot be opened
    or synced: the renames are still atomic)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: str, b: str) -> bool:
    """Atomically swaps the paths ``a`` and ``b`` (two directories) with Linux's
    ``renameat2(RENAME_EXCHANGE)``; returns False where the platform or file system does not
    support it (the caller then needs another way)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b),
                 _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, f"renameat2(RENAME_EXCHANGE) of {a!r} and {b!r} failed: "
                       f"{os.strerror(err)}")


def sweep(directory: str, pattern: "re.Pattern[str]",
          keep: Callable[[str], bool] = lambda name: False) -> list[str]:
    """Deletes the files and directories of ``directory`` whose names match ``pattern``, that
    no live writer holds locked and for which ``keep(name)`` (asked while holding the lock) is
    false; returns the deleted names. Errors are ignored: sweeping is housekeeping."""
    removed = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return removed
    for name in names:
        if not pattern.match(name):
            continue
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            if not _lock(fd, blocking=False) or not _still_there(path, fd) or keep(name):
                continue
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
            removed.append(name)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed
