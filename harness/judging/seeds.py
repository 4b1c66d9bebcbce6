"""Seeds for every call: public ones anyone can reproduce, secret ones only the judge knows.

Call 0 of a case uses the case's own seed in a public run, so a contestant can reproduce
it with `generate_input`. Every other call gets a fresh seed derived from the case seed
and the call index; in a secret run, the derivation is keyed with the leaderboard's
secret (HMAC-SHA256), which lives only in the judge and the results database.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

_MASK = 0x7FFFFFFF


def new_run_nonce() -> str:
    """A fresh nonce for one ranked run (`run_key`): 128 random bits, as hex."""
    return secrets.token_hex(16)


def run_key(board_secret: bytes, nonce: str) -> bytes:
    """The key of one ranked run's secret seeds: the leaderboard's secret keyed with the run's
    nonce. Each run's secret inputs differ, so that nothing learned of one run's inputs (its
    score and pass or fail are all a submitter sees) helps in the next; the nonce is
    recorded, so that the organiser, who holds the secret, can run the same inputs again."""
    return hmac.new(board_secret, f"run:{nonce}".encode(), hashlib.sha256).digest()


class SeedPlan:
    """Seeds for the calls of one case."""

    def __init__(self, case_seed: int, secret: bytes | None = None, stream: str = "") -> None:
        self.case_seed = int(case_seed)
        self.secret = secret
        self.stream = stream

    def seed(self, call: int) -> int:
        """The seed of call number `call` (0 is the first, checked call)."""
        if self.secret is None and call == 0:
            return self.case_seed
        message = f"{self.stream}:{self.case_seed}:{call}".encode()
        if self.secret is None:
            digest = hashlib.sha256(message).digest()
        else:
            digest = hmac.new(self.secret, message, hashlib.sha256).digest()
        return int.from_bytes(digest[:4], "little") & _MASK
