"""Reading and writing files the way behavsim does, for the packages that build on it.

* :class:`atomic_path` — write a file under a temporary name and move it into place, so a reader
  never sees half a file and an interrupted write leaves nothing behind;
* :func:`write_json_checked` / :func:`read_json_checked` — a JSON object with a checksum of its
  content, verified on reading (a damaged or edited file is refused naming it);
* :func:`file_digest` — the ``sha256:`` digest of a file (``None`` when it is missing);
* :func:`canonical_json`, :func:`canonical_copy` — the one JSON form behavsim hashes and stores;
* :func:`check_no_lone_surrogates` — refuse text that JSON can hold but UTF-8 cannot.
"""

from __future__ import annotations

from ._io import (
    atomic_path,
    canonical_copy,
    canonical_json,
    check_no_lone_surrogates,
    file_digest,
    read_json_checked,
    write_json_checked,
)

__all__ = [
    "atomic_path",
    "canonical_copy",
    "canonical_json",
    "check_no_lone_surrogates",
    "file_digest",
    "read_json_checked",
    "write_json_checked",
]
