"""Sizes every layer agrees on."""

MAX_FILE_BYTES = 1024 * 1024  # a Markdown file membank reads or writes (front matter and body)
