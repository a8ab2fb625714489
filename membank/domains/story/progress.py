"""`kg:state:update` (story.md): a progression written into the card file — the app's "chapter
finished, update the characters" step, landing in the writer's own file, where they can read, correct
and version it. The same guarantees as a memory's update: the round-trip writer keeps comments, key
order and unknown keys; a file changed underneath, or at another revision, is CONFLICT."""

from __future__ import annotations

from typing import Any

from ...files.exchange import Changed, replace_unchanged
from ...files.frontmatter import MAX_FILE_BYTES, FrontMatterError, decode, split
from ...files.parse import parse_card
from ...files.reader import Unreadable, content_hash, read_regular
from ...files.records import ERROR
from ...files.rewrite import IsoTime, RewriteError, append_item
from ...files.write import check_inside
from ...index.failures import storage_error
from ...kernel import clock, errors
from ...kernel.errors import MembankError
from ...kernel.paths import document_path
from ..contract import Bank
from . import graph, positions
from .cards import catalog
from .order import StoryOrder
from .state import progressions


def _latest(card: dict[str, Any], order: StoryOrder, at: str) -> bool:
    """Whether nothing in the card happens after `at`: then its top-level state moves there too."""
    return all(order.rank(p) <= order.rank(at) for p, _, _ in progressions(card))


def _item(at: str, state: str | None, facets: dict[str, Any] | None) -> dict[str, Any]:
    if state is None and not facets:
        raise errors.invalid("state", "give `state`, `set` or both")
    if state is not None and not state.strip():
        raise errors.invalid("state", "`state` is empty")
    item: dict[str, Any] = {"at": at}
    if state is not None:
        item["state"] = state.strip()
    if facets:
        if any(not str(k).strip() for k in facets):
            raise errors.invalid("set", "a facet needs a name")
        item["set"] = dict(facets)
    return item


def _items(data: bytes, item: dict[str, Any]) -> int:
    """How many progressions of a card file's front matter are `item` (0 when it cannot be read)."""
    try:
        found = split(decode(data).replace("\r\n", "\n")).meta.get("progressions")
    except (FrontMatterError, UnicodeDecodeError):
        return 0
    return sum(1 for p in found if p == item) if isinstance(found, list) else 0


def _landed(path: Any, item: dict[str, Any], original: bytes) -> bool:
    """Whether the file now holds one more `item` than `original` did: the update is in it after all."""
    try:
        now = read_regular(path, MAX_FILE_BYTES + 1)[0]
    except (OSError, Unreadable):
        return False
    return _items(now, item) > _items(original, item)


def update_state(bank: Bank, at: str, id_: str | None = None, name: str | None = None, state: str | None = None,
                 set_: dict[str, Any] | None = None, expected_revision: int | None = None) -> dict[str, Any]:
    position = document_path(at, "at")
    with bank.write_lock:
        with bank.index.lock:
            cat = catalog(bank.index)
            order = positions.story_order(bank)
            card = graph.find(cat, id_, name)
            found = bank.index.find("card", card["id"])
        if not order.knows(position):
            raise errors.invalid("at", f"`{at}` is not a position of the story: list it in project.yaml "
                                 "`chapters:` (or, without that list, create the file)")
        item = _item(position, state, set_)
        if found is None:
            raise MembankError(errors.NOT_FOUND, f"no character or world entry has the id `{card['id']}`")
        which, record, digest = found
        root = bank.global_ if which == "global" else bank.project
        _write(bank, root, record, digest, item, _latest(card, order, position), expected_revision)
    with bank.index.lock:
        cat = catalog(bank.index)
        return graph.entity(cat.cards[card["id"]], cat, positions.story_order(bank), position, whole=True)


def _write(bank: Bank, root: Any, record: dict[str, Any], digest: str, item: dict[str, Any], latest: bool,
           expected_revision: int | None) -> None:
    rel = root.rel(record["source"])
    assert rel is not None
    path = root.file(rel)
    check_inside(root.path, path, root.source)
    try:
        original = read_regular(path, MAX_FILE_BYTES + 1)[0]
    except FileNotFoundError:
        bank.sync_one(root, rel)
        raise MembankError(errors.NOT_FOUND, f"{record['source']} is gone from disk", {"id": record["id"]}) from None
    except Unreadable as e:
        raise MembankError(errors.CONFLICT, f"{record['source']} cannot be read now ({e.message}); nothing was "
                           "written", {"id": record["id"]}) from None
    except OSError as e:
        raise storage_error(e, record["source"]) from None
    if content_hash(original) != digest:
        bank.sync_one(root, rel)
        raise MembankError(errors.CONFLICT, f"{record['source']} was changed on disk since membank last read it; "
                           "read the entity again and retry", {"id": record["id"]})
    try:
        meta = split(decode(original).replace("\r\n", "\n")).meta
    except FrontMatterError as e:
        raise MembankError(errors.CONFLICT, f"{record['source']} cannot be rewritten: {e.message}") from None
    revision = meta.get("revision") if isinstance(meta.get("revision"), int) else 1
    if expected_revision is not None and expected_revision != revision:
        raise MembankError(errors.CONFLICT, f"`{record['id']}` is at revision {revision}, not {expected_revision}; "
                           "read it again and retry", {"id": record["id"], "revision": revision})
    updates: dict[str, Any] = {"revision": revision + 1, "updated": IsoTime(clock.now_iso())}
    if latest and "state" in item:
        updates.update(state=item["state"], state_at=item["at"])
    try:
        new = append_item(original.decode("utf-8"), "progressions", item, updates).encode("utf-8")
    except RewriteError as e:
        if e.of_value:
            raise errors.invalid("set", f"the progression cannot be written: {e.message}") from None
        raise MembankError(errors.CONFLICT, f"{record['source']} cannot be rewritten: {e.message}; change it by "
                           "hand", {"id": record["id"]}) from None
    section, _, under = rel.partition("/")
    parsed = parse_card(new, record["source"], section, under, 0)
    written = getattr(parsed.record, "progressions", ())
    if parsed.record is None or len(written) != len(record.get("progressions") or []) + 1:
        problems = [d.message for d in parsed.diagnostics if d.severity == ERROR][:2]  # never write what
        raise errors.invalid("set", "the progression would not read back: " + "; ".join(problems))  # membank skips
    failure: MembankError | None = None
    with bank.index.transaction():
        try:
            replace_unchanged(path, new, original)  # an editor's save meanwhile stays
        except Changed:
            # an editor that reloads and saves again within milliseconds (or an app's retry) can leave
            # the progression in the file after all: the answer says what the file holds (issue 30)
            if not _landed(path, item, original):
                failure = MembankError(errors.CONFLICT, f"{record['source']} was changed on disk during the "
                                       "update; the writer's version stays and the progression is not in it",
                                       {"id": record["id"]})
        except OSError as e:
            failure = storage_error(e, record["source"])
        bank.sync_one(root, rel)
    if failure is not None:
        raise failure
