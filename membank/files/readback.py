"""Validate first, write second: the bytes membank is about to write, read back by its own reader.

Nothing membank writes may be a file its reader refuses (over 1 MiB, a NUL byte, text that is not
UTF-8, YAML it cannot load): such a write is refused before any file is touched, naming the field
the caller can change."""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..kernel.errors import MembankError, invalid
from .frontmatter import MAX_FILE_BYTES
from .parse import parse_memory
from .records import ERROR


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, Mapping):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_surrogate(v) for v in value)
    return False


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False, default=str))


def check_unicode(fields: Mapping[str, Any]) -> None:
    """INVALID_ARGUMENT naming the first field holding text UTF-8 cannot carry (a lone surrogate,
    which JSON's `\\ud800` escapes let through)."""
    field = next((name for name, value in fields.items() if _has_surrogate(value)), None)
    if field is not None:
        raise invalid(field, f"`{field.rsplit('.', 1)[-1]}` holds text that is not valid Unicode (a lone "
                      "surrogate); nothing was written")


def unwritable(fields: Mapping[str, Any], message: str) -> MembankError:
    """INVALID_ARGUMENT for values the renderer cannot write so that they read back the same."""
    return MembankError("INVALID_ARGUMENT", f"membank could not write these values so that they read back the "
                        f"same, so nothing was written: {message}", {"field": _likely(fields)})


def _likely(fields: Mapping[str, Any]) -> str:
    """The field most likely at fault when the reader's complaint has no field: a front-matter one."""
    content = _content(fields)
    others = [name for name, value in fields.items() if name != content and value is not None]
    return others[0] if others else content


def _content(fields: Mapping[str, Any]) -> str:
    return next((name for name in fields if name.rsplit(".", 1)[-1] == "content"), "content")


def check_memory(data: bytes, fields: Mapping[str, Any], rel: str, bank: str, before: bytes | None = None) -> None:
    """Refuse (INVALID_ARGUMENT) memory file bytes membank's reader would not read, or would read with
    an error that `before` (the file being rewritten) did not already have. `fields` maps each
    caller-facing field name (`content`, `patch.tags` …) to the value it brought."""
    content = _content(fields)
    if len(data) > MAX_FILE_BYTES:
        field = max(fields, key=lambda name: _size(fields[name]), default=content)
        raise invalid(field, f"`{field.rsplit('.', 1)[-1]}` would make the memory file larger than 1 MiB, the most "
                      "membank reads; shorten it (nothing was written)")
    if b"\x00" in data:  # YAML escapes it in front matter: only the body can carry one
        raise invalid(content, "`content` holds a NUL character, which a text file cannot carry; nothing was written")
    problems = _errors(data, rel, bank)
    if before is not None:
        problems -= _errors(before, rel, bank)
    if problems:
        raise MembankError("INVALID_ARGUMENT", f"membank could not read the file back, so nothing was written: "
                           f"{sorted(problems)[0]}", {"field": _likely(fields)})


def _errors(data: bytes, rel: str, bank: str) -> set[str]:
    parsed = parse_memory(data, "", rel, bank, 0)
    found = {d.message for d in parsed.diagnostics if d.severity == ERROR}
    if parsed.record is None and not found:
        found.add("the file has no usable id")
    return found
