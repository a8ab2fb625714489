"""What a writer's `/pattern/flags` key may cost, decided from its text alone, before anything compiles it.

The `regex` module bounds a match's time (`timeout=`) but not what compiling costs: it writes out the
minimum count of every repeat, through every level of nesting, so `/(?:(?:a{100}){100}){400}/` (26
characters) is four million nodes, ~1.1 GB and ~40 s before the first match; a few hundred groups deep
its parser ends in a RecursionError. `cost` walks the pattern once (no compile, no recursion) and
counts what compiling writes out: every atom is one, a group the sum of its branches, a repeat its
item times its lower bound (`{m}`, `{m,}` and `{m,n}` count m: `regex` writes out the m copies a match
needs and loops for the rest, so `(?:(?:a{0,100}){0,100}){0,400}` compiles to a few nodes), multiplied
through the nesting.
`refusal` names the first bound a key exceeds; such a key is a diagnostic where the card writes it
(files/parse.py) and is never compiled (domains/story/matching.py). Measured with tracemalloc on
`regex` 2024+: ~125 bytes kept per unit on average over random nested patterns (~1 KB at the peak of one
compile), ~4 KB for a key however small, and ~0.5 ms to compile a small key.

Keys come from SillyTavern lorebooks, whose regular expressions are JavaScript's: what JavaScript has
not (verbose mode, recursion, fuzzy matching) is refused too, since the count could not vouch for it."""

from __future__ import annotations

import re

REGEX_KEY = re.compile(r"^/(.+)/([a-z]*)$", re.DOTALL)
FLAGS = "imsug"  # i: ignore case, m: multi-line, s: dot matches newline; u and g change nothing here

MAX_PATTERN_CHARS = 1_000  # a key is a line; a longer one is not a word to look for
MAX_DEPTH = 24  # groups inside groups (regex's parser recurses; ~300 levels end in a RecursionError)
MAX_UNITS = 2_000  # units one key may cost (~0.3 MB and ~2 ms to compile)
BASE_UNITS = 32  # what any key costs (~4 KB compiled), counted in every key's units
MAX_TOTAL_UNITS = 50_000  # all the regex keys one matcher compiles (~6 MB kept, measured): later ones skipped

_INLINE_FLAGS = re.compile(r"\(\?([aiLmsuxVfbewr0-9-]*)\)")  # (?i) — not a group
_SCOPED_FLAGS = re.compile(r"\(\?([aiLmsuxfwr-]+):")  # (?i:…) — a group
_QUANTIFIER = re.compile(r"\{(\d*)(,?)(\d*)\}")
_RECURSION = re.compile(r"\(\?(R|[+-]?\d+|&\w+|P>\w+)\)")
_BIG = 1 << 40  # counts saturate here: past every bound, and no giant integers


def split(key: str) -> tuple[str, str] | None:
    """A `/pattern/flags` key's pattern and flags, or None for a literal key."""
    m = REGEX_KEY.match(key.strip())
    return (m.group(1), m.group(2)) if m else None


def is_regex_key(key: str) -> bool:
    return split(key) is not None


def refusal(key: str) -> str | None:
    """Why the `/pattern/flags` key `key` is never compiled (the bound it exceeds), or None when it may be."""
    parts = split(key)
    if parts is None:
        return None
    pattern, flags = parts
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"it is {len(pattern):,} characters long, more than the {MAX_PATTERN_CHARS:,} a key may be"
    unknown = sorted(set(flags) - set(FLAGS))
    if unknown:
        return f"`{unknown[0]}` is not a flag a key may carry (i, m, s, u, g)"
    units, depth, problem = cost(pattern)
    if problem:
        return problem
    if depth > MAX_DEPTH:
        return f"its groups nest {depth} deep, more than the {MAX_DEPTH} a key may"
    if units > MAX_UNITS:
        shown = f"{units:,}" if units < _BIG else "far more than that"
        return (f"compiling it would write out {shown} pattern units (its repeats multiplied through its "
                f"groups), more than the {MAX_UNITS:,} a key may")
    return None


def units(key: str) -> int:
    """What compiling the regex key `key` costs, in the units MAX_TOTAL_UNITS counts (its own bound checked apart)."""
    parts = split(key)
    return BASE_UNITS + (min(cost(parts[0])[0], _BIG) if parts else 0)


def cost(pattern: str) -> tuple[int, int, str]:
    """(units, deepest nesting, why it cannot be counted or "") of a pattern in `regex`'s V0 syntax."""
    branches: list[list[int]] = [[]]  # per open group: the units of its finished branches
    current: list[int] = [0]  # per open group: the units of the branch being read
    last: list[int] = [0]  # per open group: the units of the item a quantifier would repeat (0: none)
    depth = deepest = 0
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        item = 1
        if ch == "\\":
            i += 2 if i + 1 < n else 1
            if pattern[i - 1:i] in ("p", "P", "N") and pattern[i:i + 1] == "{":
                close = pattern.find("}", i)
                i = n if close < 0 else close + 1
        elif ch == "[":
            i = _class_end(pattern, i)
        elif ch == "(":
            if pattern.startswith("(?#", i):
                close = pattern.find(")", i)
                i = n if close < 0 else close + 1
                continue
            m = _INLINE_FLAGS.match(pattern, i)
            if m:
                if "x" in m.group(1):
                    return 0, deepest, "it turns on verbose mode (?x), which a key cannot use"
                i = m.end()
                continue
            if _RECURSION.match(pattern, i):
                return 0, deepest, "it calls a group recursively, which a key cannot do"
            scoped = _SCOPED_FLAGS.match(pattern, i)
            if scoped and "x" in scoped.group(1):
                return 0, deepest, "it turns on verbose mode (?x:…), which a key cannot use"
            depth += 1
            deepest = max(deepest, depth)
            branches.append([])
            current.append(0)
            last.append(0)
            i += 1
            continue
        elif ch == ")" and depth:
            done = sum(branches.pop()) + current.pop()
            last.pop()
            depth -= 1
            item = min(done + 1, _BIG)
            i += 1
        elif ch == "|":
            branches[-1].append(current[-1])
            current[-1], last[-1] = 0, 0
            i += 1
            continue
        elif ch in "*+?":
            i += 1
            if i < n and pattern[i] in "?+":  # lazy, possessive
                i += 1
            continue  # repeats what is there once: it adds nothing to write out
        elif ch == "{":
            m = _QUANTIFIER.match(pattern, i)
            if m and (m.group(1) or m.group(3)) and last[-1]:
                low = int(m.group(1) or 0)
                times = max(low, 1)  # what compiling writes out: the lower bound
                # the item is counted once already; the repeat writes it out `times` times in all
                current[-1] = min(current[-1] + last[-1] * (times - 1), _BIG)
                last[-1] = min(last[-1] * times, _BIG)
                i = m.end()
                if i < n and pattern[i] in "?+":
                    i += 1
                continue
            close = pattern.find("}", i)
            if close > 0 and any(c in pattern[i:close] for c in "<>="):
                return 0, deepest, "it asks for fuzzy matching ({e<=1}), which a key cannot use"
            i += 1
        else:
            i += 1
        current[-1] = min(current[-1] + item, _BIG)
        last[-1] = item
    while len(branches) > 1:  # an unclosed group: compiling refuses it; counted as if closed
        done = sum(branches.pop()) + current.pop()
        last.pop()
        current[-1] = min(current[-1] + done + 1, _BIG)
    return min(sum(branches[0]) + current[0], _BIG), deepest, ""


def _class_end(pattern: str, i: int) -> int:
    """Where the character class opening at `i` ends (past its `]`), POSIX classes and escapes read."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":  # a `]` first is a literal
        j += 1
    while j < n:
        ch = pattern[j]
        if ch == "\\":
            j += 2
        elif ch == "[" and pattern.startswith("[:", j):
            close = pattern.find(":]", j + 2)
            j = j + 1 if close < 0 else close + 2
        elif ch == "]":
            return j + 1
        else:
            j += 1
    return n
