"""The floor: a plain reference pipeline over a membank project, for `membank bench` to compare with.

Run: python benchmarks/floor.py PROJECT --model MODEL_DIR --db OUT.sqlite

It does what a naive single-threaded script would do, and nothing else: walk `.writenow/` for *.md
under memories/, characters/, world/ and skills/; read each file; split off the front matter and
parse it with PyYAML's C loader (a file whose YAML fails is counted, its body kept); embed every body
with model2vec in batches; write every body into an FTS5 table and every vector into a sqlite-vec
`vec0` table of a fresh SQLite database, in one transaction. No hashing, no validation, no
diagnostics, no ids or clashes, no files table, no journal, no membank code (this file imports none,
so its start-up is its own). It prints one line of JSON: files, seconds (from the first line of this
file to the database closed: imports and the model load included, interpreter start not), files/s,
YAML errors and the seconds of each stage.

`membank bench` runs it as a whole process and times it from spawn to exit
(membank/shells/bench/floor.py); this file's own `seconds` is for running it by hand.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import apsw  # noqa: E402
import numpy as np  # noqa: E402
import sqlite_vec  # noqa: E402
import yaml  # noqa: E402
from model2vec import StaticModel  # noqa: E402

SECTIONS = ("memories", "characters", "world", "skills")
BATCH = 512  # texts per model2vec call; below its threading threshold, so one thread in Python


def walk(project: str) -> list[str]:
    """Every *.md file of the four sections, in a stable order."""
    bank = os.path.join(project, ".writenow")
    found = []
    for section in SECTIONS:
        for folder, dirs, files in os.walk(os.path.join(bank, section)):
            dirs.sort()
            found.extend(os.path.join(folder, name) for name in sorted(files) if name.endswith(".md"))
    return found


def split(text: str) -> tuple[str, str]:
    """(front matter, body): the front matter is between a first line `---` and the next `---` line."""
    if not text.startswith("---\n"):
        return "", text
    end = text.find("\n---\n", 3)
    if end < 0:
        if text.endswith("\n---"):
            return text[4:-4], ""
        return "", text
    return text[4:end + 1], text[end + 5:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", help="a project folder (with .writenow/)")
    parser.add_argument("--model", required=True, help="a model2vec model folder")
    parser.add_argument("--db", required=True, help="the SQLite database to write (replaced if it exists)")
    args = parser.parse_args(argv)

    stages = {"imports": time.perf_counter() - STARTED}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages[name] = stages.get(name, 0.0) + now - clock
        clock = now

    paths = walk(args.project)
    lap("walk")
    texts = []
    for path in paths:
        with open(path, "rb") as f:
            texts.append(f.read().decode("utf-8"))
    lap("read")
    bodies: list[str] = []
    yaml_errors = 0
    for text in texts:
        head, body = split(text)
        if head:
            try:
                yaml.load(head, Loader=yaml.CSafeLoader)
            except yaml.YAMLError:
                yaml_errors += 1
        bodies.append(body)
    lap("parse")

    model = StaticModel.from_pretrained(args.model)
    lap("modelLoad")
    vectors = np.concatenate([np.asarray(model.encode(bodies[i:i + BATCH], use_multiprocessing=False),
                                         dtype=np.float32) for i in range(0, len(bodies), BATCH)]) \
        if bodies else np.zeros((0, int(model.dim)), dtype=np.float32)
    lap("embed")

    for suffix in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(args.db + suffix):
            os.remove(args.db + suffix)
    db = apsw.Connection(args.db)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    with db:  # one transaction
        db.execute("CREATE VIRTUAL TABLE fts USING fts5(body)")
        db.execute(f"CREATE VIRTUAL TABLE vec USING vec0(emb float[{vectors.shape[1]}])")
        db.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", enumerate(bodies, start=1))
        db.executemany("INSERT INTO vec(rowid, emb) VALUES (?, ?)",
                       ((i, row.tobytes()) for i, row in enumerate(vectors, start=1)))
    db.close()
    lap("write")

    took = time.perf_counter() - STARTED
    json.dump({"files": len(bodies), "seconds": round(took, 4), "filesPerS": round(len(bodies) / took, 1),
               "yamlErrors": yaml_errors, "dim": int(vectors.shape[1]),
               "stages": {k: round(v, 4) for k, v in stages.items()}}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
