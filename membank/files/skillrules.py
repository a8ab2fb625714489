"""A skill's `context_rules`: the closed set of keys (context.md), their types, ranges and defaults.

The file layer owns this because it is what a skill file may say: indexing reports every bad rule
as a diagnostic on the skill file, and assembly checks the same rules again and refuses the skill
(INVALID_ARGUMENT naming `context_rules.<key>`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    key: str
    kind: str  # "integer" | "boolean"
    default: Any  # None: from settings (`max_tokens` -> context.maxTokens)
    low: int = 0
    high: int = 0
    means: str = ""  # for writers and the docs

    def allowed(self) -> str:
        if self.kind == "boolean":
            return "true or false"
        return f"a whole number from {self.low:,} to {self.high:,}"

    def check(self, value: Any) -> bool:
        if self.kind == "boolean":
            return isinstance(value, bool)
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high


RULES: dict[str, Rule] = {r.key: r for r in (
    Rule("surrounding", "integer", 0, 0, 20000,
         "how many characters of your manuscript before and after the selection the model sees"),
    Rule("characters", "boolean", False, means="character cards: the always-on ones, and the ones the text mentions"),
    Rule("project-settings", "boolean", False,
         means="world entries (places, rules, items, factions, lore, style guides): always-on and mentioned ones"),
    Rule("preferences", "boolean", True, means="your preferences (memories of type preference)"),
    Rule("memories", "integer", 0, 0, 50, "how many other memories (facts, notes) most relevant to the moment"),
    Rule("episodes", "integer", 0, 0, 5, "how many past runs most like this one"),
    Rule("history", "boolean", False, means="the latest compact history of your sessions"),
    Rule("threads", "boolean", False, means="the plot threads still open at this point of the story"),
    Rule("scene", "boolean", False,
         means="the scene here (point of view, who is present, where, when), and the cards of who is in it"),
    Rule("working", "integer", 0, 0, 8000,
         "how many tokens of this session's working memory (what the app holds for the session it names)"),
    Rule("recap", "integer", 0, 0, 20000, "how many tokens of the story so far (the summaries of what comes "
         "before this point, the newest in most detail)"),
    Rule("recall", "integer", 0, 0, 20, "how many passages of your manuscript from before this point most relevant "
         "to the moment (never one already in the text around the selection)"),
    Rule("max_tokens", "integer", None, 100, 200000,
         "the size limit, in tokens, for everything but the skill's own text (default: settings context.maxTokens)"),
)}


@dataclass(frozen=True)
class RuleProblem:
    key: str | None  # None: `context_rules` itself is not a mapping
    message: str


def check_rules(raw: Any) -> tuple[dict[str, Any], list[RuleProblem]]:
    """The rules with defaults filled in (max_tokens None: the settings decide), and one problem per
    bad key, in the order written."""
    rules = {key: rule.default for key, rule in RULES.items()}
    if not isinstance(raw, dict):
        return rules, [RuleProblem(None, "`context_rules` should be `key: value` pairs, like "
                                         "{surrounding: 2000, characters: true}")]
    problems = []
    for key, value in raw.items():
        rule = RULES.get(str(key))
        if rule is None:
            problems.append(RuleProblem(str(key), f"`context_rules.{key}` is not a rule membank knows "
                                                  f"(the rules are: {', '.join(RULES)})"))
        elif not rule.check(value):
            problems.append(RuleProblem(key, f"`context_rules.{key}` should be {rule.allowed()}, not {_show(value)}"))
        else:
            rules[key] = value
    return rules, problems


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 40 else f'"{value[:37]}…"'
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "a set of `key: value` pairs"
    return str(value)
