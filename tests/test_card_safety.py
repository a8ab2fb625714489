"""Imports write only data, refuse what they cannot hold, and exports are complete, valid JSON (issue 29:
dot names and programs in a CHARX, other lorebook dialects, hand-written cards, numbers and characters JSON
or a file cannot hold, export into .writenow/, file/folder clashes, aliases, base64 in PNGs;
docs/import-export.md). The real cards are fixtures/cards/ (MIT, see its README)."""

from __future__ import annotations

import base64
import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from membank import Bank
from membank.domains.cards import formats, png, safety
from membank.files.frontmatter import decode, split as split_doc

from . import cardkit

CARDS = Path(__file__).resolve().parent.parent / "fixtures" / "cards"


def _flux() -> dict[str, Any]:
    """The real V2 card in fixtures/cards/default_FluxTheCat.png, as JSON."""
    return json.loads(base64.b64decode(png.texts((CARDS / "default_FluxTheCat.png").read_bytes())["chara"]))


def _write(tmp: Path, name: str, data: Any) -> Path:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode())
    return path


def _import(bank: Bank, *paths: Path, update: bool = False) -> dict[str, Any]:
    envelope = bank.call("card:import", {"paths": [str(p) for p in paths], "update": update})
    assert envelope["ok"], envelope
    return envelope["data"]


def _refusal(bank: Bank, path: Path) -> str:
    envelope = bank.call("card:import", {"paths": [str(path)]})
    assert not envelope["ok"] and envelope["error"]["code"] == "INVALID_ARGUMENT", envelope
    return envelope["error"]["message"]


def _export(bank: Bank, source: str, out: Path, fmt: str = "json", spec: str | None = None) -> Any:
    payload: dict[str, Any] = {"source": source, "format": fmt, "output": str(out), "force": True}
    if spec:
        payload["spec"] = spec
    envelope = bank.call("card:export", payload)
    assert envelope["ok"], envelope
    return json.loads(out.read_bytes()) if fmt == "json" else out.read_bytes()


def _meta(path: Path) -> dict[str, Any]:
    return split_doc(decode(path.read_bytes())).meta


def _zip(members: dict[str, bytes | tuple[bytes, int]]) -> bytes:
    """A zip; a member given as (bytes, mode) carries that Unix mode."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, value in members.items():
            data, mode = value if isinstance(value, tuple) else (value, 0o644)
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (0o100000 | mode) << 16
            z.writestr(info, data)
    return out.getvalue()


def _flux_charx(extra: dict[str, bytes | tuple[bytes, int]]) -> bytes:
    card = _flux()
    card = {"spec": "chara_card_v3", "spec_version": "3.0", "data": {**card["data"], "group_only_greetings": []}}
    picture = (CARDS / "default_FluxTheCat.png").read_bytes()
    return _zip({"card.json": json.dumps(card).encode(), "assets/icon/images/main.png": picture, **extra})


# -- 1. an import writes only data ----------------------------------------------------------------------

HOSTILE: dict[str, bytes | tuple[bytes, int]] = {
    "assets/.git/config": b"[core]\n\tfsmonitor = touch /tmp/pwned\n",
    "assets/.git/HEAD": b"ref: refs/heads/main\n",
    "assets/.gitattributes": b"* filter=evil\n",
    "assets/other/.hooks/post": b"x",
    "assets/other/run.sh": b"echo hi\n",
    "assets/other/tool": (b"\x00\x01data", 0o755),
    "assets/other/elf.bin": b"\x7fELF\x02\x01\x01",
    "assets/other/script.txt": b"#!/bin/sh\nrm -rf ~\n",
    "assets/other/setup.EXE": b"data",
    "assets/other/bg.webp": b"RIFF....WEBP",
}


def test_a_charx_never_plants_dot_files_or_programs(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "flux.charx", _flux_charx(HOSTILE)))["items"][0]
    skipped = {s["name"]: s["reason"] for s in item["skipped"]}
    assert set(skipped) == set(HOSTILE) - {"assets/other/bg.webp"}
    assert "starting with `.`" in skipped["assets/.git/config"] and "executable" in skipped["assets/other/tool"]
    assets = sample / ".writenow" / _meta(sample / item["target"])["assets"]
    written = sorted(p.relative_to(assets).as_posix() for p in assets.rglob("*"))
    assert written == ["assets", "assets/icon", "assets/icon/images", "assets/icon/images/main.png", "assets/other",
                       "assets/other/bg.webp", "original.json"]  # original.json: the card as imported, for re-import
    assert all(not (p.stat().st_mode & 0o111) for p in assets.rglob("*") if p.is_file())


def test_the_command_lists_what_it_skipped(sample: Path, home: Path, tmp_path: Path) -> None:
    from .helpers import membank

    path = _write(tmp_path, "flux.charx", _flux_charx({"assets/.git/config": b"[core]\n"}))
    amo = _write(tmp_path, "amo.json", {**cardkit.card_v1(), "name": "阿默"})
    done = membank("import", str(path), str(amo), cwd=sample, home=home)
    assert done.returncode == 0, done.stderr
    assert "skipped  assets/.git/config: a name starting with `.`" in done.stdout, done.stdout
    assert "warning: `阿默` is already an alias of 林默 (.writenow/characters/lin-mo.md)" in done.stdout


@pytest.mark.parametrize("name, data, mode, skip", [
    ("assets/a.png", b"\x89PNG", 0o644, False),
    ("assets/x/.env", b"", 0o644, True),
    ("assets/..x/a", b"", 0o644, True),
    ("assets/model.moc3", b"MOC3", 0o644, False),
    ("assets/run", b"", 0o700, True),
    ("assets/a.PS1", b"", 0o644, True),
    ("assets/readme", b"MZ\x90", 0o644, True),
    ("assets/a\nb.png", b"", 0o644, True),
    ("assets/\x1b[31mred.png", b"", 0o644, True),
])
def test_which_files_an_import_never_writes(name: str, data: bytes, mode: int, skip: bool) -> None:
    assert (safety.skip_reason(name, data, 0o100000 | mode) is not None) is skip


def test_a_book_folder_named_with_a_dot_in_a_card_file_is_not_used(bank: Bank, sample: Path, tmp_path: Path) -> None:
    path = _write(tmp_path, "c.json", cardkit.card_v2())
    item = _import(bank, path)["items"][0]
    card = sample / item["target"]
    text = card.read_text("utf-8")
    assert "lorebook: world/eldoria-lore\n" in text
    card.write_text(text.replace("lorebook: world/eldoria-lore", "lorebook: world/.hooks"), "utf-8")
    again = _import(bank, path, update=True)["items"][0]
    assert all("/." not in c["source"] for c in again["changes"])
    assert not (sample / ".writenow" / "world" / ".hooks").exists()


# -- 9. a lorebook in another dialect ----------------------------------------------------------------------

def _activated(bank: Bank, text: str) -> set[str]:
    envelope = bank.call("context:assemble", {"skillId": "rewrite", "documentText": text, "selection": {"text": text}})
    assert envelope["ok"], envelope
    return {i["source"].rsplit("/", 1)[-1] for i in envelope["data"]["items"] if i["kind"] == "card"}


def test_a_lorebook_in_another_dialect_is_read_as_a_lorebook(bank: Bank, tmp_path: Path) -> None:
    book = {"name": "Deep Sea", "description": "What lives below.", "author": "someone",
            "entries": [{"keys": ["kraken"], "content": "The kraken sleeps below.", "enabled": True},
                        {"keys": ["reef"], "content": "The reef is sharp.", "comment": "Reef", "x_tool": {"a": 1}}]}
    item = _import(bank, _write(tmp_path, "deep.json", book))["items"][0]
    assert item["kind"] == "lorebook" and item["format"] == "json, lorebook (a card's book on its own)"
    assert "kraken.md" in _activated(bank, "A kraken rose.") and "reef.md" not in _activated(bank, "A kraken rose.")
    assert _export(bank, item["target"], tmp_path / "o.json") == book  # as it came


@pytest.mark.parametrize("entries, reason", [
    ([{"name": "x", "entry": "c", "keywords": ["k"]}], "entry 1 has no `keys` list"),  # Agnai's memory book
    ({"a": {"keys": "x", "content": "y"}}, "entry 1 has no `keys` list"),
    ([{"keys": ["a"], "content": "b"}, "text"], "entry 2 is not an object"),
    ("all of it", "neither a list nor a map"),
])
def test_a_lorebook_membank_cannot_read_is_refused_not_made_a_card(bank: Bank, sample: Path, tmp_path: Path,
                                                                    entries: Any, reason: str) -> None:
    before = sorted(p.name for p in (sample / ".writenow").rglob("*"))
    path = _write(tmp_path, "book.json", {"name": "Other", "description": "d", "entries": entries})
    assert reason in _refusal(bank, path)
    assert sorted(p.name for p in (sample / ".writenow").rglob("*")) == before


# -- 10. numbers and characters JSON or a file cannot hold ------------------------------------------------

@pytest.mark.parametrize("raw, field, reason", [
    (b'{"spec": "chara_card_v2", "data": {"name": "A", "extensions": {"n": [1, 1e400]}}}', "data.extensions.n[1]",
     "the number 1e400"),
    (b'{"name": "A", "description": "x", "extensions": {"n": ' + b"9" * 5000 + b'}}', "extensions.n",
     "a number of 5,000 digits"),
    (b'{"name": "A", "description": "a\\u0000b"}', "description", "NUL character"),
    (b'{"name": "A", "description": "x", "mes_example": "a\\ud800b"}', "mes_example", "surrogate"),
    (b'{"name": "A", "description": "x", "extensions": {"k\\udc00": 1}}', "extensions.k\\udc00", "surrogate"),
])
def test_what_a_text_file_or_json_cannot_hold_is_refused_naming_the_field(bank: Bank, sample: Path, tmp_path: Path,
                                                                         raw: bytes, field: str, reason: str) -> None:
    message = _refusal(bank, _write(tmp_path, "card.json", raw))
    assert f"`{field}`" in message and reason in message, message
    assert _refusal(bank, _write(tmp_path, "card.json", raw)) == message
    assert not list((sample / ".writenow" / "characters").glob("a*.md"))  # never created, never copied as a-2


def test_a_card_in_a_png_names_its_field_too(bank: Bank, tmp_path: Path) -> None:
    card = cardkit.card_v2()
    card["data"]["character_book"]["entries"][2]["content"] = "\x00"
    message = _refusal(bank, _write(tmp_path, "c.png", cardkit.png_card(card)))
    assert "`data.character_book.entries[2].content` in the card in its `chara` chunk holds a NUL" in message


@pytest.mark.parametrize("uid", ["²", "9" * 5000])
def test_odd_entry_keys_export_never_internal(bank: Bank, tmp_path: Path, uid: str) -> None:
    item = _import(bank, _write(tmp_path, "wi.json", {"entries": {uid: {"uid": 0, "key": ["a"], "content": "x"}}}))
    (Path(bank.project.path) / item["items"][0]["target"].removeprefix(".writenow/") / "b.md").write_text(
        "---\nname: B\nkeys: [b]\n---\nNew.\n", "utf-8")
    got = _export(bank, item["items"][0]["target"], tmp_path / "o.json")
    assert list(got["entries"]) == [uid, "1"] and got["entries"]["1"]["key"] == ["b"] and got["entries"]["1"]["uid"] == 1


def test_values_json_cannot_hold_export_as_strings(bank: Bank, sample: Path, tmp_path: Path) -> None:
    (sample / ".writenow" / "characters" / "odd.md").write_text(
        "---\nname: Odd\nkind: character\ncard: {data: {extensions: {big: .inf, m: 1.0e+400, nan: .nan, "
        "day: 2024-01-02}}}\n---\nOdd.\n", "utf-8")
    out = tmp_path / "o.json"
    got = _export(bank, "characters/odd.md", out)
    assert got["data"]["extensions"] == {"big": "inf", "m": "inf", "nan": "nan", "day": "2024-01-02"}
    assert "Infinity" not in out.read_text("utf-8") and "NaN" not in out.read_text("utf-8")


# -- 11. the rest -------------------------------------------------------------------------------------------

def test_export_into_a_bank_is_refused(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "c.json", cardkit.card_v2()))["items"][0]
    card = sample / item["target"]
    before = card.read_bytes()
    for output in (str(card), str(sample / ".writenow" / "memories" / "notes" / "c.json"), ".writenow/c.json"):
        envelope = bank.call("card:export", {"source": item["target"], "format": "json", "output": output,
                                             "force": True})
        assert not envelope["ok"] and envelope["error"]["details"]["field"] == "output", envelope
        assert ".writenow" in envelope["error"]["message"]
    assert card.read_bytes() == before and not (sample / ".writenow" / "c.json").exists()


@pytest.mark.parametrize("members, named", [
    ({"assets/other/a": b"file", "assets/other/a/b.png": b"in a folder"}, "`assets/other/a` both as a file and as"),
    ({"assets/other/" + "n" * 300 + ".png": b"x"}, "longer than 255 bytes"),
    ({"assets/other/A.png": b"1", "assets/other/a.png": b"2"}, "`assets/other/A.png` and `assets/other/a.png`, names"),
])
def test_a_charx_whose_files_cannot_be_written_names_the_file(bank: Bank, sample: Path, tmp_path: Path,
                                                              members: dict[str, bytes], named: str) -> None:
    before = sorted(p.relative_to(sample).as_posix() for p in sample.rglob("*"))
    message = _refusal(bank, _write(tmp_path, "flux.charx", _flux_charx(members)))
    assert named in message and "flux.charx" in message, message
    assert sorted(p.relative_to(sample).as_posix() for p in sample.rglob("*")) == before  # no empty folders


def test_a_write_that_fails_halfway_leaves_no_empty_folders(bank: Bank, sample: Path, tmp_path: Path) -> None:
    (sample / ".writenow" / "assets").write_text("a file where a folder should be")
    before = sorted(p.relative_to(sample).as_posix() for p in sample.rglob("*"))
    envelope = bank.call("card:import", {"paths": [str(_write(tmp_path, "flux.charx", _flux_charx({})))]})
    assert not envelope["ok"] and envelope["error"]["code"] == "DB_ERROR", envelope
    assert "could not write .writenow/assets/flux-the-cat/" in envelope["error"]["message"]
    assert sorted(p.relative_to(sample).as_posix() for p in sample.rglob("*")) == before


def test_a_card_named_like_another_cards_alias_warns(bank: Bank, sample: Path, home: Path, tmp_path: Path) -> None:
    card = cardkit.card_v1()
    card["name"] = "阿默"  # an alias of 林默 in the sample project
    item = _import(bank, _write(tmp_path, "amo.json", card))["items"][0]
    assert item["warnings"] == ["`阿默` is already an alias of 林默 (.writenow/characters/lin-mo.md); a lookup by "
                                "`阿默` answers CONFLICT until one of them is renamed (ask by id meanwhile)"]
    assert bank.call("kg:entity:get", {"name": "阿默"})["error"]["code"] == "CONFLICT"
    assert _import(bank, _write(tmp_path, "amo.json", card))["items"][0]["warnings"] == []  # the same card again
    plain = _import(bank, _write(tmp_path, "new.json", {**card, "name": "Someone New"}))["items"][0]
    assert plain["warnings"] == []


def _png_with(text: bytes) -> bytes:
    return cardkit.image(extra=cardkit.chunk(b"tEXt", b"chara\x00" + text))


@pytest.mark.parametrize("shape", ["wrapped", "unpadded", "both"])
def test_wrapped_or_unpadded_base64_in_a_png_is_read(bank: Bank, tmp_path: Path, shape: str) -> None:
    card = {**cardkit.card_v1(), "name": "Maren Voss!"}  # 18 bytes of name: its base64 has padding to leave out
    text = base64.b64encode(json.dumps(card).encode())
    assert text.endswith(b"=")
    if shape in ("unpadded", "both"):
        text = text.rstrip(b"=")
    if shape in ("wrapped", "both"):
        text = b"\r\n".join(text[i:i + 76] for i in range(0, len(text), 76)) + b"\n"
    item = _import(bank, _write(tmp_path, "c.png", _png_with(text)))["items"][0]
    assert item["status"] == "created" and item["target"] == ".writenow/characters/maren-voss-2.md"


def test_base64_that_is_not_is_still_refused() -> None:
    assert formats.unbase64(b"abcde") is None and formats.unbase64(b"ab!d") is None
    assert formats.unbase64(b"aGk") == b"hi" and formats.unbase64(b"aG\nk=") == b"hi"


# -- 10. export is complete and round-trips ----------------------------------------------------------------

V3_REQUIRED = ("name", "description", "tags", "creator", "character_version", "mes_example", "extensions",
               "system_prompt", "post_history_instructions", "first_mes", "alternate_greetings", "personality",
               "scenario", "creator_notes", "group_only_greetings")
OWN = ("aliases", "keys", "summary", "state", "state_at", "introduced", "relations", "progressions")


def test_a_card_written_by_hand_exports_everything_and_comes_back(bank: Bank, sample: Path, tmp_path: Path) -> None:
    original = _meta(sample / ".writenow" / "characters" / "lin-mo.md")
    first = _export(bank, "characters/lin-mo.md", tmp_path / "lin.json")
    data = first["data"]
    assert first["spec"] == "chara_card_v3" and first["spec_version"] == "3.0"
    assert all(k in data for k in V3_REQUIRED), [k for k in V3_REQUIRED if k not in data]
    assert data["nickname"] == "阿默" and data["extensions"]["membank"]["aliases"] == ["阿默", "Lin Mo"]
    assert original["summary"] in data["creator_notes"] and original["state"] in data["creator_notes"]
    assert data["character_book"]["entries"][0]["keys"] == ["听潮", "the swordsman"]
    assert {k: data["extensions"]["membank"][k] for k in OWN} == {k: original[k] for k in OWN}
    (sample / ".writenow" / "characters" / "lin-mo.md").unlink()
    item = _import(bank, tmp_path / "lin.json")["items"][0]
    back = _meta(sample / item["target"])
    assert {k: back.get(k) for k in OWN} == {k: original[k] for k in OWN}
    assert "lorebook" not in back and "membank" not in back["card"]["data"]["extensions"]  # the keys' book is not a book
    assert _export(bank, item["target"].removeprefix(".writenow/"), tmp_path / "again.json") == first


def test_what_the_writer_adds_to_a_real_card_goes_out_and_comes_back(bank: Bank, sample: Path,
                                                                       tmp_path: Path) -> None:
    item = _import(bank, CARDS / "default_FluxTheCat.png")["items"][0]
    path = sample / item["target"]
    # a summary stands alone in a prompt: its `{{char}}` is the card's name (the description keeps the macro)
    assert _meta(path)["summary"] == "Flux the Cat personality is: smart, cool, impulsive, wary and quick-witted."
    path.write_text(path.read_text("utf-8").replace("\ncard:", "\naliases: [Flux]\nkeys: [the cat]\nstate: asleep\n"
                                                    "progressions:\n  - {at: chapters/ch01.md, state: hungry}\ncard:", 1),
                    "utf-8")
    png_out = _export(bank, item["target"], tmp_path / "flux.png", fmt="png")
    card = json.loads(base64.b64decode(png.texts(png_out)["chara"]))
    assert card["spec"] == "chara_card_v2"  # V2 has no nickname of its own: the aliases are carried
    assert card["data"]["extensions"]["membank"] == {
        "aliases": ["Flux"], "keys": ["the cat"], "state": "asleep",
        "progressions": [{"at": "chapters/ch01.md", "state": "hungry"}]}
    path.unlink()  # and its picture: the exported PNG comes back as a new card
    shutil.rmtree(sample / ".writenow" / "assets" / "flux-the-cat")
    again = _meta(sample / _import(bank, _write(tmp_path, "flux-out.png", png_out))["items"][0]["target"])
    assert (again["aliases"], again["keys"], again["state"], again["progressions"]) == (
        ["Flux"], ["the cat"], "asleep", [{"at": "chapters/ch01.md", "state": "hungry"}])


def test_an_unedited_real_card_still_exports_as_it_came(bank: Bank, tmp_path: Path) -> None:
    item = _import(bank, CARDS / "default_CodingSensei.png")["items"][0]
    original = json.loads(base64.b64decode(png.texts((CARDS / "default_CodingSensei.png").read_bytes())["chara"]))
    assert _export(bank, item["target"], tmp_path / "o.json") == original


def test_spec_v3_writes_every_field_v3_requires(bank: Bank, tmp_path: Path) -> None:
    v2 = cardkit.card_v2()
    del v2["data"]["creator_notes"]
    item = _import(bank, _write(tmp_path, "c.json", v2))["items"][0]
    data = _export(bank, item["target"], tmp_path / "o.json", spec="v3")["data"]
    assert all(k in data for k in V3_REQUIRED), [k for k in V3_REQUIRED if k not in data]
    assert all({"keys", "content", "extensions", "enabled", "insertion_order", "use_regex"} <= set(e)
               for e in data["character_book"]["entries"])
    v3 = cardkit.card_v3()
    del v3["data"]["group_only_greetings"]
    item = _import(bank, _write(tmp_path, "c3.json", v3))["items"][0]
    assert _export(bank, item["target"], tmp_path / "o3.json")["data"].get("group_only_greetings") is None  # as it came
    assert _export(bank, item["target"], tmp_path / "o3.json", spec="v3")["data"]["group_only_greetings"] == []


def test_names_with_control_characters_are_shown_escaped(bank: Bank, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "flux.charx", _flux_charx({"assets/\x1b[2Jx.png": b"x"})))["items"][0]
    assert item["skipped"][0]["name"] == "assets/\\x1b[2Jx.png" and "control characters" in item["skipped"][0]["reason"]


@pytest.mark.parametrize("control", ["\x1b", "\x7f", "\x85", "\x9b"])  # C0, DEL, C1 (NEL, CSI: a terminal obeys both)
def test_a_name_with_any_control_character_is_skipped_and_shown_escaped(control: str) -> None:
    name = f"assets/a{control}31m.png"
    assert "control characters" in (safety.skip_reason(name, b"data") or "")
    assert safety.shown(name) == f"assets/a\\x{ord(control):02x}31m.png"
