"""Labelled pairs for the near-duplicate studies of cards and of translations (issue 33.6;
benchmarks/duplicatestudy.py). Written before any score was measured, and never edited after.

Cards: each positive is a second card a writer might make for an entity the retrieval fixture already has a
card for (fixtures/retrieval/corpus_cards.py), under another name (so the name rule cannot find it), in
other words. Each look-alike is a different entity written to share what duplicates share: the same
people, places, sect, a similar role. Translations: fixture facts (fixtures/retrieval/corpus_memories.py,
by their position among the facts) written in the other language, and facts in the other language that
name the same people and numbers but say something else.
"""

from __future__ import annotations

# a second card of a fixture card (by the fixture card's name), another name, other words
CARD_TWINS = [
    ("Murong Lie", dict(name="Master of the Iron Lotus", kind="character", aliases=[],
                        summary="Head of the Iron Lotus Society, after the Tidestone and vengeance on the Shens.",
                        relations=[{"to": "Ye Zhiqiu", "type": "daughter"}],
                        body="He never hurries and never shouts; polite and utterly certain of himself. His people "
                             "obey him from fear, and from something near love.")),
    ("Shen Qingya", dict(name="Qingya Shen", kind="character", aliases=[],
                         summary="Twenty-two-year-old disciple thrown out of the Cloudbreak Sect after being blamed "
                                 "for killing Wen Yu, his junior brother.",
                         relations=[{"to": "Lu Chenzhou", "type": "enemy"}],
                         body="Grew up on Duanyun Peak under Xuanjizi from six; knows the sword, the scriptures and "
                              "mountain weather but nothing of the sea or of money. Literal-minded, obstinate, slow "
                              "to anger; keeps even foolish promises.")),
    ("温玉", dict(name="玉师弟", kind="character", aliases=[],
                 summary="断云门最小的弟子，沈青崖的师弟，被人杀害。",
                 relations=[{"to": "沈青崖", "type": "师兄"}],
                 body="十七岁，贪吃桂花糕，练剑常常偷懒。死时手里攥着一页撕下的剑谱。")),
    ("Egret Harbour", dict(name="Egret Bay", kind="place", aliases=[],
                           summary="Treaty port shared by Yan and Albrenne: the walled Yan town on the hill, the "
                                   "Company's quarter by the water.",
                           body="A chain boom is raised across the mouth of the crescent-shaped bay every evening. "
                                "The Rope Street canal separates the Yan town from the Factory Quarter built on "
                                "reclaimed mud.")),
    ("Tidestone", dict(name="The Tide Stone", kind="item", aliases=[],
                       summary="A cold stone, always wet, that can hold back the sea; everyone is after it.",
                       body="Whoever holds it can delay the tide. It lies in the drowned city under the Sunken Star "
                            "Isles.")),
    ("铁莲会", dict(name="铁莲帮", kind="faction", aliases=[],
                   summary="慕容烈手下的帮会，靠贩私盐和卖情报为生。",
                   body="总舵设在黑水河口，表面上是卖灯油的商号。")),
    ("Ye Zhiqiu", dict(name="Zhiqiu Ye", kind="character", aliases=[],
                       summary="A doctor from Hundred Herbs Valley practising in Egret Harbour; secretly Murong "
                               "Lie's daughter.",
                       relations=[{"to": "Shen Qingya", "type": "love"}],
                       body="Precise, dry, quick. She counts pulses, coins and days. She treats whoever walks into "
                            "the Hall of Benevolence, even Company marines, and never says why she left the Valley.")),
    ("Lu Chenzhou", dict(name="Brother Chenzhou", kind="character", aliases=[],
                         summary="The Cloudbreak Sect's senior disciple, Wen Yu's real killer, who let Shen take "
                                 "the blame.",
                         relations=[{"to": "Shen Qingya", "type": "rival"}],
                         body="Gifted, handsome and forever second. All he does is a quarrel with Xuanjizi, who is "
                              "dead and cannot reply.")),
]

# different entities that share what twins share (people, places, roles)
CARD_LOOKALIKES = [
    dict(name="Murong Xue", kind="character", aliases=[],
         summary="Murong Lie's younger sister, who left the Iron Lotus Society and lives quietly in Egret Harbour.",
         relations=[{"to": "Murong Lie", "type": "brother"}, {"to": "Ye Zhiqiu", "type": "niece"}],
         body="She sells embroidery on Rope Street and will not speak her brother's name."),
    dict(name="Shen Qingfeng", kind="character", aliases=[],
         summary="Shen Qingya's elder cousin, also a disciple of the Cloudbreak Sect, who stayed on Duanyun Peak "
                 "after Shen was expelled.",
         relations=[{"to": "Shen Qingya", "type": "cousin"}, {"to": "Lu Chenzhou", "type": "friend"}],
         body="Careful, ambitious and a little afraid of Xuanjizi. He writes to Shen once a year and never sends "
              "the letters."),
    dict(name="Egret Harbour Customs House", kind="place", aliases=[],
         summary="The Company's customs house on the docks of Egret Harbour, where every ship's cargo is weighed.",
         body="A brick hall beside the Factory Quarter's quay; its clerks work by lamplight until the boom is "
              "raised."),
    dict(name="The Moonstone", kind="item", aliases=[],
         summary="A pale stone from the Sunken Star Isles said to calm storms; nobody has seen it work.",
         body="Sailors pass it from hand to hand for luck before a voyage."),
    dict(name="青莲会", kind="faction", aliases=[],
         summary="与铁莲会争夺私盐生意的帮会，由一位女子掌管。",
         body="总舵在白鹭港城南，手下多是船工和脚夫。"),
    dict(name="Doctor Lan", kind="character", aliases=[],
         summary="An old physician of Hundred Herbs Valley who taught Ye Zhiqiu and still writes to her.",
         relations=[{"to": "Ye Zhiqiu", "type": "pupil"}],
         body="Slow, kind and forgetful; he keeps his needles in a case carved with cranes."),
]

# (position of a fixture fact, the same fact in the other language)
TRANSLATIONS = [
    (4, "沈青崖第一章时二十二岁，灯会那几章里满了二十三岁。叶知秋记得他的生日，他自己却不记得。"),
    (16, "叶知秋左手腕内侧有一道月牙形的疤，是九岁时被竹叶青咬的。那块皮肤没有知觉，所以她在那里试不明的毒。"),
    (36, "唐小满在绳街的育婴堂长大，十岁时跑出来，在码头当扒手。"),
    (72, "塘鹅号是一艘双桅横帆船，一百八十吨，十六门炮，造于卡罗。它吃水太深，过不了黑水河口的沙洲，所以河上的活都归宋老三的船。"),
    (112, "Murong Lie is past fifty and his hair has long been white, but he dyes it black with ink every day. When "
          "he falls into the water in chapter 58 the ink washes out and everyone sees his white hair for the first "
          "time."),
    (124, "The Floating Willow House stands at the end of Willow Lane in Egret Harbour, a three-storey wooden "
          "building whose top floor serves only foreign merchants. Liu Ruyan lives in the east room on the second "
          "floor."),
    (140, "Wen Yu is Shen Qingya's junior brother, seventeen, fond of osmanthus cakes and always lazy at sword "
          "practice. When he died he was clutching a page torn from a sword manual."),
    (148, "The Blackwater Ferry is pulled across the river by a thick hemp rope. The masked ferryman makes only "
          "twelve crossings a day and never sails after dark, whatever you pay."),
]

# facts in the other language that name the same people (and numbers) as one above and say something else
TRANSLATION_LOOKALIKES = [
    "沈青崖二十二岁那年被逐出断云门，叶知秋在第八章替他治腿伤。",
    "叶知秋右手腕上戴着一只银镯，是九岁时母亲给她的。",
    "Murong Lie is past fifty and has never once raised his voice to the Society.",
    "Wen Yu is seventeen and Shen Qingya's junior brother; he is buried on Duanyun Peak in chapter 3.",
    "唐小满十岁时在码头第一次见到沈青崖。",
    "The masked ferryman of Blackwater Ferry once took Shen across at night for twelve silver taels.",
]

# cards of the 红楼梦 excerpt's people, for the name bridge of benchmarks/duplicates.py's pairs
HLM_NAMES = [
    ("林黛玉", ["Lin Daiyu", "黛玉", "Daiyu"]),
    ("贾宝玉", ["Jia Baoyu", "宝玉", "Baoyu"]),
    ("甄士隐", ["Zhen Shiyin"]),
    ("英莲", ["Yinglian"]),
    ("王熙凤", ["Wang Xifeng", "凤姐"]),
    ("贾雨村", ["Jia Yucun"]),
]
