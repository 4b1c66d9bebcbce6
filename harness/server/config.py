"""The `server:` settings of configs/defaults.yaml, read from the loaded settings."""

from __future__ import annotations

import typing
from dataclasses import dataclass, fields
from typing import Any

from harness.settings import Settings, check_type


@dataclass(frozen=True)
class ServerSettings:
    """The contest server's rules and the queue's lease (`server:`)."""

    lease_seconds: float = 60.0  # a running job's lease; heartbeats renew it
    max_attempts: int = 3  # claims of one job before it fails (its workers died)
    max_upload_bytes: int = 1048576  # larger uploads get 413
    rate_limit: int = 30  # submissions per user within rate_window_seconds; 0: none
    rate_window_seconds: float = 3600.0

    def __post_init__(self) -> None:
        if self.lease_seconds <= 0 or self.max_attempts < 1 or self.max_upload_bytes < 1:
            raise ValueError("server.lease_seconds, max_attempts and max_upload_bytes must be "
                             "positive")
        if self.rate_limit < 0 or self.rate_window_seconds <= 0:
            raise ValueError("server.rate_limit must be 0 or more, rate_window_seconds positive")

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerSettings:
        """The `server:` section of `settings` (defaults for keys it leaves out)."""
        section: dict[str, Any] = settings.raw.get("server") or {}
        if not isinstance(section, dict):
            raise ValueError(f"server: expected a mapping of settings, not {section!r}")
        known = {f.name for f in fields(cls)}
        unknown = set(section) - known
        if unknown:
            raise ValueError(f"not a setting: {', '.join(f'server.{k}' for k in sorted(unknown))}")
        hints = typing.get_type_hints(cls)
        for key, value in section.items():
            check_type(f"server.{key}", value, hints[key])
        return cls(**section)
