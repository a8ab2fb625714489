"""Preference learning's decisions, pure: signal identity, weights, confidence, wording, same meaning, redaction."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where it computes: neither listing the channels nor opening a project needs it
    import numpy as np


PREFER, AVOID = "prefer", "avoid"
POLARITY = {"accept": PREFER, "partial": PREFER, "reject": AVOID}
WEIGHT = {"accept": 1.0, "partial": 0.5, "reject": 1.0}  # a partial accept counts half
MIN_EVIDENCE = 2
EVIDENCE_TOO_SHORT = "EVIDENCE_TOO_SHORT"
LEARNING_DISABLED = "LEARNING_DISABLED"
LEARNED_FOLDER = "learned"
# Two phrases are one signal when their vectors are this close AND their words differ only by
# the neutral words below: static embeddings put opposites close ("more dialogue" ~ "less
# dialogue" is 0.90 with the bundled model), so similarity alone would merge them.
SIMILARITY = 0.85
NEUTRAL = frozenset("a an the of to in on for with and my your our their its be is are keep use using make try "
                    "always please prefer write writing".split())
NEGATION = frozenset("no not never avoid without don't dont stop less-of".split())
_WORD = re.compile(r"[\w'’-]+")


def normalize(text: str) -> str:
    """Unicode NFKC, case-folded, whitespace collapsed: the signal's identity."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def evidence_hash(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


def signal_key(polarity: str, normalized: str) -> str:
    """`prefer:<hash>` or `avoid:<hash>`: the same in privacy mode and out of it."""
    return f"{polarity}:{evidence_hash(normalized)}"


def learned_id(key: str) -> str:
    polarity, digest = key.split(":", 1)
    return f"m-learned-{polarity}-{digest[:12]}"


def confidence(count: float, threshold: int) -> float:
    """0.5 at the threshold, 0.75 at twice it, approaching 1."""
    return round(1.0 - 0.5 ** (count / threshold), 3)


def wording(polarity: str, evidence: str | None, tags: list[str]) -> str:
    """The learned preference's text: the evidence phrase, or (privacy) its tags, never raw text."""
    verb = "Prefer" if polarity == PREFER else "Avoid"
    if evidence:
        return f"{verb}: {' '.join(evidence.split())}"
    if tags:
        return f"{verb} what was marked {', '.join(tags)} (learned from feedback whose text is private)."
    return f"{verb} what the writer {'accepted' if polarity == PREFER else 'rejected'} in recent runs " \
           "(learned from feedback whose text is private)."


def _content_words(text: str) -> frozenset[str]:
    words = set()
    for word in _WORD.findall(text):
        if word in NEUTRAL:
            continue
        if word in NEGATION:
            words.add("<not>")
            continue
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(words)


def same_meaning(a: str, b: str, similarity: float) -> bool:
    """Whether two normalized phrases are one preference said two ways."""
    return similarity >= SIMILARITY and _content_words(a) == _content_words(b)


def closest(normalized: str, vector: np.ndarray, phrases: list[tuple[str, str]], vectors: np.ndarray) -> str | None:
    """The key of the phrase that means the same as `normalized`, if any (best similarity, then key)."""
    best: tuple[float, str] | None = None
    for (key, phrase), other in zip(phrases, vectors):
        sim = float(vector @ other)
        if same_meaning(normalized, normalize(phrase), sim) and (best is None or (-sim, key) < (-best[0], best[1])):
            best = (sim, key)
    return best[1] if best else None


def worded_from_label(content: str, key: str) -> bool:
    """Whether a learned file's text is still membank's wording of its signal's label, `Prefer: <label>`
    or `Avoid: <label>`: the label is the one whose hash is the signal key (the first label heard)."""
    text = content.strip()
    polarity = key.split(":", 1)[0]
    for verb in ("Prefer:", "Avoid:"):
        if text.startswith(verb):
            return signal_key(polarity, normalize(text[len(verb):])) == key
    return False


PRIVATE_KEYS = (b'"evidence"', b'"summary"', b'"reason"')  # label text, a run's summary, a verdict's reason


def holds_text(data: bytes) -> bool:
    """Whether journal bytes may hold text privacy mode keeps out (a quick test before parsing)."""
    return any(key in data for key in PRIVATE_KEYS)


def without_labels(data: bytes) -> bytes:
    """A journal file's bytes with every label's text (`evidence`), every run summary (an episode's
    `summary`) and every verdict's `reason` taken out. Lines without one keep their bytes; a damaged
    line that may hold one is dropped (it never counted anyway)."""
    out = []
    for raw in data.split(b"\n"):
        if not holds_text(raw):
            out.append(raw)
            continue
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            value.pop("evidence", None)
            if value.get("event") == "trace-feedback":  # a verdict's reason is the writer's words;
                value.pop("reason", None)  # an eviction's (`ttl`, `lru`) is membank's own
            if isinstance(value.get("episode"), dict):
                value["episode"].pop("summary", None)
            out.append(json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        # anything else holding the word is not an event: dropped too
    return b"\n".join(out)
