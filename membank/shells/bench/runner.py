"""A whole bench run: generate the corpora, measure every row in order, clean up, print."""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .corpus import SEED, generate
from .cli import cli_rows
from .capture import capture_rows
from .episodes import episode_rows
from .floor import floor_rows
from .manuscript import manuscript_rows
from .measure import cold_index, creates, large_cold_index, model_load, noop_sync, one_file, previews, \
    semantic_after_write
from .options import Options, options
from ..demo import sample_project_dir
from .hostile import hostile_rows
from .prompt import assemble_rows, prefix_reuse
from .report import Result, corpus_json, machine, table
from .rows import Row, say
from .strongtier import installed_row, sidecar_strong_row, static_only, strong_rows
from .watcher import watcher_row

# quality.md's table first, in its order; then figures that explain them
ORDER = ["cold_index", "cold_index_process", "cold_index_floor", "cold_index_vs_floor", "noop_sync", "one_file_sync",
         "watcher", "preview_deterministic", "preview_semantic", "preview_semantic_strong",
         "preview_semantic_large", "memory_create", "sidecar_rtt", "sidecar_rss", "sidecar_rss_strong",
         "context_assemble", "context_assemble_strong", "activation_scan", "consistency_check",
         "context_assemble_story", "prefix_reuse", "hostile_assemble",
         "hostile_check", "hostile_rss", "episode_record",
         "episode_query", "episode_record_async", "lifecycle_realtime", "lifecycle_daily", "lifecycle_weekly",
         "lifecycle_monthly", "cli_status", "cli_doctor", "cli_show", "cli_list_preference", "cli_settings_get",
         "cli_skills",
         "one_file_full_sync", "preview_semantic_after_write", "preview_deterministic_large", "cold_index_large", "model_load",
         "strong_embed_rate", "strong_install_mb", "strong_model_load"]


def _rng(seed: int, label: str) -> random.Random:
    """One random stream per measurement, so adding a row never shifts another row's choices."""
    return random.Random(f"{seed}:{label}")


def _main_corpus(opts: Options, tmp: Path, corpus_info: dict[str, Any], strong: str | None) -> list[Row]:
    """Every row on the main corpus: the in-process ones on one open project (the static tier's, then
    the strong tier's: strongtier.py), then the sidecar's. `strong`: the strong encoder chosen
    (`MEMBANK_STRONG_ENCODER` as the run was started; None: the bundled model)."""
    from .sidecar import rows as sidecar_rows  # here, so `python -m membank.shells.bench.sidecar` runs it fresh

    say(opts.quiet, f"generating {opts.size:,} files (seed {opts.seed})")
    corpus = generate(tmp / f"project-{opts.size}", opts.size, opts.seed)
    corpus_info[str(opts.size)] = corpus_json(corpus)
    say(opts.quiet, f"generated in {corpus.took_s:.1f} s ({corpus.bytes / 1e6:.1f} MB, {corpus.chinese} in Chinese)")
    cold, bank, report = cold_index(corpus, opts.cold_runs, opts.quiet)
    rows = [cold]
    corpus_info[str(opts.size)]["index"] = report
    try:
        say(opts.quiet, "the floor: membank index and benchmarks/floor.py, each as a whole process")
        rows.extend(floor_rows(corpus, opts.cold_runs, tmp, opts.quiet))
        say(opts.quiet, "no-op sync")
        rows.append(noop_sync(bank, corpus.files, opts.syncs))
        say(opts.quiet, "one file changed")
        rows.extend(one_file(bank, corpus, opts.one_file, _rng(opts.seed, "one")))
        say(opts.quiet, "previews")
        rows.append(previews(bank, corpus.files, opts.previews, False, _rng(opts.seed, "det"), "preview_deterministic", 5))
        rows.append(previews(bank, corpus.files, opts.previews, True, _rng(opts.seed, "sem"), "preview_semantic", 15))
        rows.append(semantic_after_write(bank, corpus, max(5, opts.one_file // 2), _rng(opts.seed, "after")))
        say(opts.quiet, "memory:create")
        rows.append(creates(bank, corpus.files, opts.creates, _rng(opts.seed, "create")))
        say(opts.quiet, "watcher")
        rows.append(watcher_row(bank, corpus.files, opts.watcher))
        say(opts.quiet, "context:assemble (cards grown to 2,000, a 50,000-character chapter)")
        rows.extend(assemble_rows(bank, corpus, opts.previews, _rng(opts.seed, "assemble")))
        if opts.cli:
            say(opts.quiet, "the CLI, each command as a whole process")
            rows.extend(cli_rows(bank, corpus.root, opts.cli, corpus.files))
        say(opts.quiet, "episodes (1,000 active + 5,000 compressed)")
        rows.extend(episode_rows(bank, corpus.root, opts.previews, _rng(opts.seed, "episodes")))
        say(opts.quiet, "the strong tier, with the real model")
        rows.extend(strong_rows(bank, corpus, opts.previews, opts.quick, strong, _rng(opts.seed, "strong"), opts.quiet))
    finally:
        bank.close()
    say(opts.quiet, "sidecar")
    rows.extend(sidecar_rows(corpus, opts.sidecar, opts.sidecar_warmup_s))
    say(opts.quiet, "sidecar with the strong tier loaded")
    rows.append(sidecar_strong_row(corpus, min(opts.sidecar, 100), strong))
    if not opts.keep:
        shutil.rmtree(corpus.root, ignore_errors=True)
    return rows


def _large_corpus(opts: Options, tmp: Path, corpus_info: dict[str, Any]) -> list[Row]:
    """The cold index and the previews again on the large corpus."""
    say(opts.quiet, f"generating {opts.large:,} files")
    big = generate(tmp / f"project-{opts.large}", opts.large, opts.seed)
    corpus_info[str(opts.large)] = corpus_json(big)
    say(opts.quiet, f"generated in {big.took_s:.1f} s ({big.bytes / 1e6:.1f} MB)")
    cold_big, bank, report = large_cold_index(big, opts.quiet)
    corpus_info[str(opts.large)]["index"] = report
    rows = [cold_big]
    try:
        say(opts.quiet, "previews on the large corpus")
        det = previews(bank, big.files, opts.previews, False, _rng(opts.seed, "det"), "preview_deterministic_large", None)
        det.note = "no target of its own; 10,000 files: p95 ≤ 5 ms"
        rows.append(det)
        rows.append(previews(bank, big.files, opts.previews, True, _rng(opts.seed, "sem"), "preview_semantic_large", 60))
    finally:
        bank.close()
    return rows


def run(opts: Options) -> Result:
    """Generate the corpora, measure every row, clean up. The writer's global bank is never touched."""
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t0 = time.perf_counter()
    load_at_start = machine()["loadAverage"]
    tmp = Path(tempfile.mkdtemp(prefix="membank-bench-"))
    saved_home = os.environ.get("WRITENOW_HOME")
    os.environ["WRITENOW_HOME"] = str(tmp / "home")  # this process's projects and the sidecar's alike
    rows: list[Row] = []
    corpus_info: dict[str, Any] = {}
    try:
        with static_only() as strong:  # every row but strongtier.py's measures the static tier alone
            rows.append(model_load())
            rows.extend(_main_corpus(opts, tmp, corpus_info, strong))
            say(opts.quiet, "prefix reuse over a scripted session")
            rows.append(prefix_reuse(sample_project_dir(), tmp))
            say(opts.quiet, "a hostile lorebook (400 catastrophic regular-expression keys)")
            rows.extend(hostile_rows(sample_project_dir(), tmp))
            rows.extend(manuscript_rows(tmp, opts.quick, opts.seed, opts.quiet, strong))
            rows.extend(capture_rows(tmp, opts.quick, opts.quiet))
            if opts.large:
                rows.extend(_large_corpus(opts, tmp, corpus_info))
        rows.append(installed_row())
    finally:
        if saved_home is None:
            os.environ.pop("WRITENOW_HOME", None)
        else:
            os.environ["WRITENOW_HOME"] = saved_home
        if opts.keep:
            say(opts.quiet, f"kept the corpora in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    rows.sort(key=lambda r: ORDER.index(r.key) if r.key in ORDER else len(ORDER))
    at_end = machine()
    at_end["loadAverageAtStart"] = load_at_start
    return Result(rows, opts, started_at, time.perf_counter() - t0, corpus_info, at_end)


def execute(opts: Options, as_json: bool = False, output: Path | None = None, compare: Path | None = None) -> int:
    """Run, print the table (or the JSON), optionally save the JSON. Figures are reported, never asserted."""
    before = json.loads(compare.read_text("utf-8")) if compare is not None else None
    result = run(opts)
    data = result.to_json()
    if output is not None:
        output.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(table(result, before) + "\n")
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m benchmarks` / `python -m membank.shells.bench`: the same options as `membank bench`."""
    import argparse

    parser = argparse.ArgumentParser(prog="membank bench", description="`membank bench`: every performance target "
                                     "(docs/performance.md), measured on a seeded corpus, in one table.")
    parser.add_argument("--quick", action="store_true", help="reduced sizes (2,000 and 10,000 files), under a minute")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON and nothing else")
    parser.add_argument("--output", "-o", type=Path, help="also write the JSON figures to this file")
    parser.add_argument("--compare", type=Path, help="an earlier --output file: show its figures alongside")
    parser.add_argument("--size", type=int, help="files in the main corpus (default 10,000)")
    parser.add_argument("--large", type=int, help="files in the large corpus (default 100,000; 0 skips it)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--keep", action="store_true", help="keep the generated corpora and print where")
    args = parser.parse_args(argv)
    opts = options(args.quick, args.size, args.large, args.seed, args.keep)
    return execute(opts, args.json, args.output, args.compare)
