"""`#!POPCORN key value` header directives of a submission file."""

from __future__ import annotations

from dataclasses import dataclass, field

_PREFIXES = ("#!POPCORN", "//!POPCORN")
_COMMENT_STARTS = ("#", "//")


@dataclass
class Directives:
    leaderboard: str | None = None
    gpus: list[str] = field(default_factory=list)
    other: dict[str, str] = field(default_factory=dict)


def parse_directives(source: str) -> Directives:
    """Read directives from the first comment block of a submission's source."""
    found = Directives()
    for raw in source.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not line.startswith(_COMMENT_STARTS):
            break
        prefix = next((p for p in _PREFIXES if line.startswith(p)), None)
        if prefix is None:
            continue
        words = line[len(prefix):].split()
        if not words:
            continue
        key, values = words[0].lower(), words[1:]
        if key == "leaderboard" and values:
            found.leaderboard = values[0]
        elif key in ("gpu", "gpus"):
            found.gpus.extend(v.strip(",") for v in values if v.strip(","))
        elif values:
            found.other[key] = " ".join(values)
    return found
