"""A matcher's `/pattern/flags` keys (story.md, Matching): compiled only within bounds, run within the
time one call has. Pure but for the clock.

Compiling: a key over kernel/regexcost.py's bounds is never compiled (files/parse.py already reported it
where the card writes it), nor is a key past what all the keys of the matcher may cost together (in
card id order); both are reported as `bounds`. Running: every regular expression of one call shares
REGEX_CALL_SECONDS (`call_allowance`), each key at most REGEX_KEY_SECONDS and half of what is left; the keys
the allowance does not reach are skipped as `budget`, and a key that timed out once is tried after the
others (so a few catastrophic keys do not starve the rest, call after call). Cancel and the deadline
(kernel/cancel.py) are checked before each key and bound each key's time: a scan stops within one key's
slice of either."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from ...kernel import cancel, regexcost

if TYPE_CHECKING:
    import regex

REGEX_KEY_SECONDS = 0.02  # one key on one text
REGEX_CALL_SECONDS = 0.05  # every key on every text of one call together
MIN_SLICE = 0.001  # less left than this: the allowance is spent
_FLAGS = {"i": "IGNORECASE", "m": "MULTILINE", "s": "DOTALL"}  # "u" and "g" change nothing

Hit = tuple[str, str, str, str, int, int]  # card, role, key as written, the text matched, offset, length


@dataclass(frozen=True)
class Skipped:
    """A regex key that could not run: reported, never fatal."""

    id: str
    key: str
    reason: str  # invalid | bounds (never compiled) | timeout | budget (the call's allowance was spent)
    message: str


class Allowance:
    """The regular-expression time one call has left, in kernel/cancel.py's seconds. The threads of one
    call share it only through `call_allowance`; a float's update, so a race costs at most a key's slice."""

    __slots__ = ("left",)

    def __init__(self, seconds: float) -> None:
        self.left = seconds


_allowance: ContextVar[Allowance | None] = ContextVar("membank_regex_allowance", default=None)


@contextmanager
def call_allowance(seconds: float = REGEX_CALL_SECONDS) -> Iterator[Allowance]:
    """One call's regular-expression time: every scan inside shares it (inside another, the outer one is
    kept). A scan outside any has REGEX_CALL_SECONDS of its own."""
    found = _allowance.get()
    if found is not None:
        yield found
        return
    made = Allowance(seconds)
    reset = _allowance.set(made)
    try:
        yield made
    finally:
        _allowance.reset(reset)


def allowance_spent() -> bool:
    """Whether the running call's regular-expression time is spent (False outside any call's allowance)."""
    found = _allowance.get()
    return found is not None and found.left < MIN_SLICE


class RegexKeys:
    def __init__(self, entries: list[tuple[str, str, str, regex.Pattern[str] | None, str, str]],
                 timeout: float) -> None:
        self.entries = entries
        self._timeout = timeout
        self._slow: set[int] = set()  # entries that timed out once: tried after the others
        # what each entry reports when it is not run: made once (a hostile lorebook skips hundreds a call)
        self._skips = [Skipped(card_id, key, reason, f"the key {key} of {card_id} {problem}; it is skipped")
                       if compiled is None else
                       Skipped(card_id, key, "budget", f"the key {key} of {card_id} was skipped: the "
                               f"{REGEX_CALL_SECONDS * 1000:g} ms all regular-expression keys share in one call "
                               "were spent")
                       for card_id, _, key, compiled, reason, problem in entries]

    @classmethod
    def build(cls, keys: list[tuple[str, str, str]], timeout: float = REGEX_KEY_SECONDS) -> RegexKeys:
        """`keys`: (card, role, key as written), in the order they are tried and counted against the total."""
        entries = []
        total = 0
        for card_id, role, key in keys:
            cancel.check()  # ~0.5 ms a key: a call building the matcher stops here (nothing half kept)
            refused = regexcost.refusal(key)
            if refused is None:
                total += regexcost.units(key)
                if total > regexcost.MAX_TOTAL_UNITS:
                    refused = (f"with it the regular-expression keys of all cards would cost more than the "
                               f"{regexcost.MAX_TOTAL_UNITS:,} units they may together")
            if refused:
                entries.append((card_id, role, key, None, "bounds",
                                f"is a regular expression membank does not compile: {refused}"))
            else:
                entries.append((card_id, role, key, *compile_key(key)))
        return cls(entries, timeout)

    def run(self, text: str) -> tuple[list[Hit], list[Skipped]]:
        """Every match of every key in `text`, and the keys that could not run (never compiled, out of
        time, or not reached by the call's allowance). CANCELED / TIMEOUT from a checkpoint between keys."""
        hits: list[Hit] = []
        skipped: list[Skipped] = []
        slow = self._slow
        order = sorted(range(len(self.entries)), key=slow.__contains__) if slow else range(len(self.entries))
        with call_allowance() as allowance:
            if allowance.left < MIN_SLICE:  # spent before this scan: every key as it reports itself, at once
                return hits, self._skips.copy()
            for at, n in enumerate(order):
                card_id, role, key, compiled, _, _ = self.entries[n]
                if compiled is None:
                    skipped.append(self._skips[n])
                    continue
                if allowance.left < MIN_SLICE:  # spent: the rest at once (a check scans thousands of facts)
                    skipped.extend([self._skips[m] for m in order[at:]])
                    break
                cancel.check()  # canceled or late: the call stops here, between two keys
                # half of what is left: a key stopped by its limit overruns it (by up to twice on a busy
                # machine), and the allowance is what the keys really took
                limit = min(self._timeout, allowance.left / 2)
                token = cancel.current()
                if token is not None and token.deadline is not None:
                    limit = min(limit, max(token.deadline - cancel.monotonic(), 0.001))
                started = cancel.monotonic()
                try:
                    for m in compiled.finditer(text, timeout=limit):
                        if m.end() > m.start():
                            hits.append((card_id, role, key, m.group(0), m.start(), m.end() - m.start()))
                except TimeoutError:
                    slow.add(n)
                    skipped.append(Skipped(card_id, key, "timeout", f"the key {key} of {card_id} took longer than "
                                           f"{limit * 1000:.3g} ms and was skipped"))
                finally:
                    allowance.left -= cancel.monotonic() - started
                cancel.check()  # the deadline, when it is what ended the key
        return hits, skipped


def compile_key(key: str) -> tuple[regex.Pattern[str] | None, str, str]:
    """A key within the bounds compiled, "" and ""; or None, `invalid` and why regex refused it."""
    import regex  # here, at the first key that is one: ~65 M instructions that a card file without one never pays

    parts = regexcost.split(key)
    assert parts is not None
    pattern, flags = parts
    bits = 0
    for flag in flags:  # regexcost.refusal has checked them
        if flag in _FLAGS:
            bits |= getattr(regex, _FLAGS[flag])
    try:  # not kept in regex's own cache: the matcher holds it, for one generation of the cards
        return regex.compile(pattern, bits | regex.V0, cache_pattern=False), "", ""
    except (regex.error, ValueError, OverflowError, RecursionError) as e:
        shown = str(e).splitlines()[0][:80] if str(e) else type(e).__name__
        return None, "invalid", f"is not a regular expression membank can run ({shown})"
