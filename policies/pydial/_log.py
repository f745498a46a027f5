"""Where a toolkit's own log messages go: a log file, not the terminal.

PyDial logs through Python's root logger (``utils.ContextLogger``) and, as a library, sets up no
handler, so its warnings — e.g. ``HDCPolicy.py <__init__>82 : Policy file is given: , but policy
type is set to hdc`` — would reach the terminal through :data:`logging.lastResort`. While the
adapter runs PyDial's code (loading a policy, answering contexts), :func:`toolkit_logging`
sends every record of the root logger to ``<behavsim cache>/logs/<toolkit>.log``
(:func:`behavsim.default_cache_dir`, i.e. ``$BEHAVSIM_CACHE_DIR`` or ``~/.cache/behavsim``;
``$BEHAVSIM_TOOLKIT_LOG`` names another file), one line per record, appended, tagged with what
was running. Nothing is written until a record arrives; a log file that cannot be written is
given up on silently (a log message is no result).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from behavsim import default_cache_dir

__all__ = ["toolkit_log_path", "toolkit_logging"]


def toolkit_log_path(toolkit: str) -> Path:
    """The log file of ``toolkit``'s own messages (``$BEHAVSIM_TOOLKIT_LOG``, else
    ``<behavsim cache>/logs/<toolkit>.log``)."""
    env = os.environ.get("BEHAVSIM_TOOLKIT_LOG")
    return Path(env) if env else default_cache_dir() / "logs" / f"{toolkit}.log"


class _LogFile(logging.Handler):
    """Appends each record as one line to a file opened at the first record; quiet on failure."""

    def __init__(self, path: Path, tag: str) -> None:
        super().__init__(logging.NOTSET)
        self.path = path
        self.tag = tag
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = " ".join(self.format(record).split())
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(f"{line} [{self.tag}; pid {os.getpid()}]\n")
        except Exception:  # an unwritable log loses a message, never the command
            pass


@contextlib.contextmanager
def toolkit_logging(toolkit: str, tag: str) -> Iterator[Path]:
    """While the block runs, the root logger's records go to :func:`toolkit_log_path` (tagged
    with ``tag``) instead of the terminal; yields the file's path. Nested blocks log once."""
    root = logging.getLogger()
    if any(isinstance(h, _LogFile) for h in root.handlers):
        yield next(h.path for h in root.handlers if isinstance(h, _LogFile))
        return
    handler = _LogFile(toolkit_log_path(toolkit), tag)
    root.addHandler(handler)
    try:
        yield handler.path
    finally:
        root.removeHandler(handler)
