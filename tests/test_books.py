"""Books in a novel (context.md, Books; ecosystem.md): a card's own lorebook is scoped to its character,
`include:` on book.md switches a whole book, the writer's switches never reach the export, re-import is a
merge against the last imported original, and a book is known by its content, not its name."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from membank import Bank
from membank.domains.cards import identity, merge, png
from membank.domains.story import books
from membank.files.frontmatter import decode, split as split_doc

RULES = "GAME RULES: roll a d20 before every action."


def _entry(uid: int, comment: str, keys: list[str], content: str, constant: bool = False) -> dict[str, Any]:
    return {"id": uid, "keys": keys, "content": content, "comment": comment, "constant": constant,
            "enabled": True, "insertion_order": 100, "selective": False, "secondary_keys": [], "extensions": {}}


def role_play_card(name: str = "Seraphine Vale") -> dict[str, Any]:
    """A V2 role-play card whose book holds always-on game rules (the shape of real RP cards)."""
    book = {"name": "Vale Rules", "entries": [
        _entry(0, "Rules", ["rules"], RULES, constant=True),
        _entry(1, "Stats", ["stats"], "STATS: HP 10, MP 5.", constant=True),
        _entry(2, "Grove", ["grove"], "The grove where Seraphine lives."),
    ]}
    data = {"name": name, "description": "A forest guardian. She heals travellers.", "personality": "Kind.",
            "scenario": "", "first_mes": "Welcome.", "mes_example": "", "creator_notes": "", "system_prompt": "",
            "post_history_instructions": "", "alternate_greetings": [], "tags": [], "creator": "",
            "character_version": "", "extensions": {}, "character_book": book}
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def _write(tmp: Path, name: str, obj: Any) -> Path:
    path = tmp / name
    path.write_bytes(json.dumps(obj, ensure_ascii=False).encode())
    return path


def _import(bank: Bank, *paths: Path, update: bool = False) -> dict[str, Any]:
    envelope = bank.call("card:import", {"paths": [str(p) for p in paths], "update": update})
    assert envelope["ok"], envelope
    return envelope["data"]


def _prompt(bank: Bank, text: str) -> str:
    envelope = bank.call("context:assemble", {"skillId": "rewrite", "documentText": text, "selection": {"text": text}})
    assert envelope["ok"], envelope
    return str(envelope["data"]["systemPrompt"]) + str(envelope["data"]["userContent"])


def _meta(path: Path) -> dict[str, Any]:
    return split_doc(decode(path.read_bytes())).meta


def _set(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text, text
    path.write_text(text.replace(old, new, 1), "utf-8")


def test_a_cards_own_book_takes_part_only_with_its_character(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "seraphine.json", role_play_card()))["items"][0]
    report = item["books"][0]
    assert (report["scope"], report["entries"], report["alwaysOn"]) == ("character", 3, 2)
    assert report["alwaysOnTokens"] > 0
    folder = sample / report["target"]
    assert _meta(folder / "book.md")["scope"] == "character"
    assert RULES not in _prompt(bank, "The rain fell on the harbour.")  # without the character: no rules
    assert "The grove where" not in _prompt(bank, "They walked into the grove.")  # a key alone is not enough
    with_her = _prompt(bank, "Seraphine Vale looked up.")
    assert RULES in with_her and "STATS: HP 10" in with_her
    assert "The grove where" in _prompt(bank, "Seraphine Vale walked into the grove.")


def test_include_on_book_md_switches_the_whole_book(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "seraphine.json", role_play_card()))["items"][0]
    book = sample / item["books"][0]["target"] / "book.md"
    _set(book, "scope: character\n", "scope: character\ninclude: never\n")
    bank.call("index:sync", {})
    text = _prompt(bank, "Seraphine Vale walked into the grove.")
    assert RULES not in text and "The grove where" not in text
    _set(book, "scope: character\ninclude: never\n", "scope: project\n")  # the writer makes it a project book
    bank.call("index:sync", {})
    assert RULES in _prompt(bank, "The rain fell.")


def _export(bank: Bank, source: str, out: Path) -> Any:
    envelope = bank.call("card:export", {"source": source, "format": "json", "output": str(out), "force": True})
    assert envelope["ok"], envelope
    return json.loads(out.read_bytes())


def test_the_writers_switches_stay_in_the_project(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "seraphine.json", role_play_card()))["items"][0]
    folder = sample / item["books"][0]["target"]
    _set(folder / "rules.md", "include: always\n", "include: never\n")  # switched off for this novel
    _set(folder / "grove.md", "kind: lore\n", "kind: lore\ninclude: never\n")
    _set(folder / "book.md", "scope: character\n", "scope: project\ninclude: never\n")
    assert _export(bank, item["target"], tmp_path / "out.json") == role_play_card()
    _set(folder / "stats.md", "constant: true", "constant: false")  # the card's own field, edited by the writer
    book = _export(bank, item["target"], tmp_path / "out.json")["data"]["character_book"]
    assert [e["constant"] for e in book["entries"]] == [True, False, False]
    assert all(e["enabled"] for e in book["entries"])


def test_an_entry_the_writer_adds_takes_its_switches_from_include(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "seraphine.json", role_play_card()))["items"][0]
    folder = sample / item["books"][0]["target"]
    (folder / "moon.md").write_text("---\nname: Moon\nkind: lore\nkeys: [moon]\ninclude: always\n---\nTwo moons.\n")
    entry = _export(bank, item["target"], tmp_path / "out.json")["data"]["character_book"]["entries"][-1]
    assert (entry["content"], entry["constant"], entry["enabled"]) == ("Two moons.", True, True)


def test_reimport_is_a_merge_against_the_last_imported_original(bank: Bank, sample: Path, tmp_path: Path) -> None:
    source = _write(tmp_path, "seraphine.json", role_play_card())
    item = _import(bank, source)["items"][0]
    again = _import(bank, source)["items"][0]
    assert again["status"] == "unchanged" and {c["change"] for c in again["changes"]} == {"same"}
    card = sample / item["target"]
    state = bank.call("kg:state:update", {"name": "Seraphine Vale", "at": "chapters/ch05.md", "state": "wounded"})
    assert state["ok"], state
    _set(card, "name: Seraphine Vale\n", "name: Seraphine Vale  # the writer's note\n")
    assert "revision: 2" in card.read_text("utf-8")  # membank's progress wrote it
    _set(card, "Kind.", "Kind, but wary of strangers.")  # the writer's edit of the personality (the body)
    assert _import(bank, source)["items"][0]["status"] == "unchanged"  # the card did not change: nothing to do
    new = role_play_card()
    new["data"]["first_mes"] = "Welcome, traveller."
    new["data"]["personality"] = "Kind and patient."  # both sides changed the body
    new["data"]["character_book"]["entries"][2]["content"] = "The grove, silver in moonlight."
    _write(tmp_path, "seraphine.json", new)
    pending = _import(bank, source)["items"][0]
    assert pending["status"] == "pending"
    fields = {(c["source"].rsplit("/", 1)[-1], f["field"]): f for c in pending["changes"] for f in c.get("fields", ())}
    name = item["target"].rsplit("/", 1)[-1]
    assert fields[(name, "card.data.first_mes")]["change"] == "changed"
    kept = fields[(name, "body")]
    assert kept["change"] == "kept" and "wary of strangers" in kept["mine"] and "patient" in kept["theirs"]
    assert fields[("grove.md", "body")]["change"] == "changed"
    assert _import(bank, source, update=True)["items"][0]["status"] == "updated"
    text = card.read_text("utf-8")
    assert "# the writer's note" in text and "revision: 2" in text and "wounded" in text
    assert "wary of strangers" in text and "Welcome, traveller." in text
    assert "silver in moonlight" in (sample / item["books"][0]["target"] / "grove.md").read_text("utf-8")
    assert _import(bank, source)["items"][0]["status"] == "unchanged"  # merged: the new original is the base


def world_info(name: str) -> dict[str, Any]:
    def entry(uid: int, key: str, content: str) -> dict[str, Any]:
        return {"uid": uid, "key": [key], "keysecondary": [], "comment": key.title(), "content": content,
                "constant": False, "selective": False, "selectiveLogic": 0, "order": 100, "position": 0,
                "disable": False, "displayIndex": uid}
    return {"entries": {"0": entry(0, "harbour", "The harbour."), "1": entry(1, "tower", "The tower.")},
            "originalData": {"name": name}}


def test_a_book_is_known_by_content_and_origin_never_by_name(bank: Bank, sample: Path, tmp_path: Path) -> None:
    card = role_play_card()
    card["data"]["character_book"]["name"] = "Eldoria"
    item = _import(bank, _write(tmp_path, "seraphine.json", card))["items"][0]
    folder = item["books"][0]["target"]
    wi = _write(tmp_path, "Eldoria.json", world_info("Eldoria"))  # shares only a name with the card's book
    for update in (False, True):
        book = _import(bank, wi, update=update)["items"][0]
        assert book["target"] != folder and folder in book["warnings"][0], book
    assert book["status"] == "unchanged"  # the second time: the same book, already imported
    exported = _export(bank, item["target"], tmp_path / "out.json")
    assert exported == card and isinstance(exported["data"]["character_book"]["entries"], list)
    other = _write(tmp_path, "Eldoria.json", {**world_info("Eldoria"), "entries": {}})  # same file name, new version
    assert _import(bank, other)["items"][0]["target"] == book["target"]
    atlas = {"spec": "lorebook_v3", "data": {"name": "Atlas", "entries": role_play_card()["data"]["character_book"][
        "entries"]}}
    first = _import(bank, _write(tmp_path, "atlas.json", atlas))["items"][0]
    again = _import(bank, _write(tmp_path, "atlas-copy.json", atlas))["items"][0]  # the same book, another file
    assert (again["status"], again["target"], again["warnings"]) == ("unchanged", first["target"], [])
    atlas["data"]["entries"] = atlas["data"]["entries"][:1]  # another book of the same name, from another file
    different = _import(bank, _write(tmp_path, "atlas-2.json", atlas))["items"][0]
    assert different["target"] != first["target"] and first["target"] in different["warnings"][0]


def test_two_books_of_one_name_in_one_call_are_two_with_a_warning(bank: Bank, tmp_path: Path) -> None:
    card = role_play_card()
    card["data"]["character_book"]["name"] = "Eldoria"
    first, second = _import(bank, _write(tmp_path, "seraphine.json", card),
                            _write(tmp_path, "Eldoria.json", world_info("Eldoria")))["items"]
    assert first["books"][0]["target"] != second["target"] and first["books"][0]["target"] in second["warnings"][0]


def test_the_same_file_twice_in_one_call_is_imported_once(bank: Bank, sample: Path, tmp_path: Path) -> None:
    path = _write(tmp_path, "seraphine.json", role_play_card())
    first, second = _import(bank, path, path)["items"]
    assert (first["status"], second["status"]) == ("created", "unchanged")
    assert second["target"] == first["target"] and "imported once" in second["warnings"][0]
    assert sorted(p.name for p in (sample / ".writenow" / "characters").glob("seraphine*")) == ["seraphine-vale.md"]


def test_a_copied_entry_file_is_exported_with_its_own_uid(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "saltmarsh.json", world_info("Saltmarsh")))["items"][0]
    folder = sample / item["target"]
    text = (folder / "harbour.md").read_text("utf-8")
    (folder / "harbour-east.md").write_text(text.replace("name: Harbour", "name: East Harbour"), "utf-8")
    entries = _export(bank, item["target"], tmp_path / "out.json")["entries"]
    assert len(entries) == 3 and len({e["uid"] for e in entries.values()}) == 3
    assert {k: e["uid"] for k, e in entries.items()} == {"0": 0, "1": 1, "2": 2}
    card = _import(bank, _write(tmp_path, "seraphine.json", role_play_card()))["items"][0]
    book = sample / card["books"][0]["target"]
    (book / "grove-2.md").write_text((book / "grove.md").read_text("utf-8").replace("name: Grove", "name: Glade"))
    ids = [e["id"] for e in _export(bank, card["target"], tmp_path / "c.json")["data"]["character_book"]["entries"]]
    assert sorted(ids) == [0, 1, 2, 3]


REAL = Path(__file__).resolve().parent.parent / "fixtures" / "cards"  # README.md there: source, licence


def _new_version(data: bytes, change: dict[str, Any]) -> bytes:
    """The PNG card with some of its `data` fields changed, as its author's next version would be."""
    card = json.loads(base64.b64decode(png.texts(data)["chara"]))
    card["data"].update(change)
    return png.with_texts(data, {"chara": base64.b64encode(json.dumps(card).encode()).decode("ascii").encode()})


def test_real_cards_merge_with_the_writers_work(bank: Bank, sample: Path, tmp_path: Path) -> None:
    sensei = tmp_path / "default_CodingSensei.png"
    sensei.write_bytes((REAL / "default_CodingSensei.png").read_bytes())
    flux = REAL / "default_FluxTheCat.png"
    items = _import(bank, sensei, flux)["items"]
    assert [i["status"] for i in items] == ["created", "created"]
    again = _import(bank, sensei, flux)["items"]
    assert [i["status"] for i in again] == ["unchanged", "unchanged"]
    assert {c["change"] for i in again for c in i["changes"]} == {"same"}
    card = sample / items[0]["target"]
    assert bank.call("kg:state:update", {"name": "Coding Sensei", "at": "chapters/ch01.md", "state": "patient"})["ok"]
    _set(card, "tags: [coding, utility, assistant]\n", "tags: [coding, utility, assistant]  # mine\n")
    _set(card, "creator: RossAscends\n", "creator: RossAscends and me\n")
    sensei.write_bytes(_new_version(sensei.read_bytes(), {"creator": "Ross", "character_version": "v2"}))
    pending = _import(bank, sensei)["items"][0]
    fields = {f["field"]: f for c in pending["changes"] for f in c.get("fields", ())}
    assert fields["card.data.character_version"]["change"] == "changed"
    assert fields["card.data.creator"] == {"field": "card.data.creator", "change": "kept",
                                           "mine": "RossAscends and me", "theirs": "Ross"}
    assert _import(bank, sensei, update=True)["items"][0]["status"] == "updated"
    text = card.read_text("utf-8")
    assert "# mine" in text and "state: patient" in text and "character_version: v2" in text
    assert "RossAscends and me" in text


def test_the_merge_decides_field_by_field() -> None:
    base = ({"name": "A", "card": {"data": {"x": 1, "y": 1, "z": 1}}, "tags": ["a"]}, "Body.")
    theirs = ({"name": "A", "card": {"data": {"x": 2, "y": 2, "z": 1}}, "imported": {"spec": "v2"}}, "Body.")
    mine = ({"name": "A", "card": {"data": {"x": 1, "y": 3, "z": 1}}, "tags": ["a"], "revision": 4}, "Mine.")
    made = merge.merge(base, theirs, mine)
    assert made.updates == {"card": {"data": {"x": 2, "y": 3, "z": 1}}, "tags": merge.MISSING,
                            "imported": {"spec": "v2"}}
    assert made.body is None  # only the writer changed the body
    assert made.fields == [{"field": "card.data.x", "change": "changed"},
                           {"field": "card.data.y", "change": "kept", "mine": 3, "theirs": 2},
                           {"field": "tags", "change": "changed"}]
    assert made.change == "kept"
    assert merge.merge(base, base, mine).updates == {} and merge.merge(base, base, mine).change == "same"
    legacy = merge.merge(None, theirs, mine)  # no original kept: the card's values where they differ
    assert legacy.updates["card"] == theirs[0]["card"] and legacy.body == "Body." and "revision" not in legacy.updates


def test_an_entry_its_author_renamed_stays_in_its_file(bank: Bank, sample: Path, tmp_path: Path) -> None:
    source = _write(tmp_path, "seraphine.json", role_play_card())
    item = _import(bank, source)["items"][0]
    folder = sample / item["books"][0]["target"]
    new = role_play_card()
    new["data"]["character_book"]["entries"][2]["comment"] = "Sacred Grove"
    _write(tmp_path, "seraphine.json", new)
    _import(bank, source, update=True)
    assert not (folder / "sacred-grove.md").exists() and "name: Sacred Grove" in (folder / "grove.md").read_text()
    assert _export(bank, item["target"], tmp_path / "out.json") == new


def test_an_entry_without_its_character_brings_nothing_through_recursion(bank: Bank, sample: Path,
                                                                         tmp_path: Path) -> None:
    card = role_play_card()
    card["data"]["character_book"]["entries"][2]["content"] = "The grove where Seraphine Vale lives."
    _import(bank, _write(tmp_path, "seraphine.json", card))
    text = _prompt(bank, "They walked into the grove.")  # the entry names her: she is not activated by it
    assert "The grove where" not in text and RULES not in text and "A forest guardian" not in text


def test_a_book_an_older_membank_imported_is_scoped_and_not_switched_off(bank: Bank, sample: Path,
                                                                        tmp_path: Path) -> None:
    item = _import(bank, _write(tmp_path, "seraphine.json", role_play_card()))["items"][0]
    book = sample / item["books"][0]["target"] / "book.md"
    _set(book, "scope: character\n", "include: never\n")  # as older imports wrote it (only: book.md is no card)
    bank.call("index:sync", {})
    assert RULES not in _prompt(bank, "The rain fell.")  # a card's book: still only with its character
    assert RULES in _prompt(bank, "Seraphine Vale looked up.")


def test_an_entry_file_the_writer_deleted_stays_deleted(bank: Bank, sample: Path, tmp_path: Path) -> None:
    source = _write(tmp_path, "seraphine.json", role_play_card())
    item = _import(bank, source)["items"][0]
    stats = sample / item["books"][0]["target"] / "stats.md"
    stats.unlink()
    assert _import(bank, source, update=True)["items"][0]["status"] == "unchanged" and not stats.exists()
    new = role_play_card()
    new["data"]["character_book"]["entries"][1]["content"] = "STATS: HP 12."
    _write(tmp_path, "seraphine.json", new)
    item = _import(bank, source, update=True)["items"][0]
    assert not stats.exists()
    assert [c["change"] for c in item["changes"] if c["source"].endswith("stats.md")] == ["kept"]


def test_a_books_include_is_the_default_its_entries_own_include_overrides(bank: Bank, sample: Path,
                                                                         tmp_path: Path) -> None:
    entries = [_entry(0, "Harbour", ["harbour"], "HARBOUR-TEXT"), _entry(1, "Tower", ["tower"], "TOWER-TEXT")]
    item = _import(bank, _write(tmp_path, "atlas.json", {"spec": "lorebook_v3", "data": {"name": "Atlas",
                                                                                         "entries": entries}}))
    folder = sample / item["items"][0]["target"]
    assert item["items"][0]["books"][0]["scope"] == "project"
    assert "HARBOUR-TEXT" not in _prompt(bank, "The rain fell.")
    _set(folder / "book.md", "scope: project\n", "scope: project\ninclude: always\n")
    _set(folder / "tower.md", "kind: lore\n", "kind: lore\ninclude: auto\n")  # its own include wins
    bank.call("index:sync", {})
    text = _prompt(bank, "The rain fell.")
    assert "HARBOUR-TEXT" in text and "TOWER-TEXT" not in text


def _card(card_id: str, source: str, include: str = "auto", written: bool = False, **metadata: Any) -> dict[str, Any]:
    section = "characters" if "/characters/" in source else "world"
    return {"id": card_id, "name": card_id, "section": section, "source": source, "include": include,
            "lines": {"include": 3} if written else {}, "metadata": metadata}


def test_books_decide_their_entries() -> None:
    cards = [_card("hero", ".writenow/characters/hero.md", lorebook="world/rules"),
             _card("rules-book", ".writenow/world/rules/book.md", scope="character"),
             _card("dice", ".writenow/world/rules/dice.md", "always"),
             _card("grove", ".writenow/world/rules/grove.md"),
             _card("off-book", ".writenow/world/off/book.md", "never", scope="project"),
             _card("ghost", ".writenow/world/off/ghost.md", "always"),
             _card("orphan-book", ".writenow/world/lost/book.md", scope="character"),
             _card("lost", ".writenow/world/lost/lost.md"),
             _card("loose", ".writenow/world/loose.md", "always")]
    made = books.of(cards)
    assert made.files == {"rules-book", "off-book", "orphan-book"}
    assert made.owners == {"dice": ("hero",), "grove": ("hero",)}
    assert made.constant == {"hero": ("dice",)}
    assert made.include == {"dice": "auto", "ghost": "never", "lost": "never"}  # loose: in no book
    assert books.of([c for c in cards if c["id"] != "rules-book"]).owners == {}


def test_renamed_entries_keep_their_files() -> None:
    theirs = {"sacred-grove.md": {"lore": {"id": 2}}, "dice.md": {"lore": {"id": 0}}, "new.md": {"lore": {"id": 9}}}
    mine = {"grove.md": {"lore": {"id": 2}}, "dice.md": {"lore": {"id": 0}}, "grove-copy.md": {"lore": {"id": 2}}}
    assert identity.renames(theirs, mine) == {"sacred-grove.md": "grove.md"}
    st = {"b.md": {"imported": {"key": "1"}, "lore": {"uid": 1}}}
    assert identity.renames(st, {"a.md": {"imported": {"key": "1"}}}) == {"b.md": "a.md"}
