"""Short forms of the notes, flags and warnings a report prints: each fits in two lines of
a 100-column terminal with its label (`flag (benchmark case 12): `). The result document
keeps every text whole, and `--verbose` prints it whole.

A text is shortened by its own structure: the harness writes a claim first, then, after
`: ` or `; `, what it means and why, with asides in parentheses. The short form is the
longest run of those parts from the start that fits, dropping asides from the last one
back where none does; a text with no such structure is cut at a word.
"""

from __future__ import annotations

LIMIT = 150  # characters: with a label of up to 30, two lines of 100 after word wrapping
_SEPARATORS = (": ", "; ")


def brief(text: str, limit: int = LIMIT) -> str:
    """`text` on one line, shortened to `limit` characters where it is longer."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    variant = text
    while True:
        parts = _parts(variant)
        for end in range(len(parts) - 1, 0, -1):  # the whole text is too long: a prefix
            head = "".join(parts[:end]).rstrip(" :;,")
            if len(head) <= limit:
                return head
        shorter = _drop_last_aside(variant)
        if shorter == variant:
            break
        variant = shorter
    first = "".join(_parts(variant)[:1]).rstrip(" :;,")
    return first if len(first) <= limit else _cut(first, limit)


def _parts(text: str) -> list[str]:
    """`text` split after each separator outside parentheses, separators kept."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += ch == "("
        depth -= ch == ")" and depth > 0
        if depth == 0 and text.startswith(_SEPARATORS, i):
            parts.append(text[start:i + 2])
            start = i = i + 2
            continue
        i += 1
    return parts + [text[start:]] if start < len(text) else parts


def _drop_last_aside(text: str) -> str:
    """`text` without its last parenthesised aside (outside any other), or unchanged."""
    depth, close = 0, None
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            if depth == 0:
                close = i
            depth += 1
        elif text[i] == "(" and depth > 0:
            depth -= 1
            if depth == 0 and close is not None:
                before, after = text[:i].rstrip(), text[close + 1:]
                return before + ("" if after[:1] in ("", " ", ",", ".", ":", ";") else " ") + after
    return text


def _cut(text: str, limit: int) -> str:
    """`text` cut at the last word boundary before `limit`, marked with an ellipsis."""
    room = text[:limit - 3]
    space = room.rfind(" ")
    return (room[:space] if space > limit // 2 else room).rstrip(" :;,") + "..."


class Teller:
    """Texts for the terminal: shortened (`brief`) unless `verbose`, remembering whether
    any was, so that the report can say where the whole texts are."""

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose
        self.shortened = False

    def __call__(self, text: str, limit: int = LIMIT) -> str:
        """`text` as the terminal shows it (`limit`: for a label longer than 30)."""
        if self.verbose:
            return text
        short = brief(text, limit)
        self.shortened = self.shortened or short != " ".join(text.split())
        return short

    def hint(self) -> str:
        """A line saying that texts were shortened, and where they are whole; '' if none was."""
        return ("notes, flags and warnings are shortened to two lines: --verbose prints them "
                "whole, and the --json document keeps them") if self.shortened else ""
