"""Shared reading and writing of behavsim's versioned JSONL/Parquet files (tables, context sets).

Every file is a header object plus one row object per item; writes are atomic (temporary file,
then rename); reads name the file and line of the first problem.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ._errors import TableFormatError

__all__ = ["canonical_json", "canonical_copy", "write_jsonl", "write_parquet", "read_rows", "check_header"]


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


def _replace(tmp: Path, path: Path) -> Path:
    os.replace(tmp, path)
    return path


def write_jsonl(path: Path, header: dict, rows: Iterable[dict]) -> Path:
    """Header line, then one line per row, atomically. NaN/inf raise ``ValueError`` (not JSON)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(canonical_json(header) + "\n")
            for r in rows:
                f.write(canonical_json(r) + "\n")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return _replace(tmp, path)


def write_parquet(path: Path, header: dict, columns: dict[str, list], schema=None) -> Path:
    """Columns as a Parquet table with the header under the schema metadata key ``behavsim``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = path.with_name(path.name + ".tmp")
    tbl = pa.table(columns, schema=schema).replace_schema_metadata({"behavsim": canonical_json(header)})
    try:
        pq.write_table(tbl, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return _replace(tmp, path)


def read_rows(path: Path, what: str) -> tuple[Any, list[tuple[str, Any]]]:
    """``(header, [(where, row), ...])`` of a JSONL or Parquet file; ``where`` names the line/row."""
    if not path.is_file():
        raise TableFormatError(f"{path}: no such {what.replace(' ', '-')} file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            tbl = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for damaged files
            raise TableFormatError(f"{path}: cannot read Parquet file ({exc})") from None
        raw = (tbl.schema.metadata or {}).get(b"behavsim")
        if raw is None:
            raise TableFormatError(f"{path}: Parquet file without behavsim header metadata")
        try:
            header = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise TableFormatError(f"{path}: damaged header metadata ({exc})") from None
        return header, [(f"row {k}", r) for k, r in enumerate(tbl.to_pylist())]
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise TableFormatError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    if not lines:
        raise TableFormatError(f"{path}: empty file")
    fast = _parse_lines_at_once(lines)
    if fast is not None:
        return fast[0], [(str(n), obj) for n, obj in enumerate(fast[1:], 2)]
    parsed = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise TableFormatError(f"{path}:{n}: blank line inside a {what}")
        try:
            obj = _ROW_DECODER.decode(line)
        except (json.JSONDecodeError, ValueError) as exc:
            raise TableFormatError(f"{path}:{n}: invalid JSON ({exc})") from None
        if n > 1 and not isinstance(obj, dict):
            raise TableFormatError(f"{path}:{n}: every line after the header must be a JSON object")
        parsed.append((str(n), obj))
    return parsed[0][1], parsed[1:]


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
