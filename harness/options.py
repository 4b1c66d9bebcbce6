"""What a user asks of one evaluation: the options shared by `submit`, `batch` and the
judge process that `batch` starts (one type, so that no front end passes them by position)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

MODES = ("test", "benchmark", "leaderboard", "profile")
# Modes that time nothing for a ranking and are never written to the results database.
UNRECORDED_MODES = ("profile",)


@dataclass
class RunOptions:
    """The options of an evaluation; `file` is empty for a batch (each job has its own)."""

    file: Path | None = None
    task: str | None = None
    mode: str = "leaderboard"
    cases: list[str] = field(default_factory=list)
    device: str | None = None
    timeout: float | None = None
    config: Path | None = None
    db: str | None = None
    user: str | None = None
    record: bool | None = None  # None: record in leaderboard mode only
    json_path: Path | None = None
    summary_md: Path | None = None
    allow_partial_containment: bool = False  # record leaderboard runs without full sandbox
    allow_shared_gpu: bool = False  # record leaderboard runs made beside other GPU processes
    repeat: int = 1  # benchmark mode: evaluations in a row, read together (frontends/repeats)
    verbose: bool = False  # print notes, flags and warnings whole (frontends/brief)
    secret: bytes | None = field(default=None, repr=False)  # the judge's only; never printed
    # a ranked run's nonce (judging/seeds.run_key); None draws a fresh one, a recorded one
    # runs the same secret inputs again
    secret_nonce: str | None = None
    # the caller's working directory, which a relative `profile.reports_dir` is read
    # against: a judge process runs in the project's folder, not where its caller was run
    workdir: Path | None = None
    # When the command that asked for this run started (clock ticks since boot, as /proc
    # says): the result's `process_age_s` counts from it, so that a judge forked from a
    # template still reports the command's time before the evaluation. None: the judge's own.
    started_ticks: int | None = None

    @property
    def records(self) -> bool:
        """Whether this run is written to the results database (never a profile)."""
        if self.mode in UNRECORDED_MODES:
            return False
        return bool(self.record) or (self.record is None and self.mode == "leaderboard")

    def for_judge(self, file: Path, task: str, mode: str | None = None,
                  secret: bytes | None = None) -> RunOptions:
        """These options as one judge process runs them (harness/execution/judge_process):
        its own file, task, mode and leaderboard secret, and nothing it must not touch (the
        database, the user, the JSON and summary paths: its caller records and writes),
        with the caller's working directory."""
        return replace(self, file=file, task=task, mode=mode or self.mode, secret=secret,
                       db=None, user=None, json_path=None, summary_md=None,
                       workdir=self.workdir or Path.cwd())

    def to_wire(self) -> dict[str, Any]:
        """A JSON-able form for a judge process (the secret in hex, on its standard input)."""
        out = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}
        out["cases"] = list(self.cases)
        out["secret"] = self.secret.hex() if self.secret else None
        return out

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> RunOptions:
        """The options a judge process received (see `to_wire`)."""
        known = {k: data.get(k) for k in cls.__dataclass_fields__ if k in data}
        for key in ("file", "config", "json_path", "summary_md", "workdir"):
            if known.get(key):
                known[key] = Path(known[key])
        known["cases"] = list(known.get("cases") or [])
        known["secret"] = bytes.fromhex(data["secret"]) if data.get("secret") else None
        return cls(**known)
