"""Test and benchmark cases: the public one-line form `k: v; k: v` and back."""

from __future__ import annotations

from typing import Any

import yaml


class CaseError(ValueError):
    """A case string that cannot be read."""


def parse_case(text: str) -> dict[str, Any]:
    """Parse `m: [96, 128]; n: 256; seed: 1111` into a mapping of case keys."""
    case: dict[str, Any] = {}
    for part in _split_top_level(text):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition(":")
        key = key.strip()
        if not sep or not key:
            raise CaseError(f"expected 'key: value' in case string, got {part!r}")
        try:
            case[key] = yaml.safe_load(value.strip()) if value.strip() else None
        except yaml.YAMLError as exc:
            raise CaseError(f"cannot read the value of {key!r}: {value.strip()!r}") from exc
    if not case:
        raise CaseError("empty case string")
    return case


def _split_top_level(text: str) -> list[str]:
    """Split on ';' outside brackets, so list values may hold any text."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == ";" and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def format_case(case: dict[str, Any]) -> str:
    """The one-line form of a case, as public tooling prints it."""
    return "; ".join(f"{k}: {_format_value(v)}" for k, v in case.items())


def _format_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    return str(value)
