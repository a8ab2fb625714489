"""The git channel: the bank's git files completed on the writer's request."""

from __future__ import annotations

from typing import TypedDict

from ..contract import Channel, Lazy, ProjectOnly


class GitSetup(TypedDict):
    written: list[str]  # the git files changed (citations); empty when nothing was missing
    inGit: bool  # whether the project is inside a git work tree


CHANNELS = (
    Channel("project:git:setup", ProjectOnly, GitSetup, Lazy("membank.domains.git.setup", "setup"), "write", "git-setup",
            "Add the lines membank's files need to .writenow/.gitattributes and .gitignore (union merges for the "
            "journal; the index and run traces left out); changes nothing already there.", "git_setup"),
)
