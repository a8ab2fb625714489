"""`card:export`: a character file (with its book) or a book folder back to a card or lorebook file.

SOURCE is project-relative (`characters/lin-mo.md`, `world/eldoria`, with or without `.writenow/`). The
JSON is rebuilt from the Markdown as it is now (mapping.py), so the writer's edits go with it; the output
file is written atomically and never over an existing one unless `force`."""

from __future__ import annotations

import base64
import datetime
import io
import json
import math
import os
import zipfile
from pathlib import Path
from typing import Any

from ...files.reader import Unreadable, read_regular
from ...files.write import atomic_write
from ...index.failures import storage_error
from ...kernel import errors
from ...kernel.errors import MembankError
from . import formats, mapping, png, safety
from .flows import existing, input_path


def _rel(source: str) -> str:
    rel = source.strip().removeprefix(".writenow/").strip("/")
    if not formats.safe_member(rel) or rel.split("/")[0] not in ("characters", "world"):
        raise errors.invalid("source", f"`{source[:80]}` is not a card (characters/….md) or a book folder (world/…) "
                             "inside the project's .writenow/")
    return rel


def linked(root: Path, rel: str) -> str | None:
    """The first part of `rel` below `root` that is a symbolic link; None when none is. membank never reads
    through a link in a bank (a cloned project's link could lead to any file of the writer's)."""
    parts = rel.strip("/").split("/")
    for n in range(1, len(parts) + 1):
        if os.path.islink(root.joinpath(*parts[:n])):
            return "/".join(parts[:n])
    return None


def _unlinked(root: Path, rel: str) -> None:
    if (link := linked(root, rel)) is not None:
        raise MembankError(errors.CONFLICT, f".writenow/{link} is a link; membank neither reads nor writes through "
                           "links in the bank, so nothing was exported (replace the link with the folder or file "
                           "itself)", {"source": f".writenow/{link}"})


def _read(path: Path, source: str) -> tuple[dict[str, Any], str]:
    found = existing(path)
    if found is None:
        raise MembankError(errors.NOT_FOUND, f"{source} cannot be read as a Markdown file with front matter",
                           {"source": source})
    return found[0], found[1]


def read_book(root: Path, folder: str) -> tuple[dict[str, Any], str, list[tuple[dict[str, Any], str]]]:
    """book.md and the world entries of a book folder: those it lists, in its order, then any others by name."""
    _unlinked(root, folder)
    base = root / folder
    meta, body = _read(base / mapping.BOOK_FILE, f".writenow/{folder}/{mapping.BOOK_FILE}")
    try:
        names = sorted(e.name for e in os.scandir(base) if e.name.endswith(".md") and not e.name.startswith(".")
                       and e.name != mapping.BOOK_FILE and e.is_file(follow_symlinks=False))
    except OSError as e:
        raise storage_error(e) from None
    listed = [n for n in mapping.words(meta.get("entries")) if n in names]
    entries = []
    for name in listed + [n for n in names if n not in listed]:
        found = existing(base / name)
        if found is not None and found[0].get("deleted_at") is None and isinstance(found[0].get("name"), str):
            entries.append((found[0], found[1]))
    return meta, body, entries


def build(root: Path, source: str, spec: str | None) -> tuple[dict[str, Any], str, str, dict[str, Any]]:
    """(JSON, kind, spec, the card file's front matter) for SOURCE."""
    rel = _rel(source)
    if rel.startswith("characters/"):
        if not rel.endswith(".md"):
            raise errors.invalid("source", f"{source[:80]} is not a card file (characters/….md)")
        _unlinked(root, rel)
        meta, body = _read(root / rel, f".writenow/{rel}")
        book = None
        folder = meta.get("lorebook")
        if isinstance(folder, str) and folder.startswith("world/") and formats.safe_member(folder):
            book_meta, book_body, entries = read_book(root, folder)
            book = mapping.book_json(book_meta, book_body, entries, None)[0]
        obj, used = mapping.card_json(meta, body, book, spec)
        return obj, "card", used, meta
    folder = rel[: -len(mapping.BOOK_FILE) - 1] if rel.endswith("/" + mapping.BOOK_FILE) else rel
    if spec == "v2" or spec == "v1":
        raise errors.invalid("spec", "a lorebook exports as lorebook_v3 (`--spec v3`) or as the format it came in")
    meta, body, entries = read_book(root, folder)
    kind = (meta.get("imported") or {}).get("spec") if isinstance(meta.get("imported"), dict) else None
    obj, used = mapping.book_json(meta, body, entries, "v3" if spec == "v3" or kind not in ("sillytavern",
                                                                                            "lorebook_v3", "book") else None)
    return obj, "lorebook", used, meta


def _asset(root: Path, rel: Any) -> bytes | None:
    if not isinstance(rel, str) or not rel.startswith("assets/") or not formats.safe_member(rel) or linked(root, rel):
        return None
    try:
        return read_regular(root / rel, formats.MAX_INPUT + 1, follow_links=False)[0]
    except (OSError, Unreadable):
        return None


def _png(root: Path, obj: dict[str, Any], spec: str, meta: dict[str, Any]) -> bytes:
    image = _asset(root, meta.get("image"))
    base = image if image is not None and png.is_png(image) else png.blank()
    texts = {}
    if spec == "v3":
        texts["ccv3"] = base64.b64encode(json.dumps(obj, ensure_ascii=False).encode()).decode("ascii").encode()
        obj = mapping.convert(obj["data"], "v2")
    texts["chara"] = base64.b64encode(json.dumps(obj, ensure_ascii=False).encode()).decode("ascii").encode()
    try:
        return png.with_texts(base, texts)
    except png.PngError:
        return png.with_texts(png.blank(), texts)


def _charx(root: Path, obj: dict[str, Any], meta: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("card.json", json.dumps(obj, ensure_ascii=False, indent=2))
        folder = meta.get("assets")
        if isinstance(folder, str) and folder.startswith("assets/") and formats.safe_member(folder):
            base = root / folder
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))
                                     and not d.startswith("."))
                for name in sorted(n for n in filenames if not n.startswith(".")):
                    inner = Path(dirpath, name).relative_to(base).as_posix()
                    data = _asset(root, f"{folder}/{inner}")
                    if data is not None and inner.startswith("assets/") and safety.skip_reason(inner, data) is None:
                        archive.writestr(inner, data)  # never a name an import (membank's, another's) must skip
    return out.getvalue()


def inside_bank(target: Path, banks: list[Path]) -> bool:
    """True when `target` (links followed as far as they go) is inside one of `banks` or any `.writenow` folder,
    in any case (`.WriteNow/` is `.writenow/` on macOS and Windows disks), or when a folder on its way is a bank
    by another spelling of its path."""
    resolved = Path(os.path.realpath(target))
    if any(part.casefold() == ".writenow" for part in (*target.parts, *resolved.parts)):
        return True
    if any(resolved.is_relative_to(os.path.realpath(b)) for b in banks):
        return True
    for folder in resolved.parents:
        if folder.is_dir():
            return any(_same(folder, bank) or any(_same(up, bank) for up in folder.parents) for bank in banks)
    return False


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def jsonable(value: Any) -> Any:
    """`value` as JSON every reader takes: a number JSON cannot hold (YAML's `.inf`, NaN) and a date become
    strings, any other value YAML may give becomes its text; never `Infinity`, never a failure."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def export_card(bank: Any, source: str, format_: str, output: str, spec: str | None = None,
                force: bool = False) -> dict[str, Any]:
    root = bank.project.path
    obj, kind, used, meta = build(root, source, spec)
    obj = jsonable(obj)
    if kind == "lorebook" and format_ != "json":
        raise errors.invalid("format", "a lorebook exports as JSON only (png and charx hold a character card)")
    if format_ == "charx" and used != "v3":
        raise errors.invalid("spec", "a CHARX card is Character Card V3: use `--spec v3` (or leave it out)")
    if format_ == "json":
        data = (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    elif format_ == "png":
        data = _png(root, obj, used, meta)
    else:
        data = _charx(root, obj, meta)
    target = input_path(bank.root, output)
    if inside_bank(target, [bank.project.path, bank.global_.path]):
        raise errors.invalid("output", f"{target.name} would be written inside a memory bank (.writenow/), where "
                             "membank reads every file as a memory or a card; write it anywhere else")
    if os.path.lexists(target) and not force:
        raise MembankError(errors.CONFLICT, f"{target.name} exists; choose another output or pass force "
                           "(--force) to replace it", {"field": "output"})
    try:
        atomic_write(target, data)
    except OSError as e:
        raise storage_error(e, target.name) from None
    return {"source": f".writenow/{_rel(source)}", "kind": kind, "format": format_, "spec": used,
            "output": target.name, "bytes": len(data)}
