"""The injection preview: budgets, modes, and every degradation caused for real."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import membank
from membank import Bank
from membank.index.embed import BUNDLED, load

from .helpers import write_memory


def _ids(preview: dict) -> list[str]:
    return [i["id"] for i in preview["items"]]


def _codes(preview: dict) -> list[str]:
    return [r["code"] for r in preview["diagnostics"]["reasons"]]


def test_every_item_cites_its_file_and_says_why(bank: Bank) -> None:
    preview = bank.preview()
    assert preview["mode"] == "deterministic" and preview["diagnostics"]["degraded"] is False
    first = preview["items"][0]
    assert first["source"].startswith(".writenow/memories/")
    assert first["reason"]["rank"] == 1
    assert first["reason"]["detail"].startswith("scope project > type preference > updated ")


def test_max_items_cuts_and_counts_what_was_cut(bank: Bank) -> None:
    full = bank.preview()
    bank.update_settings({"injectionMaxItems": 4})
    cut = bank.preview()
    assert _ids(cut) == _ids(full)[:4]
    assert cut["diagnostics"]["truncated"] == len(full["items"]) - 4


def test_token_budget_skips_what_does_not_fit(bank: Bank, sample: Path) -> None:
    write_memory(sample, "preferences/long.md", "word " * 2000, id="m-long", type="preference",
                 updated="2027-01-01T00:00:00Z")
    bank.sync()
    full = bank.preview()
    assert "m-long" not in _ids(full)  # 2,500 tokens never fit in 1,600
    assert full["diagnostics"]["truncated"] == 1
    bank.update_settings({"injectionTokenBudget": 100})
    small = bank.preview()
    assert sum(i["tokens"] for i in small["items"]) <= 100
    assert small["diagnostics"]["tokens"] == sum(i["tokens"] for i in small["items"])
    assert len(small["items"]) + small["diagnostics"]["truncated"] == len(full["items"]) + 1


def test_document_scope_only_for_its_document(bank: Bank) -> None:
    assert "m-note-ch05-pacing" not in _ids(bank.preview())
    assert "m-note-ch05-pacing" not in _ids(bank.preview(document_id="chapters/ch01.md"))
    assert _ids(bank.preview(document_id="chapters/ch05.md"))[0] == "m-note-ch05-pacing"


def test_injection_disabled_returns_nothing_with_the_reason(bank: Bank) -> None:
    bank.update_settings({"injectionEnabled": False})
    preview = bank.preview(query_text="is the hero injured?")
    assert preview["items"] == [] and preview["mode"] == "deterministic"
    assert _codes(preview) == ["INJECTION_DISABLED"]


def test_empty_memories_are_never_injected(bank: Bank, sample: Path) -> None:
    write_memory(sample, "preferences/empty.md", "", id="m-empty", type="preference")
    bank.sync()
    assert "m-empty" not in _ids(bank.preview())
    assert "m-empty" in [m["id"] for m in bank.list_memories()["items"]]


# -- semantic mode ------------------------------------------------------------------------------


def test_semantic_mode_puts_the_relevant_memory_first(bank: Bank) -> None:
    preview = bank.preview(query_text="is the hero injured?")
    assert preview["mode"] == "semantic" and preview["diagnostics"]["degraded"] is False
    top = preview["items"][0]
    assert top["id"] == "m-fact-linmo-wounded"
    score = top["reason"]["score"]
    assert top["reason"]["mode"] == "semantic" and top["reason"]["rank"] == 1
    assert score["vectorRank"] == 1 and 0 < score["vector"] <= 1 and score["fused"] > 0


def test_chinese_query_finds_chinese_memories(bank: Bank) -> None:
    preview = bank.preview(query_text="林默的剑叫什么")
    assert preview["mode"] == "semantic"
    assert _ids(preview)[0] == "m-fact-tingchao"


def test_semantic_mode_respects_scope_deletion_and_budgets(bank: Bank) -> None:
    bank.update_settings({"injectionMaxItems": 3})
    preview = bank.preview(query_text="Su Yao is his sister")
    assert len(preview["items"]) == 3
    assert "m-fact-su-yao-sister" not in _ids(preview)  # soft-deleted
    assert "m-note-ch05-pacing" not in _ids(preview)  # another document's memory
    assert preview["diagnostics"]["truncated"] == 12 - 3  # 12 injectable memories without a document


def test_empty_query_degrades(bank: Bank) -> None:
    preview = bank.preview(query_text="   ")
    assert preview["mode"] == "deterministic" and _codes(preview) == ["EMPTY_QUERY"]
    assert _ids(preview) == _ids(bank.preview())


def test_query_of_unknown_tokens_degrades_without_nan(bank: Bank) -> None:
    envelope = bank.call("memory:injection:preview", {"queryText": "ꙮꙮꙮ"})
    json.dumps(envelope, allow_nan=False)  # raises on NaN
    assert envelope["data"]["mode"] == "deterministic"
    assert _codes(envelope["data"]) == ["QUERY_NOT_EMBEDDABLE"]
    assert envelope["data"]["diagnostics"]["degraded"] is True


def test_missing_model_degrades(bank: Bank, sample: Path) -> None:
    bank.update_embedding_settings({"model": "models/not-there"})
    preview = bank.preview(query_text="is the hero injured?")
    assert preview["mode"] == "deterministic" and _codes(preview) == ["MODEL_UNAVAILABLE"]
    assert bank.status()["model"]["semantic"] is False


def test_unloadable_sqlite_vec_degrades(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.index import store

    monkeypatch.setattr(store, "vec_extension", lambda: str(sample / "no-such-extension"))
    bank = membank.open(sample)
    try:
        assert bank.sync()["errors"] == 0  # indexing itself goes on without vectors
        preview = bank.preview(query_text="is the hero injured?")
        assert preview["mode"] == "deterministic" and _codes(preview) == ["VEC_UNAVAILABLE"]
        assert _ids(preview) == _ids(bank.preview())
    finally:
        bank.close()


def _small_model(folder: Path, dims: int) -> Path:
    """A real model2vec model with fewer dimensions, cut from the bundled one."""
    from model2vec import StaticModel

    base = load(BUNDLED).model
    vectors = base.embedding.astype(np.float32)[:, :dims]
    StaticModel(vectors=vectors, tokenizer=base.tokenizer, normalize=True).save_pretrained(folder)
    return folder


def test_index_built_with_another_dimension_degrades_until_rebuilt(bank: Bank, tmp_path: Path) -> None:
    assert bank.preview(query_text="is the hero injured?")["mode"] == "semantic"  # built with the bundled model's 256
    small = _small_model(tmp_path / "small-model", 64)
    bank.update_embedding_settings({"model": str(small)})
    preview = bank.preview(query_text="is the hero injured?")
    assert preview["mode"] == "deterministic" and _codes(preview) == ["EMBEDDING_DIM_MISMATCH"]
    assert "membank index --rebuild" in preview["diagnostics"]["reasons"][0]["message"]
    assert bank.status()["model"]["indexDim"] == 256 and bank.status()["model"]["dim"] == 64
    bank.sync(rebuild=True)
    rebuilt = bank.preview(query_text="is the hero injured?")
    assert rebuilt["mode"] == "semantic"
    assert bank.status()["model"]["indexDim"] == 64
