"""An editor saving a memory file every ~5 ms while membank updates it, for 10 s: are saves lost?

    python scripts/adversarial_saves.py [--seconds 10] [--interval 0.005] [--without-swap]

`--without-swap` makes membank act as on a system with no atomic swap (check, then rename), to
show the gap the swap closes. Prints saves, updates ok, conflicts and lost saves.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=0.005, help="seconds between editor saves")
    parser.add_argument("--without-swap", action="store_true", help="check then rename, as where no swap exists")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        os.environ["WRITENOW_HOME"] = str(Path(scratch) / "global-bank")
        import membank
        from membank.files import exchange
        from tests.editor_race import race

        if args.without_swap:
            exchange.swap = lambda a, b: False  # type: ignore[assignment]
        project = Path(scratch) / "project"
        shutil.copytree(REPO / "fixtures" / "sample-project", project, ignore=shutil.ignore_patterns(".index"))
        bank = membank.open(project)
        try:
            figures = race(bank, project, args.seconds, args.interval)
        finally:
            bank.close()
    guard = "check then rename (no swap)" if args.without_swap or not exchange.can_swap() else "atomic swap"
    print(f"{args.seconds:g} s, an editor save every {args.interval * 1000:g} ms, membank guarding with {guard}")
    print(f"saves {figures.saves}  updates ok {figures.updates_ok}  conflicts {figures.conflicts}  lost {figures.lost}")
    return 1 if figures.lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
