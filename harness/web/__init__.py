"""The read-only web leaderboard of `runner.py serve` (needs Flask: `pip install -e '.[web]'`)."""

from harness.web.app import create_app

__all__ = ["create_app"]
