"""Every domain's index schema (index/schema.py), registered before an index opens.

A domain registers its tables, indexes and row columns when the module declaring them is imported.
The channel catalog names its handlers instead of importing them (contract.py `Lazy`), so nothing
else imports these modules before `Project` opens its index: an index opened without one would not
create that table, and a sync would store records without the rows that domain derives from them.
`Project` imports this module first; a module that calls `register` or `register_row` is listed
here (tests/test_index_schema.py fails on one that is not)."""

from __future__ import annotations

from ..domains.context import documentindex as context_documents
from ..domains.episodes import store as episode_store, traces as episode_traces
from ..domains.indexing import journals as indexing_journals
from ..domains.learning import events as learning_events
from ..domains.lifecycle import runs as lifecycle_runs
from ..domains.manuscript import store as manuscript_store
from ..domains.memories import read as memories_read
from ..domains.recall import queries as recall_queries
from ..domains.story import cardsentences as story_sentences, positions as story_positions, refs as story_refs
from ..index import store as index_store, strongstore as index_strong

REGISTERING = (context_documents, episode_store, episode_traces, indexing_journals, learning_events, lifecycle_runs,
               manuscript_store, memories_read, recall_queries, story_positions, story_refs, story_sentences, index_store,
               index_strong)
