"""Signed result documents: where the organiser sets a signing key, the documents the
harness writes (`submit --json`) carry an HMAC-SHA256 of their canonical JSON, and `record`
refuses one that is unsigned or was altered after it was written. The key is read from the
environment (`HARNESS_SIGNING_KEY`: a CI secret, never a file in the repository)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any

KEY_ENV = "HARNESS_SIGNING_KEY"
ALGORITHM = "hmac-sha256"


class SignatureError(ValueError):
    """A document that is unsigned, signed otherwise, or altered since it was signed."""


def signing_key() -> bytes | None:
    """The organiser's key, None where none is set."""
    key = os.environ.get(KEY_ENV, "")
    return key.encode() if key else None


def canonical(doc: Mapping[str, Any]) -> bytes:
    """The bytes signed: the document without its signature, as JSON with sorted keys and
    no spaces, after a round trip through JSON (what a reader of the file sees)."""
    plain = json.loads(json.dumps({k: v for k, v in doc.items() if k != "signature"},
                                  default=str))
    return json.dumps(plain, sort_keys=True, separators=(",", ":")).encode()


def sign(doc: dict[str, Any], key: bytes) -> dict[str, Any]:
    """The document with its signature added."""
    mac = hmac.new(key, canonical(doc), hashlib.sha256).hexdigest()
    return dict(doc, signature={"alg": ALGORITHM, "value": mac})


def verify(doc: Mapping[str, Any], key: bytes) -> None:
    """Raise `SignatureError` unless the document carries a valid signature by `key`."""
    signature = doc.get("signature")
    if not isinstance(signature, Mapping) or signature.get("alg") != ALGORITHM:
        raise SignatureError(f"unsigned: the organiser's key ({KEY_ENV}) is set, and this "
                             "document carries no signature by it")
    expected = hmac.new(key, canonical(doc), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, str(signature.get("value", ""))):
        raise SignatureError("altered: its signature does not match its contents (changed "
                             "since it was written, or signed with another key)")
