"""membank: a file-first memory bank for an AI writing assistant."""

from __future__ import annotations

from .kernel.errors import MembankError
from .runtime.api import init, open_project as open  # noqa: A001
from .runtime.project import Project

Bank = Project  # the name the Python API has always used for an open project

__version__ = "0.1.0"
__all__ = ["Bank", "MembankError", "Project", "init", "open", "__version__"]
