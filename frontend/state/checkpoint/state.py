"""The ``checkpoint`` metadata file that ``Checkpoint.save`` and ``CheckpointManager`` keep in
the checkpoint directory, in TensorFlow's text format::

    model_checkpoint_path: "ckpt-2"
    all_model_checkpoint_paths: "ckpt-1"
    all_model_checkpoint_paths: "ckpt-2"

Paths inside the directory are stored relative to it; ``latest_checkpoint`` joins them back.
"""
from __future__ import annotations

import logging
import os

from stagecraft.ir import durable
from stagecraft.state.checkpoint import format as fmt

STATE_FILENAME = "checkpoint"
logger = logging.getLogger("stagecraft")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise ValueError(f"expected a quoted string, got {text!r}")
    out, i, body = [], 0, text[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def read_state(directory: str) -> tuple[str | None, list[str]]:
    """``(latest, all)`` checkpoint paths recorded in ``directory`` (joined with it when
    relative); ``(None, [])`` when there is no metadata file.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_state(d, "ckpt-2", ["ckpt-1", "ckpt-2"])
    >>> latest, paths = read_state(d); os.path.basename(latest), len(paths)
    ('ckpt-2', 2)
    """
    path = os.path.join(directory, STATE_FILENAME)
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        return None, []
    latest, every = None, []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        field, sep, value = line.partition(":")
        try:
            if not sep:
                raise ValueError("missing ':'")
            text = _unquote(value) if field.strip().endswith("_path") or \
                field.strip().endswith("_paths") else None
        except ValueError as e:
            raise ValueError(f"Checkpoint metadata file {path!r} line {n} is not valid ({e}); "
                             f"delete the file to start afresh.") from None
        if field.strip() == "model_checkpoint_path":
            latest = _absolute(directory, text)
        elif field.strip() == "all_model_checkpoint_paths":
            every.append(_absolute(directory, text))
    return latest, every


def _absolute(directory: str, path: str | None) -> str | None:
    if path is None or os.path.isabs(path):
        return path
    return os.path.join(directory, path)


def write_state(directory: str, latest: str, every: list[str]) -> None:
    """Writes the metadata file atomically (``durable.write_atomic``); paths inside
    ``directory`` are stored relative to it.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_state(d, os.path.join(d, "ckpt-1"), [os.path.join(d, "ckpt-1")])
    >>> print(open(os.path.join(d, "checkpoint")).read().strip())
    model_checkpoint_path: "ckpt-1"
    all_model_checkpoint_paths: "ckpt-1"
    """
    def local(p: str) -> str:
        # '<directory>/ckpt-1' is stored as 'ckpt-1' (TensorFlow's relative paths); anything
        # elsewhere as an absolute path, since a relative one would be read against directory.
        here = os.path.abspath(os.path.dirname(p) or ".") == os.path.abspath(directory or ".")
        return os.path.basename(p) if here else os.path.abspath(p)

    lines = [f"model_checkpoint_path: {_quote(local(latest))}"]
    lines += [f"all_model_checkpoint_paths: {_quote(local(p))}" for p in every]
    os.makedirs(directory or ".", exist_ok=True)
    durable.write_atomic(os.path.join(directory or ".", STATE_FILENAME),
                         ("\n".join(lines) + "\n").encode("utf-8"))


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint recorded in ``checkpoint_dir``, or None when the
    directory has no metadata file or the checkpoint it names is gone.

    >>> import os, tempfile, stagecraft as tf
    >>> d = tempfile.mkdtemp()
    >>> print(tf.train.latest_checkpoint(d))
    None
    >>> ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    >>> _ = ckpt.save(os.path.join(d, "ckpt")); _ = ckpt.save(os.path.join(d, "ckpt"))
    >>> os.path.basename(tf.train.latest_checkpoint(d))
    'ckpt-2'
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    if latest_filename not in (None, STATE_FILENAME):
        raise ValueError(f"latest_checkpoint: only the metadata file name {STATE_FILENAME!r} "
                         f"is supported, got {latest_filename!r}.")
    latest, _ = read_state(checkpoint_dir)
    if latest is None:
        return None
    if not fmt.bundle_exists(latest):
        logger.error("Couldn't match files for checkpoint %s (named by %s)", latest,
                     os.path.join(checkpoint_dir, STATE_FILENAME))
        return None
    return latest
