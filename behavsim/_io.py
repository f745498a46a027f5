"""Shared reading and writing of behavsim's versioned JSONL/Parquet files (tables, context sets).

Every file is a header object plus one row object per item; writes are atomic (temporary file,
then rename); reads name the file and line of the first problem.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from ._errors import TableFormatError

__all__ = [
    "canonical_json",
    "canonical_copy",
    "write_jsonl",
    "write_jsonl_body",
    "write_parquet",
    "read_rows",
    "check_header",
]


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_copy(obj: Any) -> Any:
    """A deep copy of a JSON-like object (a belief state) in the form a saved file holds it:
    every mapping's keys sorted, tuples as lists. A set built in memory and the same set read
    back are then equal key for key, and a policy given the copy cannot change the original."""
    if isinstance(obj, dict):
        return {k: canonical_copy(obj[k]) for k in sorted(obj)}
    if isinstance(obj, (list, tuple)):
        return [canonical_copy(v) for v in obj]
    return obj


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


#: One decoder for every line (``json.loads`` with options builds a new one per call).
_ROW_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


#: The header key of a file's checksum: ``"sha256:<hex>"`` of the canonical header without it,
#: a newline, and the body (JSONL: the row lines as written; Parquet: the canonical JSON of the
#: columns). Files without one (made elsewhere, or by behavsim before 0.3) are read unchecked.
CHECKSUM_KEY = "checksum"


def _digest(header: dict, body: bytes) -> str:
    rest = {k: v for k, v in header.items() if k != CHECKSUM_KEY}
    h = hashlib.sha256(canonical_json(rest).encode("utf-8") + b"\n")
    h.update(body)
    return "sha256:" + h.hexdigest()


def write_jsonl(path: Path, header: dict, rows: Iterable[dict]) -> Path:
    """Header line (with the checksum of the whole file), then one line per row, atomically
    (a temporary file renamed into place). NaN/inf raise ``ValueError`` (not JSON)."""
    return write_jsonl_body(path, header, "".join(canonical_json(r) + "\n" for r in rows).encode("utf-8"))


def write_jsonl_body(path: Path, header: dict, body: bytes) -> Path:
    """:func:`write_jsonl` with the rows' lines already made (``body``: each row's
    :func:`canonical_json` and a newline, UTF-8)."""
    header = {**header, CHECKSUM_KEY: _digest(header, body)}
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write((canonical_json(header) + "\n").encode("utf-8"))
        f.write(body)
    return path


def write_parquet(path: Path, header: dict, columns: dict[str, list], schema=None) -> Path:
    """Columns as a Parquet table with the header (and its checksum) under the schema metadata key
    ``behavsim``, atomically."""
    import pyarrow.parquet as pq  # a measured start-up cost: loaded when a Parquet file is read or written

    header = {**header, CHECKSUM_KEY: _digest(header, canonical_json(columns).encode("utf-8"))}
    tbl = pa.table(columns, schema=schema).replace_schema_metadata({"behavsim": canonical_json(header)})
    with atomic_path(path) as tmp:
        pq.write_table(tbl, tmp)
    return path


_LOOKS_LIKE_CHECKSUM = re.compile(r"sha256:[0-9a-f]{64}")


def _verify(header: Any, body: bytes, where: Path) -> None:
    """Compare a file's checksum with its content; a file without one is accepted as it is —
    unless another key holds what looks like a checksum (its own key was damaged)."""
    if not isinstance(header, dict):
        return
    if CHECKSUM_KEY not in header:
        if any(isinstance(v, str) and _LOOKS_LIKE_CHECKSUM.fullmatch(v) for v in header.values()):
            raise TableFormatError(f"{where}: damaged file: its checksum is under a damaged key")
        return
    want = header[CHECKSUM_KEY]
    if not isinstance(want, str) or _digest(header, body) != want:
        raise TableFormatError(
            f"{where}: damaged file: its content does not match the checksum in its header (edited by hand, "
            "or corrupted on disk); write it again (behavsim files are not meant to be edited)"
        )


#: What a ``precheck`` of :func:`read_rows` returns when it has verified the content itself (a
#: context set's text-only view, checked against its header's ``text_fingerprint``): the file's
#: checksum, which covered the full file, is then not compared.
VERIFIED = "verified"


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (as it was before, after it). Reading
    a file's rows makes hundreds of thousands of small acyclic objects, each generation of which
    would start a collection: a third of the time of reading a table."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_rows(path: Path, what: str, precheck=None) -> tuple[Any, list[tuple[str, Any]]]:
    """``(header, [(where, row), ...])`` of a JSONL or Parquet file; ``where`` names the line/row.

    The file's checksum (when its header has one) is verified after ``precheck(header, rows)``, so
    that the caller's more specific messages (another format, a truncated file) come first; a
    ``precheck`` that returns :data:`VERIFIED` has checked the content another way."""
    with gc_paused():
        return _read_rows(path, what, precheck)


def _read_rows(path: Path, what: str, precheck=None) -> tuple[Any, list[tuple[str, Any]]]:
    if not path.is_file():
        raise TableFormatError(f"{path}: no such {what.replace(' ', '-')} file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # a measured start-up cost: loaded when a Parquet file is read or written

        try:
            tbl = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise TableFormatError(f"{path}: cannot read Parquet file ({exc})") from None
        raw = (tbl.schema.metadata or {}).get(b"behavsim")
        if raw is None:
            raise TableFormatError(f"{path}: Parquet file without behavsim header metadata")
        try:
            header = json.loads(raw)
            rows = [(f"row {k}", r) for k, r in enumerate(tbl.to_pylist())]
        except (ValueError, RecursionError) as exc:
            raise TableFormatError(f"{path}: damaged header metadata ({_short(exc)})") from None
        except Exception as exc:  # pyarrow's errors for damaged pages
            raise TableFormatError(f"{path}: damaged Parquet data ({_short(exc)})") from None
        if precheck is not None and precheck(header, rows) == VERIFIED:
            return header, rows
        try:
            body = canonical_json(tbl.to_pydict()).encode("utf-8")
        except (TypeError, ValueError) as exc:  # a damaged schema: columns of another type
            raise TableFormatError(f"{path}: damaged Parquet data ({_short(exc)})") from None
        _verify(header, body, path)
        return header, rows
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise TableFormatError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    if not lines:
        raise TableFormatError(f"{path}: empty file")
    fast = _parse_lines_at_once(lines)
    if fast is not None:
        if _SURROGATE.search("\n".join(lines)):
            for n, (line, obj) in enumerate(zip(lines, fast), 1):
                check_no_lone_surrogates(obj, line, f"{path}:{n}")
        rows = [(str(n), obj) for n, obj in enumerate(fast[1:], 2)]
        if precheck is not None and precheck(fast[0], rows) == VERIFIED:
            return fast[0], rows
        _verify(fast[0], "".join(line + "\n" for line in lines[1:]).encode("utf-8"), path)
        return fast[0], rows
    parsed = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise TableFormatError(f"{path}:{n}: blank line inside a {what}")
        try:
            obj = _ROW_DECODER.decode(line)
        except (json.JSONDecodeError, ValueError) as exc:
            raise TableFormatError(f"{path}:{n}: invalid JSON ({exc})") from None
        except RecursionError:
            raise TableFormatError(f"{path}:{n}: JSON nested too deeply to read (a damaged file?)") from None
        check_no_lone_surrogates(obj, line, f"{path}:{n}")
        if n > 1 and not isinstance(obj, dict):
            raise TableFormatError(f"{path}:{n}: every line after the header must be a JSON object")
        parsed.append((str(n), obj))
    if precheck is not None and precheck(parsed[0][1], parsed[1:]) == VERIFIED:
        return parsed[0][1], parsed[1:]
    _verify(parsed[0][1], "".join(line + "\n" for line in lines[1:]).encode("utf-8"), path)
    return parsed[0][1], parsed[1:]


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def check_no_lone_surrogates(obj: Any, raw: str, where: str) -> None:
    """Raise :class:`TableFormatError` at ``where`` when ``raw`` (JSON text) escapes a lone UTF-16
    surrogate (``\\udc80``): JSON parses it, but it is no text and cannot be written back."""
    if not _SURROGATE.search(raw):
        return
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end].encode("utf-8", "backslashreplace").decode("ascii")
        raise TableFormatError(f"{where}: a string holds a lone surrogate escape ({bad}), which is not text") from None


def _parse_lines_at_once(lines: list[str]) -> list[Any] | None:
    """All lines parsed by one JSON call (a C loop instead of one call per line), when every line
    is one JSON object: the number of values must equal the number of lines, each a dict, and each
    line must open and close like an object. None when anything differs: the caller then parses
    line by line and names the first bad line."""
    if any(not (line.startswith("{") and line.endswith("}")) for line in lines):
        return None
    try:
        values = _ROW_DECODER.decode("[" + ",".join(lines) + "]")
    except (json.JSONDecodeError, ValueError, RecursionError):
        return None
    if len(values) != len(lines) or not all(type(v) is dict for v in values):
        return None
    return values


def check_header(header: Any, where: str, fmt: str, version: int, what: str) -> dict:
    if not isinstance(header, dict) or header.get("format") != fmt:
        raise TableFormatError(f"{where}: not a behavsim {what} (the header must have format={fmt!r})")
    if header.get("version") != version:
        raise TableFormatError(
            f"{where}: {what} format version {header.get('version')!r} is not supported "
            f"(this behavsim reads version {version})"
        )
    return header


def write_json_checked(path: Path, obj: dict) -> Path:
    """A JSON object (indented, sorted keys) with the checksum of its other keys under
    :data:`CHECKSUM_KEY`, written atomically."""
    rest = {k: v for k, v in obj.items() if k != CHECKSUM_KEY}
    data = {**rest, CHECKSUM_KEY: _digest(rest, b"")}
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_json_checked(path: Path) -> dict:
    """A JSON object written by :func:`write_json_checked` (or without a checksum: accepted as it
    is). A file that is not a JSON object, or whose checksum does not match, raises
    :class:`TableFormatError` naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise TableFormatError(f"{path}: damaged JSON file ({_short(exc)})") from None
    if not isinstance(data, dict):
        raise TableFormatError(f"{path}: damaged JSON file (expected an object, found a {type(data).__name__})")
    _verify(data, b"", path)
    return {k: v for k, v in data.items() if k != CHECKSUM_KEY}


def file_digest(path: Path) -> str | None:
    """``sha256:<hex>`` of a file's bytes, or None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return "sha256:" + hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def _short(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class atomic_path:
    """``with atomic_path(path) as tmp:`` write ``tmp``; on success it is renamed to ``path`` (so a
    reader, or a run killed while writing, never sees half a file); on an error it is removed."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.tmp{os.getpid()}")

    def __enter__(self) -> Path:
        return self.tmp

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)
