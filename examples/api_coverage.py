"""How much of TensorFlow's public API stagecraft has: for each namespace, how many of
TensorFlow's public names ``hasattr`` finds on the matching stagecraft module.

    python examples/api_coverage.py NAMES.json [--missing tf.nn]

``NAMES.json`` lists TensorFlow's public names per namespace, as
``{"namespaces": {"": [...], "math": [...], "keras.layers": [...], ...}}`` (the key ``""`` is
the top level). TensorFlow itself is not needed. ``--missing NS`` also lists the names a
namespace lacks.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import stagecraft as tf


def module_of(namespace: str) -> Any:
    """The stagecraft object that plays the role of ``tf.<namespace>``, or None."""
    obj: Any = tf
    for part in filter(None, namespace.split(".")):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def coverage(names: dict[str, list[str]]) -> list[tuple[str, int, int, list[str]]]:
    """(``tf.<namespace>``, names found, names in all, names missing) per namespace."""
    rows = []
    for namespace, wanted in names.items():
        module = module_of(namespace)
        missing = [n for n in wanted if module is None or not hasattr(module, n)]
        label = "tf" + ("." + namespace if namespace else "")
        rows.append((label, len(wanted) - len(missing), len(wanted), missing))
    return rows


def table(rows: list[tuple[str, int, int, list[str]]]) -> str:
    """Two columns of ``namespace  have/all``."""
    cells = [f"{label:<24}{have:>4}/{total:<4}" for label, have, total, _ in rows]
    half = (len(cells) + 1) // 2
    lines = [f"{'namespace':<24}{'have/all':>9}    {'namespace':<24}{'have/all':>9}"]
    for left, right in zip(cells[:half], cells[half:] + [""]):
        lines.append(f"{left}   {right}".rstrip())
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", help="JSON file of TensorFlow's public names per namespace")
    parser.add_argument("--missing", nargs="*", default=[], metavar="NS",
                        help="also list the missing names of these namespaces (e.g. tf.nn)")
    args = parser.parse_args()
    with open(args.names, encoding="utf-8") as f:
        data = json.load(f)
    namespaces = data.get("namespaces") if isinstance(data, dict) else None
    if not isinstance(namespaces, dict) or not all(
            isinstance(v, list) and all(isinstance(n, str) for n in v)
            for v in namespaces.values()):
        raise SystemExit(f"{args.names}: expected {{\"namespaces\": {{name: [public names]}}}}")
    rows = coverage(namespaces)
    print(table(rows))
    for label, _, _, missing in rows:
        if label in args.missing:
            print(f"\n{label} lacks: {', '.join(missing) or 'nothing'}")


if __name__ == "__main__":
    main()
