"""Changing settings.yaml (project or global), keeping its comments and every other line."""

from __future__ import annotations

import contextlib
from typing import Any

import yaml

from ...files import settings as settings_file
from ...files.conflicts import RESOLVE, conflict_line
from ...files.frontmatter import load_yaml
from ...files.lock import LOCK_FILE, WriteLock
from ...files.project import template_dir
from ...files.rewrite import RewriteError, rewrite_yaml
from ...files.write import check_inside, rewrite_file
from ...index.failures import storage_error
from ...kernel import errors
from ...kernel.errors import MembankError
from ..contract import Bank
from ..learning import flows as learning


def update_memory(bank: Bank, patch: dict[str, Any], scope: str = "project") -> dict[str, Any]:
    """`memory:settings:update`: set keys of the `memory:` section; the effective settings after."""
    change(bank, "memory", patch, scope)
    return bank.settings_files.memory()


def update_embedding(bank: Bank, patch: dict[str, Any], scope: str = "project") -> dict[str, Any]:
    """`embedding:settings:update`: set keys of the `embedding:` section; the effective ones after."""
    change(bank, "embedding", patch, scope)
    if "strong" in patch:  # turned back on: the background embeds what is missing now, not at the next save
        from ..indexing import strongfill

        strongfill.kick(bank)
    return bank.settings_files.embedding()


def update_context(bank: Bank, patch: dict[str, Any], scope: str = "project") -> dict[str, Any]:
    """`context:settings:update`: set keys of the `context:` section (layerTokens key by key); the
    effective ones after."""
    change(bank, "context", patch, scope)
    return bank.settings_files.context()


def update_lifecycle(bank: Bank, patch: dict[str, Any], scope: str = "project") -> dict[str, Any]:
    """`lifecycle:settings:update`: set keys of the `lifecycle:` section; the effective ones after."""
    change(bank, "lifecycle", patch, scope)
    return bank.settings_files.lifecycle()


def _key_by_key(original: str, updates: dict[tuple[str, ...], Any]) -> dict[tuple[str, ...], Any]:
    """A mapping setting (`context.layerTokens`) changes key by key: the file's other keys stay."""
    if not any(isinstance(v, dict) for v in updates.values()):
        return updates
    try:
        current = load_yaml(original) if original.strip() else {}
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        return updates  # rewrite_yaml reports it
    out = dict(updates)
    for (section, key), value in updates.items():
        values = current.get(section) if isinstance(current, dict) else None
        old = values.get(key) if isinstance(values, dict) else None
        if isinstance(value, dict) and isinstance(old, dict):
            out[(section, key)] = {**old, **value}
    return out


def change(bank: Bank, section: str, patch: dict[str, Any], scope: str) -> None:
    """Set keys in one settings file, keeping its comments; validate first, write second."""
    updates: dict[tuple[str, ...], Any] = {}
    for key, value in patch.items():
        ok, expected = settings_file.check(section, key, value)
        if (section, key) not in settings_file.CHECKS:
            raise errors.invalid(f"patch.{key}", f"`{section}.{key}` is not a setting membank knows")
        if expected is not None:
            raise errors.invalid(f"patch.{key}", f"`{key}` should be {expected}")
        updates[(section, key)] = ok
    root = bank.global_ if scope == "global" else bank.project

    def rewritten(old: bytes | None) -> bytes:
        original = old.decode("utf-8") if old is not None else (template_dir() / "settings.yaml").read_text("utf-8")
        marker = conflict_line(original)
        if marker is not None:  # both versions are in it: which one the change goes into is the writer's call
            raise RewriteError(f"it holds git conflict markers left by a merge; {RESOLVE}", marker)
        return rewrite_yaml(original, _key_by_key(original, updates)).encode("utf-8")

    # the global settings are shared by every project: their own lock too, always taken second
    shared: Any = contextlib.nullcontext()
    if scope == "global":
        check_inside(bank.home, bank.home / ".index" / LOCK_FILE, bank.global_.source)  # the lock makes .index/
        shared = WriteLock.at(bank.home / ".index" / LOCK_FILE)
    with bank.write_lock, shared:
        try:  # links out, links and non-files refused; an editor's save meanwhile stays (CONFLICT)
            rewrite_file(root.path, root.file("settings.yaml"), root.source, rewritten)
        except OSError as e:
            raise storage_error(e, "settings.yaml") from None
        except UnicodeDecodeError:
            raise MembankError(errors.DB_ERROR, "settings.yaml is not UTF-8 text; fix it by hand first") from None
        except RewriteError as e:  # a YAML mistake, or a change that would touch other lines: no guessing
            where = f" (line {e.line})" if e.line is not None else ""
            raise MembankError(errors.DB_ERROR, f"settings.yaml cannot be changed{where}: {e.message}; fix it by "
                               "hand first (`membank doctor` shows it)") from None
        bank.settings_files.forget()
        if bank.settings_files.memory()["privacyModeEnabled"]:
            # what was journalled before privacy mode loses its text now. The settings are written
            # already, so a failure here is no failure of this call: every feedback in privacy mode
            # runs the cleanup again before it journals (learning.ingest)
            try:
                learning.forget_labels(bank)
            except MembankError as e:
                learning.log.warning("privacy mode is on; label text stays in the journal until the next "
                                     "feedback: %s", e.message)
