"""TensorBoard event files without TensorFlow: scalars and images through ``tensorboard``'s own writer.

``tensorboard`` is an optional extra (``pip install 'behavsim[tensorboard]'``), imported only
when a writer is opened. Every file this module writes ends in a suffix of its own
(``.behavsim`` by default), so it sits beside a trainer's own writer (PyTorch's
``SummaryWriter``, ConvLab-3's ``TB_summary/``) in the same run folder: TensorBoard reads every
``events.out.tfevents.*`` file of a folder as one run.
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path
from typing import Any

from ._errors import ConfigError, ModelNotAvailable

__all__ = ["TensorBoardWriter", "check_tensorboard_dir", "require_tensorboard", "INSTALL_HINT", "SUFFIX"]

INSTALL_HINT = "pip install 'behavsim[tensorboard]'"
SUFFIX = ".behavsim"


def require_tensorboard(option: str = "tensorboard") -> None:
    """Raise :class:`ModelNotAvailable` with the install hint when ``tensorboard`` is missing."""
    try:
        importlib.import_module("tensorboard")
    except ImportError:
        raise ModelNotAvailable(f"{option} needs the tensorboard package: {INSTALL_HINT}") from None


def check_tensorboard_dir(path: str | os.PathLike, option: str = "tensorboard") -> Path:
    """The folder, created if needed; :class:`ConfigError` naming ``option`` when it cannot be written."""
    require_tensorboard(option)
    p = Path(path)
    probe = p / f".behavsim-write-test{os.getpid()}"
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"{option} {str(path)!r}: cannot write there ({exc.strerror or exc})") from None
    return p


class TensorBoardWriter:
    """One event file in ``logdir`` (a TensorBoard run folder); scalars and PNG images by step.

    ``suffix`` ends the file name (keep it distinct from any other writer of the folder).
    Events are written by ``tensorboard``'s :class:`EventFileWriter`; :meth:`flush` after each
    batch makes them visible to a running TensorBoard.
    """

    def __init__(self, logdir: str | os.PathLike, *, suffix: str = SUFFIX, option: str = "tensorboard") -> None:
        self.logdir = check_tensorboard_dir(logdir, option)
        # imported by name: tensorboard is optional and ships no type information
        self._event_pb2: Any = importlib.import_module("tensorboard.compat.proto.event_pb2")
        self._summary_pb2: Any = importlib.import_module("tensorboard.compat.proto.summary_pb2")
        writer_mod: Any = importlib.import_module("tensorboard.summary.writer.event_file_writer")
        try:
            self._writer: Any = writer_mod.EventFileWriter(str(self.logdir), flush_secs=5, filename_suffix=suffix)
        except OSError as exc:
            raise ConfigError(f"{option} {str(logdir)!r}: cannot write there ({exc})") from None

    @property
    def path(self) -> Path:
        """The event file."""
        return Path(self._writer._file_name)

    def _add(self, value: Any, step: int) -> None:
        summary = self._summary_pb2.Summary(value=[value])
        self._writer.add_event(self._event_pb2.Event(summary=summary, step=int(step), wall_time=time.time()))

    def scalar(self, tag: str, value: float, step: int) -> None:
        self._add(self._summary_pb2.Summary.Value(tag=tag, simple_value=float(value)), step)

    def scalars(self, values: dict[str, float], step: int) -> None:
        """Several scalars at one step, in one event."""
        vals = [self._summary_pb2.Summary.Value(tag=t, simple_value=float(v)) for t, v in values.items()]
        if vals:
            summary = self._summary_pb2.Summary(value=vals)
            self._writer.add_event(self._event_pb2.Event(summary=summary, step=int(step), wall_time=time.time()))

    def image(self, tag: str, png: bytes, step: int) -> None:
        """A PNG (its size read from the header)."""
        width = int.from_bytes(png[16:20], "big")
        height = int.from_bytes(png[20:24], "big")
        img = self._summary_pb2.Summary.Image(height=height, width=width, colorspace=4, encoded_image_string=png)
        self._add(self._summary_pb2.Summary.Value(tag=tag, image=img), step)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
