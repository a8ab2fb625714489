"""One Markdown file taken in for the index: read (an ordinary file, capped), hashed and parsed by its
section. This is the per-file work of a sync, kept apart from the index so that a second process can
do it for a large sync (`intakeworker.py`) while the first writes the index."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from ..kernel.text import estimate_tokens, fts_text
from .frontmatter import MAX_FILE_BYTES
from .parse import parse_card, parse_memory, parse_skill
from .reader import Unreadable, content_hash, read_regular
from .records import Card, Memory, Parsed, Record
from .scan import BankRoot, FileStat


@dataclass(frozen=True)
class Prepared:
    """What the index stores of a record besides its columns: the record as the API returns it (JSON),
    its token estimate and its two search texts. Computed where the record was parsed, so a second
    process does it for its share of a large sync."""
    record_json: str
    tokens: int
    fts_body: str
    fts_names: str
    embed: str = ""  # what it is embedded as ("" for a skill: never embedded)


def prepare(record: Record) -> Prepared:
    body, names = _search_fields(record)
    api = record.to_api()
    kind = "memory" if isinstance(record, Memory) else "card" if isinstance(record, Card) else None
    return Prepared(json.dumps(api, ensure_ascii=False, sort_keys=True), estimate_tokens(record.content),
                    fts_text(body), fts_text(names), embed_text(kind, api) if kind is not None else "")


def embed_text(kind: str, record: dict[str, Any]) -> str:
    """What a memory (`kind` "memory") or a card (any other kind) is embedded as, from the record as the
    API gives it: a large sync takes it from `prepare`, a small one from the index's copy of the record."""
    if kind == "memory":
        return str(record["content"])
    parts = [record["name"], *record["aliases"], record["summary"], record.get("state") or "", record["content"]]
    return "\n".join(p for p in parts if p)


def _search_fields(record: Record) -> tuple[str, str]:
    """What full-text search reads of a record: its text, and the words it is known by."""
    if isinstance(record, Memory):
        return record.content, " ".join(record.tags)
    if isinstance(record, Card):
        return " ".join(filter(None, (record.summary, record.state or "", record.content))), \
            " ".join((record.name, *record.aliases, *record.keys))
    return record.content, record.name  # a skill


@dataclass(frozen=True)
class Taken:
    """A file read and parsed: the size and mtime of what was read (not of the earlier stat); not
    parsed (None) when its hash is the one the index already holds."""
    size: int
    mtime_ns: int
    digest: str
    parsed: Parsed | None
    prepared: Prepared | None = None  # of the parsed record, when there is one


# Taken; or why the file is there but cannot be read (plain words); or None when it is gone since the scan
Outcome = Taken | str | None


def parse_file(root: BankRoot, stat: FileStat, data: bytes, mtime_ns: int) -> Parsed:
    """The parser a file's section calls for."""
    rel = stat.rel.split("/", 1)[1]
    if stat.section == "memories":
        return parse_memory(data, stat.source, rel, root.bank, mtime_ns)
    if stat.section in ("characters", "world"):
        return parse_card(data, stat.source, stat.section, rel, mtime_ns)
    return parse_skill(data, stat.source, rel)


def read(root: BankRoot, stat: FileStat, cap: int | None = MAX_FILE_BYTES + 1) -> tuple[bytes, int, int] | str | None:
    """The file's bytes with the size and mtime of what was read; None when it is gone; why it cannot
    be read when it is there but is no ordinary file or refuses. A Markdown file over 1 MiB is refused
    after reading just enough to know (`cap`); the journal is membank's own and read whole (None)."""
    try:
        data, st = read_regular(os.path.join(root.path, stat.rel), cap)  # not root.file(): a Path per file costs ~5 µs
    except (FileNotFoundError, NotADirectoryError):
        return None
    except Unreadable as e:
        return e.message
    return data, st.st_size, st.st_mtime_ns


def take(root: BankRoot, stat: FileStat, known_hash: str | None = None) -> Outcome:
    """One Markdown file (memories, characters, world, skills) read, hashed and parsed; a file whose
    bytes hash to `known_hash` (only its mtime moved) is not parsed again."""
    got = read(root, stat)
    if got is None or isinstance(got, str):
        return got
    data, size, mtime_ns = got
    digest = content_hash(data)
    if digest == known_hash:
        return Taken(size, mtime_ns, digest, None)
    parsed = parse_file(root, stat, data, mtime_ns)
    return Taken(size, mtime_ns, digest, parsed, prepare(parsed.record) if parsed.record is not None else None)
