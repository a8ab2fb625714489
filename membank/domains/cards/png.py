"""PNG (and APNG) chunks: the card texts a PNG carries, and a PNG with new ones. Pure, no image decoding.

A character card rides in `tEXt` chunks: `ccv3` (base64 of the V3 JSON) and `chara` (base64 of the V2
JSON). Reading walks the chunks (length, type, data, CRC) without decoding a pixel; writing keeps every
other chunk as it is (an APNG's acTL/fcTL/fdAT frames too) and puts the new texts before IEND."""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CARD_KEYWORDS = ("ccv3", "chara")
MAX_CHUNKS = 100_000


class PngError(ValueError):
    """The bytes are not a PNG membank can read; the message says why, in a writer's words."""


def _shown(kind: bytes) -> str:
    """A chunk's type as a message shows it: four bytes from the file, a control one (ESC) escaped."""
    return "".join(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}" for b in kind)


def is_png(data: bytes) -> bool:
    return data.startswith(SIGNATURE)


def chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk, in order, up to IEND; each CRC checked."""
    if not is_png(data):
        raise PngError("it does not start with the PNG signature")
    out: list[tuple[bytes, bytes]] = []
    at = len(SIGNATURE)
    while True:
        if at + 8 > len(data):
            raise PngError("it ends before its IEND chunk (the file is truncated)")
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        end = at + 8 + length
        if end + 4 > len(data):
            raise PngError(f"its `{_shown(kind)}` chunk runs past the end of the file (truncated)")
        body = data[at + 8:end]
        (crc,) = struct.unpack(">I", data[end:end + 4])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise PngError(f"its `{_shown(kind)}` chunk fails its checksum (the file is damaged)")
        out.append((kind, body))
        if len(out) > MAX_CHUNKS:
            raise PngError(f"it has more than {MAX_CHUNKS:,} chunks")
        at = end + 4
        if kind == b"IEND":
            return out


def texts(data: bytes) -> dict[str, bytes]:
    """The `tEXt` chunks (keyword -> text bytes) that hold a card: `ccv3`, `chara`, in any case (SillyTavern
    reads `CCV3` and `Chara` too); the first of each wins."""
    found: dict[str, bytes] = {}
    for kind, body in chunks(data):
        if kind == b"tEXt" and b"\x00" in body:
            keyword, _, text = body.partition(b"\x00")
            name = keyword.decode("latin-1").lower()
            if name in CARD_KEYWORDS and name not in found:
                found[name] = text
    return found


def is_apng(data: bytes) -> bool:
    return any(kind == b"acTL" for kind, _ in chunks(data))


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def with_texts(data: bytes, new: dict[str, bytes]) -> bytes:
    """`data` with every card text chunk (any case of its keyword) taken out and `new` (keyword -> text bytes)
    put in before IEND."""
    out = [SIGNATURE]
    for kind, body in chunks(data):
        if kind == b"tEXt" and body.partition(b"\x00")[0].decode("latin-1").lower() in CARD_KEYWORDS:
            continue
        if kind == b"IEND":
            out.extend(_chunk(b"tEXt", key.encode("latin-1") + b"\x00" + text) for key, text in new.items())
        out.append(_chunk(kind, body))
    return b"".join(out)


def blank(width: int = 1, height: int = 1) -> bytes:
    """A grey RGB image of the given size: the picture of a card exported without one."""
    raw = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b"")
