"""membank: a file-first memory bank for an AI writing assistant."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .kernel.errors import MembankError

if TYPE_CHECKING:
    from .runtime.api import init, open_project as open  # noqa: A001
    from .runtime.project import Project

    Bank = Project

__version__ = "0.1.0"
__all__ = ["Bank", "MembankError", "Project", "init", "open", "__version__"]


def __getattr__(name: str) -> Any:
    """The Python API, imported at its first use: `import membank.shells.cli` (every CLI command) runs
    this file too, and must not pay for every channel's handler and the methods made from them."""
    if name not in ("Bank", "Project", "init", "open"):
        raise AttributeError(f"module 'membank' has no attribute {name!r}")
    from .runtime import api  # attaches a method per channel to Project

    found = {"Bank": api.Project, "Project": api.Project, "init": api.init, "open": api.open_project}
    globals().update(found)  # once: later lookups do not come here
    return found[name]
