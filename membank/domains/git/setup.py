"""`project:git:setup` (`membank git-setup`): the lines the journal needs in the bank's git files,
added only when the writer asks (files/gitfiles.py; doctor says when they are missing)."""

from __future__ import annotations

from typing import Any

from ...files import gitfiles
from ...kernel import errors
from ...kernel.errors import MembankError
from ..contract import Bank


def setup(bank: Bank) -> dict[str, Any]:
    folder, cite = bank.project.path, bank.project.source
    with bank.write_lock:
        try:
            written = gitfiles.setup(folder, cite)
        except OSError as e:
            raise MembankError(errors.DB_ERROR, f"could not write the git files: {e.strerror or e.__class__.__name__}; "
                               "the files written before it are listed by `membank doctor` no more") from None
    return {"written": written, "inGit": gitfiles.in_git(folder)}
