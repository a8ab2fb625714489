"""Each card's sentences (of its summary, state and body: meaning.sentences) and their vectors by the
static model, kept in the index as the card is embedded (index/sidevectors.py: by the same model, in the
same step as the card's own vector), so `story:duplicates` and `membank doctor` compare two cards
sentence by sentence (meaning.cover) without loading a model or encoding anything.

One row per card embedded, even with no sentence: a live card with a vector and no row of its hash
was embedded before this table came (an index opened without a sync since) and is said on the fly. The
rows go with the card's entry (`clear`: the card edited, deleted, renamed; the index rebuilt); what is a
template's (meaning.untemplated) depends on every card and is decided when the cards are compared."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...index.schema import DomainSchema, register
from . import meaning, refs

if TYPE_CHECKING:
    import numpy as np

FIELDS = ("summary", "state", "content")  # what a card says, in this order


def card_sentences(card: dict[str, Any]) -> list[str]:
    """The sentences of a card's API record, in FIELDS' order: its first meaning.CARD_SENTENCES."""
    return [s for field in FIELDS for s in meaning.sentences(card.get(field) or "")][:meaning.CARD_SENTENCES]


def _embeds(kind: str, record: str) -> list[str] | None:
    return None if kind in ("memory", "skill") else card_sentences(json.loads(record))


def _embedded(texts: list[str], vectors: np.ndarray) -> list[tuple[str, str, int, bytes]]:
    import numpy as np

    zh = "".join("1" if meaning.is_chinese(t[:meaning.LANGUAGE_CHARS]) else "0" for t in texts)
    whole = meaning.is_chinese(" ".join(texts)[:meaning.LANGUAGE_CHARS])
    kept = np.ascontiguousarray(vectors, np.float32).tobytes()
    return [(json.dumps(texts, ensure_ascii=False), zh, int(whole), kept)]


register(DomainSchema(
    "story.sentences", 1,
    # hash: the entry's when it was embedded (a row of another is not read: whatever rewrote the entry
    # without its rows, an older membank's sync); zh: '1' or '0' a sentence (Chinese or not); zh_card: the
    # card's (its sentences' start) as a whole
    "CREATE TABLE story_sentences(entry INTEGER PRIMARY KEY, hash TEXT NOT NULL, texts TEXT NOT NULL,"
    " zh TEXT NOT NULL, zh_card INTEGER NOT NULL, vectors BLOB NOT NULL)",
    "DROP TABLE IF EXISTS story_sentences",
    # an index made before this table: its cards are read again by the next sync, and embedded with it
    derived_from=refs.CARD_SOURCES,
    insert="INSERT INTO story_sentences(entry, hash, texts, zh, zh_card, vectors)"
           " VALUES (?1, (SELECT hash FROM entries WHERE rowid = ?1), ?2, ?3, ?4, ?5)",
    clear="DELETE FROM story_sentences WHERE entry = ?",
    embeds=_embeds, embedded=_embedded))


@dataclass(frozen=True)
class Said:
    """One card's sentences as kept: `zh` (each sentence Chinese or not), `zh_card` (all of them together)
    and `vectors` (unit rows, one a sentence) are None for a card embedded before the table came (said on
    the fly)."""
    texts: list[str]
    zh: list[bool] | None
    zh_card: bool | None
    vectors: np.ndarray | None

    def language(self, own: list[int]) -> bool:
        """Whether the sentences at `own` (meaning.own), together, are Chinese."""
        if self.zh_card is not None and len(own) == len(self.texts):
            return self.zh_card
        return meaning.is_chinese(" ".join(self.texts[i] for i in own)[:meaning.LANGUAGE_CHARS])


def kept(texts: str | None, zh: str | None, zh_card: int | None, vectors: bytes | None, record: str | None,
         dim: int) -> Said:
    """A card's row of `story_sentences` (its columns, None without a row: then its record is read). A row
    whose vectors are not one of `dim` float32s a sentence (the index's vectors' width; a damaged index)
    says nothing rather than fail doctor."""
    said = json.loads(texts) if texts is not None else None
    if said is None or zh is None or zh_card is None or vectors is None or len(zh) != len(said) \
            or len(vectors) != 4 * dim * len(said):
        return Said(card_sentences(json.loads(record or "{}")), None, None, None)
    import numpy as np

    rows = np.frombuffer(vectors, np.float32).reshape(len(said), dim)
    return Said(said, [c == "1" for c in zh], bool(zh_card), rows)
