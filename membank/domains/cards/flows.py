"""`card:import`: read each file, decide its files, then write each card's files together (or none).

Every input is decoded and planned before anything is written: one refusal (a PNG without a card, a zip
bomb, a file too large, a card whose Markdown would be too large) stops the whole import, naming each
file and its reason. A card already imported (same name, the file membank wrote) is compared: unchanged,
or what would change, written only with `update`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...files.frontmatter import FrontMatterError, decode, split
from ...files.reader import Unreadable, read_regular
from ...files.rewrite import REMOVE, RewriteError, render, rewrite
from ...files.write import atomic_write, check_inside, slug
from ...index.failures import storage_error
from ...kernel import errors
from ...kernel.errors import MembankError
from ...kernel.limits import MAX_FILE_BYTES
from ...kernel.text import estimate_tokens
from ..contract import Bank
from ..story.cards import catalog
from . import clashes, formats, identity, keys, mapping, merge, report, safety

Writes = list[tuple[str, bytes]]  # (bank-relative path, bytes)
# a new card is never written here: its files would go to assets/world/, where lorebooks' originals are kept
RESERVED = "characters/world.md"


@dataclass
class Plan:
    file: str  # the input's base name
    kind: str
    format: str  # e.g. "png, Character Card V3"
    target: str  # the character file or the book folder, bank-relative
    writes: Writes = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    status: str = "created"
    skipped: list[dict[str, str]] = field(default_factory=list)  # files of the input never written, and why
    names: list[str] = field(default_factory=list)  # the card's name and aliases, as lookups will know it
    books: list[dict[str, Any]] = field(default_factory=list)  # per book: its scope and always-on entries
    warnings: list[str] = field(default_factory=list)
    base: dict[str, bytes] | None = None  # what the last imported original made of each file


def input_path(root: Path, given: str) -> Path:
    path = Path(os.path.expanduser(given))
    return path if path.is_absolute() else root / path


def read_input(path: Path) -> bytes:
    try:
        data, _ = read_regular(path, formats.MAX_INPUT + 1)
    except (FileNotFoundError, NotADirectoryError):
        raise formats.Refused("there is no such file") from None
    except Unreadable as e:
        raise formats.Refused(e.message) from None
    if len(data) > formats.MAX_INPUT:
        raise formats.Refused(f"it is larger than {formats.MAX_INPUT // formats.MiB} MiB, the most membank imports")
    return data


def existing(path: Path) -> tuple[dict[str, Any], str, bytes] | None:
    """A bank file's front matter, body and bytes; None when there is none (or it cannot be read)."""
    try:
        data, _ = read_regular(path, MAX_FILE_BYTES + 1, follow_links=False)
        doc = split(decode(data))
    except (FileNotFoundError, NotADirectoryError, Unreadable, FrontMatterError, OSError):
        return None
    return doc.meta, doc.body, data


def _ours(root: Path, rel: str, name: str) -> bool | None:
    """None: nothing at `rel`; True: a file an import wrote for `name`; False: anything else."""
    path = root / rel
    if not os.path.lexists(path):
        return None
    found = existing(path)
    return bool(found and isinstance(found[0].get("imported"), dict) and found[0].get("name") == name)


def _place(root: Path, pattern: str, base: str, name: str, claimed: set[str]) -> tuple[str, bool]:
    """The first free path for `base` (`pattern` holds `{}`), or the one an earlier import of `name` wrote
    (True). A folder is known by its book.md."""
    n = 1
    while True:
        rel = pattern.format(base if n == 1 else f"{base}-{n}")
        n += 1
        if safety.folded(rel) in claimed:  # names one file on macOS and Windows disks count as one
            continue
        if not os.path.lexists(root / rel):
            if rel == RESERVED:
                continue
            claimed.add(safety.folded(rel))
            return rel, False
        if _ours(root, rel if rel.endswith(".md") else f"{rel}/{mapping.BOOK_FILE}", name):
            claimed.add(safety.folded(rel))
            return rel, True


def _md(meta: dict[str, Any], body: str, rel: str) -> bytes:
    try:
        data = render(meta, body).encode("utf-8")
    except (RewriteError, UnicodeEncodeError) as e:
        raise formats.Refused(f"{rel} could not be written as YAML ({getattr(e, 'message', e)})") from None
    if len(data) > MAX_FILE_BYTES:
        raise formats.Refused(f"{rel} would be larger than 1 MiB, the most membank reads")
    return data


def _book_writes(book: mapping.Book, folder: str) -> Writes:
    out = [(f"{folder}/{mapping.BOOK_FILE}", _md(book.book.meta, book.book.body, f"{folder}/{mapping.BOOK_FILE}"))]
    out += [(f"{folder}/{name}", _md(f.meta, f.body, f"{folder}/{name}")) for name, f in book.entries]
    return out


def book_report(made: mapping.Book, folder: str) -> dict[str, Any]:
    """How much of a book is always on (ecosystem.md, Books in a novel): what it costs each prompt it is in."""
    always = [f for _, f in made.entries if f.meta.get("include") == "always"]
    return {"target": f".writenow/{folder}", "name": made.book.meta["name"], "scope": made.book.meta["scope"],
            "entries": len(made.entries), "alwaysOn": len(always),
            "alwaysOnTokens": sum(estimate_tokens(f.body) for f in always)}


def _entries(book: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    entries = book.get("entries", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise formats.Refused("its book's `entries` is not a list of objects")
    return [(None, e) for e in entries]


LABELS = {"v1": "Character Card V1", "v2": "Character Card V2", "v3": "Character Card V3",
          "lorebook_v3": "lorebook_v3", "sillytavern": "SillyTavern World Info",
          "book": "lorebook (a card's book on its own)"}


def _original_bytes(d: formats.Decoded) -> bytes:
    return (json.dumps(d.obj, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _read_original(root: Path, target: str) -> formats.Decoded | None:
    try:
        data, _ = read_regular(root / identity.original_of(target), formats.MAX_INPUT + 1, follow_links=False)
        return formats.decode(data)
    except (OSError, Unreadable, formats.Refused):
        return None


def _card_writes(d: formats.Decoded, file: str, rel: str, folder: str | None) -> tuple[Writes, list[dict[str, Any]]]:
    """The files of a card placed at `rel` (its book in `folder`), and its book's report."""
    card, book = mapping.card_files(d.obj, d.spec, file)
    name = card.meta["name"]
    stem = rel[len("characters/"):-3]
    extra: dict[str, Any] = {}
    writes: Writes = []
    books: list[dict[str, Any]] = []
    if book is not None and folder is not None:
        made = mapping.book_files(book, _entries(book), "character_book", {}, f"{name} lorebook", file)
        writes += _book_writes(made, folder)
        extra["lorebook"] = folder
        books = [book_report(made, folder)]
    if d.image is not None:
        extra["image"] = f"assets/{stem}/card.png"
        writes.append((extra["image"], d.image))
    if d.assets:
        extra["assets"] = f"assets/{stem}"
        writes += [(f"assets/{stem}/{p}", data) for p, data in sorted(d.assets.items())]
    meta = {**{k: v for k, v in card.meta.items() if k not in ("card", "imported")}, **extra,
            "card": card.meta["card"], "imported": {**card.meta["imported"], "format": d.container}}
    writes.insert(0, (rel, _md(meta, card.body, rel)))
    return writes, books


def name_warnings(bank: Bank, plan: Plan) -> list[str]:
    """A warning for each name of the card that already names another card or entry (as its name or one of
    its aliases): a lookup by that name would then answer CONFLICT."""
    known = catalog(bank.index)
    out = []
    for name in dict.fromkeys(plan.names):
        others = [known.cards[i] for i in known.resolve(name) if known.cards[i]["source"] != f".writenow/{plan.target}"]
        for other in others:
            how = "the name" if other["name"].strip().casefold() == name.strip().casefold() else "an alias"
            said = formats.short(name)  # names from files, shown escaped
            whose = f"{formats.short(other['name'])} ({formats.short(other['source'])})"
            out.append(f"`{said}` is already {how} of {whose}; a lookup by `{said}` answers CONFLICT until one of "
                       "them is renamed (ask by id meanwhile)")
    return out


def check_writes(plan: Plan) -> None:
    """The last guard before anything is written: every path is data membank names (no dot part, no HEAD, a
    name every disk holds)."""
    for rel, _ in plan.writes:
        if safety.hidden(rel) or not formats.safe_member(rel) or safety.git_marker(rel) or safety.windows_problem(rel):
            raise formats.Refused(f"it would write `{formats.short(rel)}`, a name an import never writes")


def _book_parts(d: formats.Decoded, file: str) -> mapping.Book:
    if d.spec == "lorebook_v3":
        book, shell = d.obj["data"], {k: v for k, v in d.obj.items() if k != "data"}
        entries = _entries(book)
    elif d.spec == "book":  # a card's book on its own (another tool's lorebook): its fields as they are
        book, shell = d.obj, {}
        found = d.obj["entries"]
        entries = [(str(k), e) for k, e in found.items()] if isinstance(found, dict) else [(None, e) for e in found]
    else:
        book, shell = {}, {k: v for k, v in d.obj.items() if k != "entries"}
        entries = [(str(k), e) for k, e in d.obj["entries"].items()]
    return mapping.book_files(book, entries, d.spec, shell, Path(file).stem or "lorebook", file)


def _base(d: formats.Decoded | None, file: str, rel: str, folder: str | None) -> dict[str, bytes] | None:
    """What the last imported original made of each file (None: no original kept)."""
    if d is None:
        return None
    if d.kind == "card":
        return dict(_card_writes(d, file, rel, folder)[0])
    return dict(_book_writes(_book_parts(d, file), rel))


def plan_card(root: Path, file: str, d: formats.Decoded, claimed: set[str], planned: dict[str, str]) -> Plan:
    card, book = mapping.card_files(d.obj, d.spec, file)  # book: None when the card has none (or it held keys)
    name = card.meta["name"]
    rel, again = _place(root, "characters/{}.md", slug(name), name, claimed)
    folder = None
    warnings: list[str] = []
    if isinstance(book, dict):
        before = existing(root / rel) if again else None
        folder = before[0].get("lorebook") if before else None
        book_name = mapping.text(book.get("name")).strip() or f"{name} lorebook"
        if not (isinstance(folder, str) and folder.startswith("world/") and formats.safe_member(folder)
                and not safety.hidden(folder)):
            folder = identity.place_book(root, slug(mapping.text(book.get("name")) or name), book_name, None,
                                         claimed, warnings, planned)
        claimed.add(safety.folded(folder))
        planned.setdefault(folder, book_name)
    writes, books = _card_writes(d, file, rel, folder)
    writes.append((identity.original_of(rel), _original_bytes(d)))
    plan = Plan(file, "card", f"{d.container}, {LABELS[d.spec]}", rel, writes, books=books, warnings=warnings,
                skipped=[{"name": n, "reason": why} for n, why in d.skipped],
                names=[name, *mapping.words(card.meta.get("aliases"))])
    if again:
        plan.base = _base(_read_original(root, rel), file, rel, folder)
        plan.writes, plan.base = identity.align(root, folder, plan.writes, plan.base)
    return plan


def plan_book(root: Path, file: str, d: formats.Decoded, claimed: set[str], planned: dict[str, str]) -> Plan:
    made = _book_parts(d, file)
    name = made.book.meta["name"]
    warnings: list[str] = []
    folder = identity.place_book(root, slug(name), name, identity.Candidate(file, d.obj), claimed, warnings,
                                 planned)
    writes = _book_writes(made, folder) + [(identity.original_of(folder), _original_bytes(d))]
    plan = Plan(file, "lorebook", f"{d.container}, {LABELS[d.spec]}", folder, writes,
                books=[book_report(made, folder)], warnings=warnings)
    if os.path.lexists(root / folder):
        plan.base = _base(_read_original(root, folder), file, folder, None)
        plan.writes, plan.base = identity.align(root, folder, plan.writes, plan.base)
    return plan


def _merged_file(root: Path, rel: str, data: bytes, base: dict[str, bytes] | None
                 ) -> tuple[dict[str, Any], bytes | None]:
    """The change of one Markdown file and the bytes to write (None: nothing): the merge of the last
    imported original, the new version and the file as it is now (merge.py). A file membank cannot read
    (its front matter broken by hand) is left alone and reported."""
    found = existing(root / rel)
    theirs = identity.parsed(data)
    if found is None or theirs is None:
        return {"change": "kept", "fields": [{"field": "file", "change": "kept", "mine": None,
                                              "theirs": "not merged: the file's front matter cannot be read"}]}, None
    mine_meta, mine_body, mine_bytes = found
    was = base.get(rel) if base is not None else None
    made = merge.merge(identity.parsed(was) if was is not None else None, theirs, (mine_meta, mine_body))
    change: dict[str, Any] = {"change": made.change}
    if made.fields:
        change["fields"] = made.fields
    if not made.updates and made.body is None:
        return change, mine_bytes
    updates = {k: REMOVE if v is merge.MISSING else v for k, v in made.updates.items()}
    try:
        text = rewrite(mine_bytes.decode("utf-8"), updates, made.body)
    except (RewriteError, UnicodeDecodeError):  # a front matter the rewrite cannot keep: written anew
        meta = {k: v for k, v in {**mine_meta, **made.updates}.items() if v is not merge.MISSING}
        return change, _md(meta, made.body if made.body is not None else mine_body, rel)
    return change, text.encode("utf-8")


def _compare(root: Path, plan: Plan) -> None:
    """Each file's change (new, same, changed, kept) and what will be written for it."""
    original = identity.original_of(plan.target)
    merged: Writes = []
    for rel, data in plan.writes:
        if rel == original:
            merged.append((rel, data))
            continue
        was = plan.base.get(rel) if plan.base is not None else None
        if not os.path.lexists(root / rel) and was is not None and rel.endswith(".md"):
            # the writer deleted a file the last import wrote: it stays deleted (changed by the card: reported)
            before, after = identity.parsed(was), identity.parsed(data)
            alone = before is not None and after is not None and merge.merge(before, after, before).change == "same"
            plan.changes.append({"source": f".writenow/{rel}", "change": "same"} if alone else
                                {"source": f".writenow/{rel}", "change": "kept", "fields": [
                                    {"field": "file", "change": "kept", "mine": None, "theirs": "changed"}]})
            continue
        if not os.path.lexists(root / rel):
            change: dict[str, Any] = {"change": "new"}
        elif rel.endswith(".md"):
            change, made = _merged_file(root, rel, data, plan.base)
            if made is None:
                plan.changes.append({"source": f".writenow/{rel}", **change})
                continue
            data = made
        else:
            try:
                change = {"change": "same" if read_regular(root / rel, len(data) + 1)[0] == data else "changed"}
            except (OSError, Unreadable):
                change = {"change": "changed"}
        merged.append((rel, data))
        plan.changes.append({"source": f".writenow/{rel}", **change})
    plan.writes = merged
    kinds = {c["change"] for c in plan.changes}
    writes = {c["change"] for c in plan.changes if c["change"] != "same" and (c["change"] != "kept" or any(
        f["change"] == "changed" for f in c.get("fields", ())))}
    plan.status = "created" if kinds == {"new"} else "unchanged" if not writes else "changed"


def _write(bank: Bank, plan: Plan) -> None:
    """All of one card's files, or none: a failure puts back what was there."""
    root = bank.project
    for rel, _ in plan.writes:
        check_inside(root.path, root.path / rel, root.source)
    done: list[tuple[Path, bytes | None]] = []
    made: list[Path] = []  # folders this import created, outermost first
    try:
        current = plan.target
        for rel, data in plan.writes:
            current = rel
            path = root.path / rel
            old = read_regular(path, None, follow_links=False)[0] if os.path.lexists(path) else None
            if old == data:
                continue
            made += _new_folders(root.path, path.parent)
            atomic_write(path, data)
            done.append((path, old))
    except (OSError, Unreadable) as e:
        for path, old in reversed(done):
            try:
                path.unlink(missing_ok=True) if old is None else atomic_write(path, old)
            except OSError:
                pass
        for folder in reversed(made):  # innermost first; one that still holds something stays
            try:
                folder.rmdir()
            except OSError:
                pass
        raise storage_error(e if isinstance(e, OSError) else OSError(str(e)), root.source(current)) from None
    bank.sync_many(root, [rel for rel, _ in plan.writes if rel.endswith(".md")])  # one sync: a book of 400 entries


def _new_folders(top: Path, folder: Path) -> list[Path]:
    """The folders between `top` and `folder` (itself included) that do not exist yet, outermost first."""
    missing: list[Path] = []
    while folder != top and top in folder.parents and not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def import_cards(bank: Bank, paths: list[str], update: bool = False) -> dict[str, Any]:
    refused: list[dict[str, str]] = []
    decoded: list[tuple[str, formats.Decoded]] = []
    held = 0  # what the decoded files hold together: 100 files of 20 MiB could take gigabytes
    for given in paths:
        path = input_path(bank.root, given)
        try:
            d = formats.decode(read_input(path))
            if held and held + d.held() > formats.MAX_HELD:  # one file alone is bounded by its own limits
                raise formats.Refused(f"with the files before it, this import would hold more than "
                                      f"{formats.MAX_HELD // formats.MiB} MiB at once; import it in a call of its own")
            held += d.held()
            decoded.append((safety.shown(path.name), d))
        except formats.Refused as e:
            refused.append({"file": safety.shown(path.name), "reason": e.reason})
    firsts: dict[str, int] = {}  # a content's fingerprint -> its first place in `decoded`
    twins: list[int | None] = []  # per input: the earlier input with the same content, if any
    for n, (_, d) in enumerate(decoded):
        mark = identity.fingerprint(json.dumps(d.obj, sort_keys=True, ensure_ascii=False).encode("utf-8", "replace")
                                    + (d.image or b"") + b"".join(d.assets.get(k, b"") for k in sorted(d.assets)))
        twins.append(firsts.get(mark))
        firsts.setdefault(mark, n)
    with bank.write_lock:
        plans: list[Plan] = []
        claimed: set[str] = set()
        planned: dict[str, str] = {}  # a book folder planned in this import -> its book's name
        for n, (file, d) in enumerate(decoded):
            twin = twins[n]
            if twin is not None:  # the same card or book twice in one call: imported once
                plans.append(Plan(file, d.kind, "", "", status="twin"))
                continue
            try:
                plans.append((plan_card if d.kind == "card" else plan_book)(bank.project.path, file, d, claimed,
                                                                            planned))
                check_writes(plans[-1])
            except formats.Refused as e:
                refused.append({"file": file, "reason": e.reason})
        if refused:
            raise MembankError(errors.INVALID_ARGUMENT, "; ".join(f"cannot import {r['file']}: {r['reason']}"
                                                                  for r in refused) + "; nothing was written",
                               {"field": "paths", "refused": refused})
        for plan in plans:
            if plan.status != "twin":
                _compare(bank.project.path, plan)
                if plan.status == "created":
                    known = catalog(bank.index)
                    plan.warnings = (plan.warnings + (name_warnings(bank, plan) if plan.kind == "card" else [])
                                     + clashes.warnings(known.cards, known.resolve, plan.target, plan.writes))
                if plan.status != "unchanged":  # keys membank will never compile, said where the writer looks
                    plan.warnings = clashes.capped(plan.warnings + keys.warnings(plan.writes))
        for n, plan in enumerate(plans):
            twin = twins[n]
            if twin is not None:
                first = plans[twin]
                plan.format, plan.target, plan.status = first.format, first.target, "unchanged"
                plan.warnings.append(f"the same {'card' if plan.kind == 'card' else 'lorebook'} as {first.file} "
                                     "in this import: imported once")
                plan.changes = [{**c, "change": "same"} for c in first.changes]
            elif plan.status == "created" or (plan.status == "changed" and update):
                _write(bank, plan)
                plan.status = "updated" if plan.status == "changed" else plan.status
            elif plan.status == "changed":
                plan.status = "pending"
    return {"items": [report.bounded({"file": p.file, "kind": p.kind, "format": p.format,
                                      "target": f".writenow/{p.target}", "status": p.status, "changes": p.changes,
                                      "skipped": p.skipped, "books": p.books, "warnings": p.warnings})
                      for p in plans]}
