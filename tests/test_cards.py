"""Character cards and lorebooks: import by content, the files written, activation in context:assemble,
export back to equal JSON, the writer's edits carried, re-import, and every refusal (docs/import-export.md)."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from membank import Bank
from membank.domains.cards import formats, png
from membank.domains.cards.groups import join, split
from membank.domains.cards.lore import CARD_ENTRY, ST_ENTRY
from membank.domains.cards.mapping import CARD
from membank.files.frontmatter import decode, split as split_doc

from . import cardkit


def _import(bank: Bank, *paths: Path, update: bool = False) -> dict[str, Any]:
    envelope = bank.call("card:import", {"paths": [str(p) for p in paths], "update": update})
    assert envelope["ok"], envelope
    return envelope["data"]


def _export(bank: Bank, source: str, fmt: str, out: Path, spec: str | None = None) -> bytes:
    payload = {"source": source, "format": fmt, "output": str(out), "force": True}
    if spec:
        payload["spec"] = spec
    envelope = bank.call("card:export", payload)
    assert envelope["ok"], envelope
    return out.read_bytes()


def _meta(path: Path) -> tuple[dict[str, Any], str]:
    doc = split_doc(decode(path.read_bytes()))
    return doc.meta, doc.body


def _png_card(data: bytes, keyword: str) -> Any:
    return json.loads(base64.b64decode(png.texts(data)[keyword]))


def _write(tmp: Path, name: str, data: Any) -> Path:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode())
    return path


# -- recognising by content -----------------------------------------------------------------------------

@pytest.mark.parametrize("data, kind, spec, container", [
    (json.dumps(cardkit.card_v1()).encode(), "card", "v1", "json"),
    (json.dumps(cardkit.card_v2()).encode(), "card", "v2", "json"),
    (b"\xef\xbb\xbf" + json.dumps(cardkit.card_v3()).encode(), "card", "v3", "json"),
    (cardkit.png_card(cardkit.card_v2()), "card", "v2", "png"),
    (cardkit.png_card(cardkit.card_v3(), "ccv3", apng=True, also={"chara": cardkit.card_v1()}), "card", "v3", "png"),
    (cardkit.charx(cardkit.card_v3(), {"assets/icon/images/main.png": cardkit.image()}), "card", "v3", "charx"),
    (json.dumps(cardkit.lorebook_v3()).encode(), "lorebook", "lorebook_v3", "json"),
    (json.dumps(cardkit.world_info()).encode(), "lorebook", "sillytavern", "json"),
])
def test_each_format_is_recognised_by_its_content(data: bytes, kind: str, spec: str, container: str) -> None:
    d = formats.decode(data)
    assert (d.kind, d.spec, d.container) == (kind, spec, container)


def test_ccv3_wins_over_chara_in_a_png() -> None:
    d = formats.decode(cardkit.png_card(cardkit.card_v1(), "chara", also={"ccv3": cardkit.card_v3()}))
    assert d.spec == "v3" and d.obj == cardkit.card_v3()


# -- the mapping, purely -----------------------------------------------------------------------------------

def test_groups_give_the_object_back_and_follow_edits() -> None:
    entry = cardkit.entries_v2()[3]  # secondary keys, NOT_ANY in extensions, content with a trailing newline
    front, kept, absent = split(entry, CARD_ENTRY)
    assert (front["secondary_keys"], front["logic"]) == (["storm", "gale"], "not_any")
    assert join(front, kept, absent, CARD_ENTRY) == entry
    edited = join({**front, "logic": "and_all", "body": "Closed.", "include": "never"}, kept, absent, CARD_ENTRY)
    assert edited["extensions"]["selectiveLogic"] == 3 and edited["extensions"]["x_unknown"] == {"nested": [1, 2]}
    assert (edited["content"], edited["enabled"], edited["constant"]) == ("Closed.", False, False)
    st = cardkit.world_info()["entries"]["2"]
    front, kept, absent = split(st, ST_ENTRY)
    assert (front["keys"], front["secondary_keys"], front["logic"]) == (["ghost"], ["day"], "not_all")
    assert join(front, kept, absent, ST_ENTRY) == st
    data = cardkit.card_v2()["data"]
    data["description"] = "Text\n## Personality\ninside the description"  # would not read back from the body
    front, kept, absent = split(data, CARD)
    assert join(front, kept, absent, CARD)["description"] == data["description"]


# -- import, the files, the index, activation ------------------------------------------------------------

def test_a_v2_card_becomes_a_character_and_world_entries_the_index_reads(bank: Bank, sample: Path,
                                                                         tmp_path: Path) -> None:
    data = _import(bank, _write(tmp_path, "keeper.card", cardkit.card_v2()))
    item = data["items"][0]
    assert (item["status"], item["format"]) == ("created", "json, Character Card V2")
    meta, body = _meta(sample / item["target"])
    assert meta["name"] == "林默 Lin Mo" and meta["tags"] == ["keeper", "灯塔"]
    assert meta["summary"] == "A quiet keeper of the light."
    assert body.startswith("## Description\n\nA quiet keeper") and "## Scenario" in body
    assert meta["card"]["data"]["alternate_greetings"] == ["Hello.", "你好。"]
    assert meta["card"]["data"]["extensions"]["x_unknown_tool"] == {"a": [1, {"b": None}]}
    folder = sample / ".writenow" / meta["lorebook"]
    assert (folder / "book.md").exists()
    cards = {c["name"]: c for c in bank.call("kg:entity:list", {})["data"]["items"]}
    assert "林默 Lin Mo" in cards and "The Dragon Vhar" in cards
    dragon, _ = _meta(folder / "the-dragon-vhar.md")
    assert dragon["keys"] == ["dragon", "Vhar"] and dragon["lore"]["insertion_order"] == 50
    ferry, _ = _meta(folder / "ferry.md")  # no comment: named by its first key
    assert ferry["name"] == "Ferry" and "comment" not in ferry["lore"]
    problems = bank.call("index:diagnostics", {})["data"]
    assert not [p for p in problems["items"] if "eldoria" in p["source"] or "lin-mo" in p["source"]], problems


def _activated(bank: Bank, text: str) -> set[str]:
    envelope = bank.call("context:assemble", {"skillId": "rewrite", "documentText": text, "selection": {"text": text}})
    assert envelope["ok"], envelope
    return {i["source"].rsplit("/", 1)[-1] for i in envelope["data"]["items"] if i["kind"] == "card"}


def test_imported_entries_activate_as_their_authors_meant(bank: Bank, tmp_path: Path) -> None:
    _import(bank, _write(tmp_path, "book.json", cardkit.lorebook_v3()), _write(tmp_path, "wi.json", cardkit.world_info()))
    assert {"the-kingdom.md", "oath.md"} <= _activated(bank, "Nothing here.")  # constant
    assert "old-secret.md" not in _activated(bank, "The secret is out.")  # disabled
    assert "curse.md" not in _activated(bank, "A curse.")
    assert "harbour.md" in _activated(bank, "The harbour at noon.")  # NOT_ANY of storm, gale
    assert "harbour.md" not in _activated(bank, "The harbour in a storm.")
    assert "bell.md" in _activated(bank, "A bell in the fog at night.")  # AND_ALL
    assert "bell.md" not in _activated(bank, "A bell in the fog.")
    assert "ghost.md" in _activated(bank, "A ghost.") and "ghost.md" not in _activated(bank, "A ghost by day.")
    assert "lighthouse.md" in _activated(bank, "The LIGHTHOUSE.")  # use_regex
    assert "sea-wolf.md" in _activated(bank, "The Seawolf sails.")  # a /regex/i key


# -- round trips and edits -------------------------------------------------------------------------------

@pytest.mark.parametrize("make, fmt", [
    (lambda: cardkit.card_v2(), "json"),
    (lambda: cardkit.card_v3(), "json"),
    (lambda: cardkit.card_v1(), "json"),
    (lambda: cardkit.lorebook_v3(), "json"),
    (lambda: cardkit.world_info(), "json"),
])
def test_import_then_export_gives_equal_json(bank: Bank, tmp_path: Path, make: Any, fmt: str) -> None:
    item = _import(bank, _write(tmp_path, "in.json", make()))["items"][0]
    out = _export(bank, item["target"], fmt, tmp_path / "out.json")
    assert json.loads(out) == make()


def test_apng_and_charx_round_trip_with_their_pictures(bank: Bank, sample: Path, tmp_path: Path) -> None:
    animated = cardkit.png_card(cardkit.card_v3(), "ccv3", apng=True, also={"chara": cardkit.card_v1()})
    assets = {"assets/icon/images/main.png": cardkit.image(), "assets/other/bg.webp": b"RIFF....WEBP"}
    zipped = cardkit.charx(cardkit.card_v3(), assets, {"module.risum": b"x"})
    first, second = _import(bank, _write(tmp_path, "a.png", animated), _write(tmp_path, "b.charx", zipped))["items"]
    meta, _ = _meta(sample / first["target"])
    assert (sample / ".writenow" / meta["image"]).read_bytes() == animated
    out = _export(bank, first["target"], "png", tmp_path / "out.png")
    assert _png_card(out, "ccv3") == cardkit.card_v3()
    assert _png_card(out, "chara")["spec"] == "chara_card_v2" and png.is_apng(out)
    out = _export(bank, second["target"], "charx", tmp_path / "out.charx")
    with zipfile.ZipFile(io.BytesIO(out)) as z:
        assert json.loads(z.read("card.json")) == cardkit.card_v3()
        assert {n: z.read(n) for n in z.namelist() if n != "card.json"} == assets


def test_the_writers_edits_go_into_the_export(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "in.json", cardkit.card_v3()))["items"][0]
    card = sample / item["target"]
    text = card.read_text("utf-8").replace("Stoic, kind.", "Stoic, kind, and tired.")
    card.write_text(text.replace("aliases: [阿默]", "aliases: [Keeper, 阿默]"), "utf-8")
    meta, _ = _meta(card)
    harbour = sample / ".writenow" / meta["lorebook"] / "harbour.md"
    head, _, _ = harbour.read_text("utf-8").rpartition("The harbour closes in storms.")  # the body, not lore:
    harbour.write_text(head.replace("logic: not_any", "logic: and_all") + "The harbour never closes.\n", "utf-8")
    got = json.loads(_export(bank, item["target"], "json", tmp_path / "out.json"))
    data = got["data"]
    assert data["personality"] == "Stoic, kind, and tired." and data["nickname"] == "Keeper"
    entry = next(e for e in data["character_book"]["entries"] if e["comment"] == "Harbour")
    assert entry["content"] == "The harbour never closes." and entry["extensions"]["selectiveLogic"] == 3
    assert data["first_mes"] == cardkit.card_v3()["data"]["first_mes"]


def test_export_to_another_spec(bank: Bank, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "in.json", cardkit.card_v3()))["items"][0]
    v2 = json.loads(_export(bank, item["target"], "json", tmp_path / "v2.json", "v2"))
    assert v2["spec"] == "chara_card_v2" and "nickname" not in v2["data"]
    tower = next(e for e in v2["data"]["character_book"]["entries"] if e.get("comment") == "Tower")
    assert tower["keys"] == ["/tow(er|n)/"] and "use_regex" not in tower
    assert formats.decode(_export(bank, item["target"], "png", tmp_path / "v1.png", "v1")).spec == "v1"
    wi = _import(bank, _write(tmp_path, "wi.json", cardkit.world_info()))["items"][0]
    v3 = json.loads(_export(bank, wi["target"], "json", tmp_path / "wi3.json", "v3"))
    assert v3["spec"] == "lorebook_v3" and formats.classify(v3) == ("lorebook", "lorebook_v3")


# -- importing again ----------------------------------------------------------------------------------------

def test_a_second_import_shows_what_would_change_and_writes_only_with_update(bank: Bank, sample: Path,
                                                                               tmp_path: Path) -> None:
    source = _write(tmp_path, "in.json", cardkit.card_v2())
    first = _import(bank, source)["items"][0]
    again = _import(bank, source)["items"][0]
    assert (again["status"], again["target"]) == ("unchanged", first["target"])
    changed = cardkit.card_v2()
    changed["data"]["personality"] = "Stoic."
    changed["data"]["character_book"]["entries"][0]["content"] = "Vhar sleeps."
    _write(tmp_path, "in.json", changed)
    before = (sample / first["target"]).read_bytes()
    pending = _import(bank, source)["items"][0]
    assert pending["status"] == "pending" and (sample / first["target"]).read_bytes() == before
    assert {c["source"].rsplit("/", 1)[-1] for c in pending["changes"] if c["change"] == "changed"} == {
        first["target"].rsplit("/", 1)[-1], "the-dragon-vhar.md"}
    assert _import(bank, source, update=True)["items"][0]["status"] == "updated"
    assert json.loads(_export(bank, first["target"], "json", tmp_path / "o.json")) == changed


# -- refusals ----------------------------------------------------------------------------------------------

def _bomb() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", json.dumps(cardkit.card_v3()))
        z.writestr("assets/icon/images/big.png", b"\x00" * (30 * 1024 * 1024))
    return out.getvalue()


def _escape() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("card.json", json.dumps(cardkit.card_v3()))
        z.writestr("assets/../../x", b"x")
    return out.getvalue()


@pytest.mark.parametrize("data, reason", [
    (cardkit.image(), "without a character card"),
    (cardkit.image(extra=cardkit.chunk(b"tEXt", b"chara\x00" + base64.b64encode(b'{"name": "x"}')[:-3])),
     "not valid base64"),
    (cardkit.image()[:-20], "truncated"),
    (_bomb(), "zip bomb"),
    (_escape(), "outside its folder"),
    (b"PK\x03\x04" + b"\x00" * 40, "zip membank cannot read"),
    (b"{" * 100 + b"}" * 100, "not valid JSON"),
    (json.dumps({"hello": "world"}).encode(), "neither a character card"),
    (b"hello", "neither JSON, nor a PNG"),
])
def test_bad_input_is_refused_naming_the_file_and_nothing_is_written(bank: Bank, sample: Path, tmp_path: Path,
                                                                        data: bytes, reason: str) -> None:
    good = _write(tmp_path, "good.json", cardkit.card_v1())
    bad = _write(tmp_path, "bad.bin", data)
    before = sorted(p.name for p in (sample / ".writenow").rglob("*"))
    envelope = bank.call("card:import", {"paths": [str(good), str(bad)]})
    assert not envelope["ok"] and envelope["error"]["code"] == "INVALID_ARGUMENT"
    message = envelope["error"]["message"]
    assert "bad.bin" in message and reason in message and str(tmp_path) not in message, message
    assert sorted(p.name for p in (sample / ".writenow").rglob("*")) == before


def test_a_file_too_large_and_a_missing_file_are_refused(bank: Bank, tmp_path: Path) -> None:
    big = tmp_path / "huge.json"
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    envelope = bank.call("card:import", {"paths": [str(big), str(tmp_path / "gone.png")]})
    message = envelope["error"]["message"]
    assert "huge.json: it is larger than 20 MiB" in message and "gone.png: there is no such file" in message


def test_names_inside_a_card_never_leave_the_bank(bank: Bank, sample: Path, tmp_path: Path) -> None:
    card = cardkit.card_v2()
    card["data"]["name"] = "../../etc/passwd"
    card["data"]["character_book"]["name"] = "../../x"
    card["data"]["character_book"]["entries"][0]["comment"] = "../../../evil"
    item = _import(bank, _write(tmp_path, "evil.json", card))["items"][0]
    assert item["target"] == ".writenow/characters/etc-passwd.md"
    assert all(c["source"].startswith((".writenow/characters/", ".writenow/world/x/")) for c in item["changes"])
    assert not (sample.parent / "x").exists() and not (sample / "evil.md").exists()


def test_export_refusals(bank: Bank, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "wi.json", cardkit.world_info()))["items"][0]
    calls = [({"source": item["target"], "format": "png"}, "format"),
             ({"source": "../outside.md", "format": "json"}, "source"),
             ({"source": "characters/nobody.md", "format": "json"}, None)]
    for payload, field in calls:
        envelope = bank.call("card:export", {**payload, "output": str(tmp_path / "o.json")})
        assert not envelope["ok"], envelope
        if field:
            assert envelope["error"]["details"]["field"] == field
    (tmp_path / "o.json").write_text("mine")
    envelope = bank.call("card:export", {"source": item["target"], "format": "json", "output": str(tmp_path / "o.json")})
    assert envelope["error"]["code"] == "CONFLICT" and (tmp_path / "o.json").read_text() == "mine"


def test_the_commands(sample: Path, home: Path, tmp_path: Path) -> None:
    from .helpers import membank

    card = _write(tmp_path, "keeper.png", cardkit.png_card(cardkit.card_v2()))
    first = membank("import", str(card), cwd=sample, home=home)
    assert first.returncode == 0 and "keeper.png (png, Character Card V2): imported -> .writenow/characters/" \
        in first.stdout, first.stderr
    again = membank("import", str(card), "--json", cwd=sample, home=home)
    assert json.loads(again.stdout)["data"]["items"][0]["status"] == "unchanged"
    out = tmp_path / "back.png"
    done = membank("export", "characters/林默-lin-mo.md", "--format", "png", "--output", str(out), cwd=sample, home=home)
    assert done.returncode == 0 and _png_card(out.read_bytes(), "chara") == cardkit.card_v2(), done.stderr
    bad = membank("import", str(_write(tmp_path, "empty.png", cardkit.image())), cwd=sample, home=home)
    assert bad.returncode == 1 and "cannot import empty.png: it is a PNG without a character card" in bad.stderr


def test_an_entry_file_the_writer_adds_is_exported(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "wi.json", cardkit.world_info()))["items"][0]
    (sample / item["target"] / "tide.md").write_text("---\nname: Tide\nkeys: [tide]\n---\nIt turns at six.\n", "utf-8")
    (sample / item["target"] / "curse.md").unlink()
    got = json.loads(_export(bank, item["target"], "json", tmp_path / "o.json"))
    assert [e["comment"] for e in got["entries"].values()] == ["Saltmarsh", "Bell", "Ghost", "Oath", "", "Tide"]
    assert got["entries"]["6"] == {"uid": 6, "order": 100, "position": 0, "disable": False, "addMemo": True,
                                   "key": ["tide"], "comment": "Tide", "keysecondary": [], "selective": False,
                                   "selectiveLogic": 0, "constant": False, "content": "It turns at six."}
