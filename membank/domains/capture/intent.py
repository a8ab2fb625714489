"""The record of a `capture:review` being written, so that a review killed midway (a crash, a power cut)
is finished by the next one rather than left half-applied (capture.md: every file of a call or none).

Before the first file is written, review writes the record (`.writenow/.index/reviews/<key>.json`,
fsynced): each file of the call with the hash of what it held, its new bytes and the ops it carries. It
is deleted once the call is over (written, or put back after a failure; kept when a file could not be
put back, commit.py, as after a crash). A record whose files all hold their new bytes was over already:
it finishes nothing and is not reported. The next review of that
chapter finds a record left behind and finishes it: each file still holding what it held is written,
then the proposal file (which records the decisions), all through commit.py's every-or-none; each
file holding its new bytes already is left as it is, so no op is applied twice. If the writer changed
one of the files since (neither old nor new bytes), nothing more is written: the answer names the ops
applied and the ops not applied, and the next review checks those again against the cards as they
are. `capture:pending` shows a record waiting (`interrupted`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from pathlib import Path
from typing import Any

from ...files.reader import Unreadable, content_hash, read_regular
from ...files.frontmatter import MAX_FILE_BYTES
from ...files.write import atomic_write, check_inside
from ...index.failures import storage_error
from ...kernel.errors import MembankError
from ..contract import Bank
from .commit import Write, commit

FOLDER = "reviews"  # under .writenow/.index/
KEY = ".index/review.key"  # in the global bank: a record's seal, which a cloned repository cannot make


def _path(bank: Bank, proposal: Path) -> Path:
    key = hashlib.sha256(proposal.relative_to(bank.project.path).as_posix().encode("utf-8")).hexdigest()[:24]
    return bank.project.path / ".index" / FOLDER / f"{key}.json"


def _seal(bank: Bank, proposal: Path, files: list[dict[str, Any]], make: bool = False) -> str | None:
    """The record's seal: an HMAC of its files under this machine's key (the global bank's, made on the
    first record), so a record planted in a cloned project (its `.index/` committed) finishes nothing;
    None when there is no key."""
    path = bank.global_.path / KEY
    try:
        check_inside(bank.global_.path, path, bank.global_.source)  # the global `.index` a link: no key
    except MembankError:
        return None
    try:
        key = read_regular(path, 256)[0]
    except FileNotFoundError:
        if not make:
            return None
        try:
            atomic_write(path, secrets.token_hex(32).encode("ascii"), exclusive=True)
        except FileExistsError:
            pass  # another process made it meanwhile
        key = read_regular(path, 256)[0]
    except (OSError, Unreadable):
        return None
    # bound to this project and chapter too: a sealed record copied into another project is not finished
    body = json.dumps({"project": str(bank.project.path), "proposal": proposal.relative_to(bank.project.path).as_posix(),
                       "files": files},
                      ensure_ascii=False, sort_keys=True).encode("utf-8")
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def _root(bank: Bank, name: str) -> Any:
    """The bank folder a recorded file's `bank` names (`proposal`: the project's, where the proposal file is)."""
    return bank.global_ if name == "global" else bank.project


def _bank_of(bank: Bank, write: Write) -> str:
    return "proposal" if write.root is None else "global" if write.root is bank.global_ else "project"


def record(bank: Bank, proposal: Path, writes: list[Write]) -> Path | None:
    """The record of `writes`, on disk (fsynced) before any of them is written; DB_ERROR when it cannot be.
    None when the global bank cannot hold the machine's key (a read-only or broken home): a record no seal
    vouches for would never be finished, so the review goes on without one, as before records existed."""
    files = [{"bank": _bank_of(bank, w), "rel": w.rel if w.root is not None else
              w.path.relative_to(bank.project.path).as_posix(), "source": w.source, "ops": list(w.ops),
              "original": content_hash(w.original) if w.original is not None else None,
              "new": w.new.decode("utf-8")} for w in writes]
    path = _path(bank, proposal)
    check_inside(bank.project.path, path, bank.project.source)  # `.index/reviews` a link: never written through
    try:
        seal = _seal(bank, proposal, files, make=True)
    except (OSError, Unreadable):
        seal = None
    if seal is None:
        return None
    try:
        atomic_write(path, json.dumps({"version": 1, "files": files, "seal": seal}, ensure_ascii=False).encode("utf-8"))
    except (OSError, Unreadable) as e:
        raise storage_error(e, f".index/{FOLDER}/{path.name}") from None
    return path


def drop(path: Path) -> None:
    """The record deleted once its call is over; one that cannot be (`.index` deleted, or a file in its
    place, meanwhile) is no failure of that call: a record whose files hold their new bytes finishes nothing."""
    try:
        path.unlink()
    except OSError:
        pass


def _left(bank: Bank, proposal: Path, tidy: bool = True) -> tuple[Path, list[dict[str, Any]]] | None:
    """The record a review killed midway left, if it can be finished from; `tidy`: one that cannot is
    deleted (under the write lock only: a read leaves it)."""
    path = _path(bank, proposal)
    try:
        check_inside(bank.project.path, path, bank.project.source)  # never read or deleted through a link
        data = json.loads(read_regular(path, 64 * MAX_FILE_BYTES)[0])
    except (OSError, Unreadable, MembankError):
        return None
    except ValueError:
        data = None
    files = data.get("files") if isinstance(data, dict) else None
    seal = _seal(bank, proposal, files) if isinstance(files, list) and all(_valid(bank, f) for f in files) else None
    if seal is None or not hmac.compare_digest(str(data.get("seal")).encode("utf-8", "surrogatepass"),  # type: ignore
                                               seal.encode("ascii")):  # bytes: any text a planted one holds
        if tidy:
            drop(path)  # torn, foreign or planted: nothing is finished from it (the next review checks each op)
        return None
    return path, files


def _valid(bank: Bank, f: Any) -> bool:
    """A recorded file as `record` writes it, naming a file inside its bank folder (links refused)."""
    if not (isinstance(f, dict) and f.get("bank") in ("project", "global", "proposal")
            and isinstance(f.get("rel"), str) and isinstance(f.get("source"), str) and isinstance(f.get("new"), str)
            and (f.get("original") is None or isinstance(f.get("original"), str))
            and isinstance(f.get("ops"), list) and all(isinstance(op, str) for op in f["ops"])):
        return False
    rel = f["rel"]
    if not rel or rel.startswith("/") or "\\" in rel or ".." in rel.split("/") or "\0" in rel:
        return False
    root = _root(bank, f["bank"])
    try:
        check_inside(root.path, root.file(rel), root.source)
        f["new"].encode("utf-8")
    except (MembankError, OSError, ValueError):
        return False
    return True


def _now(bank: Bank, f: dict[str, Any]) -> tuple[str, Path, bytes | None]:
    """(`old`, `new` or `changed`, its path, its bytes now) of one recorded file."""
    path = _root(bank, f["bank"]).file(f["rel"])
    try:
        data: bytes | None = read_regular(path, MAX_FILE_BYTES + 1)[0]
    except FileNotFoundError:
        data = None
    except (OSError, Unreadable):
        return "changed", path, None
    if data is not None and data == f["new"].encode("utf-8"):
        return "new", path, data
    held = content_hash(data) if data is not None else None
    return ("old" if held == f["original"] else "changed"), path, data


def _over(states: list[str]) -> bool:
    """Whether every file of a record holds its new bytes already, the proposal file too: the call was over."""
    return all(s == "new" for s in states)


def _split(files: list[dict[str, Any]], states: list[str], done: set[str]) -> dict[str, list[str]]:
    """{applied: the ops whose every file (the proposal file aside) is in a state of `done`, notApplied: the rest}."""
    by_op: dict[str, set[str]] = {}
    for f, s in zip(files, states):
        if f["bank"] != "proposal":
            for op in f["ops"]:
                by_op.setdefault(op, set()).add(s)
    return {"applied": sorted(op for op, seen in by_op.items() if seen <= done),
            "notApplied": sorted(op for op, seen in by_op.items() if not seen <= done)}


def waiting(bank: Bank, proposal: Path) -> dict[str, list[str]] | None:
    """What a review killed midway left (read only): the ops written, and those not yet. A record seen
    while a writer holds the lock may be a review at work, not a crash's: not reported (never waited on)."""
    if not _path(bank, proposal).exists():
        return None
    try:
        bank.write_lock.acquire(0)
    except MembankError:
        return None
    try:
        left = _left(bank, proposal, tidy=False)
        states = [] if left is None else [_now(bank, f)[0] for f in left[1]]
        return None if left is None or _over(states) else _split(left[1], states, {"new"})
    finally:
        bank.write_lock.release()


def resume(bank: Bank, proposal: Path) -> dict[str, list[str]] | None:
    """Finish the review a crash left (under the write lock, before anything else is read): None when
    there is none. Every file written, or none when the writer changed one since."""
    left = _left(bank, proposal)
    if left is None:
        return None
    path, files = left
    seen = [(f, *_now(bank, f)) for f in files]
    states = [s for _, s, _, _ in seen]
    if _over(states):  # the call was over before the record went (killed just then, or a stale copy of it):
        _sync(bank, [(f, p) for f, _, p, _ in seen])  # nothing to finish, nor to report as finished
        drop(path)
        return None
    if "changed" in states:  # the proposal file too: the writer may have decided an op there since
        done = _split(files, states, {"new"})
        drop(path)  # the next review checks the ops not applied against the cards as they are now
        _sync(bank, [(f, p) for f, s, p, _ in seen if s == "new"])
        return done
    writes = []
    for f, state, at, data in seen:
        if state != "old":
            continue
        root = None if f["bank"] == "proposal" else _root(bank, f["bank"])
        writes.append(Write(at, f["source"], root, f["rel"] if root is not None else "", data,
                            f["new"].encode("utf-8"), tuple(f["ops"])))
    commit(bank, writes)  # the proposal file last, after the cards; every file or none
    _sync(bank, [(f, p) for f, s, p, _ in seen if s == "new"])
    drop(path)
    return _split(files, states, {"new", "old"})


def _sync(bank: Bank, written: list[tuple[dict[str, Any], Path]]) -> None:
    """The files a killed review wrote before it died: the index reads them now."""
    with bank.index.transaction():
        for name, root in (("project", bank.project), ("global", bank.global_)):
            rels = [f["rel"] for f, _ in written if f["bank"] == name]
            if rels:
                bank.sync_many(root, rels)
