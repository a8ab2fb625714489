"""What an input file is, decided by its content (never its name), and its card or lorebook JSON. Pure.

JSON (Character Card V1/V2/V3, `lorebook_v3`, a SillyTavern World Info export), a PNG or APNG with a
`ccv3` (wins) or `chara` text chunk, or a CHARX zip (`card.json` at its root, assets under `assets/`).
Every refusal is a `Refused` with a writer's reason; sizes, nesting and zip contents are bounded."""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any

from . import png, safety

MiB = 1024 * 1024
MAX_INPUT = 20 * MiB  # one file given to `membank import`
MAX_JSON = 8 * MiB  # the card's JSON text
MAX_DEPTH = 64  # nesting of the card's JSON
MAX_NODES = 500_000  # values in the card's JSON, all levels together
MAX_DIGITS = 4_000  # of an integer (Python reads at most 4,300; YAML, and so the card's file, as many)
MAX_ZIP_ENTRIES = 2_000
MAX_ZIP_TOTAL = 100 * MiB  # all entries of a CHARX, uncompressed
MAX_ZIP_RATIO = 100  # uncompressed / compressed, for an entry over 1 MiB: more is a zip bomb
MAX_HELD = 256 * MiB  # what the files of one import call hold in memory together, before anything is written
NODE_BYTES = 32  # memory a JSON text takes once read, per byte of it, at worst ([1,1,…]: ~100 bytes a value)
MAX_BOOK_ENTRIES = 5_000  # lore entries in one book: each is a file (and ~25 ms to write and index)
V3_ONLY = ("nickname", "creator_notes_multilingual", "source", "group_only_greetings", "creation_date",
           "modification_date", "assets")
V1_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")


class Refused(ValueError):
    """The file cannot be imported; `reason` says why (the caller names the file)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Decoded:
    kind: str  # "card" | "lorebook"
    spec: str  # card: "v1" | "v2" | "v3"; lorebook: "lorebook_v3" | "sillytavern"
    container: str  # "json" | "png" | "charx"
    obj: dict[str, Any]  # the JSON as read
    image: bytes | None = None  # the PNG the card came in (its picture)
    assets: dict[str, bytes] = field(default_factory=dict)  # CHARX: `assets/…` path in the zip -> bytes
    skipped: tuple[tuple[str, str], ...] = ()  # CHARX entries never written (a dot name, a program): (name, why)
    json_bytes: int = 0  # the card's JSON text, as read

    def held(self) -> int:
        """About what this card holds in memory until it is written: its JSON once read, picture, assets."""
        return NODE_BYTES * self.json_bytes + len(self.image or b"") + sum(len(v) for v in self.assets.values())


def load_json(data: bytes, what: str = "the JSON") -> Any:
    if len(data) > MAX_JSON:
        raise Refused(f"{what} is larger than {MAX_JSON // MiB} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Refused(f"{what} is not UTF-8 text") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite, parse_int=_int)
    except RecursionError:
        raise Refused(f"{what} is nested too deeply") from None
    except ValueError as e:
        raise Refused(f"{what} is not valid JSON ({str(e)[:200]})") from None
    _check_shape(value, what)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class _Huge(str):
    """A number JSON wrote but a float cannot hold (`1e400`): refused by _check_shape, naming its field."""


def _finite(literal: str) -> Any:
    value = float(literal)
    return value if math.isfinite(value) else _Huge(literal)


def _int(literal: str) -> Any:
    return int(literal) if len(literal) <= MAX_DIGITS else _Huge(literal)


Where = tuple[Any, ...]  # (parent's Where, key) chains, rendered only for a refusal


def field_name(where: Where | None) -> str:
    """`data.character_book.entries[3].content` for a chain of keys (a key's odd characters escaped)."""
    parts: list[Any] = []
    while where:
        where, key = where
        parts.append(key)
    out = ""
    for key in reversed(parts):
        if isinstance(key, int):
            out += f"[{key}]"
        else:
            shown = short(key.encode("utf-8", "backslashreplace").decode("utf-8"))  # \x1b, \u202e escaped
            out += f".{shown}" if out else shown
    return out or "the top level"


def text_problem(value: str) -> str | None:
    """Why a text cannot go into a Markdown file: a NUL character (the file would read as binary) or half of a
    UTF-16 pair (no UTF-8 for it); None when it can."""
    if "\x00" in value:
        return "holds a NUL character (U+0000), which a text file cannot hold"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "holds half of a UTF-16 surrogate pair (a lone \\ud800-\\udfff escape), which is not a character"
    return None


def _check_shape(value: Any, what: str) -> None:
    stack: list[tuple[Any, int, Where | None]] = [(value, 1, None)]
    nodes = 0
    while stack:
        item, depth, where = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH or nodes > MAX_NODES:
            raise Refused(f"{what} is nested deeper than {MAX_DEPTH} levels or holds more than {MAX_NODES:,} values")
        if isinstance(item, _Huge):
            if len(item) > MAX_DIGITS:
                raise Refused(f"`{field_name(where)}` in {what} is a number of {len(item):,} digits, more than "
                              f"membank keeps ({MAX_DIGITS:,})")
            raise Refused(f"`{field_name(where)}` in {what} is the number {item[:40]}, too large for JSON readers "
                          "(it would become Infinity)")
        if isinstance(item, str):
            if (why := text_problem(item)) is not None:
                raise Refused(f"`{field_name(where)}` in {what} {why}")
        elif isinstance(item, dict):
            for k, v in item.items():
                if (why := text_problem(k)) is not None:
                    raise Refused(f"the key `{field_name((where, k))}` in {what} {why}")
                stack.append((v, depth + 1, (where, k)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1, (where, i)) for i, v in enumerate(item))


def classify(obj: Any) -> tuple[str, str]:
    """(kind, spec) of a card or lorebook JSON, or Refused."""
    if not isinstance(obj, dict):
        raise Refused("its JSON is not an object, so it is neither a character card nor a lorebook")
    spec = obj.get("spec")
    if spec in ("chara_card_v2", "chara_card_v3"):
        if not isinstance(obj.get("data"), dict):
            raise Refused(f"it says `spec: {spec}` but has no `data` object")
        if not isinstance(obj["data"].get("name"), str) or not obj["data"]["name"].strip():
            raise Refused("the card has no `data.name`")
        return "card", "v3" if spec == "chara_card_v3" else "v2"
    if spec == "lorebook_v3":
        if not isinstance(obj.get("data"), dict) or not isinstance(obj["data"].get("entries"), list):
            raise Refused("it says `spec: lorebook_v3` but has no `data.entries` list")
        return "lorebook", "lorebook_v3"
    if spec is not None:
        raise Refused(f"`spec: {short(str(spec))[:40]}` is not a format membank imports (chara_card_v2, chara_card_v3, "
                      "lorebook_v3)")
    if "entries" in obj:
        return "lorebook", _dialect(obj["entries"])
    if isinstance(obj.get("name"), str) and obj["name"].strip() and any(
            isinstance(obj.get(k), str) for k in V1_FIELDS[1:]):
        return "card", "v1"
    raise Refused("its JSON is neither a character card (no `spec`, no V1 `name` and `description`) nor a lorebook "
                  "(no `spec: lorebook_v3`, no World Info `entries`)")


def _dialect(entries: Any) -> str:
    """The lorebook dialect of a JSON with `entries` (whatever else it holds): SillyTavern World Info (a map of
    `{key, content}`), or a bare book as a card holds it (a list or map of `{keys, content}`); else Refused."""
    items = list(entries.values()) if isinstance(entries, dict) else entries if isinstance(entries, list) else None
    if items is None:
        raise Refused("its `entries` is neither a list nor a map of lore entries, so it is not a lorebook membank "
                      "reads")
    for n, entry in enumerate(items):
        if not isinstance(entry, dict):
            raise Refused(f"its entry {n + 1} is not an object, so it is not a lorebook membank reads")
    if isinstance(entries, dict) and (not items or all(isinstance(e.get("key"), list) for e in items)):
        return "sillytavern"
    for n, entry in enumerate(items):
        if not isinstance(entry.get("keys"), list) or not isinstance(entry.get("content", ""), str):
            found = ", ".join(f"`{short(k)[:40]}`" for k in list(entry)[:6]) or "nothing"
            raise Refused(f"its entry {n + 1} has no `keys` list (it holds {found}), so its entries could never "
                          "trigger: it is a lorebook in a dialect membank does not read (it reads Character Card "
                          "books, lorebook_v3 and SillyTavern World Info)")
    return "book"


def unbase64(text: bytes) -> bytes | None:
    """Base64 as tools write it: wrapped in lines (MIME's 76 columns), padding left out; None when it is not
    base64 (a character outside the alphabet, a length no base64 has: truncated)."""
    packed = b"".join(text.split())  # spaces, CR and LF between the lines
    if len(packed) % 4 == 1:
        return None
    packed += b"=" * (-len(packed) % 4) if not packed.endswith(b"=") else b""
    try:
        return base64.b64decode(packed, validate=True)
    except (binascii.Error, ValueError):
        return None


def _from_png(data: bytes) -> Decoded:
    try:
        found = png.texts(data)
    except png.PngError as e:
        raise Refused(f"it is a PNG membank cannot read: {e}") from None
    keyword = next((k for k in png.CARD_KEYWORDS if k in found), None)
    if keyword is None:
        raise Refused("it is a PNG without a character card (no `ccv3` or `chara` text chunk)")
    raw = unbase64(found[keyword])
    if raw is None:
        raise Refused(f"its `{keyword}` text is not valid base64 (truncated or damaged)")
    obj = load_json(raw, f"the card in its `{keyword}` chunk")
    kind, spec = classify(obj)
    if kind != "card":
        raise Refused(f"its `{keyword}` chunk holds a lorebook, not a character card")
    return Decoded(kind, spec, "png", obj, image=data, json_bytes=len(raw))


def short(name: str) -> str:
    """A name from a file as a message shows it: whole up to 80 characters, else its head and its tail."""
    return safety.shown(name if len(name) <= 80 else f"{name[:56]}…{name[-20:]}")


def safe_member(name: str) -> bool:
    """A name inside a zip (or a card) that stays inside the folder it is unpacked to."""
    if not name or "\\" in name or "\x00" in name or name.startswith("/") or ":" in name.split("/")[0]:
        return False
    return all(part not in ("", ".", "..") for part in name.rstrip("/").split("/"))


def _from_zip(data: bytes) -> Decoded:
    if data.count(b"PK\x01\x02") > MAX_ZIP_ENTRIES:  # before zipfile reads them all (200,000 take 240 MB)
        raise Refused(f"the zip holds more than {MAX_ZIP_ENTRIES:,} files")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, NotImplementedError) as e:  # a version no zip tool has
        raise Refused(f"it is a zip membank cannot read ({e})") from None
    if len(infos) > MAX_ZIP_ENTRIES:
        raise Refused(f"the zip holds more than {MAX_ZIP_ENTRIES:,} files")
    if sum(i.file_size for i in infos) > MAX_ZIP_TOTAL:
        raise Refused(f"the zip would unpack to more than {MAX_ZIP_TOTAL // MiB} MiB (a zip bomb?)")
    files: dict[str, bytes] = {}
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()
    for info in infos:
        if info.is_dir():
            continue
        if not safe_member(info.filename):
            raise Refused(f"the zip holds a file named `{short(info.filename)}`, which would land outside its folder")
        if info.filename in seen:  # tools disagree on which one counts
            raise Refused(f"the zip holds `{short(info.filename)}` twice")
        seen.add(info.filename)
        if info.filename != "card.json" and not info.filename.startswith("assets/"):
            continue  # RisuAI's module.risum, x_meta/…: not membank's
        if safety.hidden(info.filename):
            skipped.append((short(info.filename), safety.skip_reason(info.filename, b"") or ""))
            continue
        if info.file_size > MiB and info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
            raise Refused(f"`{short(info.filename)}` in the zip is compressed more than {MAX_ZIP_RATIO}:1 (a zip bomb?)")
        data = _read_member(archive, info)
        why = safety.skip_reason(info.filename, data, info.external_attr >> 16 if info.create_system == 3 else 0)
        if why and info.filename != "card.json":
            skipped.append((short(info.filename), why))
            continue
        files[info.filename] = data
    for name in files:
        if (why := safety.too_long(name)) is not None:
            raise Refused(f"`{short(name)}` in the zip cannot be written: {why}")
    if (clash := safety.file_and_folder(list(files))) is not None:
        raise Refused(f"the zip holds {safety.shown(clash)}")
    if "card.json" not in files:
        raise Refused("it is a zip without `card.json` at its root, so not a CHARX card")
    text = files.pop("card.json")
    obj = load_json(text, "its card.json")
    kind, spec = classify(obj)
    if kind != "card":
        raise Refused("its card.json holds a lorebook, not a character card")
    return Decoded(kind, spec, "charx", obj, assets=files, skipped=tuple(skipped), json_bytes=len(text))


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """An entry's bytes, never more than it declares (a lying header cannot unpack a bomb)."""
    try:
        with archive.open(info) as stream:
            data = stream.read(info.file_size + 1)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError, zlib.error,
            ValueError) as e:  # ValueError: an offset before the start of the file
        raise Refused(f"`{short(info.filename)}` in the zip cannot be unpacked ({e})") from None
    if len(data) > info.file_size:
        raise Refused(f"`{short(info.filename)}` in the zip is larger than its header says (a zip bomb?)")
    return data


def decode(data: bytes) -> Decoded:
    """The card or lorebook in a file's bytes, by their content; Refused with the reason otherwise."""
    if len(data) > MAX_INPUT:
        raise Refused(f"it is larger than {MAX_INPUT // MiB} MiB, the most membank imports")
    if png.is_png(data):
        return _from_png(data)
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        return _from_zip(data)
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        obj = load_json(data)
        kind, spec = classify(obj)
        return Decoded(kind, spec, "json", obj, json_bytes=len(data))
    raise Refused("it is neither JSON, nor a PNG, nor a CHARX zip")
