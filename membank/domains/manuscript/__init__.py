"""The manuscript as memory (manuscript.md). Imported with any of its modules (runtime/schemas.py imports
its store whenever a project opens), so what it provides the story domain is there even when a command
loads the story table alone."""

from ..contract import Lazy
from ..story import checkscenes, seen

# the consistency check cuts a document into scenes with the manuscript's own cutter (passages.py)
checkscenes.provide(Lazy("membank.domains.manuscript.passages", "scenes"))
# lastSeen in kg:entity:list/get comes from the mention index (mentions.py), whatever table a command loads
seen.provide(Lazy("membank.domains.manuscript.mentions", "seen"))
