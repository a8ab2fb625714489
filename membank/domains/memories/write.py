"""Writing memory files: create, update, soft-delete and restore, each file and index changed together.

Validate first, write second: every value is checked and the new file read back with the index's
own parser before anything touches the disk; a file the writer changed since membank read it is
never overwritten (CONFLICT)."""

from __future__ import annotations

from typing import Any

from ...files.exchange import Changed, replace_unchanged
from ...files.frontmatter import MAX_FILE_BYTES, FrontMatterError, decode
from ...files.parse import ID_RE, MEMORY_KEYS, TYPE_RE, as_confidence
from ...files.readback import check_memory, check_unicode, unwritable
from ...files.reader import Unreadable, content_hash, read_regular
from ...files.rewrite import REMOVE, IsoTime, RewriteError, render, rewrite
from ...files.write import atomic_write, check_inside, free_path, make_folder, new_id, slug
from ...kernel import clock, errors
from ...kernel.errors import MembankError
from ...kernel.paths import document_path
from ..contract import Bank
from .read import find, get
from ...index.failures import storage_error


def create(bank: Bank, type_: str, scope: str, content: str, document_id: str | None = None,
           tags: list[str] | None = None, confidence: float | None = None, evidence: list[Any] | None = None,
           metadata: dict[str, Any] | None = None, pinned: bool | None = None) -> dict[str, Any]:
    """`memory:create`: a manual memory."""
    return write_new(bank, type_, scope, content, document_id, tags, confidence, evidence, metadata, pinned)


def write_new(bank: Bank, type_: str, scope: str, content: str, document_id: str | None = None,
                  tags: list[str] | None = None, confidence: float | None = None, evidence: list[Any] | None = None,
                  metadata: dict[str, Any] | None = None, pinned: bool | None = None,
                  origin: str = "manual", folder: str | None = None, memory_id: str | None = None) -> dict[str, Any]:
    """A new memory file (a free name from its text, in `memories/<folder or type>/`), indexed at once.
    `origin`, `folder` and `memory_id` are for membank's own writers (learning); the channel sends none."""
    _check_values(confidence, metadata)
    if not TYPE_RE.fullmatch(type_):
        raise errors.invalid("type", "`type` must be one lower-case word, like preference, fact or note")
    if not content.strip():
        raise errors.invalid("content", "`content` is empty; a memory needs some text")
    if scope == "document":
        if document_id is None:
            raise errors.invalid("documentId", "`scope: document` needs a `documentId`")
        document_id = document_path(document_id)
    elif document_id is not None:
        raise errors.invalid("documentId", "`documentId` goes with `scope: document` only")
    root = bank.global_ if scope == "global" else bank.project
    stamp = IsoTime(clock.now_iso())
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
    with bank.write_lock:
        try:
            make_folder(root.path, folder_path, root.source)  # no write through a link out of the bank
        except OSError as e:
            raise storage_error(e, root.source(f"memories/{folder or type_}")) from None
        with bank.index.transaction():  # see _rewrite: a busy index means no file is written
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
            bank.sync_one(root, path.relative_to(root.path).as_posix())
    return get(bank, meta["id"])


def update(bank: Bank, memory_id: str, patch: dict[str, Any], expected_revision: int | None = None) -> dict[str, Any]:
    """Change the keys `patch` names (the keys sent: null removes a metadata key or unties a document)."""
    for key in ("content", "type", "confidence", "pinned"):
        if key in patch and patch[key] is None:
            raise errors.invalid(f"patch.{key}", f"`{key}` cannot be null; leave it out to keep it")
    _check_values(patch.get("confidence"), patch.get("metadata"), "patch.")
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
        current = get(bank, memory_id)
        if current["scope"] == "global":
            raise errors.invalid("patch.documentId", "a global memory cannot belong to a document")
        if patch["documentId"] is None:
            updates.update(scope="project", document=REMOVE)
        else:
            updates.update(scope="document", document=document_path(patch["documentId"], "patch.documentId"))
    if "metadata" in patch:
        for key, value in (patch["metadata"] or {}).items():
            updates[key] = REMOVE if value is None else value
    return _rewrite(bank, memory_id, updates, body, expected_revision)


def delete(bank: Bank, memory_id: str) -> dict[str, Any]:
    current = get(bank, memory_id)
    if current["deletedAt"] is not None:
        return {"id": memory_id, "deletedAt": current["deletedAt"]}
    stamp = IsoTime(clock.now_iso())
    memory = _rewrite(bank, memory_id, {"deleted_at": stamp})
    return {"id": memory_id, "deletedAt": memory["deletedAt"]}


def restore(bank: Bank, memory_id: str) -> dict[str, Any]:
    current = get(bank, memory_id)
    if current["deletedAt"] is None:
        return current
    return _rewrite(bank, memory_id, {"deleted_at": None})


def _rewrite(bank: Bank, memory_id: str, updates: dict[str, Any], body: str | None = None,
             expected_revision: int | None = None) -> dict[str, Any]:
    """Change one memory file: refused with CONFLICT when it is not what the caller and the index saw."""
    with bank.write_lock:
        root, record, digest = find(bank, memory_id)
        rel = root.rel(record["source"])
        assert rel is not None
        path = root.file(rel)
        # a folder on the way may have become a link; a linked file is refused too (replacing it would
        # cut the link and leave two copies)
        check_inside(root.path, path, root.source)
        try:  # bounded, and never blocked by a FIFO put under the name
            original = read_regular(path, MAX_FILE_BYTES + 1)[0]
        except FileNotFoundError:
            bank.sync_one(root, rel)
            raise MembankError(errors.NOT_FOUND, f"{record['source']} is gone from disk", {"id": memory_id}) from None
        except Unreadable as e:
            bank.sync_one(root, rel)
            raise MembankError(errors.CONFLICT, f"{record['source']} cannot be read now ({e.message}); nothing "
                               "was written", {"id": memory_id}) from None
        except OSError as e:
            raise storage_error(e, record["source"]) from None
        if content_hash(original) != digest:
            bank.sync_one(root, rel)
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
        updates = {"id": memory_id, **updates, "revision": record["revision"] + 1, "updated": IsoTime(clock.now_iso())}
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
        with bank.index.transaction():
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
            bank.sync_one(root, rel)  # committed even on failure, so a retry sees what is on disk
        if failure is not None:
            raise failure
        return get(bank, memory_id)


def _patch_fields(updates: dict[str, Any], body: str | None) -> dict[str, Any]:
    """The caller's field behind each front-matter change (for naming it in a refusal)."""
    fields: dict[str, Any] = {} if body is None else {"patch.content": body}
    for key, value in updates.items():
        if key not in MEMORY_KEYS:
            fields.setdefault("patch.metadata", {})[key] = value
        else:
            fields["patch.documentId" if key == "document" else f"patch.{key}"] = value
    return fields


def _check_values(confidence: Any, metadata: Any, prefix: str = "") -> None:
    """What only a memory needs beyond its payload type (checked first, by the channel's payload type): a confidence
    from 0 to 1 and metadata keys that are plain names, not the file's own keys."""
    if confidence is not None and as_confidence(confidence) is None:  # the rule parse.py reads files by
        raise errors.invalid(prefix + "confidence", "`confidence` must be a number from 0 to 1")
    for key in metadata or {}:
        if key in MEMORY_KEYS or not ID_RE.fullmatch(key):
            raise errors.invalid(prefix + "metadata", f"metadata key `{key[:40]}` is reserved or not a plain name")
