"""Where the story stands: the story order of a project, kept fresh cheaply, and the positions cards
and memories name (a table the story domain derives from every record as it is indexed)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...files.project import BANK_DIR, read_chapters
from ...files.records import Card, Memory
from ...files.scan import GLOBAL_PREFIX, PROJECT_PREFIX
from ...index import Index
from ...index.schema import DomainSchema, register
from ...kernel import callmemo, errors
from ...kernel.paths import document_path
from ..contract import Bank
from .order import StoryOrder


def _named(record: Any) -> list[tuple[str, str]]:
    """(role, position) for every story position a record names."""
    if isinstance(record, Memory):
        return [(role, p) for role, p in (("since", record.since), ("until", record.until)) if p]
    if not isinstance(record, Card):
        return []
    out = [("introduced", record.introduced)] if record.introduced else []
    if record.state_at:
        out.append(("state_at", record.state_at))
    for item in record.progressions:
        if isinstance(item.get("at"), str):
            out.append(("at", item["at"].strip()))
    for item in record.relations:
        for role in ("since", "until"):
            if isinstance(item.get(role), str):
                out.append((role, item[role].strip()))
    return out


register(DomainSchema(
    "story.positions", 1,
    "CREATE TABLE story_positions(entry INTEGER NOT NULL, role TEXT NOT NULL, position TEXT NOT NULL);"
    " CREATE INDEX story_positions_entry ON story_positions(entry)",
    "DROP TABLE IF EXISTS story_positions",
    derived_from=tuple(f"{prefix}{section}/" for prefix in (PROJECT_PREFIX, GLOBAL_PREFIX)
                       for section in ("memories", "characters", "world")),
    rows=_named,
    insert="INSERT INTO story_positions(entry, role, position) VALUES (?, ?, ?)",
    clear="DELETE FROM story_positions WHERE entry = ?"))

# the scenes of each manuscript document (their labels in order: a heading's text, or `#n`), as the
# manuscript domain cuts them (domains/manuscript/sync.py calls `put_scenes`): what a scene position names
register(DomainSchema(
    "story.scenes", 1,
    "CREATE TABLE story_scenes(document TEXT NOT NULL, scene_no INTEGER NOT NULL, label TEXT NOT NULL,"
    " PRIMARY KEY(document, scene_no))",
    "DROP TABLE IF EXISTS story_scenes"))


def put_scenes(index: Index, document: str, labels: list[str]) -> None:
    """The document's scenes (none: it has no passages, or is gone)."""
    index.db.execute("DELETE FROM story_scenes WHERE document = ?", (document,))
    index.db.executemany("INSERT INTO story_scenes(document, scene_no, label) VALUES (?, ?, ?)",
                         [(document, n, label) for n, label in enumerate(labels, 1)])


def scenes(index: Index) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every document's scene labels in order, by document; kept while the index holds."""
    memo = index.view_memo("story.scenes")
    if memo is not None and "scenes" in memo:
        return memo["scenes"]  # type: ignore[no-any-return]
    by_doc: dict[str, list[str]] = {}
    for doc, label in index.db.execute("SELECT document, label FROM story_scenes ORDER BY document, scene_no"):
        by_doc.setdefault(doc, []).append(label)
    found = tuple((doc, tuple(labels)) for doc, labels in by_doc.items())
    if memo is not None:
        memo["scenes"] = found
    return found


MANUSCRIPT_SUFFIXES = (".md", ".txt")
MAX_MANUSCRIPT_FILES = 20_000  # a walk stops there: a project folder is not a disk
MAX_MANUSCRIPT_FOLDERS = 5_000  # nor there: a project made at `/` or in a home folder walked the whole disk
_SKIP = {"node_modules", "__pycache__"}


@dataclass(frozen=True)
class Walk:
    files: tuple[str, ...]  # project-relative POSIX paths of the manuscript
    stamps: tuple[tuple[str, int], ...]  # every folder walked and its mtime: the walk is fresh while they hold


def walk_manuscript(root: Path) -> Walk:
    """Every `*.md` and `*.txt` outside `.writenow/` and hidden folders (`.git`), in no order; at most
    MAX_MANUSCRIPT_FILES files from MAX_MANUSCRIPT_FOLDERS folders (a book's manuscript is far smaller; a
    larger tree names its chapters in project.yaml)."""
    files: list[str] = []
    stamps: list[tuple[str, int]] = []
    stack = [""]
    while stack and len(files) < MAX_MANUSCRIPT_FILES and len(stamps) < MAX_MANUSCRIPT_FOLDERS:
        rel = stack.pop()
        folder = root / rel if rel else root
        try:
            stamps.append((rel, folder.stat().st_mtime_ns))
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in _SKIP:  # .writenow, .git, editors' folders
                continue
            path = f"{rel}/{name}" if rel else name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)
                elif name.lower().endswith(MANUSCRIPT_SUFFIXES) and (entry.is_file(follow_symlinks=False)
                                                                     or _unreadable(root, path, entry)):
                    files.append(path)
            except OSError:
                continue
    return Walk(tuple(files), tuple(stamps))


def _unreadable(root: Path, path: str, entry: os.DirEntry[str]) -> bool:
    """A chapter the sync reads only to say why it cannot (a warning, docs/manuscript.md): a FIFO, device or
    socket, or a link leading out of the project. A link inside it is skipped: its target is read by its name."""
    if not entry.is_symlink():
        return True
    # (not os.path.commonpath: it raises for paths on two drives, a link from C:\ to D:\ on Windows)
    return not Path(os.path.realpath(root / path)).is_relative_to(os.path.realpath(root))


def _fresh(root: Path, walk: Walk) -> bool:
    for rel, mtime in walk.stamps:
        try:
            if (root / rel if rel else root).stat().st_mtime_ns != mtime:
                return False
        except OSError:
            return False
    return True


def _project_stamp(root: Path) -> tuple[int, int] | None:
    try:
        st = (root / BANK_DIR / "project.yaml").stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def named_positions(index: Index) -> list[str]:
    return [p for (p,) in index.db.execute("SELECT DISTINCT position FROM story_positions")]


def _chapters(bank: Bank, memo: dict[str, Any]) -> tuple[str, ...] | None:
    stamp = _project_stamp(bank.root)
    if "chapters" not in memo or memo.get("project") != stamp:  # no stamp (project.yaml gone) is one too
        memo["project"], memo["chapters"] = stamp, read_chapters(bank.root)
        memo.pop("order", None)
        memo.pop("views", None)
    return memo["chapters"]  # type: ignore[no-any-return]


def chapters(bank: Bank) -> tuple[str, ...] | None:
    """project.yaml's `chapters:` (None without one), re-read only when the file moved: whether the order
    is explicit needs neither the manuscript walk nor the positions the index holds."""
    return _chapters(bank, bank.memo.setdefault("story.order", {}))


def story_order(bank: Bank) -> StoryOrder:
    """The project's story order: `project.yaml` `chapters:`, else natural order of the manuscript and
    of every position a card or memory names, with each document's scenes (a position may name one).
    Re-made only when project.yaml, a manuscript folder or the index moved; looked at once per call in a
    `callmemo` scope (an assembly asks six times)."""
    return callmemo.kept(("story.order", id(bank)), lambda: _story_order(bank))


def _story_order(bank: Bank) -> StoryOrder:
    order = _documents_order(bank)
    found = scenes(bank.index)
    if order.scenes == found:
        return order
    memo = bank.memo.setdefault("story.order", {})
    made = memo.get("scened")
    if made is not None and made[0] is order and made[1] == found:
        return made[2]  # type: ignore[no-any-return]
    scened = replace(order, scenes=found)
    memo["scened"] = (order, found, scened)
    return scened


def _documents_order(bank: Bank) -> StoryOrder:
    memo = bank.memo.setdefault("story.order", {})
    walk = memo.get("walk")
    if walk is None or not _fresh(bank.root, walk):
        walk = memo["walk"] = walk_manuscript(bank.root)
        memo.pop("order", None)
        memo.pop("views", None)
    chapters = _chapters(bank, memo)
    key = None if chapters is not None else bank.index.view_key()
    cached = memo.get("order")
    views = memo.setdefault("views", {})  # per connection's view of the index: read threads each have one
    if cached is not None and chapters is not None:
        return cached  # type: ignore[no-any-return]
    if key is not None and key in views:
        return views[key]  # type: ignore[no-any-return]
    order = StoryOrder.of(chapters, walk.files, named_positions(bank.index) if chapters is None else ())
    if cached is not None and cached == order:
        order = cached  # the same order, the same object: what is kept per order stays valid
    memo["order"] = order
    if key is not None:
        if len(views) >= 16:
            views.clear()
        views[key] = order
    return order


def timed_memories(index: Index) -> dict[int, tuple[str | None, str | None]]:
    """Memories valid only for part of the story: rowid -> (since, until). Kept until the index
    changes (every prompt asks)."""
    memo = index.view_memo("story.timed")
    if memo is not None and "timed" in memo:
        return dict(memo["timed"])
    out: dict[int, list[str | None]] = {}
    for entry, role, position in index.db.execute(
            "SELECT p.entry, p.role, p.position FROM story_positions AS p JOIN entries AS e ON e.rowid = p.entry"
            " WHERE e.kind = 'memory' AND p.role IN ('since', 'until')"):
        span = out.setdefault(entry, [None, None])
        span[0 if role == "since" else 1] = position
    timed = {k: (v[0], v[1]) for k, v in out.items()}
    if memo is not None:
        memo["timed"] = timed
    return dict(timed)


def hidden_memories(index: Index, order: StoryOrder, position: str | None) -> list[int]:
    """The rowids of memories whose span does not hold at `position` (all timed ones without one)."""
    return sorted(r for r, (since, until) in timed_memories(index).items() if not order.holds(since, until, position))


def scene_warnings(order: StoryOrder, at: str | None) -> list[str]:
    """manuscript.md: an unknown scene is a warning and counts as the end of its document; a read at one
    says so in its answer (`warnings`), as the command line prints it."""
    if at is None or not order.unknown_scene(at):
        return []
    document, scene = order.locate(at)
    return [f"{document} has no scene `{scene}`: it counts as the end of {document}"]


def warned(answer: dict[str, Any], order: StoryOrder, at: str | None) -> dict[str, Any]:
    """`answer`, with `warnings` when `at` names a scene its document lacks (no key otherwise)."""
    found = scene_warnings(order, at)
    return {**answer, "warnings": found} if found else answer


def known_position(order: StoryOrder, at: str | None) -> str | None:
    """A position the story order holds, as every story read takes `at`; INVALID_ARGUMENT for one it does
    not (a typo would otherwise answer with nothing but timeless values)."""
    if at is None:
        return None
    path = document_path(at, "at")
    if not order.knows(path):
        raise errors.invalid("at", f"`{at}` is not a position of the story: list it in project.yaml `chapters:` "
                             "(or, without that list, create the file)")
    return path
