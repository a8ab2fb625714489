"""Settings: defaults, global then project key by key, patches, comments kept, errors named."""

from __future__ import annotations

from pathlib import Path

from membank import Bank
from membank.files.settings import MEMORY_DEFAULTS


def test_defaults_then_global_then_project(bank: Bank, sample: Path, home: Path) -> None:
    (sample / ".writenow/settings.yaml").unlink()
    assert bank.settings() == MEMORY_DEFAULTS
    (home / "settings.yaml").write_text("memory:\n  injectionMaxItems: 5\n  injectionTokenBudget: 900\n", "utf-8")
    (sample / ".writenow/settings.yaml").write_text("memory:\n  injectionMaxItems: 7\n", "utf-8")
    merged = bank.settings()
    assert merged["injectionMaxItems"] == 7 and merged["injectionTokenBudget"] == 900
    assert merged["injectionEnabled"] is True


def test_patch_returns_full_settings_and_keeps_comments(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/settings.yaml"
    before = path.read_text("utf-8")
    envelope = bank.call("memory:settings:update", {"patch": {"injectionMaxItems": 3}})
    assert envelope["ok"] and set(envelope["data"]) == set(MEMORY_DEFAULTS)
    assert envelope["data"]["injectionMaxItems"] == 3
    after = path.read_text("utf-8")
    kept = [line for line in before.splitlines() if line.lstrip().startswith("#")]
    assert kept and all(line in after.splitlines() for line in kept)
    assert len(bank.preview()["items"]) == 3


def test_global_scope_patch_writes_the_global_file(bank: Bank, home: Path) -> None:
    bank.call("memory:settings:update", {"scope": "global", "patch": {"privacyModeEnabled": True}})
    assert "privacyModeEnabled: true" in (home / "settings.yaml").read_text("utf-8")
    assert bank.settings()["privacyModeEnabled"] is True


def test_wrong_type_in_a_patch_names_the_key(bank: Bank) -> None:
    for patch, field in (({"injectionEnabled": "yes"}, "patch.injectionEnabled"),
                         ({"injectionMaxItems": -1}, "patch.injectionMaxItems"),
                         ({"nonsense": 1}, "patch.nonsense")):
        envelope = bank.call("memory:settings:update", {"patch": patch})
        assert envelope["error"]["code"] == "INVALID_ARGUMENT"
        assert envelope["error"]["details"]["field"] == field


def test_wrong_type_in_the_file_is_reported_with_its_line_and_the_default_used(bank: Bank, sample: Path) -> None:
    (sample / ".writenow/settings.yaml").write_text("# mine\nmemory:\n  injectionMaxItems: many\n", "utf-8")
    assert bank.settings()["injectionMaxItems"] == MEMORY_DEFAULTS["injectionMaxItems"]
    problems = [d for d in bank.diagnostics()["items"] if d["source"] == ".writenow/settings.yaml"]
    assert problems == [{"source": ".writenow/settings.yaml", "line": 3, "severity": "error",
                         "message": problems[0]["message"]}]
    assert "injectionMaxItems" in problems[0]["message"]


def test_a_failed_write_is_db_error(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/settings.yaml"
    path.unlink()
    path.mkdir()  # cannot be written as a file, even by root
    envelope = bank.call("memory:settings:update", {"patch": {"injectionMaxItems": 3}})
    assert envelope["error"]["code"] == "DB_ERROR"
    assert str(sample) not in envelope["error"]["message"]


def test_settings_file_created_from_the_commented_template(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/settings.yaml"
    path.unlink()
    bank.update_settings({"injectionEnabled": False})
    text = path.read_text("utf-8")
    assert "injectionEnabled: false" in text and "#" in text


def test_context_settings_change_key_by_key_and_the_prompt_follows(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/settings.yaml"
    path.write_text("# mine\ncontext:\n  layerTokens: {project: 2500, retrieved: 2000}  # tuned\n", "utf-8")
    data = bank.update_context_settings({"layerTokens": {"retrieved": 400}, "maxTokens": 5000})
    assert data["maxTokens"] == 5000 and data["recursion"] == 1
    assert data["layerTokens"]["retrieved"] == 400 and data["layerTokens"]["project"] == 2500  # the file's other key
    assert data["layerTokens"]["identity"] == 600  # the default
    assert path.read_text("utf-8").startswith("# mine\n")
    prompt = bank.call("context:assemble", {"skillId": "continue", "documentId": "chapters/ch05.md",
                                            "selection": {"text": "Lin Mo and Maren"}})["data"]
    assert sum(b["tokens"] for b in prompt["blocks"] if b["layer"] == 4) <= 400 + 20  # the layer's headings
    assert prompt["diagnostics"]["dropped"]
    bad = bank.call("context:settings:update", {"patch": {"layerTokens": {"retrieved": -1}}})
    assert bad["error"]["code"] == "INVALID_ARGUMENT" and bad["error"]["details"]["field"] == "patch.layerTokens"
