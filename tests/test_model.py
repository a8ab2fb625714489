"""The bundled multilingual model: questions find notes across English and Chinese, and a project
indexed with the earlier English-only model is detected and moved over by a rebuild."""

from __future__ import annotations

from pathlib import Path

import membank
from membank.index.embed import BUNDLED, EARLIER

from .helpers import membank as run

NOTES = {
    "hero": "The hero was wounded by an arrow in the battle at the river.",
    "flour": "The recipe calls for two cups of flour and an egg.",
    "lamp": "The lighthouse lamp burns whale oil and must be trimmed nightly.",
    "灯塔": "灯塔守护人每天黄昏点灯，清晨熄灯，从不离开小岛。",
    "信": "她把母亲的信藏在床板下面，一直没有拆开。",
}


def _first(bank: membank.Bank, query: str) -> str:
    preview = bank.preview(query_text=query)
    assert preview["mode"] == "semantic"
    return preview["items"][0]["content"]


def test_questions_find_notes_in_the_other_language(tmp_path: Path) -> None:
    root = tmp_path / "novel"
    (root / ".writenow").mkdir(parents=True)
    (root / ".writenow" / "project.yaml").write_text("id: p-two-languages\nname: Two languages\n", "utf-8")
    bank = membank.open(root)
    try:
        for text in NOTES.values():
            bank.create_memory("fact", "project", text)
        assert _first(bank, "主角在河边的战斗中受伤了吗？") == NOTES["hero"]
        assert _first(bank, "做蛋糕要几杯面粉") == NOTES["flour"]
        assert _first(bank, "when does the keeper light the lamp each day?") in (NOTES["灯塔"], NOTES["lamp"])
        assert _first(bank, "where did she hide her mother's letter?") == NOTES["信"]
    finally:
        bank.close()


def test_a_project_indexed_with_the_earlier_model_is_moved_over_by_a_rebuild(sample: Path, home: Path) -> None:
    bank = membank.open(sample)
    try:
        bank.update_embedding_settings({"model": str(EARLIER)})
        bank.sync(rebuild=True)
        assert bank.status()["model"]["indexModel"].startswith("minilm-l6-128-int8:")
        bank.update_embedding_settings({"model": None})  # back to the default, as after an upgrade
        preview = bank.preview(query_text="is the lighthouse keeper hurt?")
        assert preview["mode"] == "deterministic"
        assert [r["code"] for r in preview["diagnostics"]["reasons"]] == ["EMBEDDING_DIM_MISMATCH"]
    finally:
        bank.close()
    status = run("status", cwd=sample, home=home)
    assert "semantic recall off" in status.stdout and "membank index --rebuild" in status.stdout
    assert run("index", "--rebuild", cwd=sample, home=home).returncode == 0
    bank = membank.open(sample)
    try:
        model = bank.status()["model"]
        assert model["indexModel"] == model["name"] and model["name"].startswith(BUNDLED.name + ":")
        assert (model["dim"], model["semantic"]) == (256, True) and model["vocabulary"] > 40_000
        assert bank.preview(query_text="is the lighthouse keeper hurt?")["mode"] == "semantic"
    finally:
        bank.close()


def test_the_encoder_gives_model2vecs_vectors_to_the_bit() -> None:
    """membank reads the model's files itself (index/encoder.py, ~10x quicker to load); the vectors must
    stay model2vec's, or an index built before would no longer compare with today's queries."""
    import numpy as np
    from model2vec import StaticModel

    from membank.index.encoder import StaticEncoder

    texts = [*NOTES.values(), "", "   ", "zzzzqqqq", "x" * 9000, "灯塔" * 3000, "Mixed 林默 text, with punctuation!"]
    for folder in (BUNDLED, EARLIER):
        ours = StaticEncoder(folder).encode(texts)
        theirs = StaticModel.from_pretrained(str(folder)).encode(texts, show_progress_bar=False)
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def test_a_query_row_is_the_texts_encoding_shared_read_only() -> None:
    import numpy as np
    import pytest

    from membank.index.embed import load

    model = load(BUNDLED)
    for text in ("the keeper trims the lamp", "灯塔守护人", "the keeper trims the lamp"):
        row = model.encode_query(text)
        assert np.array_equal(row, model.encode([text])[0])
        with pytest.raises(ValueError):
            row[0] = 1.0  # shared between the callers of one prompt: never written into
