"""The skill channels: list and get."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from ...kernel.payload import Id
from ..contract import Channel, Lazy, ProjectOnly


@dataclass(frozen=True)
class SkillRef:
    skillId: Id
    projectId: Id | None = None


class RuleProblem(TypedDict):
    field: str  # context_rules.<key>
    message: str
    line: int


class SkillSummary(TypedDict):
    id: str
    name: str
    description: str
    source: str
    bank: str  # project | global: a project skill overrides a global one with its id
    contextRules: dict[str, Any]  # as written in the file
    rules: dict[str, Any]  # every rule's value in effect (`project-settings` among them)
    valid: bool
    problems: list[RuleProblem]


class Skill(SkillSummary):
    content: str  # the skill's system prompt (Layer 1)


class SkillItems(TypedDict):
    items: list[SkillSummary]


CHANNELS = (
    Channel("skill:list", ProjectOnly, SkillItems, Lazy("membank.domains.skills.read", "list_"), "read", "skills",
            "The skills (project ones over global ones) and their context rules.", "list_skills"),
    Channel("skill:get", SkillRef, Skill, Lazy("membank.domains.skills.read", "get"), "read", "skill",
            "One skill, whole, with its rules.", "get_skill"),
)
