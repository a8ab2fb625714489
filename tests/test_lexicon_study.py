"""The lexicon study's evidence (benchmarks/lexicon.py): words translated, held by the other language's
memories, worth their rarity in that pool; the lexicon file scripts/build_lexicon.py writes reads back."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np

from benchmarks.lexicon import combine, content, evidence, own, read, segment, stem

LEXICON = ({"丈夫": frozenset({"husband"}), "剑": frozenset({"sword"}), "疤": frozenset({"scar"}),
            "手": frozenset({"hand"}), "手掌": frozenset({"palm"})},
           {"husband": frozenset({"丈夫"}), "sword": frozenset({"剑"}), "scar": frozenset({"疤"}),
            "hand": frozenset({"手"}), "palm": frozenset({"手掌"})})


def test_stem_meets_the_forms_of_a_word_and_content_drops_stopwords_and_gloss_fillers() -> None:
    assert stem("hiding") == stem("hides") == stem("hide") == "hid"
    assert stem("swords") == stem("sword") == "sword"
    assert stem("stories") == "story"
    assert content("What does Shen keep sewn into his clothes, sth?") == ["shen", "keep", "sewn", "cloth"]


def test_segment_takes_the_longest_headword_and_passes_over_unknown_characters() -> None:
    assert segment("唐小满的手掌是怎么划破的", LEXICON[0]) == ["手掌"]
    assert segment("手和剑 and 丈夫", LEXICON[0]) == ["手", "剑", "丈夫"]
    assert segment("no Chinese here", LEXICON[0]) == []


def test_an_other_language_memory_holding_a_translation_gains_its_rarity_in_its_pool() -> None:
    texts = ["他的丈夫死在海上", "剑断了", "剑在墙上", "她笑了", "Helena lost her husband", "a sword on the wall"]
    zh = np.array([True, True, True, True, False, False])
    found = evidence(texts, ["what happened to Helena's husband", "剑呢"], zh, LEXICON)
    n = 4  # the Chinese pool
    assert math.isclose(found[0, 0], math.log(n / 1) / math.log(n))
    assert found[0, 1:].tolist() == [0.0] * 5  # the question's own language gains nothing
    assert found[1, 5] == 1.0 and found[1, 4] == 0.0  # 剑 -> sword, held by one of two English memories
    assert found[1, :4].tolist() == [0.0] * 4


def test_a_word_with_too_many_translations_or_a_too_short_one_is_left_out() -> None:
    texts = ["手疼", "剑", "x", "y", "hand"]
    zh = np.array([True, True, True, True, False])
    assert evidence(texts, ["her hand"], zh, LEXICON)[0, 0] > 0
    assert evidence(texts, ["her hand"], zh, LEXICON, shortest=2)[0, 0] == 0
    assert evidence(texts, ["her hand"], zh, LEXICON, most=0)[0].tolist() == [0.0] * 5


def test_max_takes_the_rarest_word_held_and_cover_the_share_of_the_questions_worth() -> None:
    held = [np.array([True, True, False, False]), np.array([True, False, False, False])]
    rare, common = 1.0, math.log(2) / math.log(4)
    assert combine(held, 4, "max").tolist() == [rare, common, 0.0, 0.0]
    assert np.allclose(combine(held, 4, "cover"), [1.0, common / (rare + common), 0.0, 0.0])
    assert combine([np.zeros(4, bool)], 4, "cover").tolist() == [0.0] * 4


def test_the_lexicon_file_reads_back_both_ways(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.tsv.gz"
    path.write_bytes(gzip.compress("# CC-CEDICT\n丈夫\thusband\n先生\thusband mister teacher\n".encode("utf-8")))
    zh2en, en2zh = read(path)
    assert zh2en == {"丈夫": {"husband"}, "先生": {"husband", "mister", "teacher"}}
    assert en2zh["husband"] == {"丈夫", "先生"} and en2zh["teacher"] == {"先生"}


def test_a_question_with_nothing_to_translate_or_a_pool_too_small_gains_nothing() -> None:
    texts = ["剑断了", "Helena lost her husband", "a sword"]
    zh = np.array([True, False, False])
    found = evidence(texts, ["", "the of and", "!!!", "剑" * 10_000, "husband"], zh, LEXICON)
    assert found[[0, 1, 2, 4]].tolist() == [[0.0] * 3] * 4  # nothing, stopwords, punctuation; a pool of one
    assert found[3].tolist() == [0.0, 0.0, 1.0]  # a huge CJK question: 剑 once, held by one of two


def test_own_words_are_found_in_the_questions_own_language_only() -> None:
    texts = ["他的丈夫死在海上", "剑断了", "Helena lost her husband", "a sword"]
    zh = np.array([True, True, False, False])
    found = own(texts, ["Helena's husband", "丈夫"], zh, LEXICON, "max")
    assert found[0].tolist() == [0.0, 0.0, 1.0, 0.0]  # English words in English memories, by their stems
    assert found[1].tolist() == [1.0, 0.0, 0.0, 0.0]  # a Chinese headword as a substring of Chinese memories


def test_the_build_keeps_short_senses_of_kept_headwords_and_writes_the_same_file_twice(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_lexicon", Path(__file__).parents[1] / "scripts" / "build_lexicon.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    lines = ["# CC-CEDICT", "#! date=2023-11-07T06:42:16Z",
             "丈夫 丈夫 [zhang4 fu5] /husband/CL:個|个[ge4]/",
             "刀疤 刀疤 [dao1 ba1] /scar from a knife wound/",
             "先生 先生 [xian1 sheng5] /teacher/husband (old)/a long definition of many content words here/",
             "沈 沈 [Shen3] /surname Shen/",
             "罕見 罕见 [han3 jian4] /rare/"]
    found = build.from_cedict(lines, {"丈夫", "刀疤", "先生", "沈"}, {"husband", "scar", "knif", "wound", "teacher"})
    assert found == {"丈夫": {"husband"}, "刀疤": {"scar", "knif", "wound"}, "先生": {"teacher", "husband"}}
    first, second = tmp_path / "a.tsv.gz", tmp_path / "b.tsv.gz"
    build.write(found, first, ["CC-CEDICT"])
    build.write(found, second, ["CC-CEDICT"])
    assert first.read_bytes() == second.read_bytes()
    assert read(first)[0] == found
