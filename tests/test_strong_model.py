"""The strong tier's bundled model (membank/model/e5-small-int8) and its numpy arithmetic: its vectors
are e5's (the reference engine's, recorded by scripts/build_strong_model.py), unknown text is a zero
row, long text is cut, and a folder that cannot load says why."""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from membank.index.strong import STRONG_BUNDLED, StrongEncoder, StrongUnavailable, describe_strong, load_strong

REFERENCE = Path(__file__).parent / "data" / "strong_reference.json"


@pytest.fixture(scope="module")
def strong() -> StrongEncoder:
    return load_strong()


def test_vectors_are_e5s_in_english_and_chinese(strong: StrongEncoder) -> None:
    reference = json.loads(REFERENCE.read_text("utf-8"))
    texts = reference["texts"]
    assert any(any("\u4e00" <= c <= "\u9fff" for c in t) for t in texts) and any(t.isascii() for t in texts)
    for kind, ours in (("query", strong.queries(texts)), ("passage", strong.passages(texts))):
        theirs = np.asarray(reference[kind], dtype=np.float32)
        cosines = (ours * theirs).sum(axis=1) / np.linalg.norm(theirs, axis=1)
        assert cosines.min() >= 0.99, (kind, cosines)


def test_without_onnxruntime_numpy_gives_the_same_vectors(strong: StrongEncoder) -> None:
    from membank.index.contextual import ContextualEncoder

    reference = json.loads(REFERENCE.read_text("utf-8"))
    fallback = ContextualEncoder(STRONG_BUNDLED, runtime="numpy")
    assert fallback.runtime == "numpy"
    ours = fallback.encode(reference["texts"], query=True)
    theirs = np.asarray(reference["query"], dtype=np.float32)
    assert ((ours * theirs).sum(axis=1) / np.linalg.norm(theirs, axis=1)).min() >= 0.99
    assert ((ours * strong.queries(reference["texts"])).sum(axis=1)).min() >= 0.99


def test_rows_are_unit_length_and_cross_languages(strong: StrongEncoder) -> None:
    passages = strong.passages(["The recipe calls for two cups of flour.", "The hero was wounded by an arrow."])
    query = strong.queries(["做蛋糕要几杯面粉"])[0]
    assert passages.shape == (2, strong.dim) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert passages[0] @ query > passages[1] @ query


@pytest.mark.parametrize("text", ["", "   ", "\x00\x01", "ꙮꙮꙮ"])
def test_text_with_nothing_known_is_a_zero_row(strong: StrongEncoder, text: str) -> None:
    rows = strong.queries([text, "is the hero injured?"])
    assert not np.isnan(rows).any()
    assert not rows[0].any() and rows[1].any()
    assert not strong.passages([text]).any()
    assert strong.queries([]).shape == (0, strong.dim)


def test_a_long_text_is_cut_so_its_tail_changes_nothing(strong: StrongEncoder) -> None:
    page = "Shen Qingya crossed the harbour at dawn and counted the junks moored by the customs house. " * 40
    rows = strong.passages([page, page + "An entirely different ending about cakes, flour and sugar."])
    assert np.allclose(rows[0], rows[1])


def test_a_query_is_cut_shorter_than_a_passage(strong: StrongEncoder) -> None:
    """A prompt's default query (instruction + selection) is on the caller's path: its first 32 tokens
    rank, so a long selection costs what a question costs; a passage keeps its 256."""
    words = "Shen Qingya crossed the harbour at dawn and counted the junks moored by the customs house. " * 3
    other = words + "An entirely different ending about cakes, flour and sugar."
    assert np.allclose(strong.queries([words])[0], strong.queries([other])[0])
    assert not np.allclose(strong.passages([words])[0], strong.passages([other])[0])
    question = "who counted the junks?"
    assert not np.allclose(strong.queries([question])[0], strong.queries([question + " at dawn"])[0])


def test_a_batch_gives_each_text_the_vector_it_gets_alone(strong: StrongEncoder) -> None:
    # texts of different lengths are padded to one length in a batch: the padding is never attended (the
    # activations' one quantisation scale per call is the batch's: 0.998, as before the graph was rewritten)
    texts = ["雨", "The keeper climbed the stairs of the lighthouse and looked out over the grey sea.",
             "Who keeps the lighthouse?"]
    together = strong.passages(texts)
    alone = np.vstack([strong.passages([t]) for t in texts])
    assert ((together * alone).sum(axis=1)).min() >= 0.995


def test_threads_share_one_encoder(strong: StrongEncoder) -> None:
    texts = ["who taught Lin Mo the sword", "苏瑶站在码头上", "the tide comes every nine years"]
    expected = strong.queries(texts)
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(strong.queries(texts))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(np.allclose(r, expected, atol=1e-5) for r in results)


def test_loaded_once_per_process(strong: StrongEncoder) -> None:
    assert load_strong() is strong and load_strong(STRONG_BUNDLED) is strong
    assert strong.name.startswith("e5-small-int8:") and strong.name.endswith(":384")


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "e5-small-int8"
    folder.mkdir()
    for path in STRONG_BUNDLED.iterdir():
        (folder / path.name).symlink_to(path)
    return folder


def test_a_missing_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(StrongUnavailable, match="missing"):
        load_strong(tmp_path / "nowhere")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "tokenizer.json.gz").unlink()
    with pytest.raises(StrongUnavailable, match="tokenizer.json.gz"):
        load_strong(folder)


@pytest.mark.parametrize("damaged", ["model.safetensors", "model.onnx", "tokenizer.json.gz", "config.json"])
def test_a_damaged_folder_says_so(tmp_path: Path, damaged: str) -> None:
    folder = _copy(tmp_path)
    (folder / damaged).unlink()
    original = (STRONG_BUNDLED / damaged).read_bytes()
    (folder / damaged).write_bytes(original[: len(original) // 3])  # a download or copy cut short
    with pytest.raises(StrongUnavailable, match="damaged"):
        load_strong(folder)


def test_a_folder_of_another_shape_says_so(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "config.json").unlink()
    config = json.loads((STRONG_BUNDLED / "config.json").read_text("utf-8"))
    config["hidden_size"] = 256
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(StrongUnavailable, match="damaged"):
        load_strong(folder)
    shutil.rmtree(folder)


def test_describe_gives_the_loads_identity_from_the_files(strong: StrongEncoder) -> None:
    info = describe_strong()
    assert (info.name, info.dim) == (strong.name, strong.dim)
    assert info.runtime == strong.model.runtime == "onnxruntime"


def test_describe_says_what_the_load_would_say(tmp_path: Path) -> None:
    with pytest.raises(StrongUnavailable, match="missing from this installation"):
        describe_strong(tmp_path / "nowhere")
    folder = _copy(tmp_path)
    (folder / "tokenizer.json.gz").unlink()
    with pytest.raises(StrongUnavailable, match="missing tokenizer.json.gz"):
        describe_strong(folder)


def test_describe_finds_a_damaged_config(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "config.json").unlink()
    (folder / "config.json").write_text('{"hidden_size": ', encoding="utf-8")
    with pytest.raises(StrongUnavailable, match="damaged"):
        describe_strong(folder)


def test_describe_names_a_missing_package_and_the_slower_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without(*names: str) -> Any:
        return lambda name, *a: None if name in names else real(name, *a)

    monkeypatch.setattr(importlib.util, "find_spec", without("onnxruntime"))
    assert describe_strong().runtime == "numpy"
    monkeypatch.setattr(importlib.util, "find_spec", without("tokenizers"))
    with pytest.raises(StrongUnavailable, match="needs tokenizers, which is not installed"):
        describe_strong()


def test_a_lone_surrogate_does_not_break_the_tokenizer(strong: StrongEncoder) -> None:
    # JSON-RPC's "\ud800" decodes to a lone surrogate, which the tokenizer rejects (TypeError)
    rows = strong.passages(["brass a\ud800b key", "\udfff", "brass key"])
    assert not np.isnan(rows).any()
    assert float(rows[0] @ rows[2]) > 0.8
    assert strong.queries(["lighthouse \ud83d"])[0].any()


def test_a_repeated_query_is_not_embedded_again() -> None:
    """A writer's app re-asks with the same selection: the encoder answers it from its last queries
    (the exact text, this encoder's model), a copy each time, and forgets the oldest beyond its size."""
    from membank.index.strong import QueryCache

    asked: list[list[str]] = []

    class Counting:
        def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
            asked.append(list(texts))
            return np.array([[len(t), 1.0] for t in texts], np.float32)

    encoder = StrongEncoder("counting:1:2", 2, Counting(), QueryCache(2))
    first = encoder.queries(["a storm", "the harbour"])
    again = encoder.queries(["the harbour", "a storm", "a storm "])
    assert asked == [["a storm", "the harbour"], ["a storm "]]
    assert np.array_equal(again[:2], first[::-1])
    encoder.queries(["a storm"])[0][0] = 0.0  # the caller's copy
    assert encoder.queries(["a storm"])[0][0] == len("a storm")
    encoder.queries(["the harbour"])  # the least lately asked, gone when "a storm " came
    assert asked[-1] == ["the harbour"]
    other = StrongEncoder("counting:2:2", 2, Counting())
    other.queries(["a storm "])
    assert asked[-1] == ["a storm "] and encoder.passages(["a storm"]).shape == (1, 2)
