"""Turning one file's bytes into a record and the diagnostics a writer should see."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import Any, Callable

from ..kernel import regexcost
from .frontmatter import Document, FrontMatterError, decode, iso, jsonable, split
from .conflicts import LEFT_OUT, MERGE_CONFLICT, conflict_line
from .records import ERROR, WARNING, Card, Diagnostic, Memory, Parsed, Skill
from .skillrules import check_rules

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
TYPE_RE = re.compile(r"[a-z][a-z0-9_-]*")
FOLDER_TYPES = {"preference": "preference", "preferences": "preference", "fact": "fact", "facts": "fact",
                "note": "note", "notes": "note"}
WORLD_KINDS = ("place", "rule", "item", "faction", "lore", "style", "other")
INCLUDE = ("always", "auto", "never")
LOGIC = ("and_any", "and_all", "not_any", "not_all")

MEMORY_KEYS = ("id", "type", "scope", "document", "origin", "confidence", "tags", "evidence", "created",
               "updated", "revision", "deleted_at", "pinned", "since", "until")
CARD_KEYS = ("id", "name", "kind", "aliases", "keys", "include", "summary", "state", "state_at", "relations",
             "progressions", "deleted_at", "updated", "created", "exclude_keys", "secondary_keys", "logic",
             "introduced", "match", "min_score", "minScore")
MATCH = ("words", "meaning")  # how a card is activated: by its words alone, or by meaning too (context.md)
SKIPPED = "membank skips this file until it is fixed"


class _Reader:
    """Reads typed fields from a document, collecting a diagnostic per bad value."""

    def __init__(self, doc: Document, source: str):
        self.doc = doc
        self.source = source
        self.diagnostics: list[Diagnostic] = []

    def report(self, key: str | None, message: str, severity: str = ERROR) -> None:
        line = self.doc.key_line(key) if key else 1
        self.diagnostics.append(Diagnostic(self.source, line, severity, message))

    def get(self, key: str, check: Callable[[Any], Any], default: Any, expected: str,
            instead: str | None = None) -> Any:
        """The value of `key` passed through `check`; `check` returns None to reject it.

        `instead` says what membank does with a wrong value (default: "using <default> instead")."""
        if key not in self.doc.meta or self.doc.meta[key] is None:
            return default
        value = check(self.doc.meta[key])
        if value is None:
            shown = _show(self.doc.meta[key])
            instead = instead or f"using {_show(default)} instead"
            self.report(key, f"`{key}` should be {expected}, not {shown}; {instead}")
            return default
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        return self.get(key, _as_text, default, "text")

    def words(self, key: str) -> tuple[str, ...]:
        value = self.doc.meta.get(key)
        if isinstance(value, str):
            self.report(key, f"`{key}` should be a list, like [{value}]; membank reads it as a list of one", WARNING)
            return (value,)
        if isinstance(value, list):  # keep the good items; name each bad one, and how to write it
            kept, bad = [], 0
            for number, item in enumerate(value, start=1):
                if isinstance(item, (list, dict)) or item is None:
                    bad += 1
                    if bad <= BAD_WORDS_NAMED:  # a list of 5,000 bad items is one file's problem, not 5,000
                        self.report(key, _bad_word(key, number, item), WARNING)
                else:
                    kept.append(_plain(item))  # `true` is the word true, never Python's True
            if bad > BAD_WORDS_NAMED:
                self.report(key, f"`{key}` has {bad - BAD_WORDS_NAMED:,} more items that are not words; they are "
                            "left out, the other items are kept", WARNING)
            return tuple(kept)
        return self.get(key, _as_words, (), "a list of words, like [style, tone]", "it is ignored")

    def time(self, key: str, instead: str = "it is ignored") -> str | None:
        value = self.doc.meta.get(key)
        if isinstance(value, dt.datetime) and value.tzinfo is not None and iso(value) is None:
            self.report(key, f"`{key}` is {value.isoformat()}, which falls outside the years 1 to 9999 once its "
                        f"time zone is applied (membank keeps times in UTC); {instead}")
            return None
        return self.get(key, iso, None, "a date and time like 2026-11-21T10:00:00Z", instead)

    def mapping_list(self, key: str, example: str) -> tuple[dict[str, Any], ...]:
        return self.get(key, _as_mapping_list, (), f"a list of entries, each like {example}", "it is ignored")

    def metadata(self, known: tuple[str, ...]) -> dict[str, Any]:
        return {str(k): jsonable(v) for k, v in self.doc.meta.items() if k not in known}


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        if _leaves_project(value) and re.search(r"[/\\:]|\.\.", value):  # never echo a path out of the project
            return "a path outside the project"
        return f'"{value}"' if len(value) <= 40 else f'"{value[:37]}…"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "a set of `key: value` pairs" if value else "an empty set of `key: value` pairs"
    return str(value)


def _leaves_project(path: str) -> bool:
    path = path.strip().replace("\\", "/")
    return path.startswith(("/", "~")) or bool(re.match(r"^[A-Za-z]:", path)) or ".." in path.split("/")


def _as_text(value: Any) -> str | None:
    if isinstance(value, bool) or isinstance(value, (list, dict)):
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        return iso(value)
    return str(value)


BAD_WORDS_NAMED = 3  # bad items of one list named one by one; the rest are counted in one more diagnostic


def _bad_word(key: str, number: int, item: Any) -> str:
    """What is wrong with item `number` of a list of words, and how to write it so it stays one word."""
    left = "it is left out, the other items are kept"
    if item is None:
        return f"`{key}` item {number} is empty; {left}"
    if isinstance(item, dict) and len(item) == 1:
        (k, v), = item.items()
        written = f"{_plain(k)}: {_plain(v)}" if v is not None else f"{_plain(k)}:"
        if len(written) > 40:
            written = written[:39] + "…"
        return (f"`{key}` item {number}, `{written}`, is read as a `key: value` pair because of its `: `; "
                f'put it in quotes ("{written}") to keep it as one word; {left}')
    shown = "a list" if isinstance(item, list) else "a set of `key: value` pairs"
    return f"`{key}` item {number} is {shown}, not a word; put it in quotes to keep it as one word; {left}"


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if not isinstance(value, (list, dict)) else _show(value)


def _as_words(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or any(isinstance(v, (list, dict)) or v is None for v in value):
        return None
    return tuple(map(_plain, value))


def _as_mapping_list(value: Any) -> tuple[dict[str, Any], ...] | None:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        return None
    return tuple(jsonable(v) for v in value)


def _as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def as_confidence(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return None
    return float(value)


MAX_REVISION = 2 ** 63 - 2  # membank adds one on a write; SQLite, JSON readers and expectedRevision hold 2^63 - 1


def _as_revision(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REVISION:
        return None
    return value


def _as_evidence(value: Any) -> tuple[Any, ...] | None:
    return tuple(jsonable(value)) if isinstance(value, list) else None


def _choice(options: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda value: value if isinstance(value, str) and value in options else None


def _as_doc_path(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    path = value.strip().replace("\\", "/")
    if _leaves_project(path):
        return None
    return path


_LATE_FRONT_MATTER = re.compile(r"(?:[ \t]*\n)+(---)[ \t]*\n")


def _read_document(data: bytes, source: str) -> tuple[Document | None, list[Diagnostic]]:
    try:
        text = decode(data)
    except FrontMatterError as e:
        return None, [Diagnostic(source, e.line, ERROR, f"{e.message}; {SKIPPED}")]
    marker = conflict_line(text)
    if marker is not None:
        return None, [Diagnostic(source, marker, ERROR, LEFT_OUT, MERGE_CONFLICT)]
    try:
        doc = split(text)
    except FrontMatterError as e:
        return None, [Diagnostic(source, e.line, ERROR, f"{e.message}; {SKIPPED}")]
    late = _LATE_FRONT_MATTER.match(text) if not doc.meta and not doc.fm_text else None
    if late is not None:
        line = text.count("\n", 0, late.start(1)) + 1
        return doc, [Diagnostic(source, line, WARNING, "the front matter must start on the very first line; because "
                                "of the blank line above it, this --- and everything after it is read as text")]
    return doc, []


_NOT_ID = re.compile(r"[^A-Za-z0-9._/-]+")


def path_id(path: str) -> str:
    """The id of a file without `id:`: its path without .md when that is a valid id (`style/short`).
    Otherwise (`notes/my note`, `notes/林默`, a path over 200 characters) a valid id made from it:
    every run of other characters becomes -, and 6 hex digits of the path's hash keep names that
    would otherwise meet apart (`notes/my-note-1f2e3d`). The same path always gives the same id."""
    if ID_RE.fullmatch(path):
        return path
    digest = hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=3).hexdigest()
    slug = _NOT_ID.sub("-", path).lstrip("-._/")[:200 - 1 - len(digest)].rstrip("-")
    return f"{slug}{'' if not slug or slug.endswith('/') else '-'}{digest}"  # notes/林默 -> notes/657106


def _check_id(reader: _Reader, fallback: str) -> str | None:
    raw = reader.doc.meta.get("id")
    if raw is None:
        return path_id(fallback)
    if isinstance(raw, (bool, list, dict)) or not ID_RE.fullmatch(str(raw)):
        reader.report("id", f"`id` should use only letters, digits and . _ / -, starting with a letter or digit, "
                      f"not {_show(raw)}; {SKIPPED}")
        return None
    return str(raw)


def _id_line(doc: Document) -> int:
    return doc.key_line("id") if doc.meta.get("id") is not None else 1


def mtime_iso(mtime_ns: int) -> str:
    try:
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=mtime_ns // 1000)
    except OverflowError:  # a file dated past year 9999 (or before year 1) by a broken clock or tool
        return "1970-01-01T00:00:00Z"
    return iso(moment) or "1970-01-01T00:00:00Z"


def parse_memory(data: bytes, source: str, rel: str, bank: str, mtime_ns: int) -> Parsed:
    """A memory file; `rel` is the path under memories/, `bank` is "project" or "global"."""
    doc, diagnostics = _read_document(data, source)
    if doc is None:
        return Parsed(None, tuple(diagnostics))
    r = _Reader(doc, source)
    r.diagnostics.extend(diagnostics)
    fallback_id = rel[:-3] if rel.endswith(".md") else rel
    memory_id = _check_id(r, fallback_id)

    folder = rel.split("/", 1)[0] if "/" in rel else ""
    default_type = FOLDER_TYPES.get(folder, "note")
    mtype = r.get("type", lambda v: v.strip().lower() if isinstance(v, str) and TYPE_RE.fullmatch(v.strip().lower()) else None,
                  default_type, "one lower-case word such as preference, fact or note")

    document = r.get("document", _as_doc_path, None, "a path inside the project, like chapters/ch05.md",
                     "the memory is not tied to any document")
    if bank == "global":
        scope = "global"
        if doc.meta.get("scope") not in (None, "global", "project"):
            r.report("scope", "memories in the global bank are always global; `scope` is ignored here", WARNING)
    else:
        scope = r.get("scope", _choice(("project", "document")), "project", "project or document")
        if scope == "document" and document is None:
            r.report("scope", "`scope: document` needs a `document:` path (like chapters/ch05.md); "
                     "this memory is not injected until it has one")

    created = r.time("created")
    updated = r.time("updated", "it is ignored and the `created` time (or the file's date) is used") or created \
        or mtime_iso(mtime_ns)
    content = doc.body
    if not content:
        r.report(None, "the memory has no text below the front matter, so it is never injected", WARNING)
    if memory_id is None:
        return Parsed(None, tuple(r.diagnostics))
    memory = Memory(
        id=memory_id,
        type=mtype,
        scope=scope,
        document=document,
        origin=r.get("origin", _choice(("manual", "learned")), "manual", "manual or learned"),
        confidence=r.get("confidence", as_confidence, 1.0, "a number from 0 to 1"),
        tags=r.words("tags"),
        evidence=r.get("evidence", _as_evidence, (), "a list, like [run-0214]", "it is ignored"),
        metadata=r.metadata(MEMORY_KEYS),
        pinned=r.get("pinned", _as_bool, False, "true or false"),
        revision=r.get("revision", _as_revision, 1, "a whole number from 1 up to 9,223,372,036,854,775,806"),
        created=created,
        updated=updated,
        deleted_at=r.time("deleted_at", "it is ignored, so the memory is not deleted"),
        content=content,
        source=source,
        since=_position(r, "since"),
        until=_position(r, "until"),
    )
    return Parsed(memory, tuple(r.diagnostics), _id_line(doc))


def _position(r: _Reader, key: str) -> str | None:
    """A story position (story.md): a manuscript path inside the project."""
    return r.get(key, _as_doc_path, None, "a path inside the project, like chapters/ch05.md", "it is ignored")


def parse_card(data: bytes, source: str, section: str, rel: str, mtime_ns: int) -> Parsed:
    """A character card (`section` "characters") or world entry ("world"); `rel` is under the section."""
    doc, diagnostics = _read_document(data, source)
    if doc is None:
        return Parsed(None, tuple(diagnostics))
    r = _Reader(doc, source)
    r.diagnostics.extend(diagnostics)
    card_id = _check_id(r, f"{section}/{rel[:-3] if rel.endswith('.md') else rel}")
    raw_name = doc.meta.get("name")
    name = _as_text(raw_name) if raw_name is not None else None
    if name is None or not name.strip():
        wrong = f" (text, not {_show(raw_name)})" if raw_name is not None and name is None else ""
        r.report("name" if "name" in doc.meta else None, f"a card needs a `name:`{wrong}; {SKIPPED}")
    if section == "characters":
        kind = r.get("kind", _as_text, "character", "text")
        if kind != "character":
            r.report("kind", f"files in characters/ are characters; `kind: {kind}` is kept as written", WARNING)
    else:
        kind = r.get("kind", _as_text, "other", "text")
        if kind not in WORLD_KINDS:
            r.report("kind", f"`kind: {kind}` is not one of {', '.join(WORLD_KINDS)}; it is kept as written", WARNING)
    if card_id is None or name is None or not name.strip():
        return Parsed(None, tuple(r.diagnostics))
    relations = r.mapping_list("relations", "{to: Maren Voss, type: ally}")
    progressions = r.mapping_list("progressions", "{at: chapters/ch05.md, state: wounded}")
    _check_story_items(r, relations, progressions)
    card = Card(
        id=card_id,
        section=section,
        kind=kind,
        name=name.strip(),
        aliases=r.words("aliases"),
        keys=r.words("keys"),
        include=r.get("include", _choice(INCLUDE), "auto", "always, auto or never"),
        summary=r.text("summary", "") or "",
        state=r.text("state"),
        state_at=r.text("state_at"),
        relations=relations,
        progressions=progressions,
        metadata=r.metadata(CARD_KEYS),
        deleted_at=r.time("deleted_at", "it is ignored, so the card is not deleted"),
        updated=r.time("updated") or r.time("created") or mtime_iso(mtime_ns),
        content=doc.body,
        source=source,
        exclude_keys=r.words("exclude_keys"),
        secondary_keys=r.words("secondary_keys"),
        logic=r.get("logic", _choice(LOGIC), "and_any", "one of " + ", ".join(LOGIC)),
        introduced=_position(r, "introduced"),
        match=r.get("match", _choice(MATCH), None, "words or meaning", "it is ignored"),
        min_score=r.get("min_score", as_confidence, None, "a number from 0 to 1", "it is ignored")
        if "min_score" in doc.meta else r.get("minScore", as_confidence, None, "a number from 0 to 1", "it is ignored"),
        lines={"name": doc.key_line("name"), "summary": doc.key_line("summary"),
               "state": doc.key_line("state"),
               **({"include": doc.key_line("include")} if "include" in doc.meta else {}),
               "introduced": doc.key_line("introduced"), "relations": list(doc.item_lines("relations")),
               "progressions": list(doc.item_lines("progressions")), "body": doc.body_line},
    )
    _check_regex_keys(r, card)
    return Parsed(card, tuple(r.diagnostics), _id_line(doc))


def _check_regex_keys(r: _Reader, card: Card) -> None:
    """A `/pattern/` key over kernel/regexcost.py's bounds is reported where it is written; matching never
    compiles it (a 26-character key can cost a gigabyte to compile)."""
    for field, keys in (("keys", card.keys), ("aliases", card.aliases), ("exclude_keys", card.exclude_keys),
                        ("secondary_keys", card.secondary_keys)):
        for n, key in enumerate(keys):
            why = regexcost.refusal(key) if key.strip().startswith("/") else None
            if why:
                lines = r.doc.item_lines(field)  # only then: it composes the YAML's nodes
                line = lines[n] if n < len(lines) else r.doc.key_line(field)
                shown = key if len(key) <= 60 else key[:60] + "…"
                r.diagnostics.append(Diagnostic(r.source, line, WARNING, f"the key {shown} in `{field}` is a regular "
                                                f"expression membank will not compile: {why}; it is skipped"))


def _check_story_items(r: _Reader, relations: tuple[dict[str, Any], ...],
                       progressions: tuple[dict[str, Any], ...]) -> None:
    """Story items membank cannot use are reported where they are written (they are left out)."""
    for line, item in zip(r.doc.item_lines("progressions"), progressions):
        if _as_doc_path(item.get("at")) is None:
            r.diagnostics.append(Diagnostic(r.source, line, WARNING, "a progression needs `at:` with a manuscript "
                                            "path, like {at: chapters/ch05.md, state: wounded}; it is ignored"))
        elif item.get("set") is not None and not isinstance(item.get("set"), dict):
            r.diagnostics.append(Diagnostic(r.source, line, WARNING, "a progression's `set:` should be `key: value` "
                                            "pairs, like {location: the cliffs}; it is ignored"))
    for line, item in zip(r.doc.item_lines("relations"), relations):
        if not isinstance(item.get("to"), str) or not str(item.get("to")).strip():
            r.diagnostics.append(Diagnostic(r.source, line, WARNING, "a relation needs `to:` naming a card, like "
                                            "{to: Maren Voss, type: ally}; it is ignored"))


def parse_skill(data: bytes, source: str, rel: str) -> Parsed:
    doc, diagnostics = _read_document(data, source)
    if doc is None:
        return Parsed(None, tuple(diagnostics))
    r = _Reader(doc, source)
    r.diagnostics.extend(diagnostics)
    skill_id = _check_id(r, rel[:-3] if rel.endswith(".md") else rel)
    raw = doc.meta.get("context_rules")
    rules = jsonable(raw) if raw is not None else {}
    if isinstance(rules, dict):  # `yes`, `on`, `no`: YAML 1.1 booleans, but a rule takes true or false only
        written = doc.raw_scalars("context_rules")
        rules = {k: written.get(k, str(v)) if isinstance(v, bool) and written.get(k, "").lower() not in ("true", "false")
                 else v for k, v in rules.items()}
    lines = {str(k): doc.nested_key_line("context_rules", str(k)) for k in rules} if isinstance(rules, dict) else {}
    for problem in check_rules(rules)[1]:
        line = lines.get(problem.key, doc.key_line("context_rules")) if problem.key else doc.key_line("context_rules")
        r.diagnostics.append(Diagnostic(source, line, ERROR, problem.message + "; using this skill fails until it is fixed"))
    if skill_id is None:
        return Parsed(None, tuple(r.diagnostics))
    skill = Skill(id=skill_id, name=r.text("name", skill_id) or skill_id, context_rules=rules,
                  content=doc.body, source=source, description=r.text("description", "") or "",
                  rule_lines=lines)
    return Parsed(skill, tuple(r.diagnostics), _id_line(doc))
