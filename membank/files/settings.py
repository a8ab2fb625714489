"""settings.yaml: defaults, reading with per-key checks, merging global and project."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import yaml

from ..kernel import callmemo
from .conflicts import MERGE_CONFLICT, RESOLVE, conflict_line
from .frontmatter import MAX_FILE_BYTES, FrontMatterError, decode, load_yaml, yaml_lead, yaml_problem
from .reader import Unreadable, read_regular
from .records import ERROR, WARNING, Diagnostic

MEMORY_DEFAULTS: dict[str, Any] = {
    "injectionEnabled": True,
    "preferenceLearningEnabled": True,
    "privacyModeEnabled": False,
    "preferenceLearningThreshold": 3,
    "injectionMaxItems": 20,
    "injectionTokenBudget": 1200,
}
EMBEDDING_DEFAULTS: dict[str, Any] = {"model": None, "strong": "auto"}  # strong: recall.md, Tiers
# context.md: the budget of Layers 2-5 when a skill does not set one, how deep activated cards pull
# in the cards they mention, and each layer's own cap
LAYER_NAMES = ("identity", "skill", "project", "preferences", "retrieved", "immediate")
CONTEXT_DEFAULTS: dict[str, Any] = {
    "maxTokens": 6000,
    "recursion": 1,
    "layerTokens": {"identity": 600, "skill": 2000, "project": 3000, "preferences": 1000, "retrieved": 3000,
                    "immediate": 8000},
}
# episodes.md: the stores' capacities, how long an episode lives, the working memory's tokens per session
LIFECYCLE_DEFAULTS: dict[str, Any] = {
    "activeEpisodes": 1000,
    "compressedEpisodes": 5000,
    "semanticRules": 200,
    "episodeTtlDays": 180,
    "workingTokens": 8000,
}
# story.md: how many documents an open thread may go unmentioned, and the facet schemas (Facet schemas)
STORY_DEFAULTS: dict[str, Any] = {"threadWarnChapters": 10, "facets": {}}
DEFAULTS = {"memory": MEMORY_DEFAULTS, "embedding": EMBEDDING_DEFAULTS, "context": CONTEXT_DEFAULTS,
            "lifecycle": LIFECYCLE_DEFAULTS, "story": STORY_DEFAULTS}


def _bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _int_in(low: int, high: int) -> Callable[[Any], int | None]:
    return lambda v: v if isinstance(v, int) and not isinstance(v, bool) and low <= v <= high else None


# The largest values membank takes: far beyond any real prompt, small enough that every count and
# sum stays a 64-bit integer in SQLite (a bigger one made every preview fail).
MAX_THRESHOLD = 1000
MAX_ITEMS = 1000
MAX_TOKEN_BUDGET = 1_000_000


def _model(v: Any) -> str | None:
    return v if isinstance(v, str) and v.strip() else None


MAX_LAYER_TOKENS = 200_000


def _strong(v: Any) -> str | None:
    """`auto` or `off`; YAML reads a bare `off` as false (and `on` as true), so those are taken too."""
    if v is False:
        return "off"
    if v is True:
        return "auto"
    return v if v in ("auto", "off") else None


def _facets(v: Any) -> dict[str, dict[str, Any]] | None:
    """The facet schemas as written (each a mapping); what a schema says is checked where it is used."""
    if not isinstance(v, dict) or not all(isinstance(k, str) and isinstance(x, dict) for k, x in v.items()):
        return None
    return {k: dict(x) for k, x in v.items()}


def _layer_tokens(v: Any) -> dict[str, int] | None:
    """Some or all of the six layers' caps; the others keep theirs (merged key by key)."""
    if not isinstance(v, dict) or not v:
        return None
    check = _int_in(0, MAX_LAYER_TOKENS)
    if any(k not in LAYER_NAMES or check(n) is None for k, n in v.items()):
        return None
    return {str(k): int(n) for k, n in v.items()}


# (section, key) -> (check returning None when the value is wrong, what was expected)
CHECKS: dict[tuple[str, str], tuple[Callable[[Any], Any], str]] = {
    ("memory", "injectionEnabled"): (_bool, "true or false"),
    ("memory", "preferenceLearningEnabled"): (_bool, "true or false"),
    ("memory", "privacyModeEnabled"): (_bool, "true or false"),
    ("memory", "preferenceLearningThreshold"): (_int_in(1, MAX_THRESHOLD), f"a whole number from 1 to {MAX_THRESHOLD:,}"),
    ("memory", "injectionMaxItems"): (_int_in(0, MAX_ITEMS), f"a whole number from 0 to {MAX_ITEMS:,}"),
    ("memory", "injectionTokenBudget"): (_int_in(0, MAX_TOKEN_BUDGET), f"a whole number from 0 to {MAX_TOKEN_BUDGET:,}"),
    ("embedding", "model"): (_model, "a folder path or null"),
    ("embedding", "strong"): (_strong, "`auto` or `off`"),
    ("context", "maxTokens"): (_int_in(100, 200_000), "a whole number from 100 to 200,000"),
    ("context", "recursion"): (_int_in(0, 5), "a whole number from 0 to 5"),
    ("lifecycle", "activeEpisodes"): (_int_in(1, 1_000_000), "a whole number from 1 to 1,000,000"),
    ("lifecycle", "compressedEpisodes"): (_int_in(0, 10_000_000), "a whole number from 0 to 10,000,000"),
    ("lifecycle", "semanticRules"): (_int_in(0, 1_000_000), "a whole number from 0 to 1,000,000"),
    ("lifecycle", "episodeTtlDays"): (_int_in(1, 36_500), "a whole number of days from 1 to 36,500"),
    ("lifecycle", "workingTokens"): (_int_in(100, 1_000_000), "a whole number from 100 to 1,000,000"),
    ("story", "threadWarnChapters"): (_int_in(1, 100_000), "a whole number from 1 to 100,000"),
    ("story", "facets"): (_facets, "`facet: {type: ...}` pairs (story.md, Facet schemas)"),
    ("context", "layerTokens"): (_layer_tokens, f"`layer: tokens` pairs for any of {', '.join(LAYER_NAMES)}, "
                                 f"each a whole number from 0 to {MAX_LAYER_TOKENS:,}"),
}


def check(section: str, key: str, value: Any) -> tuple[Any, str | None]:
    """(value, None) when it is right, else (None, what was expected). Unknown keys give a message too."""
    if (section, key) not in CHECKS:
        known = ", ".join(k for s, k in CHECKS if s == section)
        return None, f"not a setting membank knows (the `{section}` settings are: {known})"
    if section == "embedding" and value is None:
        return None, None
    fn, expected = CHECKS[(section, key)]
    ok = fn(value)
    return (ok, None) if ok is not None else (None, expected)


def _line(text: str, key: str) -> int:
    m = re.search(rf"^\s*{re.escape(key)}\s*:", text, re.MULTILINE)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def read_file(path: Path, source: str) -> tuple[dict[str, dict[str, Any]], list[Diagnostic]]:
    """`read` on a settings file as it is on disk: absent is no settings; a FIFO, a device (a link to
    /dev/zero) or an unreadable file is a diagnostic and the defaults, never a wait."""
    try:
        data, _ = read_regular(path, MAX_FILE_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return read(None, source)
    except Unreadable as e:
        return read(None, source)[0], [Diagnostic(source, 1, ERROR, f"{e.message}; the defaults are used")]
    return read(data, source)


def read(data: bytes | None, source: str) -> tuple[dict[str, dict[str, Any]], list[Diagnostic]]:
    """The valid settings a file sets, by section; wrong values are reported and left out."""
    found: dict[str, dict[str, Any]] = {section: {} for section in DEFAULTS}
    if data is None:
        return found, []
    try:
        text = decode(data)
    except FrontMatterError as e:
        return found, [Diagnostic(source, e.line, ERROR, e.message + "; the defaults are used")]
    marker = conflict_line(text)
    if marker is not None:
        return found, [Diagnostic(source, marker, ERROR, "settings.yaml holds git conflict markers (<<<<<<<, =======, "
                                  f">>>>>>>) left by a merge: {RESOLVE}; until then the defaults are used",
                                  MERGE_CONFLICT)]
    try:
        loaded = load_yaml(text) if text.strip() else {}
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as e:
        line, problem = yaml_problem(e, text, 1)
        return found, [Diagnostic(source, line, ERROR,
                                  f"{yaml_lead(e, 'settings.yaml')}: {problem}; the defaults are used")]
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return found, [Diagnostic(source, 1, ERROR, "settings.yaml should hold `memory:` and `embedding:` sections; the defaults are used")]
    problems: list[Diagnostic] = []
    for section, values in loaded.items():
        if section not in found:
            problems.append(Diagnostic(source, _line(text, str(section)), WARNING,
                                       f"`{section}` is not a settings section membank knows ({', '.join(DEFAULTS)}); "
                                       "it is ignored"))
            continue
        if values is None:
            continue
        if not isinstance(values, dict):
            problems.append(Diagnostic(source, _line(text, section), ERROR,
                                       f"`{section}:` should hold `key: value` lines; the defaults are used for it"))
            continue
        for key, value in values.items():
            ok, expected = check(section, str(key), value)
            if expected is None:
                found[section][str(key)] = ok
            elif (section, str(key)) in CHECKS:
                default = DEFAULTS[section][str(key)]
                problems.append(Diagnostic(source, _line(text, str(key)), ERROR,
                                           f"`{section}.{key}` should be {expected}, not {_show(value)}; "
                                           f"the default ({_show(default)}) is used"))
            else:
                problems.append(Diagnostic(source, _line(text, str(key)), WARNING,
                                           f"`{section}.{key}` is {expected}; it is ignored"))
    return found, problems


def _show(value: Any) -> str:
    """A setting's value as the writer would type it in settings.yaml."""
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 40 else f'"{value[:37]}…"'
    if isinstance(value, (dict, list)):
        return "a list" if isinstance(value, list) else "a set of `key: value` pairs"
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def merge(*layers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Defaults, then each layer key by key (global first, project last)."""
    result = {section: {k: dict(v) if isinstance(v, dict) else v for k, v in values.items()}
              for section, values in DEFAULTS.items()}
    for layer in layers:
        for section, values in layer.items():
            for key, value in values.items():
                if isinstance(value, dict):  # layerTokens: key by key
                    result[section][key].update(value)
                else:
                    result[section][key] = value
    return result


class SettingsCache:
    """The merged settings of one project (global file, then project file) and their diagnostics,
    re-read only when a file's size or mtime moved, or after `forget` (a coarse file-system clock
    can hide a change)."""

    def __init__(self, global_file: Path, project_file: Path, project_source: str):
        self.files = [(global_file, "global:settings.yaml"), (project_file, project_source)]
        self._cached: tuple[list[Any], tuple[dict[str, dict[str, Any]], list[Diagnostic]]] | None = None

    def forget(self) -> None:
        self._cached = None

    def read(self) -> tuple[dict[str, dict[str, Any]], list[Diagnostic]]:
        """Looked at once per call in a `callmemo` scope (an assembly asks eight times)."""
        return callmemo.kept(("settings", id(self)), self._read)

    def _read(self) -> tuple[dict[str, dict[str, Any]], list[Diagnostic]]:
        stamp: list[Any] = []
        for path, _ in self.files:
            try:
                st = path.stat()
                stamp.append((st.st_size, st.st_mtime_ns))
            except OSError:
                stamp.append(None)
        cached = self._cached
        if cached is not None and cached[0] == stamp:
            return cached[1]
        layers, problems = [], []
        for path, source in self.files:
            found, diags = read_file(path, source)  # never blocks: a FIFO or /dev/zero is a diagnostic
            layers.append(found)
            problems.extend(diags)
        result = (merge(*layers), problems)
        self._cached = (stamp, result)
        return result

    def memory(self) -> dict[str, Any]:
        return dict(self.read()[0]["memory"])

    def embedding(self) -> dict[str, Any]:
        return dict(self.read()[0]["embedding"])

    def context(self) -> dict[str, Any]:
        found = self.read()[0]["context"]
        return {**found, "layerTokens": dict(found["layerTokens"])}

    def lifecycle(self) -> dict[str, Any]:
        return dict(self.read()[0]["lifecycle"])

    def story(self) -> dict[str, Any]:
        return dict(self.read()[0]["story"])

    def diagnostics(self) -> list[Diagnostic]:
        return list(self.read()[1])
