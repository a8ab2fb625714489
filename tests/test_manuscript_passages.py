"""Cutting a document into passages and scenes (domains/manuscript/passages.py): pure, tested directly."""

from __future__ import annotations

from membank.domains.manuscript.passages import LONG, MAX, cut, front_matter_end, scenes, sentence_cuts


def test_every_passage_is_its_slice_with_lines() -> None:
    text = "第一段。\n第二行。\n\n第二段。\n"
    ps = cut("ch01.md", text)
    assert len(ps) == 1  # short paragraphs are grouped
    p = ps[0]
    assert (p.line, p.end_line, p.scene, p.scene_no) == (1, 4, "#1", 1)
    assert text[p.start:p.end] == p.text == "第一段。\n第二行。\n\n第二段。"


def test_headings_name_scenes_and_breaks_number_them() -> None:
    text = "# 第五章\n\n## 雨夜\n\n雨下了一夜。\n\n***\n\n天亮了。\n\n## 灯塔\n\n灯塔亮着。\n"
    ps = cut("ch05.md", text)
    assert [(p.scene, p.scene_no, p.line) for p in ps] == [("雨夜", 1, 1), ("#2", 2, 9), ("灯塔", 3, 11)]
    assert ps[0].text.startswith("# 第五章")  # the heading lines open the scene's first passage
    assert [s.label for s in scenes(text)] == ["雨夜", "#2", "灯塔"]


def test_scene_break_forms() -> None:
    text = "a.\n\n* * *\n\nb.\n\n---\n\nc.\n\n§\n\nd.\n"
    assert [p.scene for p in cut("x.md", text)] == ["#1", "#2", "#3", "#4"]


def test_front_matter_is_not_a_passage_but_its_lines_count() -> None:
    text = "---\ntitle: x\n---\nHello there.\n"
    assert front_matter_end(text) == len("---\ntitle: x\n---\n")
    (p,) = cut("x.md", text)
    assert (p.text, p.line) == ("Hello there.", 4)
    # a text file has no front matter: `---` is a scene break there
    assert [(p.text, p.scene) for p in cut("x.txt", text, markdown=False)] == [("title: x", "#1"), ("Hello there.", "#2")]


def test_paragraphs_group_to_about_max() -> None:
    para = "word " * 100  # 500 code points
    text = "\n\n".join([para.strip()] * 6)
    ps = cut("x.md", text)
    assert len(ps) == 6 // 2 or all(len(p.text) <= MAX + 10 for p in ps)
    assert all(len(p.text) <= MAX for p in ps)
    assert "".join(text[p.start:p.end] for p in ps).replace("\n", "") == text.replace("\n", "")


def test_a_long_chinese_paragraph_is_cut_at_sentence_ends() -> None:
    sentence = "他走到灯塔下面，抬头看了很久很久。"  # 17 code points, ends with 。
    text = sentence * 200  # 3,400 code points, one paragraph
    ps = cut("ch.md", text)
    assert len(ps) >= 3
    for p in ps[:-1]:
        assert p.text.endswith("。") and len(p.text) <= MAX
    assert "".join(p.text for p in ps) == text


def test_closing_quotes_stay_with_their_sentence() -> None:
    sentence = "“你来了？”他说。"
    text = "“" + "啊" * 990 + "！”" + sentence * 80
    cuts = sentence_cuts(text, 0, len(text))
    assert cuts and all(text[c - 1] in "”。" for c in cuts)  # never between `？` and its `”`


def test_no_sentence_end_is_cut_hard() -> None:
    text = "啊" * (LONG + 600)
    ps = cut("x.md", text)
    assert [len(p.text) for p in ps] == [MAX, LONG + 600 - MAX]


def test_empty_and_blank_documents_have_no_passages() -> None:
    assert cut("x.md", "") == []
    assert cut("x.md", "\n\n  \n") == []
    assert cut("x.md", "---\na: 1\n---\n") == []


def test_a_fullwidth_full_stop_ends_a_sentence() -> None:
    text = "门子冷笑道：这人算来还是老爷的大恩人呢．" * 100  # older editions end sentences with `．`
    ps = cut("x.txt", text, markdown=False)
    assert len(ps) >= 2 and all(p.text.endswith("．") for p in ps[:-1])
