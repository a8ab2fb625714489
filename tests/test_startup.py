"""What a CLI command loads. The catalog lists every channel without importing the code behind it
(handlers named `Lazy`, domains/contract.py), so a reading command imports the flows of the one
channel it runs, and no embedding runtime, card formats, settings rewriting or file watcher
(docs/performance.md, "The CLI as a writer waits for it"). Each case runs in an interpreter of its
own: this one has imported everything already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from membank.domains.contract import Lazy
from membank.runtime.catalog import CATALOG

from .helpers import membank

# never needed to list the channels or to read a bank from the command line
HEAVY = ("model2vec", "tokenizers", "safetensors", "huggingface_hub", "ruamel", "watchdog", "mcp")
# the flows of channels a reading command does not run
FLOWS = ("membank.domains.cards.flows", "membank.domains.cards.export", "membank.domains.settings.update",
         "membank.domains.working.flows", "membank.shells.watch")
REPORT = ("membank.domains.indexing.report", "membank.domains.lifecycle.triggers")  # status's and doctor's
# the prompt's recall stack (the name bridge, the strong tier's ranking): a schema registered beside it
# once made every command import it before its project opened
RECALL = ("membank.domains.context.memories", "membank.domains.recall.preview", "membank.domains.recall.bridgebank")

# the bench's cli_* rows (membank/shells/bench/cli.py), each naming the project as that command takes it
READING = {"status": ("status", "{p}"), "doctor": ("doctor", "{p}"), "show": ("show", "m-fact-tingchao", "-C", "{p}"),
           "list": ("list", "{p}", "--type", "preference"), "settings get": ("settings", "get", "-C", "{p}"),
           "skills": ("skills", "-C", "{p}")}

_LISTED = """
import json, sys
import membank.shells.cli
from membank.runtime.catalog import CATALOG
json.dump({"code": 0, "modules": sorted(sys.modules)}, open(sys.argv[1], "w"))
"""

_RUN = """
import json, sys
out, sys.argv = sys.argv[1], ["membank", *sys.argv[2:]]
from membank.shells.cli import main
try:
    main()
    code = 0
except SystemExit as e:
    code = e.code
json.dump({"code": code, "modules": sorted(sys.modules)}, open(out, "w"))
"""


def _run(code: str, *args: str, tmp: Path, cwd: Path, home: Path) -> tuple[Any, set[str]]:
    """How `code` ended (its exit code) and the modules its interpreter holds at the end."""
    out = tmp / "modules.json"
    env = {**os.environ, "WRITENOW_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", code, str(out), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    assert out.exists(), done.stderr
    found = json.loads(out.read_text("utf-8"))
    return found["code"], set(found["modules"])


def _roots(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_the_cli_and_its_catalog_import_no_flow_and_no_numpy(tmp_path: Path, home: Path) -> None:
    _, loaded = _run(_LISTED, tmp=tmp_path, cwd=tmp_path, home=home)
    assert _roots(loaded) & {"numpy", "pydantic", *HEAVY} == set()
    assert loaded & {*FLOWS, *REPORT, "membank.domains.indexing.sync", "membank.index.embed"} == set()


def test_the_cli_imports_no_domains_table_and_a_channel_its_own_only(tmp_path: Path, home: Path) -> None:
    """Its commands' names and help come from the catalog's directory: no domain's payloads and data types
    (a third of `membank status`'s start-up); running a channel imports the table of its domain alone."""
    code = _LISTED.replace("from membank.runtime.catalog import CATALOG\n",
                           "from membank.runtime.catalog import channel\nchannel('memory:get')\n")
    _, loaded = _run(code, tmp=tmp_path, cwd=tmp_path, home=home)
    assert {m for m in loaded if m.endswith(".channels")} == {"membank.domains.memories.channels"}


def test_every_lazy_handler_names_a_function_that_exists() -> None:
    named = [c for c in CATALOG.values() if isinstance(c.handler, Lazy)]
    assert len(named) > len(CATALOG) // 2  # the tables name most handlers
    for c in named:
        assert callable(c.function), f"{c.name}: {c.handler.module}.{c.handler.name} is not a function"


@pytest.mark.parametrize("command", READING)
def test_a_reading_command_loads_only_its_own_channel(sample: Path, home: Path, tmp_path: Path, command: str) -> None:
    assert membank("index", cwd=sample, home=home).returncode == 0  # the first sync embeds: it loads the model
    args = (a.format(p=sample) for a in READING[command])
    code, loaded = _run(_RUN, *args, tmp=tmp_path, cwd=sample, home=home)
    assert code in (0, 1 if command == "doctor" else 0)  # doctor exits 1 when a file has an error
    assert "membank.domains.memories.read" in loaded  # the project was opened: its domain tables registered
    assert _roots(loaded) & set(HEAVY) == set()
    assert loaded & set(FLOWS) == set()
    if command not in ("status", "doctor"):  # their report reads episodes, lifecycle and story problems
        assert loaded & set(REPORT) == set()
    assert loaded & set(RECALL) == set()  # status asks recall/readiness.py whether semantic recall can run
    assert "rich" not in _roots(loaded)  # piped, plain lines and columns need no rich (shells/console.py)


_AS_MAIN = """
import json, runpy, sys
out, sys.argv = sys.argv[1], ["membank", *sys.argv[2:]]
try:
    runpy.run_module("membank.shells.cli", run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as e:
    code = e.code
json.dump({"code": code, "modules": sorted(sys.modules)}, open(out, "w"))
"""


def test_the_reading_commands_run_without_typer(sample: Path, home: Path, tmp_path: Path) -> None:
    """`python -m membank.shells.cli` (as the bench runs it) takes the bench's reading commands before
    typer is imported (shells/clireads.py); their output is what typer's commands print (test_cli.py)."""
    assert membank("index", cwd=sample, home=home).returncode == 0
    for command, args in READING.items():
        code, loaded = _run(_AS_MAIN, *(a.format(p=sample) for a in args), tmp=tmp_path, cwd=sample, home=home)
        assert code in (0, 1 if command == "doctor" else 0), command
        assert "membank.domains.memories.read" in loaded, command  # the project was opened
        assert _roots(loaded) & {"typer", "click"} == set(), command
        # what only a write, a large sync or a log line needs (kernel/log.py, files/exchange.py, intakes.py)
        unneeded = {"logging", "subprocess", "ctypes", "secrets", "random"}
        if command == "doctor":  # its facts compared by meaning need numpy, which loads ctypes (not the others)
            unneeded -= {"ctypes"}
        assert _roots(loaded) & unneeded == set(), command


@pytest.mark.parametrize("command", ("list", "show", "settings get", "skills"))
def test_a_reading_command_on_a_project_with_a_manuscript_imports_no_numpy(sample: Path, home: Path, tmp_path: Path,
                                                                         command: str) -> None:
    """Every command syncs first, the manuscript's passages too; with every passage embedded already the
    sync must not import numpy (~0.1 s of each command a writer waits for)."""
    assert membank("index", cwd=sample, home=home).returncode == 0
    args = (a.format(p=sample) for a in READING[command])
    _, loaded = _run(_RUN, *args, tmp=tmp_path, cwd=sample, home=home)
    assert "numpy" not in _roots(loaded)


_COLLECTING = """
import gc, json, sys
out, sys.argv = sys.argv[1], ["membank", *sys.argv[2:]]
import membank.shells.server as server
server.run = lambda projects, **options: json.dump({"during": gc.isenabled()}, open(out, "w")) or 0
from membank.shells.cli import main
try:
    main()
except SystemExit:
    pass
if sys.argv[1] != "serve":
    json.dump({"during": gc.isenabled()}, open(out, "w"))
"""


@pytest.mark.parametrize("command", (("status", "{p}"), ("serve", "--no-watch", "--project", "{p}"), ("index", "{p}")))
def test_a_command_runs_without_the_cycle_collector_and_the_sidecar_with_it(sample: Path, home: Path, tmp_path: Path,
                                                                           command: tuple[str, ...]) -> None:
    out = tmp_path / "gc.json"
    done = subprocess.run([sys.executable, "-c", _COLLECTING, str(out), *(a.format(p=sample) for a in command)],
                          cwd=sample, env={**os.environ, "WRITENOW_HOME": str(home)}, capture_output=True, text=True,
                          timeout=120)
    assert out.exists(), done.stderr
    assert json.loads(out.read_text("utf-8"))["during"] is (command[0] in ("serve", "index"))  # index: minutes
