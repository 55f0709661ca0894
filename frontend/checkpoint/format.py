"""The on-disk checkpoint format (version 1): TensorFlow's file names, our own contents.

A checkpoint *prefix* ``p`` names two files (a prefix is not a file itself):

* ``p.data-00000-of-00001``: a 32-byte header (magic ``b"SCKPDATA"``, little-endian uint32
  format version, 4 zero bytes, the 16-byte write id) followed by every array's raw
  little-endian bytes, C order, each starting at a multiple of 8;
* ``p.index``: a JSON object ``{"format": "stagecraft-checkpoint", "version": 1,
  "checksum": crc32, "content": {...}}`` where ``checksum`` is the CRC-32 of ``content``
  dumped with sorted keys and compact separators, and ``content`` holds ``write_id`` (hex, the
  same as in the data header), ``data_file`` (its base name), ``data_size`` (bytes),
  ``tensors`` (``{key: {"dtype", "shape", "offset", "length", "crc32"}}``) and ``document``
  (the caller's JSON: for checkpoints the object graph).

Nothing is ever unpickled: loading reads JSON and raw numbers only. Writes are atomic: both files
are written under temporary names in the target directory, flushed and fsynced, then renamed
(data first, index last) and the directory fsynced, so a crash or an exception in the middle
leaves any previous checkpoint untouched and never a readable half-written one.
"""
from __future__ import annotations

import json
import os
import struct
import tempfile
import zlib
from typing import Any

import numpy as np

from stagecraft.ir.errors import DataLossError, NotFoundError

FORMAT_NAME = "stagecraft-checkpoint"
FORMAT_VERSION = 1
INDEX_SUFFIX = ".index"
DATA_SUFFIX = ".data-00000-of-00001"
_MAGIC = b"SCKPDATA"
_HEADER = struct.Struct("<8sI4x16s")  # magic, version, padding, write id: 32 bytes
_ALIGN = 8
# dtypes a checkpoint can hold (numbers and bools; no object or string arrays)
_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128")


def index_path(prefix: str) -> str:
    """The index file of the checkpoint at ``prefix``.

    >>> index_path("d/ckpt-1"), data_path("d/ckpt-1")
    ('d/ckpt-1.index', 'd/ckpt-1.data-00000-of-00001')
    """
    return os.fspath(prefix) + INDEX_SUFFIX


def data_path(prefix: str) -> str:
    """The data file of the checkpoint at ``prefix`` (see ``index_path``)."""
    return os.fspath(prefix) + DATA_SUFFIX


def bundle_exists(prefix: str) -> bool:
    """Whether a checkpoint index exists at ``prefix``.

    >>> bundle_exists("/nonexistent/ckpt-1")
    False
    """
    return os.path.isfile(index_path(prefix))


def delete_bundle(prefix: str) -> None:
    """Removes the files of the checkpoint at ``prefix`` (those that exist).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "p"); write_bundle(p, {}, {})
    >>> delete_bundle(p); bundle_exists(p), os.path.exists(data_path(p))
    (False, False)
    """
    for path in (index_path(prefix), data_path(prefix)):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def write_bundle(prefix: str, document: dict, arrays: dict[str, np.ndarray]) -> None:
    """Writes ``arrays`` (by key) and the JSON-able ``document`` atomically at ``prefix``.

    >>> import tempfile, os, numpy as np
    >>> d = tempfile.mkdtemp()
    >>> write_bundle(os.path.join(d, "p"), {"note": "hi"}, {"x": np.arange(3, dtype="int32")})
    >>> sorted(os.listdir(d))
    ['p.data-00000-of-00001', 'p.index']
    >>> doc, arrays = read_bundle(os.path.join(d, "p")); doc, arrays["x"].tolist()
    ({'note': 'hi'}, [0, 1, 2])
    """
    prefix = os.fspath(prefix)
    directory = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    if not base:
        raise ValueError(f"Checkpoint prefix {prefix!r} ends with a path separator; give a "
                         f"file name prefix such as {os.path.join(prefix, 'ckpt')!r}.")
    os.makedirs(directory, exist_ok=True)
    write_id = os.urandom(16)
    temps: list[str] = []
    try:
        data_tmp, tensors, size = _write_data(directory, base, write_id, arrays)
        temps.append(data_tmp)
        content = {"write_id": write_id.hex(), "data_file": base + DATA_SUFFIX,
                   "data_size": size, "tensors": tensors, "document": document}
        index_tmp = _write_index(directory, base, content)
        temps.append(index_tmp)
        # Data first: until the index is renamed, readers still see the previous checkpoint's
        # index, whose write id no longer matches the data and is reported as such.
        _replace(data_tmp, data_path(prefix))
        temps.remove(data_tmp)
        _replace(index_tmp, index_path(prefix))
        temps.remove(index_tmp)
        _fsync_directory(directory)
    finally:
        for path in temps:
            try:
                os.remove(path)
            except OSError:
                pass


def _write_data(directory: str, base: str, write_id: bytes,
                arrays: dict[str, np.ndarray]) -> tuple[str, dict, int]:
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.data.", suffix=".tmp", dir=directory)
    tensors = {}
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_HEADER.pack(_MAGIC, FORMAT_VERSION, write_id))
            offset = _HEADER.size
            for key in sorted(arrays):
                arr = np.asarray(arrays[key])
                if arr.dtype.name not in _DTYPES:
                    raise TypeError(f"Cannot checkpoint {key!r}: dtype {arr.dtype} is not "
                                    f"supported (supported: {', '.join(_DTYPES)}).")
                raw = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
                pad = -offset % _ALIGN
                fh.write(b"\0" * pad)
                offset += pad
                fh.write(raw)
                tensors[key] = {"dtype": arr.dtype.name, "shape": list(arr.shape),
                                "offset": offset, "length": len(raw),
                                "crc32": zlib.crc32(raw)}
                offset += len(raw)
            fh.flush()
            _fsync(fh.fileno())
    except BaseException:
        os.remove(tmp)
        raise
    return tmp, tensors, offset


def _write_index(directory: str, base: str, content: dict) -> str:
    body = {"format": FORMAT_NAME, "version": FORMAT_VERSION,
            "checksum": zlib.crc32(_canonical(content)), "content": content}
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.index.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(body, fh, separators=(",", ":"))  # "format", "version" first: recognizable
            fh.write("\n")
            fh.flush()
            _fsync(fh.fileno())
    except BaseException:
        os.remove(tmp)
        raise
    return tmp


def _canonical(content: dict) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":")).encode("utf-8")


# Indirections so tests can inject failures in the middle of a write.
def _fsync(fd: int) -> None:
    os.fsync(fd)


def _replace(src: str, dst: str) -> None:
    os.replace(src, dst)


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # platforms where directories cannot be opened (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_index(prefix: str) -> dict:
    """The verified ``content`` of the index at ``prefix`` (``document``, ``tensors``, ...).

    Raises ``NotFoundError`` when the index does not exist and ``DataLossError`` when it is
    empty, truncated, corrupted, of another format or of a newer version.

    >>> import tempfile, os, numpy as np
    >>> p = os.path.join(tempfile.mkdtemp(), "p"); write_bundle(p, {}, {"x": np.zeros(2)})
    >>> read_index(p)["tensors"]["x"]["shape"]
    [2]
    """
    path = index_path(prefix)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise NotFoundError(f"Checkpoint index {path!r} does not exist.") from None
    if not raw.strip():
        raise DataLossError(f"Checkpoint index {path!r} is empty (truncated): the write that "
                            f"made it did not finish. Restore an older checkpoint.")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        if raw.lstrip().startswith(b"{") and FORMAT_NAME.encode() in raw[:200]:
            raise DataLossError(f"Checkpoint index {path!r} is truncated or corrupted (invalid "
                                f"JSON: {e}). Restore an older checkpoint.") from None
        raise DataLossError(f"Checkpoint index {path!r} is not a stagecraft checkpoint (wrong "
                            f"format: it is not JSON). TensorFlow's own binary checkpoints "
                            f"cannot be read; save them again with stagecraft.") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT_NAME:
        found = body.get("format") if isinstance(body, dict) else type(body).__name__
        raise DataLossError(f"Checkpoint index {path!r} is not a stagecraft checkpoint (wrong "
                            f"format: {found!r} instead of {FORMAT_NAME!r}).")
    version = body.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise DataLossError(f"Checkpoint index {path!r} has format version {version!r}, but "
                            f"this stagecraft reads versions 1 to {FORMAT_VERSION}; upgrade "
                            f"stagecraft to read it.")
    content = body.get("content")
    if not isinstance(content, dict) or zlib.crc32(_canonical(content)) != body.get("checksum"):
        raise DataLossError(f"Checkpoint index {path!r} is corrupted (checksum mismatch): its "
                            f"contents were changed after it was written.")
    from stagecraft.checkpoint.schema import check_index  # it imports this module
    return check_index(content, path)  # every field, before any is used


def read_bundle(prefix: str, keys: list[str] | None = None
                ) -> tuple[dict, dict[str, np.ndarray]]:
    """Reads the checkpoint at ``prefix``: ``(document, {key: array})``, every array checked
    against its CRC-32 (only ``keys`` when given). See ``write_bundle`` for an example."""
    content = read_index(prefix)
    tensors = content["tensors"]
    dpath = data_path(prefix)
    try:
        fh = open(dpath, "rb")
    except FileNotFoundError:
        raise DataLossError(f"Checkpoint data file {dpath!r} is missing; its index exists, so "
                            f"the checkpoint is incomplete. Restore an older checkpoint.") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size < content["data_size"]:
            raise DataLossError(f"Checkpoint data file {dpath!r} is truncated: {size} bytes, "
                                f"the index expects {content['data_size']}. Restore an older "
                                f"checkpoint.")
        header = fh.read(_HEADER.size)
        magic, version, write_id = _HEADER.unpack(header)
        if magic != _MAGIC:
            raise DataLossError(f"Checkpoint data file {dpath!r} is not a stagecraft checkpoint "
                                f"data file (wrong format: bad magic bytes {magic!r}).")
        if version > FORMAT_VERSION:
            raise DataLossError(f"Checkpoint data file {dpath!r} has format version {version}, "
                                f"but this stagecraft reads versions 1 to {FORMAT_VERSION}.")
        if write_id.hex() != content["write_id"]:
            raise DataLossError(f"Checkpoint data file {dpath!r} does not belong to its index "
                                f"(another write replaced one of the two files). Restore an "
                                f"older checkpoint.")
        arrays = {}
        for key in (sorted(tensors) if keys is None else keys):
            arrays[key] = _read_tensor(fh, dpath, key, tensors[key])
    return content["document"], arrays


def _read_tensor(fh: Any, dpath: str, key: str, meta: dict) -> np.ndarray:
    fh.seek(meta["offset"])
    raw = fh.read(meta["length"])
    if len(raw) != meta["length"]:
        raise DataLossError(f"Checkpoint data file {dpath!r} is truncated: tensor {key!r} "
                            f"needs {meta['length']} bytes at offset {meta['offset']}.")
    if zlib.crc32(raw) != meta["crc32"]:
        raise DataLossError(f"Checkpoint data file {dpath!r} is corrupted (checksum mismatch "
                            f"for tensor {key!r}). Restore an older checkpoint.")
    if meta["dtype"] not in _DTYPES:
        raise DataLossError(f"Checkpoint index for {dpath!r} gives tensor {key!r} the "
                            f"unsupported dtype {meta['dtype']!r}.")
    dtype = np.dtype(meta["dtype"])
    arr = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(meta["shape"])
    return arr.astype(dtype)  # native byte order, an owned and writable copy
