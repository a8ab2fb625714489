"""Summaries and the story so far (docs/manuscript.md, "Summaries"): files in `.writenow/summaries/` that
the writer or the app's model writes; membank stores them (`summary:put`), lists them in story order with
their staleness (`summary:list`), and folds them into `context_rules.recap`. A summary is stale when the
text it summarises no longer hashes to its `sourceHash`. Nothing after a position is ever used."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import yaml

from ...files.conflicts import LEFT_OUT, MERGE_CONFLICT, conflict_line
from ...files.frontmatter import load_yaml
from ...files.reader import Unreadable, read_regular
from ...files.records import ERROR, WARNING
from ...files.write import atomic_write, check_inside
from ...kernel import errors
from ...kernel.errors import MembankError
from ...kernel.paths import document_path
from ...kernel.text import estimate_tokens
from ..contract import Bank
from ..story.manuscript import read_document
from ..story.order import END_OF_DOCUMENT, StoryOrder, split
from ..story.positions import story_order
from . import store

FOLDER = "summaries"
LEVELS = ("scene", "chapter", "arc")
MAX_SUMMARY_BYTES = 512 * 1024  # summary:put's largest text (100,000 code points) must read back
MAX_NAME_BYTES = 120  # a summary file's name (the file system allows 255 bytes)
_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n?(.*)\Z", re.S)


@dataclass(frozen=True)
class Summary:
    of: str
    level: str
    text: str
    source: str  # .writenow/summaries/…
    source_hash: str | None
    by: str | None

    @property
    def span(self) -> tuple[str, str]:
        """(first, last) position the summary covers (an arc `a..b`; else its `of` twice)."""
        first, sep, last = self.of.partition("..")
        return (first.strip(), last.strip()) if sep else (self.of, self.of)


def _folder(bank: Bank) -> Path:
    return bank.project.path / FOLDER


def read_all(bank: Bank, conflicted: list[tuple[str, int]] | None = None) -> list[Summary]:
    """Every summary file, in no order; a file that cannot be read or has no `of` is left out, and so is
    one holding git conflict markers (files.md, Git: its source and marker line go into `conflicted`)."""
    folder = _folder(bank)
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in sorted(filenames):
            if not name.endswith(".md") or name.startswith("."):
                continue
            path = Path(dirpath) / name
            try:
                data, _ = read_regular(path, MAX_SUMMARY_BYTES, follow_links=False)
                text = data.decode("utf-8").lstrip("\ufeff")
                if (marker := conflict_line(text)) is not None:
                    if conflicted is not None:
                        conflicted.append((f".writenow/{path.relative_to(bank.project.path).as_posix()}", marker))
                    continue
                got = _parse(text)
            except (OSError, Unreadable, UnicodeDecodeError, ValueError):
                continue
            if got is None:
                continue
            meta, body = got
            level = str(meta.get("level") or "chapter")
            out.append(Summary(str(meta["of"]).strip(), level if level in LEVELS else "chapter", body.strip(),
                               f".writenow/{path.relative_to(bank.project.path).as_posix()}",
                               str(meta["sourceHash"]) if meta.get("sourceHash") else None,
                               str(meta["by"]) if meta.get("by") else None))
    return out


def _parse(text: str) -> tuple[dict[str, Any], str] | None:
    m = _FRONT.match(text.replace("\r\n", "\n"))
    if m is None:
        return None
    meta = load_yaml(m.group(1))
    if not isinstance(meta, dict) or not meta.get("of"):
        return None
    return meta, m.group(2)


def source_text(bank: Bank, order: StoryOrder, of: str) -> str | None:
    """The text a summary of `of` summarises: a document's, a scene's passages, or an arc's documents."""
    first, sep, last = of.partition("..")
    if sep:
        lo, hi = order.rank(first.strip())[0], order.rank(last.strip())[0]
        docs = [d for d in order.positions if lo <= order.rank(d)[0] <= hi]
        parts = [read_document(bank.root, d) for d in docs]
        return "\n".join(p for p in parts if p is not None)
    doc, scene = order.locate(of)
    if scene is None:
        return read_document(bank.root, doc)
    number = order.scene_number(doc, scene)
    rows = bank.index.db.execute("SELECT text FROM manuscript_passages WHERE document = ? AND scene_no = ?"
                                 " ORDER BY ordinal", (doc, number or -1)).fetchall()
    return "\n\n".join(t for (t,) in rows) if rows else None


def text_hash(text: str | None) -> str | None:
    """`sha256:` of the text with its line ends as LF: a checkout giving a chapter CRLF (git for Windows,
    `core.autocrlf`) makes no summary stale."""
    return None if text is None else _sha256(text.replace("\r\n", "\n").replace("\r", "\n"))


def _sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _changed(source_hash: str, text: str | None) -> bool:
    """Whether `text` no longer hashes to `source_hash`: as membank hashes it, or as written (an app's hash)."""
    return text is None or source_hash not in (text_hash(text), _sha256(text))


def _stale(bank: Bank, order: StoryOrder, s: Summary) -> bool:
    """Whether the summarised text changed; kept per summary while the manuscript's passages and the story
    order hold (every prompt with `recap` asks about the same summaries)."""
    memo = bank.memo.setdefault("manuscript.stale", {})
    key = (s.of, s.source_hash, store.generation(bank.index), order.positions)
    found = memo.get(key)
    if found is None:
        try:
            found = s.source_hash is not None and _changed(s.source_hash, source_text(bank, order, s.of))
        except MembankError:
            found = True
        if len(memo) >= 4096:
            memo.clear()
        memo[key] = found
    return found  # type: ignore[no-any-return]


def summaries(bank: Bank, now: str | None = None) -> list[Summary]:
    """`read_all`, read again only when the folder's names, sizes or mtimes moved (`now`: its stamp, when
    the caller has it)."""
    memo = bank.memo.setdefault("manuscript.summaries", {})
    now = stamp(bank) if now is None else now
    made = memo.get("all")
    if made is None or made[0] != now:
        made = memo["all"] = (now, read_all(bank))
    return list(made[1])


def _key(order: StoryOrder, s: Summary) -> tuple[Any, ...]:
    """Story order by where a summary ends (a whole document after each of its scenes)."""
    first, last = s.span
    end = order.rank(last) if order.locate(last)[1] is not None else (order.rank(last)[0], END_OF_DOCUMENT + 1)
    return (*end, LEVELS.index(s.level), *order.rank(first), s.of)


def before_position(order: StoryOrder, s: Summary, position: str | None) -> bool:
    """Whether everything the summary covers lies strictly before `position` (a document alone: its start)."""
    if position is None:
        return True
    for end in s.span:  # both ends: an arc written backwards (`ch09..ch01`) still ends at ch09
        if order.locate(end)[1] is None:  # a whole document (whatever `level` says) ends after each of its scenes
            if not order.rank(end)[0] < order.rank(position)[0]:
                return False
        elif not order.rank(end) < order.rank(position):
            return False
    return True


def item(bank: Bank, order: StoryOrder, s: Summary) -> dict[str, Any]:
    return {"of": s.of, "level": s.level, "text": s.text, "source": s.source, "sourceHash": s.source_hash,
            "by": s.by, "stale": _stale(bank, order, s)}


def list_(bank: Bank, before: str | None = None) -> dict[str, Any]:
    order = story_order(bank)
    if before is not None and not order.knows(before):
        raise store.unknown_position("before", before)
    found = [s for s in summaries(bank) if before_position(order, s, before)]
    return {"items": [item(bank, order, s) for s in sorted(found, key=lambda s: _key(order, s))]}


def put(bank: Bank, of: str, level: str, text: str, source_hash: str | None = None,
        by: str | None = None) -> dict[str, Any]:
    """Write or replace the summary file for `of` (`sourceHash` computed when omitted)."""
    if level not in LEVELS:
        raise errors.invalid("level", f"`level` must be one of {', '.join(LEVELS)}")
    parts = [p.strip() for p in of.split("..")]
    if len(parts) > 2 or (len(parts) == 2) != (level == "arc"):
        raise errors.invalid("of", "an arc summary names its range (`chapters/ch01.md..chapters/ch10.md`); "
                             "a scene or chapter summary names one position")
    for p in parts:
        document_path(split(p)[0], "of")
    of = "..".join(parts)
    with bank.write_lock:
        order = story_order(bank)
        if source_hash is None:
            source_hash = text_hash(source_text(bank, order, of))
        existing = [s for s in read_all(bank) if s.of == of]
        folder = _folder(bank)
        path = bank.project.path / existing[0].source.removeprefix(".writenow/") if existing else \
            folder / file_name(of)
        meta = {"of": of, "level": level, **({"sourceHash": source_hash} if source_hash else {}),
                **({"by": by} if by else {})}
        data = ("---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n" + text.strip() + "\n")
        check_inside(bank.project.path, path, lambda rel: f".writenow/{rel}")
        atomic_write(path, data.encode("utf-8"))
        check(bank, True)
        summary = Summary(of, level, text.strip(), f".writenow/{path.relative_to(bank.project.path).as_posix()}",
                          source_hash, by)
        return item(bank, order, summary)


def file_name(of: str) -> str:
    """The summary file's name for `of`: its path with `/` and other punctuation as `_`, never dot-named
    (a hidden file is never read back), never longer than MAX_NAME_BYTES (a hash keeps it unique)."""
    stem = re.sub(r"[^\w.\-]+", "_", of.replace("..", "~")).strip("_.")
    if not stem or len(stem.encode("utf-8")) > MAX_NAME_BYTES:
        digest = hashlib.sha256(of.encode("utf-8")).hexdigest()[:12]
        head = stem.encode("utf-8")[:MAX_NAME_BYTES - 16].decode("utf-8", "ignore").rstrip("_.")
        stem = f"{head}_{digest}" if head else f"summary_{digest}"
    return stem + ".md"


RECAPS_KEPT = 64  # recaps kept (a session asks for the same few positions again and again)


def recap(bank: Bank, position: str, tokens: int) -> list[tuple[Summary, bool]]:
    """The story so far before `position` within `tokens`: the newest summaries first in detail (a scene's,
    then a chapter's), older ones folded into an arc that covers them where one exists, cut from the oldest
    end; returned oldest first, each with whether it is stale. Kept while the summaries folder, the story
    order and the manuscript's passages hold (what the choice and the staleness depend on)."""
    return list(kept_recap(bank, position, tokens))


def kept_recap(bank: Bank, position: str, tokens: int) -> tuple[tuple[Summary, bool], ...]:
    """`recap` as kept: the same tuple again while what it depends on holds (so what a caller makes of it
    can be kept with it, known by identity). Read-only."""
    order = story_order(bank)
    if not order.knows(position):
        return ()  # a document outside the story order: after every chapter, so the recap tells nothing
    now = stamp(bank)
    memo = bank.memo.setdefault("manuscript.recap", {})
    key = (now, order, position, tokens, store.generation(bank.index))
    made = memo.get(key)
    if made is None:
        made = tuple(_recap(bank, order, position, tokens, summaries(bank, now)))
        if len(memo) >= RECAPS_KEPT:
            memo.clear()
        memo[key] = made
    return made  # type: ignore[no-any-return]


def _recap(bank: Bank, order: StoryOrder, position: str, tokens: int, every: list[Summary]
           ) -> list[tuple[Summary, bool]]:
    found = [s for s in every if before_position(order, s, position)]
    detail = sorted((s for s in found if s.level != "arc"), key=lambda s: _key(order, s), reverse=True)
    arcs = sorted((s for s in found if s.level == "arc"), key=lambda s: _key(order, s), reverse=True)
    chosen: list[Summary] = []
    covered: set[int] = set()  # document ranks an arc already tells
    chapters = {order.locate(s.of)[0] for s in detail if s.level == "chapter"}
    here = order.locate(position)[0]
    used = 0
    for s in detail:
        doc = order.locate(s.of)[0]
        if order.rank(doc)[0] in covered or (s.level == "scene" and doc in chapters and doc != here):
            continue  # told by an arc already, or an earlier chapter told whole
        cost = estimate_tokens(s.text) + 8
        if used + cost > tokens:
            arc = next((a for a in arcs if order.rank(a.span[0])[0] <= order.rank(doc)[0] <= order.rank(a.span[1])[0]
                        and a not in chosen), None)
            if arc is None or used + estimate_tokens(arc.text) + 8 > tokens:
                break
            chosen.append(arc)
            used += estimate_tokens(arc.text) + 8
            covered |= set(range(order.rank(arc.span[0])[0], order.rank(arc.span[1])[0] + 1))
            continue
        chosen.append(s)
        used += cost
    chosen.reverse()
    return [(s, _stale(bank, order, s)) for s in chosen]


def stamp(bank: Bank) -> str:
    """What the summaries folder holds, by name, size and mtime: a sync re-checks staleness when it moves. The
    digest is made again only when a name, size or mtime moved (asked on every prompt with `recap`)."""
    parts: list[tuple[str, str, int, int]] = []
    _walk(str(_folder(bank)), parts)
    seen = tuple(parts)
    memo = bank.memo.setdefault("manuscript.summaries", {})
    kept = memo.get("stamp")
    if kept is not None and kept[0] == seen:
        return kept[1]  # type: ignore[no-any-return]
    digest = hashlib.blake2b("\n".join(f"{top}/{name}:{size}:{mtime}" for top, name, size, mtime in seen)
                             .encode("utf-8"), digest_size=16).hexdigest()
    memo["stamp"] = (seen, digest)  # one assignment: a reading thread sees the pair whole
    return digest


def _walk(top: str, parts: list[tuple[str, str, int, int]]) -> None:
    """`os.walk`'s files in name order, each folder's before its subfolders' (hidden folders and links to
    folders not entered), as (folder, name, size, mtime) (asked on every prompt with `recap`: one `scandir` a
    folder)."""
    try:
        with os.scandir(top) as it:
            entries = sorted(it, key=_NAME)
    except OSError:
        return
    folders = []
    for e in entries:
        try:
            is_dir = e.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            if not e.name.startswith("."):
                folders.append(e)
            continue
        try:
            st = e.stat()
        except OSError:
            continue
        parts.append((top, e.name, st.st_size, st.st_mtime_ns))
    for d in folders:
        if not d.is_symlink():
            _walk(os.path.join(top, d.name), parts)


_NAME = attrgetter("name")


def stale_ones(bank: Bank) -> list[Summary]:
    order = story_order(bank)
    return [s for s in summaries(bank) if _stale(bank, order, s)]


SUMMARY_ORIGIN = "summary"  # the diagnostics' origin
CHECKED = "manuscript.summaries"  # meta: the summaries folder's stamp when staleness was last checked


def check(bank: Bank, changed: bool) -> None:
    """A warning on each stale summary (doctor), re-checked when a document or the summaries folder moved."""
    index = bank.index
    now = stamp(bank)
    if not changed and index.get_meta(CHECKED) == now:
        return
    with index.transaction():
        index.db.execute("DELETE FROM diagnostics WHERE origin = ?", (SUMMARY_ORIGIN,))
        index.db.executemany(
            "INSERT INTO diagnostics(source, origin, line, severity, message) VALUES (?, ?, 1, ?, ?)",
            [(s.source, SUMMARY_ORIGIN, WARNING, f"the summary of {s.of} is stale: its text changed since it was "
              "written (write it again with summary:put; the recap marks it)") for s in stale_ones(bank)])
        conflicted: list[tuple[str, int]] = []
        read_all(bank, conflicted)
        index.db.executemany("INSERT INTO diagnostics(source, origin, line, severity, message, code) VALUES "
                             "(?, ?, ?, ?, ?, ?)", [(source, SUMMARY_ORIGIN, line, ERROR, LEFT_OUT, MERGE_CONFLICT)
                                                    for source, line in conflicted])
        index.set_meta(CHECKED, now)
