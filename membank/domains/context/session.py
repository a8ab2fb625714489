"""Layer 5's "this session" block (context.md, Working memory; seed 003 MS1-R1-S1 "Immediate"): with the
app's `sessionId` and the skill's `working: N`, the session's working-memory entries, most important
first, within N tokens. They live in this process only (docs/working-memory.md) and never reach the
systemPrompt: Layer 5 is the userContent."""

from __future__ import annotations

from typing import Any

from ..contract import Bank
from ..recall.rank import Reason
from ..working import flows as working
from .layers import Piece

SESSION_UNKNOWN = "SESSION_UNKNOWN"
SOURCE_PREFIX = "session:"  # an entry's source: the session it belongs to (no file holds it)


def entry_text(entry: dict[str, Any]) -> str:
    body = entry["content"].strip().replace("\n", "\n  ")
    return f"- [{entry['kind']}] {body}"


def pieces(bank: Bank, session_id: str | None, budget: int
           ) -> tuple[list[Piece], list[Reason], list[dict[str, Any]]]:
    """The block's pieces (most important first); for a session this process does not hold, the reason
    SESSION_UNKNOWN; and the entries `working: N` left out, as `diagnostics.dropped` lists them. Nothing
    without a `sessionId` or with `working: 0`."""
    if session_id is None or budget <= 0:
        return [], [], []
    made = working.immediate(bank, session_id, budget)
    if made is None:
        shown = session_id if len(session_id) <= 80 else session_id[:79] + "…"
        return [], [Reason(SESSION_UNKNOWN, f"no working memory is held for the session `{shown}` in this process "
                           "(never added to, ended, or held by another process): the \"this session\" block is empty")], []
    entries, left = made
    unfit = [{"layer": 5, "kind": "working", "id": e["id"], "source": SOURCE_PREFIX + session_id,
              "tokens": e["tokenCount"], "reason": f"over the skill's working memory of {budget} tokens "
              "(context_rules.working)"} for e in left]
    return [Piece(5, "session", "working", entry_text(e), e["id"], SOURCE_PREFIX + session_id, None,
                  {"kind": e["kind"], "importance": e["importance"], "count": e["count"]}, e["importance"])
            for e in entries], [], unfit
