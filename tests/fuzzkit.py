"""Tools for tests/test_fuzz.py: hostile values, payloads built from docs/schema/, a snapshot that
puts a bank's folders back between examples, a bounded runner that survives a hang, and the
envelope check every answer must pass."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import stat
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from hypothesis import strategies as st

from membank.kernel.errors import CODES, INTERNAL

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schema"
# A call that takes longer than this is a hang (a healthy call on these tiny banks takes milliseconds).
HANG_SECONDS = float(os.environ.get("MEMBANK_FUZZ_HANG_SECONDS", "20"))
ONE_MIB = 1024 * 1024

# -- values ------------------------------------------------------------------------------------------


def _nest(depth: int, leaf: Any, wrap: Callable[[Any], Any]) -> Any:
    value = leaf
    for _ in range(depth):
        value = wrap(value)
    return value


HUGE_TEXT = "w" * (ONE_MIB + 1)  # one byte over the 1 MiB file limit
BIG_TEXT = "The tide came in over the causeway. " * 34_000  # ~1.2 MB, the evidenceRef
DEEP = {n: (_nest(n, "x", lambda v: [v]), _nest(n, 1, lambda v: {"k": v})) for n in (64, 600, 990, 5000)}
# Values too big to print in a falsifying example are drawn as a Ref and built when the test runs.
BIG = {"huge": HUGE_TEXT, "big": BIG_TEXT, "z5000": "Z" * 5000, "10**5000": 10**5000, "-10**5000": -(10**5000),
       "10**400": 10**400,
       **{f"list{n}": pair[0] for n, pair in DEEP.items()}, **{f"dict{n}": pair[1] for n, pair in DEEP.items()}}
HUGE_INTS = [2**31, 2**63 - 1, 2**63, -(2**63) - 1, 10**20, 99999999999999999999, 10**400, -(10**400)]
PATHS = ["chapters/ch01.md", "chapters/ch05.md", "ch01.md", ".", "./", "", " ", "..", "../x.md", "a/../../b",
         "chapters/../../etc/passwd", "~", "~/x.md", "~root", "/", "/etc/passwd", "/dev/zero", "//srv/share",
         "C:\\Windows\\x.md", "c:x.md", "\\\\server\\share\\x.md", "chapters\\ch01.md", "a\\..\\..\\b",
         ".writenow/memories/x.md", ".writenow/../..", "x/", "a//b", "a/./b", "con", "NUL.md", "x\x00y",
         "\ud800.md", "chapters/\u202eevil.md", "a" * 300, "a/" * 2000, "\n", "ch01.md\n---"]
TEXTS = ["", " ", "\t", "\n", "\r\n", "\x00", "a\x00b", "\ud800", "x\udfffy", "\ufeff", "\u202e", "\u200b", "---",
         "---\ntype: fact\nid: injected\n---\nbody", "...", "yes", "no", "on", "off", "null", "~", "true", "1:30",
         "0999-06-01", "*a", "&a", "!!python/object/apply:os.system ['true']", "{", "[", "#", "'", '"', "\\", "%",
         "@", "`", "|", ">", "- x", "? x", ": x", "x: y", "é", "林默", "👩\u200d👩\u200d👧", "e\u0301",
         "\U0010ffff",
         "omit needless words", "Elin", "a" * 300] + PATHS[:12]
FLOATS = [0.0, -0.0, 0.5, 1.0, -1.0, 1.0000001, 2.0, 1e-320, 1e308, -1e308, float("nan"), float("inf"), float("-inf")]


def big(*names: str) -> st.SearchStrategy[Any]:
    return st.sampled_from(names).map(lambda n: Ref("big", n))


def texts(huge: bool = True) -> st.SearchStrategy[Any]:
    """Strings a careless or hostile caller sends: specials, surrogates, NULs, huge ones, and mixes."""
    piece = st.one_of(st.sampled_from(TEXTS), st.text(max_size=12),
                      st.integers(0xD800, 0xDFFF).map(chr), st.sampled_from(["\x00", "\n", "/", "..", "\\", ":"]))
    mixed = st.lists(piece, min_size=2, max_size=4).map("".join)
    plain = st.one_of(st.sampled_from(TEXTS), st.text(max_size=24), mixed)
    return st.one_of(plain, plain, plain, big("huge", "big", "z5000")) if huge else plain


def ints(huge: bool = True) -> st.SearchStrategy[Any]:
    plain = st.one_of(st.integers(-3, 30), st.sampled_from(HUGE_INTS + [-1, 0, 1, 3, 20, 1200, 2**31 - 1]))
    return st.one_of(plain, plain, plain, big("10**5000", "-10**5000")) if huge else plain


def floats() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(FLOATS), st.floats(), st.floats(0, 1))


def json_values(huge: bool = True) -> st.SearchStrategy[Any]:
    """Any JSON-ish value: scalars, small containers, deep nesting, huge ints, keys that clash."""
    keys = st.one_of(st.sampled_from(["id", "type", "updated", "deleted_at", "revision", "---", "a: b", "\ud800",
                                      "x\x00", "", "<<", "!!python/object", "&a", "*a", "k\nv"]), st.text(max_size=8))
    scalars = st.one_of(st.none(), st.booleans(), ints(huge), floats(), texts(huge))
    small = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(keys, c, max_size=3),
                         max_leaves=6)
    deep = big(*(f"{shape}{n}" for shape in ("list", "dict") for n in sorted(DEEP)))
    return st.one_of(small, small, small, deep) if huge else small


# -- payloads from the channel schemas ------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A value built when the test runs: `memory` (an existing id, by index), `project` (the open
    project's id), `root` (the project folder, or a path under it), `big` (a value too big to print)."""

    kind: str
    arg: Any = 0


def resolve(value: Any, refs: dict[str, Any]) -> Any:
    if isinstance(value, Ref):
        if value.kind == "memory":
            ids = refs["memory"]
            return ids[value.arg % len(ids)]
        if value.kind == "root":
            return str(Path(refs["root"]) / value.arg)
        if value.kind == "big":
            return BIG[value.arg]
        return refs[value.kind]
    if isinstance(value, dict):
        return {k: resolve(v, refs) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, refs) for v in value]
    return value


# strategies for fields whose name says more than their JSON type
_FIELD: dict[str, Callable[[], st.SearchStrategy[Any]]] = {
    "id": lambda: st.one_of(*[st.integers(0, 9).map(lambda i: Ref("memory", i))] * 4, texts(),
                            st.sampled_from(["m-example-fact1", "memories/note/x", "../x", "a" * 201, "x\x00"])),
    "projectId": lambda: st.one_of(st.just(Ref("project")), st.none(), texts()),
    "path": lambda: st.one_of(st.sampled_from(["", ".writenow", ".writenow/memories", "chapters", "nowhere",
                                               "../outside", ".writenow/project.yaml"]).map(lambda p: Ref("root", p)),
                              st.sampled_from(PATHS), texts()),
    "documentId": lambda: st.one_of(st.sampled_from(PATHS), texts()),
    "type": lambda: st.one_of(st.sampled_from(["note", "fact", "preference", "style", "x-y_1", "Note", " note ",
                                               "a" * 300, "a/b", "../fact", "n\u00f6te", "1note", ""]), texts()),
    "tags": lambda: st.lists(texts(), max_size=4),
    "evidence": lambda: st.lists(json_values(), max_size=3),
    "metadata": lambda: st.one_of(json_values().filter(lambda v: isinstance(v, dict)), big("dict600", "dict990")),
    "confidence": lambda: st.one_of(floats(), ints()),
    "evidenceRef": lambda: st.one_of(st.sampled_from(["omit needless words", "x", ""]), big("big", "huge"), texts()),
}


def _by_type(kind: str, node: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    if kind == "string":
        return texts()
    if kind == "integer":
        return ints()
    if kind == "number":
        return st.one_of(floats(), ints())
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(schema_values(node.get("items", {}), defs), max_size=4)
    if kind == "object":
        return _object(node, defs) if "properties" in node else json_values().filter(lambda v: isinstance(v, dict))
    raise ValueError(f"a JSON Schema type the fuzzer does not know: {kind}")


def schema_values(node: dict[str, Any], defs: dict[str, Any], field: str = "") -> st.SearchStrategy[Any]:
    """Values for one schema node: mostly what the schema allows, often something it does not."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return st.deferred(lambda: schema_values(defs[name], defs, field))
    if "anyOf" in node:
        valid = st.one_of(*[schema_values(n, defs, field) for n in node["anyOf"]])
    elif "enum" in node:
        valid = st.one_of(st.sampled_from(node["enum"]),
                          st.sampled_from([v.upper() for v in node["enum"] if isinstance(v, str)]))
    elif "const" in node:
        valid = st.just(node["const"])
    elif "type" not in node:
        valid = json_values()
    else:
        kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
        valid = st.one_of(*[_by_type(k, node, defs) for k in kinds])
    special = _FIELD.get(field)
    if special is not None:
        valid = st.one_of(valid, special())
    return st.one_of(valid, valid, valid, json_values())  # one value in four has any type at all


def _object(node: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props: dict[str, Any] = node.get("properties", {})
    required = set(node.get("required", ()))

    @st.composite
    def build(draw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, sub in props.items():
            keep = draw(st.integers(0, 9)) > (0 if name in required else 5)
            if keep:
                out[name] = draw(schema_values(sub, defs, name))
        if draw(st.integers(0, 9)) == 0:
            out[draw(st.sampled_from(["extra", "__proto__", "", "\ud800", "patch", "id"]))] = draw(json_values())
        return out

    return build()


def payload_schema(channel: str) -> tuple[dict[str, Any], dict[str, Any]]:
    doc = json.loads((SCHEMAS / f"{channel.replace(':', '.')}.json").read_text("utf-8"))
    return doc["properties"]["payload"], doc.get("$defs", {})


def patches(channel: str, name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Objects of the schema's type `name` (a channel's patch), mostly valid, now and then hostile."""
    node, defs = payload_schema(channel)
    return _object(defs[name], defs)


def payloads(channel: str) -> st.SearchStrategy[Any]:
    """Payloads for `channel` from its schema; now and then not an object at all."""
    node, defs = payload_schema(channel)
    return st.one_of(*([schema_values(node, defs)] * 8), st.none(), json_values())


# -- the answer every call must give ----------------------------------------------------------------


class Failures(logging.Handler):
    """Captures the exceptions membank logs (dispatch logs each INTERNAL with its traceback)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.records.append(record)

    def last(self) -> BaseException | None:
        return self.records[-1].exc_info[1] if self.records else None  # type: ignore[index]


@contextlib.contextmanager
def captured() -> Iterator[Failures]:
    handler = Failures()
    logger = logging.getLogger("membank")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def summary(exc: BaseException | None) -> str:
    """The exception and the last membank frames it went through: enough to find the bug."""
    if exc is None:
        return "(no traceback was logged)"
    frames = [f for f in traceback.extract_tb(exc.__traceback__)]
    ours = [f for f in frames if "/membank/" in f.filename] or frames
    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(ours[-4:]))
    return f"{exc.__class__.__name__}: {str(exc)[:200]} at {where}"


def _fail(message: str, cause: BaseException | None) -> None:
    err = AssertionError(message)
    # hypothesis tells bugs apart by where the exception (and its context) was raised: chaining the
    # logged exception makes each distinct INTERNAL its own reported failure
    err.__cause__ = err.__context__ = cause
    raise err


def check_envelope(envelope: Any, where: str, failures: Failures | None = None, private: str | None = None) -> None:
    """An envelope, never INTERNAL, JSON that encodes as UTF-8, and no absolute path of the test's folders."""
    assert isinstance(envelope, dict) and envelope.get("ok") in (True, False), \
        f"{where}: not an envelope: {envelope!r:.300}"
    if envelope["ok"]:
        assert set(envelope) == {"ok", "data"}, f"{where}: a success has exactly ok and data: {sorted(envelope)}"
    else:
        assert set(envelope) == {"ok", "error"}, f"{where}: a failure has exactly ok and error: {sorted(envelope)}"
        error = envelope["error"]
        assert isinstance(error, dict) and {"code", "message"} <= set(error) <= {"code", "message", "details"}, \
            f"{where}: bad error object {error!r:.300}"
        assert error["code"] in CODES, f"{where}: unknown code {error['code']!r}"
        assert isinstance(error["message"], str) and error["message"], f"{where}: empty message"
        assert isinstance(error.get("details", {}), dict), f"{where}: details is not an object"
        if error["code"] == INTERNAL:
            cause = failures.last() if failures is not None else None
            _fail(f"{where}: INTERNAL ({error['message']}); {summary(cause)}", cause)
    try:
        text = json.dumps(envelope, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as e:
        _fail(f"{where}: the envelope cannot be sent as JSON in UTF-8 ({e.__class__.__name__}: {str(e)[:120]})", e)
    if private is not None:
        assert private not in text, f"{where}: the answer carries an absolute path: {text[:300]}"


# -- calls that must return ---------------------------------------------------------------------------


def unblock(fifos: Sequence[bytes]) -> None:
    """Open each FIFO's write end once (a reader blocked in open() then gets EOF)."""
    for fifo in fifos:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader waiting on this one (ENXIO), or it is gone


class Hang(AssertionError):
    """A call did not return in time."""


def bounded(fn: Callable[[], Any], what: str, fifos: Sequence[bytes] = (), timeout: float = HANG_SECONDS) -> Any:
    """`fn()` in a thread; a call still running after `timeout` is a failure. FIFOs the test made are
    then opened for writing until the call ends, so one hang does not wedge the rest of the run."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except BaseException as e:  # re-raised in the test's thread below
            result["error"] = e

    worker = threading.Thread(target=run, name="fuzz-call", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        give_up = time.monotonic() + 30
        while worker.is_alive() and time.monotonic() < give_up:
            unblock(fifos)
            worker.join(0.05)
        state = "returned once its FIFOs were opened for writing" if not worker.is_alive() else "is still running"
        raise Hang(f"{what} did not return within {timeout:g} s (it {state})")
    if "error" in result:
        raise result["error"]
    return result["value"]


# -- putting folders back -------------------------------------------------------------------------------


def _entries(top: bytes, out: dict[bytes, tuple[str, bytes | None]]) -> None:
    for entry in os.scandir(top):
        if entry.name == b".index":
            continue
        if entry.is_symlink():
            out[entry.path] = ("link", os.readlink(entry.path))
        elif entry.is_dir(follow_symlinks=False):
            out[entry.path] = ("dir", None)
            _entries(entry.path, out)
        elif entry.is_file(follow_symlinks=False):
            with open(entry.path, "rb") as f:
                out[entry.path] = ("file", f.read())
        else:
            out[entry.path] = ("other", None)  # a FIFO, socket or device: never opened


class Snapshot:
    """Every entry under some folders (bytes paths, links not followed, `.index/` left alone)."""

    def __init__(self, *folders: Path):
        self.folders = [os.fsencode(f) for f in folders]
        self.entries = self.now()

    def now(self) -> dict[bytes, tuple[str, bytes | None]]:
        out: dict[bytes, tuple[str, bytes | None]] = {}
        for folder in self.folders:
            _entries(folder, out)
        return out

    def changes(self, since: dict[bytes, tuple[str, bytes | None]] | None = None) -> list[str]:
        """What differs now from the snapshot (or from an earlier `now()`)."""
        before = self.entries if since is None else since
        now = self.now()
        return sorted(os.fsdecode(p) for p in set(now) | set(before) if now.get(p) != before.get(p))

    def restore(self) -> bool:
        """Put every entry back as it was; True when anything had changed."""
        now = self.now()
        changed = False
        for path in sorted(now, reverse=True):  # children before their folders
            if now[path][0] == self.entries.get(path, ("",))[0] and now[path][0] in ("dir", "file"):
                continue
            changed = True
            if now[path][0] == "dir":
                shutil.rmtree(path)
            else:
                os.unlink(path)
        for path in sorted(self.entries):
            kind, data = self.entries[path]
            if kind == "dir":
                os.makedirs(path, exist_ok=True)
            elif kind == "file" and (now.get(path) != (kind, data) or not os.path.lexists(path)):
                with open(path, "wb") as f:
                    f.write(data or b"")
                changed = True
        return changed


def is_fifo(path: bytes) -> bool:
    try:
        return stat.S_ISFIFO(os.lstat(path).st_mode)
    except OSError:
        return False
