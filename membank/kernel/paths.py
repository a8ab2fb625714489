"""The one rule for a document path the app sends: project-relative, POSIX, never leaving the project."""

from __future__ import annotations

import re

from . import errors

_WIN_DRIVE = re.compile(r"^[A-Za-z]:")


def document_path(value: str, field: str = "documentId") -> str:
    """`value` as a project-relative POSIX path (backslashes read as slashes, outer spaces dropped);
    INVALID_ARGUMENT naming `field` for anything that could leave the project."""
    path = value.strip().replace("\\", "/")
    if not path or path.startswith(("/", "~")) or _WIN_DRIVE.match(path) or ".." in path.split("/"):
        raise errors.invalid(field, f"`{field}` must be a path inside the project, like chapters/ch05.md")
    return path
