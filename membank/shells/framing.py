"""The sidecar's framing (docs/sidecar.md, "Framing"): what arrives on stdin split into lines, one JSON
request each, a line over the limit skipped whole with its head kept (to answer with its own id)."""

from __future__ import annotations

import logging
import os
from typing import Callable

from .requestid import ID_SCAN

log = logging.getLogger("membank.shells.server")


def read_lines(fd: int, max_line: int, on_line: Callable[[bytes], None], on_too_large: Callable[[bytes], None]) -> None:
    """Split what arrives on `fd` into lines until it ends: `on_line(line)` for each (without its `\\n`),
    `on_too_large(head)` for one over `max_line` bytes, its first ID_SCAN bytes as `head`."""
    buf = bytearray()
    skipping: bytes | None = None  # the head of a line being skipped
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError as e:
            log.warning("cannot read stdin (%s); stopping", e.strerror or e.__class__.__name__)
            chunk = b""
        if not chunk:
            if skipping is not None:
                on_too_large(skipping)
            elif buf.strip():
                on_line(bytes(buf))
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if skipping is None:
                    buf += chunk[start:]
                    if len(buf) > max_line:
                        skipping = bytes(buf[:ID_SCAN])
                        buf.clear()
                break
            if skipping is not None:
                on_too_large(skipping)
                skipping = None
            else:
                buf += chunk[start:end]
                if len(buf) > max_line:
                    on_too_large(bytes(buf[:ID_SCAN]))
                else:
                    on_line(bytes(buf))
                buf.clear()
            start = end + 1
