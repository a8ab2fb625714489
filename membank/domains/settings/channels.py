"""The settings channels: the `memory:` section for the app, the `embedding:`, `context:` and
`lifecycle:` sections for the writer (the CLI's `settings set`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from ...kernel.payload import Id, Most
from ..contract import Bank, Channel, Lazy, ProjectOnly

# by name, imported at the first call: `settings get` needs none of the rewriting behind `settings set`
update_memory = Lazy("membank.domains.settings.update", "update_memory")
update_embedding = Lazy("membank.domains.settings.update", "update_embedding")
update_context = Lazy("membank.domains.settings.update", "update_context")
update_lifecycle = Lazy("membank.domains.settings.update", "update_lifecycle")


@dataclass(frozen=True)
class SettingsPatch:
    injectionEnabled: bool | None = None
    preferenceLearningEnabled: bool | None = None
    privacyModeEnabled: bool | None = None
    preferenceLearningThreshold: int | None = None
    injectionMaxItems: int | None = None
    injectionTokenBudget: int | None = None


@dataclass(frozen=True)
class SettingsUpdate:
    patch: SettingsPatch
    projectId: Id | None = None
    scope: Literal["project", "global"] = "project"


@dataclass(frozen=True)
class EmbeddingPatch:
    """`model`: a model2vec folder (relative to the project, or absolute); null is the bundled model.
    `strong`: the strong tier of vectors, `auto` (where it can run) or `off` (recall.md, Tiers)."""

    model: Annotated[str, Most(chars=4096)] | None = None
    strong: Literal["auto", "off"] | bool | None = None  # false: off (YAML's reading of a bare `off`)


@dataclass(frozen=True)
class EmbeddingUpdate:
    patch: EmbeddingPatch
    projectId: Id | None = None
    scope: Literal["project", "global"] = "project"


@dataclass(frozen=True)
class LayerTokensPatch:
    identity: int | None = None
    skill: int | None = None
    project: int | None = None
    preferences: int | None = None
    retrieved: int | None = None
    immediate: int | None = None


@dataclass(frozen=True)
class ContextPatch:
    """context.md: `maxTokens` for Layers 2-5 when a skill sets none, `recursion` depth, and each
    layer's cap (`layerTokens`, key by key: the others stay as they are)."""

    maxTokens: int | None = None
    recursion: int | None = None
    layerTokens: LayerTokensPatch | None = None


@dataclass(frozen=True)
class ContextUpdate:
    patch: ContextPatch
    projectId: Id | None = None
    scope: Literal["project", "global"] = "project"


class LayerTokens(TypedDict):
    identity: int
    skill: int
    project: int
    preferences: int
    retrieved: int
    immediate: int


class ContextSettings(TypedDict):
    maxTokens: int
    recursion: int
    layerTokens: LayerTokens


@dataclass(frozen=True)
class LifecyclePatch:
    """episodes.md, Lifecycle: the stores' capacities, the TTL of an unused episode, working memory."""

    activeEpisodes: int | None = None
    compressedEpisodes: int | None = None
    semanticRules: int | None = None
    episodeTtlDays: int | None = None
    workingTokens: int | None = None


@dataclass(frozen=True)
class LifecycleUpdate:
    patch: LifecyclePatch
    projectId: Id | None = None
    scope: Literal["project", "global"] = "project"


class LifecycleSettings(TypedDict):
    activeEpisodes: int
    compressedEpisodes: int
    semanticRules: int
    episodeTtlDays: int
    workingTokens: int


class Settings(TypedDict):
    injectionEnabled: bool
    preferenceLearningEnabled: bool
    privacyModeEnabled: bool
    preferenceLearningThreshold: int
    injectionMaxItems: int
    injectionTokenBudget: int


class EmbeddingSettings(TypedDict):
    model: str | None  # as settings.yaml names it; null: the bundled model
    strong: Literal["auto", "off"] | None  # the strong tier (recall.md, Tiers); null: auto


def memory_settings(bank: Bank) -> dict[str, Any]:
    """`memory:settings:get`: the effective `memory:` settings after merging global and project."""
    return bank.settings_files.memory()


CHANNELS = (
    Channel("memory:settings:get", ProjectOnly, Settings, memory_settings, "read", "settings get",
            "The effective settings after merging global and project files.", "settings"),
    Channel("memory:settings:update", SettingsUpdate, Settings, update_memory, "write", "settings set",
            "Change `memory.*` settings in settings.yaml, keeping its comments.", "update_settings"),
    Channel("embedding:settings:update", EmbeddingUpdate, EmbeddingSettings, update_embedding, "write", "settings set",
            "Change `embedding.*` settings (the model folder) in settings.yaml, keeping its comments.",
            "update_embedding_settings"),
    Channel("context:settings:update", ContextUpdate, ContextSettings, update_context, "write", "settings set",
            "Change `context.*` settings (the prompt budgets, recursion) in settings.yaml, keeping its comments.",
            "update_context_settings"),
    Channel("lifecycle:settings:update", LifecycleUpdate, LifecycleSettings, update_lifecycle, "write", "settings set",
            "Change `lifecycle.*` settings (capacities, episodeTtlDays, workingTokens) in settings.yaml, keeping its "
            "comments.", "update_lifecycle_settings"),
)
