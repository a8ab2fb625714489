"""Issue 29's relatives found in its audit: every name a file brings is shown escaped wherever an answer says it
(a refusal's field, a PNG chunk's type, a book named twice), and an imported entry named like its own key is
one mention, not two (docs/import-export.md)."""

from __future__ import annotations

import json
import struct
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
