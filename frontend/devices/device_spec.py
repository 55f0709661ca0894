"""``DeviceSpec``: a parsed device name (``/job:<j>/replica:<r>/task:<t>/device:<TYPE>:<i>``)
with TensorFlow's parsing rules, errors, printing and field-wise merging."""
from __future__ import annotations

from typing import Any

# Device types accepted in the short forms ``TYPE:N`` and ``TYPE`` (any case); the long form
# ``device:TYPE:N`` accepts any type name, as TensorFlow does.
KNOWN_TYPES = ("CPU", "GPU", "TPU", "CUSTOM", "EPU")


class DeviceSpec:
    """A (partial) device name: job, replica, task, device type and index, each optional.

    ``DeviceSpec.from_string`` accepts TensorFlow's spellings: the canonical
    ``/job:training/replica:0/task:2/device:GPU:0``, the short forms ``gpu:0``, ``/GPU:0`` and
    ``CPU``, with or without the leading ``/``; ``cpu``/``gpu`` are upper-cased and a missing
    device index means "any" (printed ``*``). Two device types, an unknown part or a
    non-numeric index raise ValueError. Specs are immutable, compare by their string and merge
    field-wise (the argument wins where it sets a field).

    >>> import stagecraft as tf
    >>> s = tf.DeviceSpec.from_string("/job:training/task:2/device:GPU:0")
    >>> s.job, s.task, s.device_type, s.device_index
    ('training', 2, 'GPU', 0)
    >>> tf.DeviceSpec.from_string("gpu:0").to_string()
    '/device:GPU:0'
    >>> tf.DeviceSpec(job="train").make_merged_spec(tf.DeviceSpec.from_string("/GPU:1"))
    DeviceSpec(job='train', device_type='GPU', device_index=1)
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index", "_string")

    def __init__(self, job: str | None = None, replica: int | None = None,
                 task: int | None = None, device_type: str | None = None,
                 device_index: int | None = None):
        self._job = None if job is None else str(job)
        self._replica = _as_index(replica, "replica")
        self._task = _as_index(task, "task")
        if device_type is not None:
            device_type = str(device_type)
            if device_type in ("cpu", "gpu"):  # TensorFlow's compatibility spellings
                device_type = device_type.upper()
        self._device_type = device_type
        self._device_index = _as_index(device_index, "device_index")
        self._string = _format(self._job, self._replica, self._task, self._device_type,
                               self._device_index)

    @classmethod
    def from_string(cls, spec: str) -> "DeviceSpec":
        """Parses a device name; ValueError says which part is wrong.

        >>> DeviceSpec.from_string("/cpu:0/gpu:0")
        Traceback (most recent call last):
        ...
        ValueError: Multiple device types are not allowed while parsing the device spec: ...
        """
        return cls(**_parse(spec))

    # ----------------------------------------------------------------- fields
    @property
    def job(self) -> str | None:
        return self._job

    @property
    def replica(self) -> int | None:
        return self._replica

    @property
    def task(self) -> int | None:
        return self._task

    @property
    def device_type(self) -> str | None:
        return self._device_type

    @property
    def device_index(self) -> int | None:
        return self._device_index

    # ---------------------------------------------------------------- methods
    def to_string(self) -> str:
        """The canonical name: only the fields that are set, ``*`` for a missing index.

        >>> DeviceSpec.from_string("CPU").to_string()
        '/device:CPU:*'
        """
        return self._string

    def parse_from_string(self, spec: str) -> "DeviceSpec":
        """A new spec parsed from ``spec`` (specs are immutable, as in TensorFlow 2)."""
        return DeviceSpec.from_string(spec)

    def replace(self, **kwargs: Any) -> "DeviceSpec":
        """A copy with the given fields replaced.

        >>> DeviceSpec.from_string("/GPU:0").replace(device_index=1).to_string()
        '/device:GPU:1'
        """
        fields = self._fields()
        unknown = sorted(set(kwargs) - set(fields))
        if unknown:
            raise TypeError(f"DeviceSpec.replace: unknown field(s) {unknown}; the fields are "
                            f"{list(fields)}.")
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def make_merged_spec(self, dev: "DeviceSpec") -> "DeviceSpec":
        """This spec with every field that ``dev`` sets taken from ``dev`` (how nested
        ``device`` scopes combine: the inner one wins per field).

        >>> DeviceSpec.from_string("/job:train").make_merged_spec(
        ...     DeviceSpec.from_string("/device:GPU:1")).to_string()
        '/job:train/device:GPU:1'
        """
        if not isinstance(dev, DeviceSpec):
            raise TypeError(f"make_merged_spec: expected a DeviceSpec, got "
                            f"{type(dev).__name__}; use DeviceSpec.from_string(name).")
        fields = self._fields()
        fields.update({k: v for k, v in dev._fields().items() if v is not None})
        return DeviceSpec(**fields)

    def _fields(self) -> dict:
        return {"job": self._job, "replica": self._replica, "task": self._task,
                "device_type": self._device_type, "device_index": self._device_index}

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DeviceSpec) and other._string == self._string

    def __hash__(self) -> int:
        return hash(self._string)

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self._fields().items() if v is not None]
        return f"DeviceSpec({', '.join(parts)})"

    def __str__(self) -> str:
        return self._string


def _as_index(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"DeviceSpec: {what} must be an integer, got {value!r}.")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"DeviceSpec: {what} must be an integer, got {value!r}.") from None


def _format(job: str | None, replica: int | None, task: int | None, device_type: str | None,
            device_index: int | None) -> str:
    out = ""
    if job is not None:
        out += f"/job:{job}"
    if replica is not None:
        out += f"/replica:{replica}"
    if task is not None:
        out += f"/task:{task}"
    if device_type is not None:
        out += f"/device:{device_type}:{'*' if device_index is None else device_index}"
    return out


def _parse(spec: str) -> dict:
    """The fields of a device name, checked part by part (split on '/', then on ':')."""
    if spec is None:
        spec = ""
    if not isinstance(spec, str):
        raise TypeError(f"A device name must be a string, got {type(spec).__name__} "
                        f"({spec!r}); e.g. '/device:GPU:0' or tf.DeviceSpec(...).to_string().")
    fields: dict = {}
    for part in spec.split("/"):
        if not part:
            continue
        pieces = part.split(":")
        head, n = pieces[0], len(pieces)
        if n == 2 and head in ("job", "replica", "task"):
            fields[head] = pieces[1] if head == "job" else _index(pieces[1], head, spec)
        elif n in (1, 2) and head.upper() in KNOWN_TYPES:
            _set_type(fields, head.upper(), spec)
            if n == 2 and pieces[1] != "*":
                fields["device_index"] = _index(pieces[1], "device index", spec)
        elif n == 3 and head == "device":
            _set_type(fields, pieces[1], spec)
            if pieces[2] != "*":
                fields["device_index"] = _index(pieces[2], "device index", spec)
        else:
            raise ValueError(f"Unknown attribute '{head}' is encountered while parsing the "
                             f"device spec: '{spec}'. The parts of a device name are job:NAME, "
                             f"replica:N, task:N and device:TYPE:N (or TYPE:N), e.g. "
                             f"'/job:localhost/replica:0/task:0/device:GPU:0'.")
    return fields


def _set_type(fields: dict, device_type: str, spec: str) -> None:
    if "device_type" in fields:
        raise ValueError(f"Multiple device types are not allowed while parsing the device "
                         f"spec: '{spec}'. Name one device, e.g. '/device:GPU:0'.")
    fields["device_type"] = device_type


def _index(text: str, what: str, spec: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"Invalid {what} '{text}' in the device spec '{spec}': expected a "
                         f"non-negative integer (or '*' for any device index).") from None
