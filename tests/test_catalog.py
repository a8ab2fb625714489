"""The catalog drives everything: each channel has a schema, a mode, a CLI command with help, a Python
method, a line in docs/channels.md, and a handler whose parameters are its payload's fields."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
import typer

import membank
from membank.runtime import catalog, directory
from membank.runtime.catalog import CATALOG, READS, field_name
from membank.shells import reference
from membank.shells.cli import app
from membank.shells.schema import file_name

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXTRAS = {"progress"}  # handler arguments that are no payload field (the CLI's progress bar)


def _command(path: str) -> object:
    node = typer.main.get_command(app)
    for part in path.split(" "):
        node = node.commands[part]  # type: ignore[attr-defined]
    return node


def test_every_channel_is_declared_whole() -> None:
    problems = []
    for name, c in CATALOG.items():
        if not (dataclasses.is_dataclass(c.payload) and c.payload.__dataclass_params__.frozen):  # type: ignore[attr-defined]
            problems.append(f"{name}: the payload is not a frozen dataclass")
        if c.data is None:
            problems.append(f"{name}: no data type")
        if c.mode not in ("read", "write"):
            problems.append(f"{name}: mode {c.mode!r}")
        if not c.summary.strip():
            problems.append(f"{name}: no summary")
        if not (DOCS / "schema" / file_name(name)).is_file():
            problems.append(f"{name}: no docs/schema/{file_name(name)}")
    assert not problems, "\n".join(problems)


def test_every_channel_has_a_cli_command_with_its_help() -> None:
    for name, c in CATALOG.items():
        command = _command(c.cli)
        first = next(o for o in CATALOG.values() if o.cli == c.cli)  # `settings set` serves two channels
        assert command.help == first.summary, f"{name}: `membank {c.cli}` has other help"  # type: ignore[attr-defined]


def test_every_channel_has_a_python_method() -> None:
    for name, c in CATALOG.items():
        owner = membank if c.target == "registry" else membank.Bank
        assert callable(getattr(owner, c.method, None)), f"{name}: no Python `{c.method}`"


def test_handlers_take_exactly_their_payload_fields() -> None:
    for name, c in CATALOG.items():
        params = {field_name(p) for p in list(inspect.signature(c.function).parameters)[1:] if p not in EXTRAS}
        payload = {f.name for f in dataclasses.fields(c.payload)} - {"projectId", "deadlineMs"}  # both dispatch's
        assert params == payload, f"{name}: handler takes {sorted(params)}, payload has {sorted(payload)}"


def test_the_docs_list_every_channel_and_are_up_to_date() -> None:
    text = (DOCS / "channels.md").read_text("utf-8")
    assert text == reference.render(), "docs/channels.md is stale: run `python -m membank.shells.reference`"
    for name in CATALOG:
        assert f"| `{name}` |" in text


def test_the_sidecar_runs_reads_as_the_catalog_says() -> None:
    assert READS == {n for n, c in CATALOG.items() if c.mode == "read"}
    assert "memory:injection:preview" in READS and "memory:create" not in READS


def test_a_channel_refuses_the_same_way_from_python_and_the_sidecar(tmp_path: Path) -> None:
    created = membank.init(tmp_path / "novel")
    assert created["created"] and membank.init(tmp_path / "novel")["created"] == []
    bank = membank.open(tmp_path / "novel", home=tmp_path / "global")
    try:
        envelope = bank.call("memory:create", {"type": "note", "scope": "project", "content": "x", "tags": [1]})
        try:
            bank.create_memory("note", "project", "x", tags=[1])
        except membank.MembankError as e:
            assert e.envelope() == envelope
        else:
            raise AssertionError("the Python method accepted what the channel refused")
    finally:
        bank.close()


def test_the_directory_is_up_to_date() -> None:
    assert directory.CHANNELS == catalog.directory_entries(), \
        "runtime/directory.py is stale: run `python -m membank.runtime.catalog`"
    assert (Path(catalog.__file__).with_name("directory.py")).read_text("utf-8") == catalog.directory_text()



def test_a_stale_directory_slows_a_command_down_and_breaks_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table moved or renamed, the directory not made again (a developer's install): the channel is
    found in the whole catalog, and a name that is no channel is none, never a KeyError out of `dispatch`."""
    monkeypatch.setitem(directory.CHANNELS, "memory:gone", ("membank.domains.gone.channels", "gone", "Gone."))
    assert catalog.channel("memory:gone") is None
    monkeypatch.setitem(directory.CHANNELS, "kg:mentions", ("membank.domains.moved.channels", "mentions", "?"))
    assert catalog.channel("kg:mentions") is CATALOG["kg:mentions"]


def test_the_catalog_is_made_once_whoever_asks_first() -> None:
    """A command's slow path (a name the directory does not hold) must not make a second catalog: a caller
    holding the first (the schema generator's importer, a test that patched it) would see another one."""
    from membank.runtime import catalog as module
    held = module.CATALOG
    assert module.channel("memory:no-such-channel") is None and module.describe("memory:create")
    assert module.CATALOG is held
