"""Character cards and lorebooks built in code from the published specifications (Character Card V2, V3,
CHARX, lorebook_v3, SillyTavern World Info), every field set; PNG, APNG and CHARX containers."""

from __future__ import annotations

import base64
import copy
import io
import json
import struct
import zipfile
import zlib
from typing import Any

SIG = b"\x89PNG\r\n\x1a\n"


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def text_chunk(keyword: str, obj: Any) -> bytes:
    return chunk(b"tEXt", keyword.encode() + b"\x00" + base64.b64encode(json.dumps(obj).encode()))


def image(apng: bool = False, extra: bytes = b"") -> bytes:
    """A 2x2 PNG; with `apng`, two frames (acTL, fcTL, IDAT, fcTL, fdAT)."""
    raw = zlib.compress(b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2)))
    parts = [SIG, chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))]
    if apng:
        fctl = lambda seq: chunk(b"fcTL", struct.pack(">IIIIIHHBB", seq, 2, 2, 0, 0, 1, 10, 0, 0))  # noqa: E731
        parts += [chunk(b"acTL", struct.pack(">II", 2, 0)), fctl(0), chunk(b"IDAT", raw), fctl(1),
                  chunk(b"fdAT", struct.pack(">I", 2) + raw)]
    else:
        parts.append(chunk(b"IDAT", raw))
    return b"".join(parts) + extra + chunk(b"IEND", b"")


def png_card(obj: Any, keyword: str = "chara", apng: bool = False, also: dict[str, Any] | None = None) -> bytes:
    extra = text_chunk(keyword, obj) + b"".join(text_chunk(k, v) for k, v in (also or {}).items())
    return image(apng, extra)


def charx(card: Any, assets: dict[str, bytes], extra: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", json.dumps(card))
        for name, data in {**assets, **(extra or {})}.items():
            z.writestr(name, data)
    return out.getvalue()


def entries_v2() -> list[dict[str, Any]]:
    """Lore entries with every V2 field: a plain one, a constant one, a disabled one, one with secondary keys
    (SillyTavern's NOT_ANY in extensions), a regex key, one without a comment, decorators in content."""
    base = {"extensions": {"position": 0, "depth": 4, "probability": 100, "x_unknown": {"nested": [1, 2]}},
            "enabled": True, "insertion_order": 100, "case_sensitive": False, "priority": 10,
            "selective": False, "secondary_keys": [], "constant": False, "position": "before_char"}
    return [
        {**base, "id": 1, "name": "dragon-entry", "comment": "The Dragon Vhar", "keys": ["dragon", "Vhar"],
         "content": "@@depth 4\n@@role system\nVhar is the last dragon; {{char}} fears him.", "insertion_order": 50},
        {**base, "id": 2, "name": "", "comment": "The Kingdom", "keys": ["kingdom"], "constant": True,
         "content": "The kingdom of 艾尔多 is ruled by {{user}}'s aunt.", "position": "after_char"},
        {**base, "id": 3, "comment": "Old secret", "keys": ["secret"], "enabled": False, "content": "Hidden."},
        {**base, "id": 4, "comment": "Harbour", "keys": ["harbour", "harbor"], "selective": True,
         "secondary_keys": ["storm", "gale"], "content": "The harbour closes in storms.\n",
         "extensions": {**base["extensions"], "selectiveLogic": 2}},
        {**base, "id": 5, "comment": "Lighthouse", "keys": ["/light ?house(s)?/i"], "content": "A tall light."},
        {**base, "id": 6, "keys": ["Ferry"], "content": "The ferry runs at dawn.", "selective": True,
         "secondary_keys": ["unused"]},
    ]


def book(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "Eldoria Lore", "description": "The world around the keep.", "scan_depth": 3,
            "token_budget": 512, "recursive_scanning": False, "extensions": {"x_book": True}, "entries": entries}


def card_v2() -> dict[str, Any]:
    data = {"name": "林默 Lin Mo", "description": "A quiet keeper of the light. He rarely speaks.\n\nHe lost a brother.",
            "personality": "Stoic, kind.", "scenario": "{{user}} arrives at the lighthouse in a storm.",
            "first_mes": "*looks up* Who's there, {{user}}?", "mes_example": "<START>\n{{char}}: Hm.",
            "creator_notes": "Best with slow burns.", "system_prompt": "You are {{char}}. {{original}}",
            "post_history_instructions": "Stay in character.", "alternate_greetings": ["Hello.", "你好。"],
            "character_book": book(entries_v2()), "tags": ["keeper", "灯塔"], "creator": "anon",
            "character_version": "1.2", "extensions": {"talkativeness": "0.5", "depth_prompt": {"depth": 4},
                                                        "x_unknown_tool": {"a": [1, {"b": None}]}}}
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}
    for key in ("name", "description", "personality", "scenario", "first_mes", "mes_example", "tags"):
        card[key] = copy.deepcopy(data[key])  # SillyTavern writes V1's fields at the top too
    card["avatar"] = "none"
    card["create_date"] = "2024-5-1 @10h 00m 00s 000ms"
    return card


def card_v3() -> dict[str, Any]:
    data = copy.deepcopy(card_v2()["data"])
    data["character_book"]["entries"].append(
        {"keys": ["tow(er|n)"], "content": "The tower.", "extensions": {}, "enabled": True, "insertion_order": 1,
         "use_regex": True, "comment": "Tower", "constant": False, "selective": False})
    data.update({"nickname": "阿默", "creator_notes_multilingual": {"en": "Slow burns.", "zh": "慢热。"},
                 "source": ["https://example.org/card/1"], "group_only_greetings": ["All of you?"],
                 "creation_date": 1700000000, "modification_date": 1700000500,
                 "assets": [{"type": "icon", "uri": "embeded://assets/icon/images/main.png", "name": "main",
                             "ext": "png"},
                            {"type": "background", "uri": "embeded://assets/other/bg.webp", "name": "bg", "ext": "webp"},
                            {"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"}]})
    return {"spec": "chara_card_v3", "spec_version": "3.0", "data": data}


def card_v1() -> dict[str, Any]:
    return {"name": "Maren Voss", "description": "Keeper of the north light.", "personality": "Gruff.",
            "scenario": "", "first_mes": "Hm?", "mes_example": ""}


def lorebook_v3() -> dict[str, Any]:
    entries = entries_v2()
    entries[4] = {**entries[4], "keys": ["light ?house"], "use_regex": True}
    return {"spec": "lorebook_v3", "data": {**book(entries), "name": "Ostmark Atlas"}}


def world_info() -> dict[str, Any]:
    """A SillyTavern World Info export: entries keyed by uid, selectiveLogic 0 AND_ANY, 1 NOT_ALL, 2 NOT_ANY,
    3 AND_ALL."""
    def entry(uid: int, **values: Any) -> dict[str, Any]:
        return {"uid": uid, "key": [], "keysecondary": [], "comment": "", "content": "", "constant": False,
                "vectorized": False, "selective": True, "selectiveLogic": 0, "addMemo": True, "order": 100,
                "position": 0, "disable": False, "excludeRecursion": False, "probability": 100,
                "useProbability": True, "depth": 4, "group": "", "displayIndex": uid, "x_future": {"k": uid},
                **values}
    return {"entries": {
        "0": entry(0, key=["Saltmarsh"], comment="Saltmarsh", content="A drowned town."),
        "1": entry(1, key=["bell"], keysecondary=["night", "fog"], selectiveLogic=3, comment="Bell",
                   content="The bell rings only in fog at night."),
        "2": entry(2, key=["ghost"], keysecondary=["day"], selectiveLogic=1, comment="Ghost", content="Seen."),
        "3": entry(3, key=["oath"], constant=True, comment="Oath", content="Always sworn."),
        "4": entry(4, key=["curse"], disable=True, comment="Curse", content="Off."),
        "5": entry(5, key=["/sea ?wolf/i"], comment="", content="Pirates."),
    }, "originalData": {"name": "Saltmarsh book"}}
