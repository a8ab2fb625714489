"""Choosing what goes into a prompt: the deterministic order, budgets, and the reasons given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from .files.frontmatter import iso_to_micros
from .files.records import SCOPE_RANK, TYPE_RANK

# Degradation reason codes (api.md): the call still succeeds and says why it fell back.
EMPTY_QUERY = "EMPTY_QUERY"
VEC_UNAVAILABLE = "VEC_UNAVAILABLE"
MODEL_UNAVAILABLE = "MODEL_UNAVAILABLE"
EMBEDDING_DIM_MISMATCH = "EMBEDDING_DIM_MISMATCH"
QUERY_NOT_EMBEDDABLE = "QUERY_NOT_EMBEDDABLE"
INJECTION_DISABLED = "INJECTION_DISABLED"


@dataclass(frozen=True)
class Reason:
    code: str
    message: str

    def to_api(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def eligible(memory: dict[str, Any], document: str | None) -> bool:
    """Whether a memory may be injected for this document at all."""
    if memory["deletedAt"] is not None or not memory["content"]:
        return False
    return memory["scope"] != "document" or (document is not None and memory["documentId"] == document)


def deterministic_key(memory: dict[str, Any]) -> tuple[int, int, str, int, str]:
    """scope (document > project > global), type (preference > fact > note > others by name),
    newest `updatedAt` first, then `id` ascending: total, so every machine agrees."""
    type_ = memory["type"]
    return (SCOPE_RANK[memory["scope"]], TYPE_RANK.get(type_, 3), type_ if type_ not in TYPE_RANK else "",
            -iso_to_micros(memory["updatedAt"]), memory["id"])


def deterministic_detail(memory: dict[str, Any]) -> str:
    return f"scope {memory['scope']} > type {memory['type']} > updated {memory['updatedAt'][:10]} > id {memory['id']}"


def fit(candidates: Iterable[tuple[dict[str, Any], int]], max_items: int, token_budget: int) -> Iterator[tuple[dict[str, Any], int]]:
    """The candidates, in order, that fit: at most `max_items`, within `token_budget` tokens.

    An item too large for what is left is skipped and smaller later ones may still fit,
    so one long memory never starves the rest."""
    if max_items <= 0:
        return
    used = kept = 0
    for memory, tokens in candidates:
        if used + tokens > token_budget:
            continue
        yield memory, tokens
        used += tokens
        kept += 1
        if kept == max_items:
            return


def item(memory: dict[str, Any], tokens: int, reason: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": memory["id"],
        "type": memory["type"],
        "scope": memory["scope"],
        "origin": memory["origin"],
        "content": memory["content"],
        "source": memory["source"],
        "tokens": tokens,
        "reason": reason,
    }


def deterministic_items(candidates: Iterable[tuple[dict[str, Any], int]], max_items: int, token_budget: int) -> list[dict[str, Any]]:
    return [
        item(memory, tokens, {"mode": "deterministic", "rank": rank, "detail": deterministic_detail(memory)})
        for rank, (memory, tokens) in enumerate(fit(candidates, max_items, token_budget), start=1)
    ]
