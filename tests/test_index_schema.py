"""A domain's tables are its own: registered with the index, versioned apart, rebuilt alone."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import membank
from membank.index import schema
from membank.runtime import schemas


def _feedback(bank: membank.Bank, n: int) -> None:
    for i in range(n):
        assert bank.call("memory:preferences:ingest", {"runId": f"r{i}", "skillId": "polish", "action": "accept",
                                                       "evidenceRef": "omit needless words"})["ok"]


def test_a_domain_schema_change_rebuilds_only_what_comes_from_its_files(
        sample: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bank = membank.open(sample, home=home)
    try:
        _feedback(bank, 3)
        memories = bank.list_memories(include_deleted=True)["items"]
        journals = sorted(p for p in (sample / ".writenow" / "journal").glob("*.jsonl"))
    finally:
        bank.close()

    events = schema.SCHEMAS["learning.events"]
    monkeypatch.setitem(schema.SCHEMAS, "learning.events", dataclasses.replace(events, version=events.version + 1))
    bank = membank.open(sample, home=home, sync=False)
    try:
        report = bank.sync()
        assert report["added"] == len(journals) and report["updated"] == report["removed"] == 0  # journals alone
        assert bank.list_memories(include_deleted=True)["items"] == memories  # memories were not touched
        again = bank.ingest_feedback("r9", "polish", "accept", "omit needless words")
        assert again["count"] == 4  # the counts came back from the re-read journal
        assert bank.sync()["added"] == 0  # and the version is recorded: nothing more to re-read
    finally:
        bank.close()


def test_an_index_without_a_domain_table_gets_it_on_open(sample: Path, home: Path) -> None:
    bank = membank.open(sample, home=home)
    try:
        with bank.index.transaction():
            bank.index.db.execute("DROP TABLE events")
            bank.index.set_meta("schema:learning.events", "0")  # as an index written before the table existed
    finally:
        bank.close()
    bank = membank.open(sample, home=home)
    try:
        _feedback(bank, 1)
        assert bank.ingest_feedback("r5", "polish", "accept", "omit needless words")["count"] == 2
    finally:
        bank.close()


# -- every domain's tables are registered before an index opens (runtime/schemas.py) -------------------

PACKAGE = Path(membank.__file__).resolve().parent


def _registering_modules() -> set[str]:
    """Modules that call `register` or `register_row` as they are imported."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text("utf-8")).body:
            call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
            if call is not None and getattr(call.func, "id", None) in ("register", "register_row"):
                found.add(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    return found


def test_every_module_that_registers_a_table_is_imported_before_an_index_opens() -> None:
    assert _registering_modules() == {m.__name__ for m in schemas.REGISTERING}


def test_a_project_opened_without_the_catalog_has_every_domain_table(sample: Path, home: Path) -> None:
    # a fresh interpreter that imports no channel's handler: what a CLI command's process is
    code = ("import json, sys\nfrom pathlib import Path\nfrom membank.runtime.project import Project\n"
            "from membank.index import schema\nbank = Project(Path(sys.argv[1]))\nbank.close()\n"
            "print(json.dumps([sorted(schema.SCHEMAS), sorted(c.__name__ for c in schema.ROW_COLUMNS)]))")
    done = subprocess.run([sys.executable, "-c", code, str(sample)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "WRITENOW_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    membank.Bank  # noqa: B018  # this process: the Python API imports every handler, and with them every table
    assert json.loads(done.stdout) == [sorted(schema.SCHEMAS), sorted(c.__name__ for c in schema.ROW_COLUMNS)]
