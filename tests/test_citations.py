"""Nothing leaks: no source or message carries an absolute path, a home folder or `..`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from membank import Bank

from .helpers import write_memory

SOURCE = re.compile(r"^(\.writenow/|global:)(?!.*(^|/)\.\.(/|$))[^\\:]*$")


def _sources(value: Any) -> list[str]:
    found = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "source" and isinstance(inner, str):
                found.append(inner)
            found.extend(_sources(inner))
    elif isinstance(value, list):
        for inner in value:
            found.extend(_sources(inner))
    return found


def test_no_envelope_carries_an_absolute_path(bank: Bank, sample: Path, home: Path, tmp_path: Path) -> None:
    write_memory(sample, "notes/bad.md", "x", confidence="high")
    (sample / ".writenow/memories/notes/binary.md").write_bytes(b"\x89PNG\x00\x00")
    (sample / ".writenow/memories/notes/outside.md").symlink_to(tmp_path / "elsewhere.md")
    (tmp_path / "elsewhere.md").write_text("secret", "utf-8")
    bank.create_memory("preference", "global", "Prefer British spelling.")
    memory_id = bank.list_memories()["items"][0]["id"]
    calls = [
        ("index:sync", {}), ("index:status", {}), ("index:diagnostics", {}),
        ("memory:list", {"includeDeleted": True}), ("memory:get", {"id": memory_id}),
        ("memory:get", {"id": "m-missing"}), ("memory:update", {"id": memory_id, "expectedRevision": 99, "patch": {}}),
        ("memory:create", {"type": "fact", "scope": "document", "content": "x", "documentId": "/etc/passwd"}),
        ("memory:injection:preview", {}), ("memory:injection:preview", {"queryText": "hero"}),
        ("memory:injection:preview", {"documentId": "../../outside.md"}),
        ("memory:settings:get", {}), ("memory:settings:update", {"patch": {"injectionMaxItems": "x"}}),
    ]
    texts = []
    for channel, payload in calls:
        envelope = bank.call(channel, payload)
        text = json.dumps(envelope, ensure_ascii=False)
        texts.append(text)
        for source in _sources(envelope):
            assert SOURCE.match(source), (channel, source)
    blob = "\n".join(texts)
    for secret in (str(tmp_path), str(sample), str(home), str(Path.home()), "secret"):
        assert secret not in blob
    assert any("outside the bank" in t for t in texts)  # the link was reported, not followed
