"""`python -m membank.shells.bench`: the same as `membank bench`."""

from __future__ import annotations

from .runner import main

if __name__ == "__main__":
    raise SystemExit(main())
