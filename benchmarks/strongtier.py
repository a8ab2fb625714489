"""The strong tier's costs at scale (docs/recall.md, Tiers): background fill time per entry, the semantic
preview with the strong tier against the static one, and the first preview after a save.

Run: python benchmarks/strongtier.py [--files 10000] [--fake] [--json]. With the bundled strong model
(where it cannot run, the report says why and stops after the static sync); `--fake` uses a
384-dimension word-hashing stand-in instead, which measures membank's own work alone (storing, the
in-memory copy, the scan): the model's own time, ~13 ms per query and ~30 ms per short entry (~120 ms
for the bench corpus's ~500-character memories) as measured for issue 35, comes on top. One process, the Python API."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from membank.index.strong import StrongEncoder  # noqa: E402

QUERIES = ["the harbour at night", "what does the captain fear", "a letter from the north", "盐 船",
           "an old friend's betrayal"]


class _Hashing:
    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        rows = np.zeros((len(texts), 384), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, zlib.crc32(word.encode()) % 384] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def fake() -> StrongEncoder:
    """The stand-in encoder (`MEMBANK_STRONG_ENCODER=benchmarks.strongtier:fake`)."""
    return StrongEncoder("hashing-stand-in:0:384", 384, _Hashing())


def _ms(samples: list[float]) -> dict[str, float]:
    return {"median": round(float(np.median(samples)), 2), "p95": round(float(np.percentile(samples, 95)), 2)}


def run(files: int, use_fake: bool) -> dict[str, Any]:
    import membank
    from membank.shells.bench.corpus import generate

    if use_fake:
        os.environ["MEMBANK_STRONG_ENCODER"] = "benchmarks.strongtier:fake"
    os.environ.setdefault("WRITENOW_HOME", tempfile.mkdtemp(prefix="membank-bench-home-"))
    folder = Path(tempfile.mkdtemp(prefix="membank-bench-strong-"))
    generate(folder, files)
    bank = membank.open(folder, sync=False)
    heard = threading.Condition()
    last: dict[str, Any] = {}

    def listen(method: str, params: dict[str, Any]) -> None:
        if method == "index:strong":
            with heard:
                last.update(params)
                heard.notify_all()

    bank.listeners.append(listen)
    try:
        started = time.perf_counter()
        bank.sync()
        static_sync = time.perf_counter() - started
        strong = bank.status()["strong"]
        out: dict[str, Any] = {"files": files, "strong": strong["model"] or strong["problem"],
                               "staticSyncS": round(static_sync, 2)}
        if strong["state"] not in ("ready", "filling"):
            return out
        started = time.perf_counter()
        with heard:
            heard.wait_for(lambda: last and last["done"] == last["total"], 3600)
        filled = time.perf_counter() - started
        out["fill"] = {"entries": last["total"], "s": round(filled, 2), "msPerEntry": round(filled * 1000 / last["total"], 3)}

        def previews(n: int = 60) -> list[float]:
            times = []
            for i in range(n):
                at = time.perf_counter()
                bank.preview(query_text=QUERIES[i % len(QUERIES)])
                times.append((time.perf_counter() - at) * 1000)
            return times

        previews(5)
        out["previewStrongMs"] = _ms(previews())
        bank.update_embedding_settings(patch={"strong": "off"})
        previews(5)
        out["previewStaticMs"] = _ms(previews())
        bank.update_embedding_settings(patch={"strong": "auto"})
        after = []
        for i in range(10):
            want = last["total"] + 1
            bank.create_memory(type_="fact", scope="project", content=f"A saved fact number {i} about the harbour")
            with heard:
                heard.wait_for(lambda: last["done"] == last["total"] == want, 60)
            at = time.perf_counter()
            bank.preview(query_text="harbour fact")
            after.append((time.perf_counter() - at) * 1000)
        out["firstPreviewAfterSaveMs"] = _ms(after)
        return out
    finally:
        bank.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--fake", action="store_true", help="the word-hashing stand-in, not the strong model")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.files, args.fake)
    print(json.dumps(result, ensure_ascii=False, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
