"""The Python API's edge: whatever goes wrong inside a Bank method leaves it as a MembankError.

The README promises that Bank methods raise `membank.MembankError` (with a stable `.code`), and
the channels turn exactly that into envelopes. So the outermost Bank call on a thread converts:
SQLite failures (busy past the wait, disk full, a damaged file) and OS errors become DB_ERROR,
anything else is a bug and becomes INTERNAL (logged, with the original as `__cause__`). Calls a
Bank method makes to another are not converted: learning, say, still sees the real exception.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..kernel import errors
from ..kernel.errors import MembankError
from ..files.project import ProjectError, find_root
from ..index import IndexError_, StorageError
from ..index.failures import storage_error
from ..kernel.log import log

T = TypeVar("T")


class _Depth(threading.local):
    def __init__(self) -> None:
        self.n = 0


_depth = _Depth()


def converting(name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Wrap a Bank method so that nothing but a MembankError leaves the outermost call."""

    def wrap(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> T:
            if _depth.n:
                return method(*args, **kwargs)
            _depth.n += 1
            try:
                return method(*args, **kwargs)
            except MembankError:
                raise
            except (StorageError, IndexError_, OSError) as e:
                log.warning("storage error in %s: %s", name, e.__class__.__name__)
                raise storage_error(e) from e
            except Exception as e:
                log.exception("internal error in %s", name)
                raise MembankError(errors.INTERNAL, f"internal error in {name}; this is a bug in membank, "
                                   "see its log") from e
            finally:
                _depth.n -= 1

        return call

    return wrap


def locate(path: str | Path) -> Path:
    """The project root at or above `path` (`~` expanded); NOT_FOUND when there is none."""
    try:
        return find_root(Path(path).expanduser())
    except ProjectError as e:
        raise MembankError(errors.NOT_FOUND, str(e), {"field": "path"}) from None
    except ValueError:  # a NUL byte: no such path can exist
        raise errors.invalid("path", "the path holds a NUL character, which no file name can") from None
    except (OSError, RuntimeError) as e:  # an unreadable folder, or `~user` with no such user
        raise MembankError(errors.NOT_FOUND, f"the path cannot be used: {getattr(e, 'strerror', None) or e}",
                           {"field": "path"}) from None
