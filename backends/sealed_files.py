"""Sealed cache files: every file the compile cache writes starts with the SHA-256 of its
payload, checked before a byte of the payload is parsed or unpickled. A file whose digest does
not match is deleted with one WARNING, and its caller rebuilds it (``numba_cache``,
``numba_links``)."""
from __future__ import annotations

import hashlib
import logging
import os
import pathlib
from typing import Iterable

from stagecraft.ir import durable

__all__ = ["SEAL_MAGIC", "CacheCorrupted", "seal", "unseal", "discard", "write_verified",
           "read_verified"]

_log = logging.getLogger("stagecraft")

#: First bytes of every sealed cache file; the SHA-256 of the rest follows, then a newline.
SEAL_MAGIC = b"stagecraft-sha256:"
_SEAL_HEADER = len(SEAL_MAGIC) + 64 + 1


class CacheCorrupted(ValueError):
    """A cache file whose content does not match the digest recorded when it was written."""


def seal(data: bytes) -> bytes:
    """``data`` behind a header holding its SHA-256, as written to the cache (:func:`unseal`).

    >>> unseal(seal(b"plan")) == b"plan"
    True
    """
    return SEAL_MAGIC + hashlib.sha256(data).hexdigest().encode("ascii") + b"\n" + data


def unseal(blob: bytes) -> bytes:
    """The payload of a :func:`seal`'d file; ``CacheCorrupted`` saying why when the header is
    missing or the payload's digest differs from the recorded one.

    >>> blob = bytearray(seal(b"range(6)"))
    >>> blob[-2] ^= 2                                  # range(6) -> range(4)
    >>> try:
    ...     unseal(bytes(blob))
    ... except CacheCorrupted as e:
    ...     print(e)
    its content does not match its recorded SHA-256
    """
    if len(blob) < _SEAL_HEADER or not blob.startswith(SEAL_MAGIC) \
            or blob[_SEAL_HEADER - 1:_SEAL_HEADER] != b"\n":
        raise CacheCorrupted(f"it has no valid digest header ({len(blob)} bytes)")
    recorded = blob[len(SEAL_MAGIC):_SEAL_HEADER - 1]
    payload = blob[_SEAL_HEADER:]
    if hashlib.sha256(payload).hexdigest().encode("ascii") != recorded:
        raise CacheCorrupted("its content does not match its recorded SHA-256")
    return payload


def _unlink(*paths: os.PathLike | str) -> None:
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def discard(path: os.PathLike | str, reason: str, also: Iterable[os.PathLike | str] = ()) -> None:
    """Deletes the damaged cache file ``path`` (and the files ``also`` of its entry) and logs
    the one WARNING on the ``stagecraft`` logger saying so."""
    _log.warning("stagecraft cache: %s is corrupted (%s); deleting it and compiling again",
                 path, reason)
    _unlink(path, *also)


def write_verified(path: pathlib.Path, data: bytes) -> None:
    """Publishes ``data`` at ``path`` atomically, sealed with its digest (:func:`read_verified`)."""
    durable.write_atomic(str(path), seal(data))


def read_verified(path: pathlib.Path) -> bytes | None:
    """The payload :func:`write_verified` wrote at ``path``, checked against its digest; None
    when the file is absent, or damaged: then it is deleted with one warning (:func:`discard`)
    so that the caller rebuilds it.

    >>> import tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp(), "plan_x.json")
    >>> write_verified(p, b'{"source": "..."}')
    >>> read_verified(p)
    b'{"source": "..."}'
    >>> _ = p.write_bytes(p.read_bytes().replace(b"...", b"!!!"))
    >>> read_verified(p), p.exists()
    (None, False)
    """
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return unseal(blob)
    except CacheCorrupted as e:
        discard(path, str(e))
        return None
