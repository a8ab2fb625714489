"""The watcher on real files: editor saves, git checkouts, folder moves, overflow, fallback, shutdown.

Every test drives a real watchdog observer on real files in a temporary folder and waits on a
condition with a deadline (never a fixed sleep)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

import membank
from membank import Bank
from membank.index.store import reading
from membank.shells import watch as watch_module
from membank.shells import observers
from membank.shells import watchreport
from membank.shells.watch import POLLING_ENV, Watcher
from membank.shells.watchreport import Report
from membank.domains.memories import read

from .watching import STAMP, converged, wait_converged, wait_until, watched

LINUX = sys.platform.startswith("linux")
# watchdog warns when a folder made and filled at once gets its watch twice; it is harmless
pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")


# -- helpers ---------------------------------------------------------------------------------------


def memory(bank: Bank, memory_id: str) -> dict[str, Any] | None:
    with reading():
        found = bank.index.find("memory", memory_id)
    return found[1] if found else None


def content_of(bank: Bank, memory_id: str) -> str | None:
    found = memory(bank, memory_id)
    return found["content"] if found else None


def sources(bank: Bank) -> set[str]:
    with reading():
        items = read.query(bank.index, include_deleted=True)
    return {m["source"] for m in items}


def diagnostics_for(bank: Bank, source: str) -> list[dict[str, Any]]:
    with reading():
        return [d.to_dict() for d in bank.index.diagnostics() if d.source == source]


def status(bank: Bank) -> dict[str, Any]:
    with reading():  # every read beside a running watcher goes through a snapshot, as the sidecar's do
        return bank.status()


def preview(bank: Bank) -> dict[str, Any]:
    with reading():
        return bank.preview()


def tombstones(bank: Bank) -> int:
    with reading():
        return bank.index.counts()["tombstones"]


def memory_text(body: str, **meta: Any) -> str:
    lines = ["---", *(f"{k}: {v}" for k, v in meta.items()), STAMP, "---", body, ""]
    return "\n".join(lines)


class Changes:
    """Collects on_change calls."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.lock = threading.Lock()

    def __call__(self, changed: list[str]) -> None:
        with self.lock:
            self.batches.append(changed)

    def seen(self, source: str) -> bool:
        with self.lock:
            return any(source in b for b in self.batches)


@contextmanager
def cli_watch(sample: Path, home: Path) -> Iterator[tuple[subprocess.Popen[str], list[str], list[str]]]:
    """`membank watch sample` in a process of its own, its stdout and stderr lines gathered as they come;
    killed on the way out if still running."""
    env = {**os.environ, "WRITENOW_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    env.pop(POLLING_ENV, None)
    proc = subprocess.Popen([sys.executable, "-m", "membank.shells.cli", "watch", str(sample), "--debounce", "0.05"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    errors: list[str] = []
    readers = [threading.Thread(target=lambda s=s, out=o: out.extend(iter(s.readline, "")), daemon=True)
               for s, o in ((proc.stdout, lines), (proc.stderr, errors))]
    for r in readers:
        r.start()
    try:
        yield proc, lines, errors
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for r in readers:
        r.join(timeout=5)


@pytest.fixture(autouse=True)
def native_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """Native events unless a test asks for polling (MEMBANK_WATCH_POLLING may be set outside)."""
    monkeypatch.delenv(POLLING_ENV, raising=False)


@pytest.fixture
def changes() -> Changes:
    return Changes()


@pytest.fixture
def watcher(bank: Bank, changes: Changes) -> Iterator[Watcher]:
    # no periodic reconcile: a test counting full scans sees only those its own changes cause
    w = Watcher(bank, on_change=changes, debounce=0.05, reconcile_every=None)
    w.start()
    wait_until(w.idle, what="the first reconcile")
    yield w
    w.stop()


def bank_dir(bank: Bank) -> Path:
    return bank.project.path


# -- editor saves ------------------------------------------------------------------------------------


def test_start_reconciles_and_reports_status(bank: Bank, home: Path, changes: Changes) -> None:
    (bank_dir(bank) / "memories/notes/while-closed.md").write_text(memory_text("Written while nothing watched."))
    (home / "memories/tone.md").write_text(memory_text("Warm, never cute.", type="preference"))
    w = Watcher(bank, on_change=changes, debounce=0.05)
    assert status(bank)["watch"] is None
    w.start()
    try:
        wait_until(w.idle, what="the first reconcile")
        assert content_of(bank, "notes/while-closed") == "Written while nothing watched."
        assert content_of(bank, "tone") == "Warm, never cute."
        assert changes.batches[0] == [".writenow/memories/notes/while-closed.md", "global:memories/tone.md"]
        watch = status(bank)["watch"]
        assert watch["mode"] == "native" and watch["running"] and watch["note"] is None
        assert watch["lastChange"] is not None
        with reading():
            assert bank.call("index:status")["data"]["watch"]["running"] is True
    finally:
        w.stop()
    assert not w.status()["running"]
    assert status(bank)["watch"] is None


def test_atomic_rename_save_updates_in_place(bank: Bank, watcher: Watcher, changes: Changes) -> None:
    target = bank_dir(bank) / "memories/preferences/cut-filler-words.md"
    before = memory(bank, "m-9c4t2w7k1p3z")
    scans = watcher.full_scans
    assert before is not None
    text = target.read_text().replace('Cut filler words such as', 'Always cut filler words such as')
    # gedit: write a hidden .goutputstream-* file, then move it onto the file
    tmp = target.parent / ".goutputstream-X1Y2Z3"
    tmp.write_text(text)
    os.replace(tmp, target)
    wait_until(lambda: (content_of(bank, "m-9c4t2w7k1p3z") or "").startswith("Always cut"), what="the gedit save")
    # VS Code: a temporary sibling, renamed over the file; then a second event (attributes) for the same save
    text2 = text.replace("Always cut", "Cut, always,")
    tmp2 = target.parent / "cut-filler-words.md.tmp"
    tmp2.write_text(text2)
    os.replace(tmp2, target)
    os.utime(target)
    wait_until(lambda: (content_of(bank, "m-9c4t2w7k1p3z") or "").startswith("Cut, always,"), what="the VS Code save")
    assert changes.seen(".writenow/memories/preferences/cut-filler-words.md")
    assert not any(".goutputstream" in s or s.endswith(".tmp") for b in changes.batches for s in b)
    assert memory(bank, "m-9c4t2w7k1p3z")["source"] == before["source"]
    assert tombstones(bank) == 0
    assert watcher.full_scans == scans
    wait_converged(bank)


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim is not installed")
def test_vim_save_with_backup_rename(bank: Bank, watcher: Watcher, changes: Changes) -> None:
    target = bank_dir(bank) / "memories/notes/the-last-dawn.md"
    before = sources(bank)
    scans = watcher.full_scans
    # backupskip= so vim makes its backup even under /tmp: rename to `~`, write anew, delete the backup;
    # it also probes the folder with a file named 4913 and keeps a .swp swap file while editing
    done = subprocess.run(
        ["vim", "--clean", "-es", "-i", "NONE", "-c", "set backupskip= backupcopy=auto writebackup",
         "-c", "$s/$/ (revised in vim)/", "-c", "wq", str(target)],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert target.read_text().rstrip().endswith("(revised in vim)")
    source = ".writenow/memories/notes/the-last-dawn.md"
    wait_until(lambda: changes.seen(source), what="vim's save to be applied")
    wait_converged(bank)
    with reading():
        item = next(m for m in read.query(bank.index, ) if m["source"] == source)
    assert item["content"].endswith("(revised in vim)")
    assert sources(bank) == before  # no ~ backup, 4913 probe or .swp file ever indexed
    assert not any(s.endswith(("~", "4913", ".swp")) for b in changes.batches for s in b)
    assert watcher.full_scans == scans  # one file re-read, not a scan of the whole bank
    assert tombstones(bank) == 0


def test_delete_then_create_same_path_and_move_keep_identity(bank: Bank, watcher: Watcher) -> None:
    folder = bank_dir(bank) / "memories/facts"
    target = folder / "maren-father.md"
    data = target.read_bytes()
    # vim without a backup: delete, then create the file again
    target.unlink()
    target.write_bytes(data.rstrip() + b" Still unsolved.\n")
    wait_until(lambda: (content_of(bank, "m-fact-maren-father") or "").endswith("Still unsolved."),
               what="the re-created file")
    assert memory(bank, "m-fact-maren-father")["source"] == ".writenow/memories/facts/maren-father.md"
    assert tombstones(bank) == 0
    wait_converged(bank)
    # a delete plus a create elsewhere with the same content is a move: no clash, no tombstone
    moved_id = "m-9c4t2w7k1p3z"
    src = bank_dir(bank) / "memories/preferences/cut-filler-words.md"
    blob = src.read_bytes()
    src.unlink()
    (bank_dir(bank) / "memories/style/cut-filler-words.md").write_bytes(blob)
    wait_until(lambda: (memory(bank, moved_id) or {}).get("source") == ".writenow/memories/style/cut-filler-words.md",
               what="the moved memory")
    wait_converged(bank)
    assert tombstones(bank) == 0
    assert not any("also used by" in d["message"] for d in watched(bank)["diagnostics"])
    # a plain delete leaves its tombstone for audit, and never shows in a list
    (bank_dir(bank) / "memories/style/cut-filler-words.md").unlink()
    wait_until(lambda: memory(bank, moved_id) is None, what="the deletion")
    assert tombstones(bank) == 1
    wait_converged(bank)


def test_half_written_file_is_not_indexed_torn(bank: Bank, watcher: Watcher, monkeypatch: pytest.MonkeyPatch) -> None:
    if not watcher.tracks_close:
        pytest.skip("only inotify says when a writer closes a file")
    # the hold on an open file ends with its close event here, never with the clock (a slow machine)
    monkeypatch.setattr(watch_module, "HOLD", 3600.0)
    monkeypatch.setattr(watch_module, "HOLD_MAX", 3600.0)
    folder = bank_dir(bank) / "memories/notes"
    whole = memory_text("A long note that arrives in two writes.", id="half-written")
    f = open(folder / "half.md", "w", encoding="utf-8")
    try:
        f.write(whole[:20])  # the front matter is not even closed yet
        f.flush()
        (folder / "other.md").write_text(memory_text("Saved while the other file is open.", id="other"))
        wait_until(lambda: memory(bank, "other"), what="the other file")  # a batch ran after the half write
        assert memory(bank, "half-written") is None
        assert diagnostics_for(bank, ".writenow/memories/notes/half.md") == []
        assert ".writenow/memories/notes/half.md" not in sources(bank)
        f.write(whole[20:])
    finally:
        f.close()
    wait_until(lambda: content_of(bank, "half-written") == "A long note that arrives in two writes.", what="the whole file")
    assert diagnostics_for(bank, ".writenow/memories/notes/half.md") == []
    wait_converged(bank)


def test_parse_error_is_a_diagnostic_until_fixed(bank: Bank, watcher: Watcher) -> None:
    path = bank_dir(bank) / "memories/notes/broken.md"
    source = ".writenow/memories/notes/broken.md"
    path.write_text("---\nid: broken\ntags: [unclosed\n---\nBody.\n")
    wait_until(lambda: diagnostics_for(bank, source), what="the diagnostic")
    assert memory(bank, "broken") is None
    path.write_text(memory_text("Body.", id="broken"))
    wait_until(lambda: content_of(bank, "broken") == "Body.", what="the fixed file")
    assert diagnostics_for(bank, source) == []
    wait_converged(bank)


def test_cards_skills_settings_and_global_bank(bank: Bank, home: Path, watcher: Watcher, changes: Changes) -> None:
    root = bank_dir(bank)
    (root / "characters/harbourmaster.md").write_text(f"---\nname: Harbourmaster Pell\n{STAMP}\n---\nGruff.\n")
    (root / "world/places").mkdir()
    (root / "world/places/the-quay.md").write_text(f"---\nname: The Quay\nkind: place\n{STAMP}\n---\nWet stone.\n")
    (root / "skills/rewrite.md").write_text("---\nid: rewrite\nname: Rewrite\n---\nRewrite the passage.\n")
    (home / "memories/global-tone.md").write_text(memory_text("Prefer plain words.", type="preference"))
    (root / "skills/polish.md").unlink()

    def cards_and_skills() -> bool:
        with reading():
            names = {c["name"] for c in bank.index.cards()}
            skills = {s["id"] for s in bank.index.skills()}
        return {"Harbourmaster Pell", "The Quay"} <= names and "rewrite" in skills and "polish" not in skills
    wait_until(cards_and_skills, what="the new cards and skills")
    wait_until(lambda: content_of(bank, "global-tone") == "Prefer plain words.", what="the global memory")
    assert memory(bank, "global-tone")["scope"] == "global"
    # settings are not indexed, but a change is reported and shows at once
    (root / "settings.yaml").write_text("memory:\n  injectionMaxItems: 1\n")
    wait_until(lambda: changes.seen(".writenow/settings.yaml"), what="the settings change")
    assert len(preview(bank)["items"]) == 1
    (home / "settings.yaml").write_text("memory:\n  injectionEnabled: false\n")
    wait_until(lambda: changes.seen("global:settings.yaml"), what="the global settings change")
    assert preview(bank)["items"] == []
    wait_converged(bank)


def test_links_out_of_the_bank_are_refused(bank: Bank, watcher: Watcher, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(memory_text("Nothing from outside the bank.", id="secret"))
    (outside / "folder").mkdir()
    (outside / "folder/also-secret.md").write_text(memory_text("Nor from a linked folder.", id="also-secret"))
    notes = bank_dir(bank) / "memories/notes"
    os.symlink(outside / "secret.md", notes / "linked.md")
    os.symlink(outside / "folder", notes / "linked-folder")
    wait_until(lambda: diagnostics_for(bank, ".writenow/memories/notes/linked.md")
               and diagnostics_for(bank, ".writenow/memories/notes/linked-folder"), what="the link diagnostics")
    assert memory(bank, "secret") is None and memory(bank, "also-secret") is None
    # the target changing is not followed either
    (outside / "secret.md").write_text(memory_text("Changed outside.", id="secret"))
    wait_converged(bank)
    assert memory(bank, "secret") is None
    (notes / "linked.md").unlink()
    (notes / "linked-folder").unlink()
    wait_until(lambda: not diagnostics_for(bank, ".writenow/memories/notes/linked.md")
               and not diagnostics_for(bank, ".writenow/memories/notes/linked-folder"), what="the diagnostics to clear")
    wait_converged(bank)


# -- bursts -----------------------------------------------------------------------------------------


def test_folder_rename_and_delete_converge(bank: Bank, watcher: Watcher) -> None:
    root = bank_dir(bank)
    explicit = memory(bank, "m-9c4t2w7k1p3z")
    assert explicit is not None and explicit["source"].startswith(".writenow/memories/preferences/")
    os.rename(root / "memories/preferences", root / "memories/prefs")
    wait_until(lambda: (memory(bank, "m-9c4t2w7k1p3z") or {}).get("source", "").startswith(".writenow/memories/prefs/"),
               what="the renamed folder")
    wait_converged(bank)
    assert tombstones(bank) == 0  # moved, not removed: nothing left behind
    assert not any("also used by" in d["message"] for d in watched(bank)["diagnostics"])
    # a deeper folder appears (copied in), then is deleted whole
    shutil.copytree(root / "memories/facts", root / "memories/archive/old-facts")
    for path in (root / "memories/archive/old-facts").glob("*.md"):
        path.write_text(path.read_text().replace("id: ", "id: old-"))
    wait_converged(bank)
    assert any(s.startswith(".writenow/memories/archive/old-facts/") for s in sources(bank))
    shutil.rmtree(root / "memories/archive")
    wait_converged(bank)
    assert not any(s.startswith(".writenow/memories/archive/") for s in sources(bank))
    shutil.rmtree(root / "characters")
    wait_converged(bank)
    with reading():
        assert [c for c in bank.index.cards() if c["source"].startswith(".writenow/characters/")] == []


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env, timeout=60)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_checkout_of_hundreds_of_files_converges(sample: Path, home: Path) -> None:
    bulk = sample / ".writenow/memories/bulk"
    bulk.mkdir()
    for i in range(300):
        (bulk / f"m{i:03}.md").write_text(memory_text(f"Bulk memory number {i}, first version.", type="fact"))
    _git(sample, "init", "-q", "-b", "main")
    _git(sample, "add", "-A")
    _git(sample, "commit", "-q", "-m", "main")
    _git(sample, "checkout", "-q", "-b", "other")
    for i in range(300):
        path = bulk / f"m{i:03}.md"
        if i % 3 == 0:
            path.unlink()
        else:
            path.write_text(memory_text(f"Bulk memory number {i}, second version on the other branch.", type="fact"))
    for i in range(300, 400):
        (bulk / f"m{i:03}.md").write_text(memory_text(f"Bulk memory {i}, only on the other branch.", type="note"))
    os.rename(sample / ".writenow/memories/notes", sample / ".writenow/memories/notebook")
    _git(sample, "add", "-A")
    _git(sample, "commit", "-q", "-m", "other")
    _git(sample, "checkout", "-q", "main")

    opened = membank.open(sample)
    w = Watcher(opened, debounce=0.05)
    try:
        w.start()
        wait_until(w.idle, what="the first reconcile")
        assert content_of(opened, "bulk/m001") == "Bulk memory number 1, first version."
        _git(sample, "checkout", "-q", "other")
        wait_converged(opened, timeout=30)
        assert content_of(opened, "bulk/m001") == "Bulk memory number 1, second version on the other branch."
        assert memory(opened, "bulk/m000") is None and memory(opened, "bulk/m399") is not None
        _git(sample, "checkout", "-q", "main")
        wait_converged(opened, timeout=30)
        assert content_of(opened, "bulk/m000") == "Bulk memory number 0, first version."
        assert memory(opened, "bulk/m399") is None
    finally:
        w.stop()
        opened.close()


@pytest.mark.skipif(not LINUX, reason="inotify's event queue is Linux's")
def test_event_queue_overflow_ends_in_a_full_reconcile(bank: Bank, watcher: Watcher) -> None:
    if watcher.status()["mode"] != "native":
        pytest.skip("native events are not available here")
    root = bank_dir(bank)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip("the inotify queue is too large to overflow in a test")
    before = watcher.overflows
    with watcher.holding_events() as held:  # the kernel queues every event from here on, and drops the overflow
        if not held:
            pytest.skip("this watchdog has no event reader the watcher can hold back")
        noise = [os.open(root / "memories" / f".noise-{i}", os.O_CREAT | os.O_WRONLY) for i in range(2)]
        try:
            for i in range(limit + 20_000):  # far more events than the kernel queues: it drops the rest
                os.write(noise[i % 2], b"x")
        finally:
            for fd in noise:
                os.close(fd)
        # these changes' events are lost: only the reconcile after the overflow can find them
        (root / "memories/notes/lost-event.md").write_text(memory_text("Saved during the overflow.", id="lost"))
        (root / "memories/facts/maren-father.md").unlink()
    wait_until(lambda: watcher.overflows > before, what="the overflow to be noticed")
    wait_until(lambda: content_of(bank, "lost") == "Saved during the overflow.", what="the lost change")
    wait_converged(bank)


# -- fallback, shutdown, CLI -------------------------------------------------------------------------


def test_polling_fallback_when_asked(bank: Bank, monkeypatch: pytest.MonkeyPatch, changes: Changes,
                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(POLLING_ENV, "1")
    w = Watcher(bank, on_change=changes, debounce=0.05, poll_interval=0.1)
    with caplog.at_level("WARNING", logger="membank.shells.watch"):
        w.start()
    try:
        watch = status(bank)["watch"]
        assert watch["mode"] == "polling" and "polling" in watch["note"]
        assert sum("polling" in r.getMessage() for r in caplog.records) == 1
        wait_until(w.idle, what="the first reconcile")
        path = bank_dir(bank) / "memories/notes/polled.md"
        path.write_text(memory_text("Seen by polling.", id="polled"))
        wait_until(lambda: content_of(bank, "polled") == "Seen by polling.", what="the polled change")
        os.rename(bank_dir(bank) / "memories/notes", bank_dir(bank) / "memories/jottings")
        wait_until(lambda: (memory(bank, "polled") or {}).get("source", "").startswith(".writenow/memories/jottings/"),
                   what="the polled folder rename")
        wait_converged(bank)
    finally:
        w.stop()


@pytest.mark.skipif(not LINUX, reason="the inotify watch limit is Linux's")
@pytest.mark.parametrize("where", ["root", "sub-folder"])
def test_falls_back_to_polling_when_the_watch_limit_is_reached(bank: Bank, monkeypatch: pytest.MonkeyPatch,
                                                              where: str) -> None:
    from watchdog.observers import inotify_c

    roots = {os.fsencode(str(r.path)) for r in bank.roots}
    real = inotify_c.InotifyFD.add_callback

    def add_callback(self: Any, path: bytes, *args: Any, **kwargs: Any) -> Any:
        if where == "root" or path not in roots:  # as the kernel does once fs.inotify.max_user_watches is reached
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(inotify_c.InotifyFD, "add_callback", add_callback)
    monkeypatch.delenv(POLLING_ENV, raising=False)
    w = Watcher(bank, debounce=0.05, poll_interval=0.1)
    w.start()
    try:
        watch = w.status()
        assert watch["mode"] == "polling" and "max_user_watches" in watch["note"]
        wait_until(w.idle, what="the first reconcile")
        (bank_dir(bank) / "memories/notes/deep.md").write_text(memory_text("Still seen.", id="deep"))
        wait_until(lambda: content_of(bank, "deep") == "Still seen.", what="the change, by polling")
    finally:
        w.stop()


def test_stop_applies_pending_work_and_leaves_a_consistent_index(bank: Bank) -> None:
    # an hour's debounce and no periodic scan: nothing is applied before stop() but by its final flush
    w = Watcher(bank, debounce=3600.0, reconcile_every=None)
    w.start()
    wait_until(w.idle, what="the first reconcile")
    path = bank_dir(bank) / "memories/notes/last-minute.md"
    path.write_text(memory_text("Saved just before quitting.", id="last-minute"))
    wait_until(lambda: not w.idle(), what="the event to arrive")  # pending: nothing else can make it busy
    assert content_of(bank, "last-minute") is None
    w.stop()
    assert not w.alive()
    assert not w.status()["running"]
    assert content_of(bank, "last-minute") == "Saved just before quitting."
    assert converged(bank)
    path.write_text(memory_text("Changed after the watcher stopped.", id="last-minute"))
    assert content_of(bank, "last-minute") == "Saved just before quitting."  # nothing watches any more


def test_watcher_never_writes_to_the_writers_files(bank: Bank, home: Path, watcher: Watcher) -> None:
    def files() -> dict[str, tuple[int, bytes]]:
        found = {}
        for base in (bank_dir(bank), home):
            for path in base.rglob("*"):
                if path.is_file() and ".index" not in path.parts:
                    found[str(path)] = (path.stat().st_mtime_ns, path.read_bytes())
        return found
    (bank_dir(bank) / "memories/notes/ours.md").write_text(memory_text("Ours.", id="ours"))
    (bank_dir(bank) / "memories/notes/dupe.md").write_text(memory_text("Clashing id.", id="m-9c4t2w7k1p3z"))
    (bank_dir(bank) / "memories/notes/bad.md").write_text("---\nid: [\n---\n")
    wait_converged(bank)
    before = files()
    done = watcher.batches
    watcher.reconcile()  # a full reconcile reads everything again
    wait_until(lambda: watcher.batches > done and watcher.idle(), what="the reconcile")
    assert files() == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cli_watch_prints_batches_and_stops_cleanly(sample: Path, home: Path, sig: signal.Signals) -> None:
    with cli_watch(sample, home) as (proc, lines, errors):
        wait_until(lambda: any(line.startswith("watching") for line in errors), 30, "the watch to start")
        wait_until(lambda: any("changed:" in line for line in lines), 30, "the first reconcile's line")
        (sample / ".writenow/memories/notes/from-cli.md").write_text(memory_text("Seen by membank watch.", id="cli"))
        wait_until(lambda: any(".writenow/memories/notes/from-cli.md" in line for line in lines), 30,
                   "the batch line")
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 0, "".join(errors)
    assert not any("Traceback" in line for line in errors), "".join(errors)
    reopened = membank.open(sample, sync=False)
    try:
        assert content_of(reopened, "cli") == "Seen by membank watch."
    finally:
        reopened.close()


def test_network_drives_are_polled(bank: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mounts = tmp_path / "mounts"
    folder = str(bank_dir(bank).resolve()).replace(" ", "\\040")
    mounts.write_text(f"/dev/sda1 / ext4 rw 0 0\nserver:/export {folder} nfs4 rw 0 0\n")
    assert observers.network_filesystem(bank_dir(bank) / "memories", str(mounts)) == "nfs4"
    assert observers.network_filesystem(tmp_path, str(mounts)) is None
    real = observers.network_filesystem
    monkeypatch.setattr(observers, "network_filesystem", lambda path: real(path, str(mounts)))
    monkeypatch.delenv(POLLING_ENV, raising=False)
    w = Watcher(bank, debounce=0.05, poll_interval=0.1)
    w.start()
    try:
        assert w.status()["mode"] == "polling" and "network" in w.status()["note"]
        wait_until(w.idle, what="the first reconcile")
        (bank_dir(bank) / "memories/notes/remote.md").write_text(memory_text("On the share.", id="remote"))
        wait_until(lambda: content_of(bank, "remote") == "On the share.", what="the polled change")
    finally:
        w.stop()
    with pytest.raises(RuntimeError):
        w.start()


def test_periodic_reconcile_runs_while_quiet(bank: Bank) -> None:
    w = Watcher(bank, debounce=0.05, reconcile_every=0.2)
    w.start()
    try:
        wait_until(lambda: w.batches >= 3, what="two periodic reconciles")
        assert converged(bank)
    finally:
        w.stop()


# -- what a batch reports ------------------------------------------------------------------------------


def test_a_broken_edit_reports_its_diagnostic_and_its_fix(bank: Bank) -> None:
    reports: list[Report] = []
    w = Watcher(bank, on_report=reports.append, debounce=0.05, reconcile_every=None)
    w.start()
    try:
        wait_until(w.idle, what="the first reconcile")
        path = bank_dir(bank) / "characters/su-yao.md"
        source = ".writenow/characters/su-yao.md"
        good = path.read_text("utf-8")
        path.write_text(good.replace("state: Lodging", "state: 住在: Lodging"), "utf-8")  # a `: ` typed in the text
        introduced = wait_until(lambda: [p for r in reports if source in r.sources for p in r.diagnostics],
                                what="the report of the broken card")
        doctor = bank.diagnostics()["items"]
        assert all(p in doctor for p in introduced)  # what doctor says, line and all
        broken = [p for p in introduced if p["source"] == source]
        assert len(broken) == 1 and broken[0]["severity"] == "error" and broken[0]["line"] == 9
        # and what follows from it: the card that names her now names no card
        assert any(p["source"] == ".writenow/characters/lin-mo.md" and "苏瑶" in p["message"] for p in introduced)
        path.write_text(good, "utf-8")
        fixed = wait_until(lambda: [p for r in reports for p in r.fixed], what="the report of the fix")
        assert fixed == introduced
        assert all(not r.diagnostics for r in reports[reports.index(next(r for r in reports if r.fixed)):])
    finally:
        w.stop()


def test_problems_compare_by_file_and_message_not_line() -> None:
    a = {"source": "s.md", "line": 3, "severity": "error", "message": "bad"}
    moved = {**a, "line": 5}
    other = {**a, "message": "worse"}
    assert watchreport.diff([a], [moved]) == ([], [])
    assert watchreport.diff([a], [moved, other]) == ([other], [])
    assert watchreport.diff([a, other], [other]) == ([], [a])
    assert watchreport.diff([a], [a, moved]) == ([moved], [])  # a second, identical problem is new


def test_cli_watch_prints_a_new_problem_and_its_fix(sample: Path, home: Path) -> None:
    path = sample / ".writenow/characters/su-yao.md"
    good = path.read_text("utf-8")
    with cli_watch(sample, home) as (proc, lines, errors):
        wait_until(lambda: any("changed:" in line for line in lines), 30, "the first reconcile's line")
        path.write_text(good.replace("state: Lodging", "state: 住在: Lodging"), "utf-8")
        wanted = "  error .writenow/characters/su-yao.md:9: the front matter is not valid YAML"
        wait_until(lambda: any(line.startswith(wanted) for line in lines), 30, "the problem's line")
        path.write_text(good, "utf-8")
        wait_until(lambda: any(line.startswith("  fixed .writenow/characters/su-yao.md:9:") for line in lines), 30,
                   "the fix's line")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, "".join(errors)
