"""Sizes every layer agrees on."""

MAX_FILE_BYTES = 1024 * 1024  # a Markdown file membank reads or writes (front matter and body)
MAX_LISTED = 200  # items an answer lists in full where a bank may hold thousands (facts, dropped pieces,
# entities and their mentions in a check, skipped keys): the total is given beside the list (quality.md)
MAX_PASSAGE_CHARS = 200_000  # code points of a passage a check or a mention scan reads: a long chapter, twice
MAX_MENTIONS = 10_000  # mentions kg:mentions lists in full (the total beside them): a chapter's highlights
