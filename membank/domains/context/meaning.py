"""Activation by meaning (context.md, Activation): a card that asks for it (`match: meaning`, on the card or
on its book, with `minScore`) is activated when the scanned text is close to its summary in meaning, in
either language, with reason `MEANING` and its score, after every card matched by a word.

One query vector for the scanned text (the selection, the instruction and the text around it nearest to
the selection, `MEANING_CHARS` in all), never one per card; the summaries' vectors are made once per generation of the cards and model. A card without
`match: meaning` is never activated this way, and a project without such cards pays nothing.

The static model's vectors, in either tier: the strong model takes ~100 ms (median) to embed 600 code
points of scanned text (~14 ms a short sentence), ten times a prompt's budget (docs/context.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..contract import Bank
from ..recall.readiness import semantic_problem
from ..story.cards import Catalog
from .activation import Found

if TYPE_CHECKING:
    import numpy as np

MEANING = "MEANING"
WHERE = "meaning"  # a Found's `where` for a card activated by meaning
# The least score (`centered_scores`, rounded to 6 places) between the scanned text and a card's summary
# that activates the card when it sets no `minScore` (nor its book). Measured with the bundled model on
# the sample project's cards and two real imported ones: related texts, in either language, scored
# 0.29-0.60; unrelated ones, short or 4,000 code points of another story, at most 0.27 (docs/context.md).
DEFAULT_MIN_SCORE = 0.3


def summary_text(card: dict[str, Any]) -> str:
    """What a card is compared by: its summary; a card without one, its name and body."""
    summary = (card.get("summary") or "").strip()
    return summary or "\n".join(filter(None, (card.get("name"), card.get("content"))))


# The most code points of the scanned text the query vector is made of: the selection and the instruction,
# then the surrounding text nearest to the selection. Tokenizing is the cost here (the bundled model: 9 ms
# for 4,000 code points of Chinese, 3.6 ms for 1,000, 1.2 ms for 200; a prompt's budget is 10 ms), and the
# model reads at most 512 tokens of a text (about 512 code points of Chinese) anyway.
MEANING_CHARS = 600


def scanned_text(texts: dict[str, str], limit: int = MEANING_CHARS) -> str:
    """The scanned text as one query of at most `limit` code points: the selection, the instruction, then
    the text around the selection nearest first (the end of what comes before it, the start of what
    follows), half the room each side, a side's unused room going to the other. The selection comes
    first: what the model cuts off a long text is the end of it."""
    head = "\n".join(t for t in (texts.get("selection") or "", texts.get("instruction") or "") if t.strip())[:limit]
    before, after = texts.get("before") or "", texts.get("after") or ""
    room = max(0, limit - len(head))
    take_before = min(len(before), max(room // 2, room - len(after)))
    take_after = min(len(after), room - take_before)
    parts = (head, before[len(before) - take_before:], after[:take_after])
    return "\n".join(p for p in parts if p.strip())


def centered_scores(summaries: np.ndarray, vector: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Cosine similarity of each summary (rows) to the query `vector`, both less the bank's `mean` vector.

    A static model's vector of a long text drifts toward the average of all text: 4,000 code points of an
    unrelated story scored 0.40-0.43 against cards by the plain cosine, as high as a related sentence in
    the other language. Taking the bank's mean away first leaves what sets a text apart (unrelated: at
    most 0.22). A summary with no vector (zero row) scores 0."""
    import numpy as np

    rows = summaries - mean
    q = vector - mean
    norms = np.linalg.norm(rows, axis=1) * (np.linalg.norm(q) or 1.0)
    scores = np.einsum("ij,j->i", rows, q) / np.where(norms > 0, norms, 1.0)
    # a summary that embeds to nothing (only emoji, only characters the model lacks) is close to nothing:
    # less the mean it would be the mean's opposite, near any text leaning away from the bank's mean
    empty = ~np.any(summaries, axis=1) if summaries.ndim == 2 else np.zeros(0, bool)
    return np.where(empty | ~np.isfinite(scores), 0.0, scores)


def chosen(ids: list[str], scores: list[float], minimums: dict[str, float | None], names: dict[str, str],
           taken: set[str]) -> list[tuple[str, float]]:
    """The cards activated by meaning: (id, score) of those not `taken` (found by a word) whose score
    (rounded to 6 places: float noise never decides) reaches their minimum, best first, then by name, id."""
    out = []
    for card_id, score in zip(ids, scores):
        s = round(float(score), 6)
        least = minimums.get(card_id)
        if card_id not in taken and s >= (DEFAULT_MIN_SCORE if least is None else least):
            out.append((card_id, s))
    out.sort(key=lambda c: (-c[1], names[c[0]], c[0]))
    return out


def _summaries(catalog: Catalog, model: Any) -> tuple[list[str], np.ndarray]:
    """(ids, their summaries' unit vectors as rows) of the cards that ask for meaning, once per generation
    of the cards and model."""
    memo = catalog.memo("context.meaning", getattr(model, "name", None), kept=2)
    made = memo.get("vectors")
    if made is None:
        ids = sorted(catalog.meaning)
        made = memo["vectors"] = (ids, model.encode([summary_text(catalog.cards[i]) for i in ids]))
    return made  # type: ignore[no-any-return]


def _mean(bank: Bank, dim: int) -> np.ndarray:
    """The mean of the bank's vectors (memories and cards), once per generation of them; zeros without
    the index's copy of the vectors: the plain cosine then."""
    import numpy as np

    copy = bank.index.vector_copy() if bank.index.vec_error is None else None
    if copy is None or not len(copy) or copy.matrix.shape[1] != dim:
        return np.zeros(dim, np.float32)
    kept = bank.index.caches.get("context.meaning_mean")
    if kept is None or kept[0] != copy.tag:  # assigned whole: another thread never sees half of it
        kept = bank.index.caches["context.meaning_mean"] = (copy.tag, copy.matrix.mean(axis=0, dtype=np.float64)
                                                            .astype(np.float32))
    return kept[1]  # type: ignore[no-any-return]


def activate(bank: Bank, catalog: Catalog, texts: dict[str, str], allowed: set[str],
             found: list[Found]) -> tuple[list[Found], dict[str, dict[str, Any]]]:
    """The cards of the `allowed` sections activated by meaning, in order, to go after `found`, with each
    one's reason; nothing when no card asks for it, or semantic recall cannot run (`semantic_problem`: the
    prompt's memories give the reason), or the scanned text has no word the model knows."""
    present = {f.id for f in found} | set(catalog.always)  # a character-scoped book's entries need their character
    wanted = {i: m for i, m in catalog.meaning.items() if catalog.sections.get(i) in allowed
              and (i not in catalog.owners or not present.isdisjoint(catalog.owners[i]))}
    query = scanned_text(texts)
    if not wanted or not query:
        return [], {}
    if semantic_problem(bank) is not None:  # no model, no sqlite-vec, or an index of another model
        return [], {}
    model = bank.embedder()
    assert model is not None
    import numpy as np

    vector = model.encode([query])[0]
    if not np.any(vector):
        return [], {}
    ids, matrix = _summaries(catalog, model)
    keep = [n for n, i in enumerate(ids) if i in wanted and matrix[n].any()]  # a summary with no vector: never
    scores = centered_scores(matrix[keep], vector, _mean(bank, matrix.shape[1])) if keep else np.zeros(0)
    names = {ids[n]: catalog.cards[ids[n]]["name"] for n in keep}
    picked = chosen([ids[n] for n in keep], scores.tolist(), wanted, names, {f.id for f in found})
    out = [Found(i, names[i], "", WHERE, 0, 0, 0) for i, _ in picked]
    reasons = {i: {"reason": MEANING, "score": s, "minScore": DEFAULT_MIN_SCORE if wanted[i] is None else wanted[i],
                   "where": WHERE, "depth": 0} for i, s in picked}
    return out, reasons
