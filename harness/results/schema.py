"""The result document's schema, read off the dataclasses of `document.py`: one checker
for every place a document crosses a process or a file (the judge process's answer, a
`--json` file given to `record`, the server's store), and its JSON Schema for the people who
consume it (docs/result-document.schema.json, kept current by a test).

A field this harness knows must have its type; a field it does not know is left alone (a
document written by a newer harness still reads).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any

from harness.consts import Status
from harness.options import MODES
from harness.results.document import SCHEMA, SCHEMA_VERSION, CaseResult, Evaluation, PhaseResult

# Values a field takes from a fixed list, by (class, field).
CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("Evaluation", "mode"): tuple(MODES),
    ("PhaseResult", "name"): ("test", "benchmark", "profile"),
    ("PhaseResult", "seeds"): ("public", "secret"),
    ("CaseResult", "status"): tuple(s.value for s in Status),
}
# Keys a mapping field must hold (what recording and ranking read), with their types.
KEYS: dict[tuple[str, str], dict[str, type]] = {
    ("Evaluation", "task"): {"name": str, "content_hash": str},
    ("Evaluation", "submission"): {"name": str, "sha256": str},
    ("Evaluation", "device"): {"kind": str, "name": str, "ranking_kind": str},
}
_CLASSES = {c.__name__: c for c in (Evaluation, PhaseResult, CaseResult)}


class DocumentError(ValueError):
    """A document that is not a valid result document; the message names the field's path."""


def validate(doc: Any) -> None:
    """Check a result document (as parsed from JSON); `DocumentError` names what is wrong."""
    if not isinstance(doc, Mapping):
        raise DocumentError(f"(the document): expected an object, got {_kind(doc)}")
    if doc.get("schema") != SCHEMA:
        raise DocumentError(f"schema: expected {SCHEMA!r}, got {doc.get('schema')!r}")
    if doc.get("version") != SCHEMA_VERSION:
        raise DocumentError(f"version: expected {SCHEMA_VERSION}, got {doc.get('version')!r} "
                            "(a document of another harness version)")
    _check_class(Evaluation, doc, "")


def _check_class(cls: type, data: Any, path: str) -> None:
    if not isinstance(data, Mapping):
        raise DocumentError(f"{path or '(the document)'}: expected an object, got {_kind(data)}")
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        where = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            if _required(f):
                raise DocumentError(f"{where}: missing")
            continue
        value = data[f.name]
        _check(hints[f.name], value, where)
        choices = CHOICES.get((cls.__name__, f.name))
        if choices and value not in choices:
            raise DocumentError(f"{where}: expected one of {list(choices)}, got {value!r}")
        for key, kind in KEYS.get((cls.__name__, f.name), {}).items():
            if not isinstance(value.get(key), kind):
                raise DocumentError(f"{where}.{key}: expected {_name(kind)}, got "
                                    f"{_kind(value.get(key))}")


def _check(hint: Any, value: Any, path: str) -> None:
    """Check `value` against a type hint of document.py's dataclasses."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        _check(next(a for a in args if a is not type(None)), value, path)
        return
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        _check_class(hint, value, path)
        return
    if origin is dict:
        if not isinstance(value, Mapping):
            raise DocumentError(f"{path}: expected an object, got {_kind(value)}")
        for key, item in value.items():
            _check(args[1], item, f"{path}.{key}")
        return
    if origin is list:
        if not isinstance(value, list):
            raise DocumentError(f"{path}: expected a list, got {_kind(value)}")
        for i, item in enumerate(value):
            _check(args[0], item, f"{path}[{i}]")
        return
    if not _is(hint, value):
        raise DocumentError(f"{path}: expected {_name(hint)}, got {_kind(value)}")


def _is(hint: type, value: Any) -> bool:
    if hint is float:  # JSON writes 6000.0 as 6000.0, but a hand-made document may say 6000
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _name(hint: type) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(
        hint, getattr(hint, "__name__", str(hint)))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return f"{type(value).__name__} {value!r}"[:80]


# -- JSON Schema ------------------------------------------------------------------------
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_schema() -> dict[str, Any]:
    """The document's JSON Schema (draft 2020-12), from the same dataclasses."""
    top = _class_schema(Evaluation)
    top["properties"] = {
        "schema": {"const": SCHEMA}, "version": {"const": SCHEMA_VERSION},
        **top["properties"],
        "status": {"enum": list(CHOICES[("CaseResult", "status")])},
        "passed": {"type": "boolean"}, "exit_code": {"type": "integer"},
        "score_ns": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        "signature": {"type": "object", "description": "present where the organiser signs: "
                      "HMAC-SHA256 of the canonical JSON without this field"},
    }
    top["required"] = ["schema", "version", *top["required"]]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "kernel-harness/result", "title": "kernel-harness result document",
            **top, "$defs": {n: _class_schema(c) for n, c in _CLASSES.items()
                             if c is not Evaluation}}


def _class_schema(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props = {}
    for f in dataclasses.fields(cls):
        prop = _hint_schema(hints[f.name])
        choices = CHOICES.get((cls.__name__, f.name))
        if choices:
            prop = {"enum": list(choices)}
        keys = KEYS.get((cls.__name__, f.name))
        if keys:
            prop["properties"] = {k: {"type": _JSON_TYPES[t]} for k, t in keys.items()}
            prop["required"] = list(keys)
        props[f.name] = prop
    return {"type": "object", "properties": props,
            "required": [f.name for f in dataclasses.fields(cls) if _required(f)]}


def _hint_schema(hint: Any) -> dict[str, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return {}
    if origin in (typing.Union, types.UnionType):
        inner = next(a for a in args if a is not type(None))
        return {"anyOf": [_hint_schema(inner), {"type": "null"}]}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return {"$ref": f"#/$defs/{hint.__name__}"}
    if origin is dict:
        return {"type": "object", "additionalProperties": _hint_schema(args[1])}
    if origin is list:
        return {"type": "array", "items": _hint_schema(args[0])}
    return {"type": _JSON_TYPES[hint]}
