"""Issue 29's relatives found in its audit (docs/import-export.md): every name a file brings is shown escaped
wherever an answer says it (a refused field's key, a PNG chunk's type, a book named twice); an imported entry
named like its own key is one mention, not two; names one macOS or Windows disk takes for one get files of
their own, and a card named World keeps its assets apart from the lorebooks' originals; a V2 card with a
nickname exports as it came; a damaged CHARX is refused, never INTERNAL; a key membank will never compile is
said at import."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

from membank import Bank
from membank.domains.cards import png

EVIL = "\x1b]0;pwned\x07\u202eabc\x9b2J"  # a title, a bell, a right-to-left override, C1's CSI


def _file(tmp: Path, name: str, data: bytes | dict[str, Any]) -> str:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode())
    return str(path)


def _clean(text: str) -> bool:
    """No control character and no right-to-left override: what a terminal obeys or turns around."""
    return not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F or ch == "\u202e" for ch in text)


def test_a_refusal_names_a_fields_key_escaped(bank: Bank, tmp_path: Path) -> None:
    raw = ('{"spec":"chara_card_v2","data":{"name":"K","description":"d","extensions":{'
           + json.dumps(EVIL) + ':1e400}}}').encode()
    envelope = bank.call("card:import", {"paths": [_file(tmp_path, "key.json", raw)]})
    message = envelope["error"]["message"]
    assert "1e400" in message and "\\x1b]0;pwned\\x07\\u202eabc\\x9b2J" in message, message
    assert _clean(message), ascii(message)


def test_a_damaged_png_names_its_chunk_escaped(bank: Bank, tmp_path: Path) -> None:
    ihdr = b"IHDR" + bytes(13)
    broken = (png.SIGNATURE + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))
              + struct.pack(">I", 0) + b"\x1b[2J" + b"\0\0\0\0")  # a chunk named ESC [ 2 J, its checksum wrong
    envelope = bank.call("card:import", {"paths": [_file(tmp_path, "esc.png", broken)]})
    message = envelope["error"]["message"]
    assert "`\\x1b[2J` chunk fails its checksum" in message and _clean(message), ascii(message)


def test_two_books_of_one_hostile_name_warn_with_the_name_escaped(bank: Bank, tmp_path: Path) -> None:
    books = [{"spec": "lorebook_v3", "data": {"name": EVIL, "entries": [{"keys": [f"k{n}"], "content": f"c{n}"}]}}
             for n in (1, 2)]
    envelope = bank.call("card:import", {"paths": [_file(tmp_path, f"b{n}.json", b) for n, b in enumerate(books)]})
    assert envelope["ok"], envelope
    warning = envelope["data"]["items"][1]["warnings"][0]
    assert "another book named" in warning and "\\x1b]0;pwned" in warning and _clean(warning), ascii(warning)


def test_an_entry_named_like_its_key_is_one_mention_not_two(bank: Bank, tmp_path: Path) -> None:
    """SillyTavern's World Info names an entry by its comment, mostly its key capitalised (`Castle`, key
    `castle`): the name and the key are one word to the matcher, so each occurrence is one mention."""
    world = {"entries": {"0": {"uid": 0, "key": ["castle"], "keysecondary": [], "comment": "Castle",
                               "content": "A castle on the cliff.", "constant": False, "disable": False}}}
    assert bank.call("card:import", {"paths": [_file(tmp_path, "Eldoria.json", world)]})["ok"]
    text = "The castle stood. The Castle fell."
    mentions = bank.call("kg:mentions", {"text": text})["data"]
    ours = [(m["offset"], m["length"]) for m in mentions["items"] if m["id"] == "world/eldoria/castle"]
    assert ours == [(4, 6), (22, 6)], mentions
    check = bank.call("kg:consistency:check", {"documentId": "chapters/ch05.md", "text": text})["data"]
    entity = next(e for e in check["entities"] if e["id"] == "world/eldoria/castle")
    assert entity["mentionsTotal"] == 2 and [m["offset"] for m in entity["mentions"]] == [4, 22], entity


def test_a_regex_key_matching_its_cards_name_is_one_mention(bank: Bank, sample: Path) -> None:
    (sample / ".writenow" / "world" / "moat.md").write_text(
        "---\nname: Moat\nkind: lore\nkeys: ['/moats?/i']\n---\nThe moat.\n", "utf-8")
    bank.sync()
    items = bank.call("kg:mentions", {"text": "A moat, then moats."})["data"]["items"]
    assert [(m["offset"], m["match"]) for m in items if m["id"] == "world/moat"] == [(2, "moat"), (13, "moats")]


def test_names_one_file_on_a_mac_get_files_of_their_own(bank: Bank, sample: Path, tmp_path: Path) -> None:
    """`ΟΔΟΣ` makes `οδος.md`, `οδοσ` makes `οδοσ.md`: one file on macOS and Windows disks (ς is σ there), so
    one entry would overwrite the other in a project opened on them; two cards alike, two books alike."""
    book = {"name": "Roads", "entries": [{"keys": [f"k{n}"], "content": f"c{n}", "comment": name}
                                         for n, name in enumerate(("ΟΔΟΣ", "οδοσ", "Straße", "STRASSE"))]}
    cards = [{"name": name, "description": "d"} for name in ("ΟΔΟΣ", "οδοσ")]
    books = [{"spec": "lorebook_v3", "data": {"name": name, "entries": [{"keys": ["k"], "content": name}]}}
             for name in ("ΟΔΟΣ", "οδοσ")]
    paths = [_file(tmp_path, "b.json", book)] + [_file(tmp_path, f"{k}{n}.json", x) for k, xs in
                                                 (("c", cards), ("w", books)) for n, x in enumerate(xs)]
    envelope = bank.call("card:import", {"paths": paths})
    assert envelope["ok"], envelope
    files = [p.relative_to(sample / ".writenow").as_posix() for p in (sample / ".writenow").rglob("*.md")]
    mac = [name.casefold() for name in files]  # ς casefolds to σ, ß to ss
    assert len(set(mac)) == len(mac), sorted(files)
    assert len([f for f in files if f.startswith("world/roads/")]) == 5  # book.md and its four entries


def test_a_v2_card_carrying_a_nickname_exports_as_it_came(bank: Bank, sample: Path, tmp_path: Path) -> None:
    """Tools write V3's `nickname` into V2 cards too: it carries the alias it gave, so the export adds nothing."""
    data = {"name": "Fz", "description": "d.", "personality": "", "scenario": "", "first_mes": "", "mes_example": "",
            "creator_notes": "", "system_prompt": "", "post_history_instructions": "", "alternate_greetings": [],
            "tags": [], "creator": "", "character_version": "", "extensions": {}, "nickname": "Fuzzy"}
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}
    assert bank.call("card:import", {"paths": [_file(tmp_path, "fz.json", card)]})["ok"]
    out = tmp_path / "out.json"
    payload = {"source": "characters/fz.md", "format": "json", "output": str(out), "force": True}
    assert bank.call("card:export", payload)["ok"]
    assert json.loads(out.read_bytes()) == card
    path = sample / ".writenow" / "characters" / "fz.md"
    path.write_text(path.read_text("utf-8").replace("aliases: [Fuzzy]", "aliases: [Fuzzy, Fuzz]"), "utf-8")
    assert bank.call("card:export", payload)["ok"]
    assert json.loads(out.read_bytes())["data"]["extensions"] == {"membank": {"aliases": ["Fuzzy", "Fuzz"]}}


def test_a_card_named_world_keeps_its_assets_apart_from_the_lorebooks_originals(bank: Bank, sample: Path,
                                                                               tmp_path: Path) -> None:
    """A lorebook's original is kept in assets/world/<book>/; a card's files in assets/<card>/. A card named
    World would share the first: its CHARX could overwrite a lorebook's original (the base a re-import merges
    the writer's work against), and its export would carry the lorebook out."""
    book = {"spec": "lorebook_v3", "data": {"name": "Assets", "entries": [{"keys": ["k"], "content": "c"}]}}
    assert bank.call("card:import", {"paths": [_file(tmp_path, "assets.json", book)]})["ok"]
    original = sample / ".writenow" / "assets" / "world" / "assets" / "original.json"
    kept = original.read_bytes()
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("card.json", json.dumps({"spec": "chara_card_v3", "spec_version": "3.0",
                                            "data": {"name": "World", "description": "d"}}))
        z.writestr("assets/original.json", json.dumps({**book, "data": {**book["data"], "entries": []}}))
    item = bank.call("card:import", {"paths": [_file(tmp_path, "world.charx", zipped.getvalue())],
                                     "update": True})["data"]["items"][0]
    assert item["status"] == "created" and item["target"] != ".writenow/characters/world.md", item
    assert original.read_bytes() == kept
    out = tmp_path / "out.charx"
    exported = bank.call("card:export", {"source": item["target"], "format": "charx", "output": str(out)})
    assert exported["ok"], exported
    with zipfile.ZipFile(out) as z, z.open("assets/original.json") as f:
        assert json.load(f)["data"]["entries"] == []  # the card's own asset, not the lorebook's original
    again = bank.call("card:import", {"paths": [_file(tmp_path, "world.charx", zipped.getvalue())]})["data"]
    assert again["items"][0]["status"] == "unchanged" and again["items"][0]["target"] == item["target"]


def _charx() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("card.json", json.dumps({"spec": "chara_card_v3", "spec_version": "3.0",
                                            "data": {"name": "Zed", "description": "d"}}))
    return out.getvalue()


def _damaged(how: str) -> bytes:
    data = bytearray(_charx())
    end = data.rfind(b"PK\x05\x06")  # the end of the central directory
    if how == "version":  # the central directory says it needs zip version 9.9 to unpack
        at = data.find(b"PK\x01\x02")
        data[at + 6:at + 8] = struct.pack("<H", 99)
    else:  # the central directory's offset 100 bytes past where it is: each file's offset comes out negative
        (offset,) = struct.unpack("<I", data[end + 16:end + 20])
        data[end + 16:end + 20] = struct.pack("<I", offset + 100)
    return bytes(data)


def test_a_damaged_charx_is_refused_naming_the_file_never_internal(bank: Bank, tmp_path: Path) -> None:
    for how in ("version", "offset"):
        envelope = bank.call("card:import", {"paths": [_file(tmp_path, f"{how}.charx", _damaged(how))]})
        assert envelope["error"]["code"] == "INVALID_ARGUMENT", envelope
        assert envelope["error"]["message"].startswith(f"cannot import {how}.charx: "), envelope


def test_a_key_membank_will_never_compile_is_said_at_import(bank: Bank, tmp_path: Path) -> None:
    gigabyte = "/(?:(?:a{100}){100}){400}/"
    book = {"spec": "lorebook_v3", "data": {"name": "Boom", "entries": [
        {"keys": ["boom", gigabyte], "content": "Boom.", "comment": "Blast"},
        {"keys": ["/gale[s]?\\b/i"], "content": "Wind.", "comment": "Gale"}]}}
    item = bank.call("card:import", {"paths": [_file(tmp_path, "boom.json", book)]})["data"]["items"][0]
    assert len(item["warnings"]) == 1, item["warnings"]
    assert item["warnings"][0].startswith(f"the key {gigabyte} in `keys` of .writenow/world/boom/blast.md is a regular "
                                          "expression membank will not compile: ")
    again = bank.call("card:import", {"paths": [_file(tmp_path, "boom.json", book)]})["data"]["items"][0]
    assert again["status"] == "unchanged" and again["warnings"] == []  # said once, when it is written
