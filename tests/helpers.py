"""Small helpers the tests share: writing memory files, comparing bank answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from membank import Bank


def write_memory(root: Path, rel: str, body: str, **meta: Any) -> Path:
    """A memory file under the project's .writenow/memories/, front matter in the given order."""
    lines = ["---"]
    for key, value in meta.items():
        lines.append(f"{key}: {json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value}")
    lines.append("---")
    path = root / ".writenow" / "memories" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + body + "\n", encoding="utf-8")
    return path


def answers(bank: Bank) -> dict[str, Any]:
    """Everything a user can read from a bank, timings stripped: what rebuild must reproduce."""
    previews = {}
    for document in (None, "chapters/ch05.md"):
        for query in (None, "is the hero injured?", "林默的伤势如何"):
            p = bank.preview(query_text=query, document_id=document)
            p["diagnostics"].pop("tookMs")
            previews[f"{document}|{query}"] = p
    return {
        "list": bank.list_memories(include_deleted=True),
        "cards": bank.index.cards(),
        "skills": bank.index.skills(),
        "previews": previews,
        "diagnostics": bank.diagnostics(),
        "settings": bank.settings(),
        "story": [bank.call(channel, payload) for channel, payload in (
            ("kg:entity:list", {"at": "chapters/ch05.md"}), ("kg:entity:get", {"name": "Lin Mo"}),
            ("kg:relations", {"name": "Maren", "depth": 3}),
            ("kg:consistency:check", {"documentId": "chapters/ch05.md"}))],
    }


def waiting_on(pid: int, lock: Path) -> bool:
    """The process has the lock file open: with the lock held elsewhere, it is waiting for it
    (Linux: /proc/<pid>/fd)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(lock) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def membank(*args: str, cwd: Path, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`membank ARGS` as a writer runs it: a process of its own, piped output, a wide terminal."""
    env = {**os.environ, "WRITENOW_HOME": str(home), "COLUMNS": "200"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "membank.shells.cli", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def answers_of(root: Path) -> dict[str, Any]:
    """`answers` of the project at `root`, opened (and synced) for the purpose and closed again."""
    import membank

    bank = membank.open(root)
    try:
        return answers(bank)
    finally:
        bank.close()


def gone(pid: int) -> bool:
    """Whether no process has this id any more (reaped, not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Real git in `root`, with an identity and no signing or line-ending conversion of its own."""
    return subprocess.run(["git", "-c", "user.name=Writer", "-c", "user.email=writer@example.org",
                           "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", *args],
                          cwd=root, capture_output=True, text=True, check=check)


def git_commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)


@contextmanager
def writer_in_use(bank: Bank) -> Iterator[None]:
    """Inside this block another thread is inside a statement on the bank's writer connection, under the
    index lock (as a background fill writes, or a read channel runs outside `reading()`)."""
    entered, gate = threading.Event(), threading.Event()

    def hold() -> int:  # runs inside the statement: the connection is in use meanwhile
        entered.set()
        gate.wait(30)
        return 0

    def holder() -> None:
        with bank.index.lock:
            bank.index.db.execute("SELECT hold()").fetchall()

    with bank.index.lock:
        bank.index.db.create_scalar_function("hold", hold, 0)
    busy = threading.Thread(target=holder)
    busy.start()
    try:
        assert entered.wait(30)
        yield
    finally:
        gate.set()
        busy.join(30)
