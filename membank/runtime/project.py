"""One open bank: the project and global folders, their index, and every operation on them."""

from __future__ import annotations

import contextlib
import functools
import re
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..kernel import errors, payload
from ..domains.learning import learn
from .boundary import converting, storage_error
from ..kernel.errors import MembankError
from ..files import settings as settings_file
from ..files import write as write_files
from ..files.frontmatter import MAX_FILE_BYTES, FrontMatterError, decode
from ..files.parse import ID_RE, MEMORY_KEYS, TYPE_RE
from ..files.project import BANK_DIR, ProjectError, global_home, read_project, template_dir
from ..files.records import ERROR, Diagnostic
from ..files.scan import BankRoot
from ..files.rewrite import REMOVE, IsoTime, RewriteError, render, rewrite, rewrite_yaml
from ..files.exchange import Changed, replace_unchanged
from ..files.reader import Unreadable, read_regular
from ..files.readback import check_memory, check_unicode, unwritable
from ..files.write import atomic_write, check_inside, free_path, make_folder, new_id, rewrite_file, slug, sweep_temps
from ..index.embed import Embedder, ModelUnavailable, load as load_model, resolve as resolve_model
from ..index import Index, IndexError_, StorageError
from ..files.lock import LOCK_FILE, WriteLock
from ..domains.recall.rank import (EMBEDDING_DIM_MISMATCH, EMPTY_QUERY, INJECTION_DISABLED, MODEL_UNAVAILABLE, QUERY_NOT_EMBEDDABLE,
                     VEC_UNAVAILABLE, Reason, deterministic_items, fuse, rank_semantic, semantic_items_for)
from ..domains.indexing.sync import Progress, content_hash, now_iso, sync, sync_paths
from ..kernel.text import fts_query

T = TypeVar("T")
INDEX_FILE = "index.db"
# How many eligible neighbours each retriever proposes (at least; injectionMaxItems if larger)
# before the budgets cut them down.
CANDIDATES = 256
# The longest `evidenceRef` feedback may carry (characters): it is a learned preference's text.
EVIDENCE_LIMIT = 2000
_WIN_DRIVE = re.compile(r"^[A-Za-z]:")


def _doc_path(value: str, field: str = "documentId") -> str:
    """A project-relative POSIX path; anything that could leave the project is refused."""
    path = value.strip().replace("\\", "/")
    if not path or path.startswith(("/", "~")) or _WIN_DRIVE.match(path) or ".." in path.split("/"):
        raise errors.invalid(field, f"`{field}` must be a path inside the project, like chapters/ch05.md")
    return path


def _valid(channel_payload: str, values: Any, prefix: str = "") -> Any:
    """The Python API checks its arguments with the channel's own payload type (channels.py), so a
    call is refused the same way (INVALID_ARGUMENT naming the field) whichever way it comes. With a
    prefix, `values` is a nested object and the dict of the keys sent is returned."""
    from . import catalog as channels

    tp = getattr(channels, channel_payload)
    return payload.check(tp, values, prefix) if prefix else payload.build(tp, values)


def _reads(method: Callable[..., T]) -> Callable[..., T]:
    """Run a read under the index lock: one apsw connection must not serve two threads at once (a
    watcher may be writing). Inside `index.store.reading()` (the sidecar) the lock is a no-op and the
    read has a connection and a snapshot of its own."""

    @functools.wraps(method)
    def locked(self: "Bank", *args: Any, **kwargs: Any) -> T:
        with self.index.lock:
            return method(self, *args, **kwargs)

    return locked


class Bank:
    """A project's bank (and the writer's global bank), kept in step with its index."""

    def __init__(self, root: Path, home: Path | None = None):
        try:
            self.info = read_project(root)
            self.home = Path(home).expanduser() if home is not None else global_home()
        except ProjectError as e:
            raise MembankError(errors.INVALID_ARGUMENT, str(e), {"field": "path"}) from None
        except (OSError, RuntimeError) as e:  # the global bank folder cannot be made (or `~` has no home)
            raise MembankError(errors.DB_ERROR, f"the global bank folder cannot be used: "
                               f"{getattr(e, 'strerror', None) or e}") from None
        self.root = self.info.root
        self.project = BankRoot("project", self.root / BANK_DIR)
        self.global_ = BankRoot("global", self.home)
        # the index, its lock and their WAL files are written too: a `.index` link out of the bank is refused
        check_inside(self.project.path, self.project.path / ".index" / INDEX_FILE, self.project.source)
        # one writer per project, across threads and processes: files and index change together (lock.py)
        self.write_lock = WriteLock.at(self.project.path / ".index" / LOCK_FILE)
        with self.write_lock:  # another process may be creating or repairing the index right now
            try:
                self.index = Index(self.project.path / ".index" / INDEX_FILE)
            except (IndexError_, StorageError, OSError) as e:
                raise storage_error(e) from None
        self._settings_cache: tuple[Any, Any] | None = None
        # journal files seen without label text, by path and (size, mtime): privacy mode reads each once
        self.journals_without_labels: dict[str, tuple[int, int]] = {}
        self._model: tuple[Path, Embedder | str] | None = None  # the folder, and its model or why it failed
        self.watcher: Any = None  # the running membank.shells.watch.Watcher, if one is attached

    @property
    def roots(self) -> list[BankRoot]:
        return [self.project, self.global_]

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        self.index.close()

    def call(self, channel: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a channel by name on this bank and return its envelope, exactly as the sidecar would."""
        from .catalog import Registry, dispatch

        registry = Registry(self.home)
        registry.banks[self.info.id] = self
        return dispatch(registry, channel, payload or {})

    def _root(self, bank: str) -> BankRoot:
        return self.project if bank == "project" else self.global_

    # -- index -------------------------------------------------------------------------------

    def embedder(self) -> Embedder | None:
        """The embedding model settings name (the bundled one by default), loaded once; None if it cannot load."""
        folder = resolve_model(self.embedding_settings()["model"], self.root)
        if self._model is None or self._model[0] != folder:
            try:
                self._model = (folder, load_model(folder))
            except ModelUnavailable as e:
                self._model = (folder, str(e))
        model = self._model[1]
        return model if isinstance(model, Embedder) else None

    def _model_problem(self) -> Reason | None:
        """Why semantic recall cannot run now, or None when it can."""
        if self.index.vec_error is not None:
            return Reason(VEC_UNAVAILABLE, self.index.vec_error + "; memories are in deterministic order")
        model = self.embedder()
        if model is None:
            why = self._model[1] if self._model else "no model"
            return Reason(MODEL_UNAVAILABLE, f"{why}; memories are in deterministic order")
        recorded = self.index.vector_model()
        if recorded is not None and recorded != (model.name, model.dim):
            what = (f"{recorded[1]} dimensions, the model has {model.dim}" if recorded[1] != model.dim
                    else f"the model `{recorded[0]}`, settings now name `{model.name}`")
            return Reason(EMBEDDING_DIM_MISMATCH, f"the index was built with {what}; run `membank index --rebuild`")
        return None

    def sync(self, rebuild: bool = False, progress: Progress | None = None) -> dict[str, Any]:
        with self.write_lock:
            self._sweep()
            if rebuild:
                self.index.rebuild()
            return sync(self.index, self.roots, progress, self.embedder).to_api()

    def _sweep(self) -> None:
        """Temporary files a killed writer left (untouched for STALE_AFTER). Only a crash leaves one, so the
        walk runs at most once per STALE_AFTER, not on every command's sync."""
        now = time.time()
        last = self.index.get_meta("last_sweep")
        if last is not None and 0 <= now - float(last) < write_files.STALE_AFTER:
            return
        for root in self.roots:
            sweep_temps(root.path)
        self.index.set_meta("last_sweep", repr(now))

    def _sync_one(self, root: BankRoot, rel: str) -> None:
        sync_paths(self.index, root, [rel], self.embedder)

    @_reads
    def status(self) -> dict[str, Any]:
        diagnostics = self.diagnostics()["items"]
        model = self.embedder()
        problem = self._model_problem()
        recorded = self.index.vector_model()
        return {
            "projectId": self.info.id,
            "name": self.info.name,
            "counts": self.index.counts(),
            "lastSync": self.index.get_meta("last_sync"),
            "model": {
                "name": model.name if model else None,
                "dim": model.dim if model else None,
                "indexModel": recorded[0] if recorded else None,
                "indexDim": recorded[1] if recorded else None,
                "semantic": problem is None,
                "problem": problem.to_api() if problem else None,
            },
            "diagnostics": {
                "errors": sum(d["severity"] == ERROR for d in diagnostics),
                "warnings": sum(d["severity"] != ERROR for d in diagnostics),
            },
            "watch": self.watcher.status() if self.watcher is not None else None,
        }

    @_reads
    def diagnostics(self) -> dict[str, Any]:
        found = list(self.index.diagnostics())
        found.extend(self._settings()[1])
        found.sort(key=lambda d: (d.source, d.line, d.message))
        return {"items": [d.to_dict() for d in found]}

    # -- memories ----------------------------------------------------------------------------

    @_reads
    def _find(self, memory_id: str) -> tuple[BankRoot, dict[str, Any], str]:
        _valid("MemoryRef", {"id": memory_id})
        found = self.index.find("memory", memory_id)
        if found is None:
            raise MembankError(errors.NOT_FOUND, f"no memory with id `{memory_id}`", {"id": memory_id})
        bank, record, digest = found
        return self._root(bank), record, digest

    def get_memory(self, memory_id: str) -> dict[str, Any]:
        return self._find(memory_id)[1]

    @_reads
    def list_memories(self, scope: str | None = None, type_: str | None = None, origin: str | None = None,
                      include_deleted: bool = False) -> dict[str, Any]:
        return {"items": self.index.memories(scope=scope, type_=type_, origin=origin, include_deleted=include_deleted)}

    def create_memory(self, type_: str, scope: str, content: str, document_id: str | None = None,
                      tags: list[str] | None = None, confidence: float | None = None, evidence: list[Any] | None = None,
                      metadata: dict[str, Any] | None = None, pinned: bool | None = None,
                      origin: str = "manual", folder: str | None = None, memory_id: str | None = None) -> dict[str, Any]:
        _valid("MemoryCreate", {"type": type_, "scope": scope, "content": content, "documentId": document_id,
                                "tags": tags, "confidence": confidence, "evidence": evidence, "metadata": metadata,
                                "pinned": pinned})
        _check_memory_values(confidence, metadata)
        if not TYPE_RE.fullmatch(type_):
            raise errors.invalid("type", "`type` must be one lower-case word, like preference, fact or note")
        if not content.strip():
            raise errors.invalid("content", "`content` is empty; a memory needs some text")
        if scope == "document":
            if document_id is None:
                raise errors.invalid("documentId", "`scope: document` needs a `documentId`")
            document_id = _doc_path(document_id)
        elif document_id is not None:
            raise errors.invalid("documentId", "`documentId` goes with `scope: document` only")
        root = self.global_ if scope == "global" else self.project
        stamp = IsoTime(now_iso())
        meta: dict[str, Any] = {"id": memory_id or new_id("m"), "type": type_, "scope": scope}
        if document_id is not None:
            meta["document"] = document_id
        meta.update(origin=origin, confidence=1.0 if confidence is None else float(confidence), tags=list(tags or []),
                    evidence=list(evidence or []), created=stamp, updated=stamp, revision=1, deleted_at=None,
                    pinned=bool(pinned))
        meta.update(metadata or {})
        fields = {"content": content, "tags": tags, "evidence": evidence, "metadata": metadata}
        check_unicode(fields)
        try:
            text = render(meta, content)
        except RewriteError as e:  # a value that would not read back as given
            raise unwritable(fields, e.message) from None
        data = text.encode("utf-8")  # check_unicode above: every value UTF-8 can carry
        check_memory(data, fields, f"{folder or type_}/{slug(content)}.md", root.bank)  # validate first, write second
        folder_path = root.path / "memories" / (folder or type_)
        with self.write_lock:
            try:
                make_folder(root.path, folder_path, root.source)  # no write through a link out of the bank
            except OSError as e:
                raise storage_error(e, root.source(f"memories/{folder or type_}")) from None
            with self.index.transaction():  # see _rewrite: a busy index means no file is written
                for _ in range(100):
                    path = free_path(folder_path, slug(content))
                    try:
                        atomic_write(path, data, exclusive=True)
                        break
                    except FileExistsError:
                        continue  # taken between the check and the write: pick the next name
                    except OSError as e:
                        raise storage_error(e, f"the new memory in {root.source('memories/' + (folder or type_))}") \
                            from None
                else:
                    raise MembankError(errors.DB_ERROR, f"no free file name for the new memory in "
                                       f"{root.source('memories/' + (folder or type_))}")
                self._sync_one(root, path.relative_to(root.path).as_posix())
        return self.get_memory(meta["id"])

    def _rewrite(self, memory_id: str, updates: dict[str, Any], body: str | None = None,
                 expected_revision: int | None = None) -> dict[str, Any]:
        """Change one memory file: refused with CONFLICT when it is not what the caller and the index saw."""
        with self.write_lock:
            root, record, digest = self._find(memory_id)
            rel = root.rel(record["source"])
            assert rel is not None
            path = root.file(rel)
            # a folder on the way may have become a link; a linked file is refused too (replacing it would
            # cut the link and leave two copies)
            check_inside(root.path, path, root.source)
            try:  # bounded, and never blocked by a FIFO put under the name
                original = read_regular(path, MAX_FILE_BYTES + 1)[0]
            except FileNotFoundError:
                self._sync_one(root, rel)
                raise MembankError(errors.NOT_FOUND, f"{record['source']} is gone from disk", {"id": memory_id}) from None
            except Unreadable as e:
                self._sync_one(root, rel)
                raise MembankError(errors.CONFLICT, f"{record['source']} cannot be read now ({e.message}); nothing "
                                   "was written", {"id": memory_id}) from None
            except OSError as e:
                raise storage_error(e, record["source"]) from None
            if content_hash(original) != digest:
                self._sync_one(root, rel)
                raise MembankError(errors.CONFLICT, f"{record['source']} was changed on disk since membank last read it; "
                                   "read the memory again and retry", {"id": memory_id})
            if expected_revision is not None and expected_revision != record["revision"]:
                raise MembankError(errors.CONFLICT, f"`{memory_id}` is at revision {record['revision']}, not "
                                   f"{expected_revision}; read it again and retry",
                                   {"id": memory_id, "revision": record["revision"]})
            try:
                decode(original)  # only a file membank can read is rewritten
            except FrontMatterError as e:
                raise MembankError(errors.CONFLICT, f"{record['source']} cannot be rewritten: {e.message}") from None
            fields = _patch_fields(updates, body)
            check_unicode(fields)
            updates = {"id": memory_id, **updates, "revision": record["revision"] + 1, "updated": IsoTime(now_iso())}
            try:  # refused rather than change what the writer's other keys mean
                rewritten = rewrite(original.decode("utf-8"), updates, body)
            except RewriteError as e:
                if e.of_value:  # the caller's value, not the file, is the trouble
                    raise unwritable(fields, e.message) from None
                raise MembankError(errors.CONFLICT, f"{record['source']} cannot be rewritten: {e.message}; "
                                   "change it by hand", {"id": memory_id}) from None
            new = rewritten.encode("utf-8")
            check_memory(new, fields, rel.split("/", 1)[1], root.bank, before=original)  # validate first
            # the index's write lock first: if the index is busy past its timeout, nothing is written
            failure: MembankError | None = None
            with self.index.transaction():
                try:
                    # swapped in only if the file still holds `original`: an editor's save stays
                    replace_unchanged(path, new, original)
                except Changed as e:
                    kept = f" (a save membank could not put back is in {root.source(e.kept.relative_to(root.path).as_posix())})" \
                        if e.kept is not None else ""
                    failure = MembankError(errors.CONFLICT, f"{record['source']} was changed on disk during the "
                                           f"update; the writer's version stays and nothing was written{kept}",
                                           {"id": memory_id})
                except OSError as e:
                    failure = storage_error(e, record["source"])
                self._sync_one(root, rel)  # committed even on failure, so a retry sees what is on disk
            if failure is not None:
                raise failure
            return self.get_memory(memory_id)

    def update_memory(self, memory_id: str, patch: dict[str, Any], expected_revision: int | None = None) -> dict[str, Any]:
        _valid("MemoryUpdate", {"id": memory_id, "patch": patch, "expectedRevision": expected_revision})
        for key in ("content", "type", "confidence", "pinned"):
            if key in patch and patch[key] is None:
                raise errors.invalid(f"patch.{key}", f"`{key}` cannot be null; leave it out to keep it")
        _check_memory_values(patch.get("confidence"), patch.get("metadata"), "patch.")
        updates: dict[str, Any] = {}
        body = None
        if "content" in patch:
            if not patch["content"].strip():
                raise errors.invalid("patch.content", "`content` is empty; a memory needs some text")
            body = patch["content"]
        if "type" in patch:
            if not TYPE_RE.fullmatch(patch["type"]):
                raise errors.invalid("patch.type", "`type` must be one lower-case word, like preference, fact or note")
            updates["type"] = patch["type"]
        for key in ("tags", "evidence"):
            if key in patch:
                updates[key] = list(patch[key] or [])
        if "confidence" in patch:
            updates["confidence"] = float(patch["confidence"])
        if "pinned" in patch:
            updates["pinned"] = patch["pinned"]
        if "documentId" in patch:
            current = self.get_memory(memory_id)
            if current["scope"] == "global":
                raise errors.invalid("patch.documentId", "a global memory cannot belong to a document")
            if patch["documentId"] is None:
                updates.update(scope="project", document=REMOVE)
            else:
                updates.update(scope="document", document=_doc_path(patch["documentId"], "patch.documentId"))
        if "metadata" in patch:
            for key, value in (patch["metadata"] or {}).items():
                updates[key] = REMOVE if value is None else value
        return self._rewrite(memory_id, updates, body, expected_revision)

    def delete_memory(self, memory_id: str) -> dict[str, Any]:
        current = self.get_memory(memory_id)
        if current["deletedAt"] is not None:
            return {"id": memory_id, "deletedAt": current["deletedAt"]}
        stamp = IsoTime(now_iso())
        memory = self._rewrite(memory_id, {"deleted_at": stamp})
        return {"id": memory_id, "deletedAt": memory["deletedAt"]}

    def restore_memory(self, memory_id: str) -> dict[str, Any]:
        current = self.get_memory(memory_id)
        if current["deletedAt"] is None:
            return current
        return self._rewrite(memory_id, {"deleted_at": None})

    # -- preference learning -------------------------------------------------------------------

    def ingest_feedback(self, run_id: str, skill_id: str, action: str, evidence_ref: str,
                        tags: list[str] | None = None) -> dict[str, Any]:
        for name, tp, value in (("runId", payload.Id, run_id), ("skillId", payload.Id, skill_id),
                                ("evidenceRef", str, evidence_ref), ("tags", payload.Tags | None, tags)):
            payload.check(tp, value, name)  # what the channel checks, for the Python API too
        if action not in ("accept", "reject", "partial"):
            raise errors.invalid("action", "`action` must be accept, reject or partial")
        if len(evidence_ref) > EVIDENCE_LIMIT:  # it becomes a learned preference's text, injected into prompts
            raise errors.invalid("evidenceRef", f"`evidenceRef` is longer than {EVIDENCE_LIMIT} characters; send the "
                                 "phrase the writer accepted or rejected, not the whole passage")
        return learn.ingest(self, learn.Feedback(run_id, skill_id, action, evidence_ref, tuple(tags or ())))

    def clear_preferences(self) -> dict[str, Any]:
        return learn.clear(self)

    # -- settings ----------------------------------------------------------------------------

    def _settings_paths(self) -> list[tuple[Path, str]]:
        return [(self.home / "settings.yaml", "global:settings.yaml"),
                (self.project.path / "settings.yaml", f"{BANK_DIR}/settings.yaml")]

    def _settings(self) -> tuple[dict[str, dict[str, Any]], list[Diagnostic]]:
        """Merged settings and their diagnostics, re-read only when a settings file changed."""
        stamp = []
        for path, _ in self._settings_paths():
            try:
                st = path.stat()
                stamp.append((st.st_size, st.st_mtime_ns))
            except OSError:
                stamp.append(None)
        if self._settings_cache is not None and self._settings_cache[0] == stamp:
            return self._settings_cache[1]
        layers, problems = [], []
        for path, source in self._settings_paths():
            found, diags = settings_file.read_file(path, source)  # never blocks: a FIFO or /dev/zero is a diagnostic
            layers.append(found)
            problems.extend(diags)
        result = (settings_file.merge(*layers), problems)
        self._settings_cache = (stamp, result)
        return result

    def settings(self) -> dict[str, Any]:
        return dict(self._settings()[0]["memory"])

    def embedding_settings(self) -> dict[str, Any]:
        return dict(self._settings()[0]["embedding"])

    def update_settings(self, patch: dict[str, Any], scope: str = "project", section: str = "memory") -> dict[str, Any]:
        """Set keys in one settings file, keeping its comments; returns the full effective settings."""
        if section == "memory":  # the channel's payload; other sections (embedding) are checked key by key below
            _valid("SettingsUpdate", {"patch": patch, "scope": scope})
        else:
            payload.check(dict[str, Any], patch, "patch")
        if scope not in ("project", "global"):
            raise errors.invalid("scope", "`scope` must be project or global")
        updates: dict[tuple[str, ...], Any] = {}
        for key, value in patch.items():
            ok, expected = settings_file.check(section, key, value)
            if (section, key) not in settings_file.CHECKS:
                raise errors.invalid(f"patch.{key}", f"`{section}.{key}` is not a setting membank knows")
            if expected is not None:
                raise errors.invalid(f"patch.{key}", f"`{key}` should be {expected}")
            updates[(section, key)] = ok
        root = self.global_ if scope == "global" else self.project

        def change(old: bytes | None) -> bytes:
            original = old.decode("utf-8") if old is not None else (template_dir() / "settings.yaml").read_text("utf-8")
            return rewrite_yaml(original, updates).encode("utf-8")

        # the global settings are shared by every project: their own lock too, always taken second
        shared: Any = contextlib.nullcontext()
        if scope == "global":
            check_inside(self.home, self.home / ".index" / LOCK_FILE, self.global_.source)  # the lock makes .index/
            shared = WriteLock.at(self.home / ".index" / LOCK_FILE)
        with self.write_lock, shared:
            try:  # links out, links and non-files refused; an editor's save meanwhile stays (CONFLICT)
                rewrite_file(root.path, root.file("settings.yaml"), root.source, change)
            except OSError as e:
                raise storage_error(e, "settings.yaml") from None
            except UnicodeDecodeError:
                raise MembankError(errors.DB_ERROR, "settings.yaml is not UTF-8 text; fix it by hand first") from None
            except RewriteError as e:  # a YAML mistake, or a change that would touch other lines: no guessing
                where = f" (line {e.line})" if e.line is not None else ""
                raise MembankError(errors.DB_ERROR, f"settings.yaml cannot be changed{where}: {e.message}; fix it by "
                                   "hand first (`membank doctor` shows it)") from None
            self._settings_cache = None
            if self.settings()["privacyModeEnabled"]:
                # what was journalled before privacy mode loses its text now. The settings are written
                # already, so a failure here is no failure of this call: every feedback in privacy mode
                # runs the cleanup again before it journals (learn.ingest)
                try:
                    learn.forget_labels(self)
                except MembankError as e:
                    learn.log.warning("privacy mode is on; label text stays in the journal until the next "
                                      "feedback: %s", e.message)
        return self.settings()

    # -- preview -----------------------------------------------------------------------------

    @_reads
    def preview(self, query_text: str | None = None, document_id: str | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        payload.check(str | None, query_text, "queryText")  # what the channel checks, for the Python API too
        payload.check(payload.DocPath | None, document_id, "documentId")
        memory = self.settings()
        document = _doc_path(document_id) if document_id is not None else None
        reasons: list[Reason] = []
        if not memory["injectionEnabled"]:
            reasons.append(Reason(INJECTION_DISABLED, "injection is turned off in settings (memory.injectionEnabled)"))
            return _preview([], "deterministic", reasons, 0, started, degraded=False)
        if query_text is not None and not query_text.strip():
            reasons.append(Reason(EMPTY_QUERY, "the query is empty; memories are in deterministic order"))
        elif query_text is not None:
            problem = self._model_problem()
            if problem is None:
                model = self.embedder()
                assert model is not None
                vector = model.encode([query_text])[0]
                if not vector.any():
                    problem = Reason(QUERY_NOT_EMBEDDABLE, "the query has no word the model knows; "
                                     "memories are in deterministic order")
                else:
                    return self._semantic(vector, query_text, document, memory, started)
            reasons.append(problem)
        with self.index.lock:
            eligible = self.index.eligible_count(document)
            items = deterministic_items(self.index.fitting(document, memory["injectionMaxItems"], memory["injectionTokenBudget"]),
                                        memory["injectionMaxItems"], memory["injectionTokenBudget"])
        return _preview(items, "deterministic", reasons, eligible - len(items), started, degraded=bool(reasons))

    def _semantic(self, vector: Any, query_text: str, document: str | None, memory: dict[str, Any],
                  started: float) -> dict[str, Any]:
        """Vector neighbours fused with FTS5 matches, eligible memories only: each retriever proposes
        its best eligible candidates (eligibility before the cut), at least as many as may be kept."""
        match = fts_query(query_text)
        want = max(CANDIDATES, memory["injectionMaxItems"])
        with self.index.lock:
            nearest, lexical, keys = self.index.candidates(vector if self.index.has_vectors() else None, match or None,
                                                           want, document)
            eligible = self.index.eligible_count(document)
            chosen = rank_semantic(fuse(nearest, lexical), keys, memory["injectionMaxItems"], memory["injectionTokenBudget"])
            records = self.index.records([h.rowid for h, _ in chosen])  # only the kept ones are decoded
        items = semantic_items_for(chosen, records)
        return _preview(items, "semantic", [], eligible - len(items), started, degraded=False)


def _preview(items: list[dict[str, Any]], mode: str, reasons: list[Reason], truncated: int, started: float,
             degraded: bool) -> dict[str, Any]:
    return {
        "items": items,
        "mode": mode,
        "diagnostics": {
            "degraded": degraded,
            "reasons": [r.to_api() for r in reasons],
            "truncated": truncated,
            "tokens": sum(i["tokens"] for i in items),
            "tookMs": round((time.perf_counter() - started) * 1000, 3),
        },
    }


def _patch_fields(updates: dict[str, Any], body: str | None) -> dict[str, Any]:
    """The caller's field behind each front-matter change (for naming it in a refusal)."""
    fields: dict[str, Any] = {} if body is None else {"patch.content": body}
    for key, value in updates.items():
        if key not in MEMORY_KEYS:
            fields.setdefault("patch.metadata", {})[key] = value
        else:
            fields["patch.documentId" if key == "document" else f"patch.{key}"] = value
    return fields


def _check_memory_values(confidence: Any, metadata: Any, prefix: str = "") -> None:
    """What only a memory needs beyond its payload type (checked first, by `_valid`): a confidence
    from 0 to 1 and metadata keys that are plain names, not the file's own keys."""
    if confidence is not None and not 0 <= confidence <= 1:
        raise errors.invalid(prefix + "confidence", "`confidence` must be a number from 0 to 1")
    for key in metadata or {}:
        if key in MEMORY_KEYS or not ID_RE.fullmatch(key):
            raise errors.invalid(prefix + "metadata", f"metadata key `{key[:40]}` is reserved or not a plain name")


# The Python API's edge (boundary.py): nothing but a MembankError leaves these methods.
Bank.__init__ = converting("open")(Bank.__init__)  # type: ignore[method-assign]  # an odd flock error too
for _name in ("sync", "status", "diagnostics", "get_memory", "list_memories", "create_memory", "update_memory",
              "delete_memory", "restore_memory", "ingest_feedback", "clear_preferences", "settings",
              "embedding_settings", "update_settings", "preview"):
    setattr(Bank, _name, converting(_name)(getattr(Bank, _name)))
