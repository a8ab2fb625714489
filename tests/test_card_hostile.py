"""A hostile author's cards: every route a CHARX, a PNG or a lorebook could take to write something other than
data, or outside `.writenow/` (docs/import-export.md, "What an import never writes"), and export's output."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from membank import Bank
from membank.domains.cards import safety

CARD = {"spec": "chara_card_v3", "spec_version": "3.0",
        "data": {"name": "Hostile", "description": "A card.", "group_only_greetings": []}}


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in {"card.json": json.dumps(CARD).encode(), **members}.items():
            z.writestr(name, data)
    return out.getvalue()


def _file(tmp: Path, name: str, data: bytes | dict[str, Any]) -> str:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return str(path)


def _import(bank: Bank, *paths: str) -> dict[str, Any]:
    envelope = bank.call("card:import", {"paths": list(paths)})
    assert envelope["ok"], envelope
    return envelope["data"]


def _written(sample: Path) -> list[str]:
    return sorted(p.relative_to(sample / ".writenow").as_posix() for p in (sample / ".writenow").rglob("*"))


# -- a git repository planted by name -------------------------------------------------------------------

def _repo(prefix: str, marker: Path) -> dict[str, bytes]:
    """What makes `prefix` a git repository (bare when the prefix is a plain folder) whose config runs a
    command on `git status` (core.fsmonitor) and on any paged command (core.pager)."""
    config = f"[core]\n\tfsmonitor = touch {marker}\n\tpager = touch {marker}\n".encode()
    return {f"{prefix}HEAD": b"ref: refs/heads/main\n", f"{prefix}config": config,
            f"{prefix}objects/info/x": b"x", f"{prefix}refs/heads/x": b"x"}


PLANTED = ("assets/", "assets/x/", "assets/.git/", "assets/\u200c.git/", "assets/\uff0egit/", "assets/\u2024git/",
           "assets/GIT~1/", "assets/git./", "assets/y/HEAD.", "assets/z/head")


def test_no_folder_an_import_writes_is_a_git_repository(bank: Bank, sample: Path, tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    marker = tmp_path / "ran"
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    subprocess.run(["git", "init", "-q", str(sample)], check=True, env=env)
    members: dict[str, bytes] = {}
    for prefix in PLANTED:
        members |= _repo(prefix if prefix.endswith("/") else prefix.rsplit("/", 1)[0] + "/", marker)
    members["assets/y/HEAD."] = members["assets/z/head"] = b"ref: refs/heads/main\n"
    item = _import(bank, _file(tmp_path, "h.charx", _zip(members)))["items"][0]
    assert {s["name"] for s in item["skipped"]} >= {"assets/HEAD", "assets/x/HEAD", "assets/y/HEAD.", "assets/z/head"}
    top = sample / ".writenow" / "assets"
    folders = [sample, top, *(p for p in top.rglob("*") if p.is_dir())]
    for folder in folders:
        found = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=folder, env=env, capture_output=True,
                               text=True)
        assert found.stdout.strip() == str(sample / ".git"), (folder, found.stdout, found.stderr)
        subprocess.run(["git", "status", "--short"], cwd=folder, env=env, capture_output=True)
    assert not marker.exists()


@pytest.mark.parametrize("name", [
    "assets/HEAD", "assets/a/Head", "assets/\u200c.git/config", "assets/\uff0egit/config", "assets/\u2024git/config",
    "assets/GIT~1/config", "assets/git./config", "assets/a.png:evil", "assets/con.png", "assets/NUL", "assets/com1",
    "assets/x /a.png", "assets/q?.png", "assets/\u202egnp.exe.png", "assets/a\u200b.png", "assets/page.html",
    "assets/setup.AppImage", "assets/x.library-ms", "assets/_darcs/prefs/defaults", "assets/_FOSSIL_",
    "assets/Evil.app/Contents/Info.plist", "assets/x.workflow/Contents/document.wflow", "assets/open.terminal",
])
def test_names_a_disk_or_git_would_take_otherwise_are_skipped(name: str) -> None:
    assert safety.skip_reason(name, b"data") is not None


@pytest.mark.parametrize("name", ["assets/a.png", "assets/console.png", "assets/headline.png", "assets/x/head.png",
                                  "assets/图/立绘.webp", "assets/git~x.png", "assets/nul-1.ogg",
                                  "assets/art.example.com/a.png", "assets/v1.sh/a.png"])
def test_ordinary_asset_names_are_written(name: str) -> None:
    assert safety.skip_reason(name, b"data") is None


def test_names_equal_on_a_mac_are_refused(bank: Bank, sample: Path, tmp_path: Path) -> None:
    before = _written(sample)
    envelope = bank.call("card:import", {"paths": [_file(tmp_path, "h.charx", _zip(
        {"assets/e\u0301.png": b"1", "assets/\u00e9.png": b"2"}))]})
    assert not envelope["ok"] and "how an accented letter is written" in envelope["error"]["message"], envelope
    assert _written(sample) == before


# -- PNGs with several cards ------------------------------------------------------------------------------

def test_a_png_reads_and_exports_the_card_other_tools_read(bank: Bank, sample: Path, tmp_path: Path) -> None:
    """SillyTavern takes `CCV3`/`Chara` in any case, the first of each: membank must read the same card, and
    its export must leave no second card in the picture for other tools to read instead."""
    from membank.domains.cards import png

    from . import cardkit

    other = {**CARD, "data": {**CARD["data"], "name": "Other"}}
    shown = cardkit.image(extra=cardkit.text_chunk("chara", cardkit.card_v1()) + cardkit.text_chunk("CCV3", other)
                          + cardkit.text_chunk("ccv3", {**other, "data": {**other["data"], "name": "Third"}}))
    item = _import(bank, _file(tmp_path, "c.png", shown))["items"][0]
    assert item["target"] == ".writenow/characters/other.md"
    out = tmp_path / "out.png"
    envelope = bank.call("card:export", {"source": item["target"], "format": "png", "output": str(out)})
    assert envelope["ok"], envelope
    keywords = [body.partition(b"\x00")[0] for kind, body in png.chunks(out.read_bytes()) if kind == b"tEXt"]
    assert sorted(keywords) == [b"ccv3", b"chara"]


# -- huge counts ---------------------------------------------------------------------------------------------

def test_a_zip_of_too_many_files_is_refused_before_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.domains.cards import formats

    def unread(*args: Any) -> None:
        raise AssertionError("zipfile read the central directory")

    data = _zip({f"assets/{n}.png": b"" for n in range(formats.MAX_ZIP_ENTRIES + 1)})
    monkeypatch.setattr(zipfile, "ZipFile", unread)
    with pytest.raises(formats.Refused, match="more than 2,000 files"):
        formats.decode(data)


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_a_zip_holding_one_name_twice_is_refused() -> None:
    from membank.domains.cards import formats

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("card.json", json.dumps(CARD))
        z.writestr("card.json", json.dumps({**CARD, "data": {**CARD["data"], "name": "Other"}}))
    with pytest.raises(formats.Refused, match="`card.json` twice"):
        formats.decode(out.getvalue())


def test_a_book_of_too_many_entries_is_refused(bank: Bank, sample: Path, tmp_path: Path) -> None:
    from membank.domains.cards import formats

    before = _written(sample)
    book = {"entries": [{"keys": ["k"], "content": ""}] * (formats.MAX_BOOK_ENTRIES + 1)}
    envelope = bank.call("card:import", {"paths": [_file(tmp_path, "big.json", book)]})
    assert not envelope["ok"] and "5,001 entries, more than membank imports" in envelope["error"]["message"]
    assert _written(sample) == before


# -- names from a card as file names -------------------------------------------------------------------------

def test_names_that_would_be_devices_or_paths_become_plain_file_names(bank: Bank, sample: Path, tmp_path: Path) -> None:
    entries = [{"keys": ["k"], "content": "c", "comment": name} for name in
               ("con", "NUL", "aux.txt", "com1", "", "..", "../../evil", "\x1b]0;x\x07", "．git", "book", "Lpt¹")]
    card = {**CARD, "data": {**CARD["data"], "name": "Con", "character_book": {"name": "..", "entries": entries}}}
    book = {"name": "nul", "entries": entries[:1]}
    before = set(_written(sample))
    items = _import(bank, _file(tmp_path, "c.json", card), _file(tmp_path, "b.json", book))["items"]
    assert [i["target"] for i in items] == [".writenow/characters/con-1.md", ".writenow/world/nul-1"]
    made = sorted(p for p in set(_written(sample)) - before if not p.startswith("assets"))  # not its kept original
    assert made == ["characters/con-1.md", "world/memory", *(f"world/memory/{n}.md" for n in (
        "0-x", "aux-txt", "book-2", "book", "com1-1", "con-1", "evil", "git", "k", "lpt1-1", "memory", "nul-1")),
        "world/nul-1", "world/nul-1/book.md", "world/nul-1/con-1.md"]
    assert all((sample / ".writenow" / p).stat().st_mode & 0o777 in (0o644, 0o755) for p in made)
    assert all((sample / ".writenow" / p).stat().st_mode & 0o777 == 0o644 for p in made if p.endswith(".md"))


# -- export: what it reads, where it writes ------------------------------------------------------------------

def test_export_never_reads_through_a_link_in_the_bank(bank: Bank, sample: Path, tmp_path: Path) -> None:
    """A cloned project may hold links to anywhere: an export would carry the writer's own files away."""
    outside = tmp_path / "outside"
    (outside / "assets").mkdir(parents=True)
    (outside / "book.md").write_text("---\nname: B\nkind: lore\n---\n", "utf-8")
    (outside / "secret.md").write_text("---\nname: Secret\nkeys: [s]\n---\nSECRET\n", "utf-8")
    (outside / "assets" / "secret.png").write_bytes(b"SECRET")
    world = sample / ".writenow" / "world"
    (world / "linked").symlink_to(outside, target_is_directory=True)
    (sample / ".writenow" / "assets").mkdir(exist_ok=True)
    (sample / ".writenow" / "assets" / "linked").symlink_to(outside, target_is_directory=True)
    (sample / ".writenow" / "characters" / "l.md").write_text(
        "---\nname: L\nkind: character\nlorebook: world/linked\nassets: assets/linked\n---\nL.\n", "utf-8")
    for source in ("world/linked", "characters/l.md"):
        envelope = bank.call("card:export", {"source": source, "format": "json", "output": str(tmp_path / "o.json"),
                                             "force": True})
        assert not envelope["ok"] and envelope["error"]["code"] == "CONFLICT", envelope
        assert "world/linked is a link" in envelope["error"]["message"]
    (sample / ".writenow" / "characters" / "l.md").write_text(
        "---\nname: L\nkind: character\nimage: assets/linked/assets/secret.png\nassets: assets/linked\n---\nL.\n",
        "utf-8")
    for fmt in ("charx", "png"):
        envelope = bank.call("card:export", {"source": "characters/l.md", "format": fmt,
                                             "output": str(tmp_path / f"o.{fmt}")})
        assert envelope["ok"], envelope
        assert b"SECRET" not in (tmp_path / f"o.{fmt}").read_bytes()
    with zipfile.ZipFile(tmp_path / "o.charx") as z:
        assert z.namelist() == ["card.json"]


@pytest.mark.parametrize("output", [".WriteNow/o.json", "chapters/../.WRITENOW/characters/o.json", "card-link",
                                    "folder-link/new.json", "dangling-link"])
def test_export_into_a_bank_by_another_spelling_is_refused(bank: Bank, sample: Path, output: str) -> None:
    card = sample / ".writenow" / "characters" / "lin-mo.md"
    before = card.read_bytes()
    (sample / "card-link").symlink_to(card)
    (sample / "folder-link").symlink_to(card.parent, target_is_directory=True)
    (sample / "dangling-link").symlink_to(card.parent / "new.json")
    envelope = bank.call("card:export", {"source": "characters/lin-mo.md", "format": "json", "output": output,
                                         "force": True})
    assert not envelope["ok"] and envelope["error"]["details"]["field"] == "output", envelope
    assert card.read_bytes() == before and not (card.parent / "new.json").exists()


# -- names with terminal escapes -----------------------------------------------------------------------------

def test_names_in_answers_never_carry_terminal_escapes(bank: Bank, tmp_path: Path) -> None:
    evil = "\x1b[2J\x1b]0;pwned\x07evil\u202e"
    first = {**CARD, "data": {**CARD["data"], "name": "A", "nickname": evil}}
    _import(bank, _file(tmp_path, "a.json", first))
    item = _import(bank, _file(tmp_path, "c\x1b[31m.json", {"name": evil, "description": "y"}))["items"][0]
    text = json.dumps(item, ensure_ascii=False)
    assert item["warnings"] and "\\x1b[2J" in item["warnings"][0], item
    assert not any(ord(ch) < 32 or ch == "\u202e" for ch in text), text
    assert safety.shown("a\u202eb\x07") == "a\\u202eb\\x07"


@pytest.mark.parametrize("name", ["/etc/x", "C:x", "c:/x.png", "assets\\.git\\config", "../x", "assets/../../x",
                                  "assets//x", "assets/./x", "\\\\server\\share\\x"])
def test_a_zip_name_leading_out_of_its_folder_refuses_the_import(bank: Bank, sample: Path, tmp_path: Path,
                                                                name: str) -> None:
    before = _written(sample)
    envelope = bank.call("card:import", {"paths": [_file(tmp_path, "h.charx", _zip({name: b"x"}))]})
    assert not envelope["ok"] and "would land outside its folder" in envelope["error"]["message"], envelope
    assert _written(sample) == before


def test_one_import_holds_a_bounded_amount_at_once(bank: Bank, sample: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.domains.cards import formats

    before = _written(sample)
    card = _zip({"assets/a.png": b"\x89PNG" + bytes(200_000)})
    monkeypatch.setattr(formats, "MAX_HELD", 500_000)  # two such cards; the real bound is 256 MiB
    envelope = bank.call("card:import", {"paths": [_file(tmp_path, f"{n}.charx", card) for n in range(3)]})
    assert not envelope["ok"], envelope
    assert [r["file"] for r in envelope["error"]["details"]["refused"]] == ["2.charx"]
    assert "would hold more than" in envelope["error"]["message"] and _written(sample) == before


def test_a_charx_export_holds_only_names_an_import_writes(bank: Bank, sample: Path, tmp_path: Path) -> None:
    item = _import(bank, _file(tmp_path, "h.charx", _zip({"assets/a.png": b"\x89PNG"})))["items"][0]
    folder = sample / ".writenow" / "assets" / "hostile" / "assets"
    for name in ("HEAD", "run.sh", "a\\b.png", "con.png", "x\x1b.png"):
        (folder / name).write_bytes(b"x")
    out = tmp_path / "o.charx"
    envelope = bank.call("card:export", {"source": item["target"], "format": "charx", "output": str(out)})
    assert envelope["ok"], envelope
    with zipfile.ZipFile(out) as z:
        assert z.namelist() == ["card.json", "assets/a.png"]


# -- names a book shares ---------------------------------------------------------------------------------------

def test_a_book_whose_entries_share_a_name_warns(bank: Bank, tmp_path: Path) -> None:
    """A card's book with an entry called like the card (common in real cards), like a character of the novel
    (林默) or twice the same: a lookup by that name then answers CONFLICT, so the import says so."""
    entries = [{"keys": ["k"], "content": "c", "comment": name} for name in ("Hostile", "林默", "Forest", "forest")]
    card = {**CARD, "data": {**CARD["data"], "character_book": {"name": "Wood", "entries": entries}}}
    item = _import(bank, _file(tmp_path, "c.json", card))["items"][0]
    assert item["warnings"] == [
        "`Hostile` names both .writenow/characters/hostile.md and .writenow/world/wood/hostile.md of this import; "
        "a lookup by `Hostile` answers CONFLICT until one of them is renamed (ask by id meanwhile)",
        "`林默` (.writenow/world/wood/林默.md) already names 林默 (.writenow/characters/lin-mo.md); a lookup by `林默` "
        "answers CONFLICT until one of them is renamed (ask by id meanwhile)",
        "`forest` names both .writenow/world/wood/forest.md and .writenow/world/wood/forest-2.md of this import; "
        "a lookup by `forest` answers CONFLICT until one of them is renamed (ask by id meanwhile)"]
    assert bank.call("kg:entity:get", {"name": "Hostile"})["error"]["code"] == "CONFLICT"  # what it warns of
    book = {"entries": [{"keys": ["k"], "content": "c", "comment": "Same"}] * 30}
    many = _import(bank, _file(tmp_path, "b.json", book))["items"][0]["warnings"]
    assert len(many) == 21 and many[-1] == "and 9 more names shared like these"
    aliased = {**CARD, "data": {**CARD["data"], "name": "Alias Man",
                                "extensions": {"membank": {"aliases": [f"林默{' ' * n}" for n in range(40)]}}}}
    assert len(_import(bank, _file(tmp_path, "a.json", aliased))["items"][0]["warnings"]) == 21


def test_an_imported_cards_text_cannot_drive_the_terminal(bank: Bank, sample: Path, home: Path, tmp_path: Path) -> None:
    from .helpers import membank

    card = {"name": "Esc Man", "description": "Body \x1b[2J cleared, \x1b]8;;https://evil.example\x1b\\a link\x1b]8;;\x1b\\."}
    _import(bank, _file(tmp_path, "esc.json", card))
    bank.close()
    shown = membank("story", "Esc Man", cwd=sample, home=home)
    assert shown.returncode == 0 and "Esc Man" in shown.stdout, shown.stderr
    assert "\x1b" not in shown.stdout


def test_joiners_words_need_are_not_invisible_tricks() -> None:
    persian, family = "assets/می\u200cخواهم.png", "assets/\U0001f468\u200d\U0001f469\u200d\U0001f467.png"
    assert safety.skip_reason(persian, b"data") is None and safety.skip_reason(family, b"data") is None
    assert safety.shown(persian) == persian and safety.skip_reason("assets/\u200c.git/config", b"") is not None
