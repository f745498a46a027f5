"""Exchange-level IQ corpora as CSV: one row per exchange, labelled 1..5.

Format (UTF-8, comma-separated, one header line; column order free, extra columns ignored)::

    dialogue_id,turn,system_act,system_act_type,user_act,user_act_type,reprompt,confirmation,
    asr_confidence,constraints_filled,user_goal_constraints,informed_venue,success_so_far,iq

* ``dialogue_id`` - any non-empty string; the rows of one dialogue are contiguous and ordered
  by ``turn`` = 1, 2, ..., T.
* the exchange columns are the keys of an exchange dict (:data:`EXCHANGE_KEYS`); ``system_act``
  and ``user_act`` are optional (empty when absent), all others are required.  Booleans are
  ``1``/``0`` or ``true``/``false`` (any case); ``asr_confidence`` is a number in [0, 1];
  ``constraints_filled`` and ``user_goal_constraints`` are integers >= 0.
* ``iq`` - the interaction quality after this exchange, an integer 1..5.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from policies.simulation.env import EXCHANGE_KEYS
from policies.simulation.iq._errors import IQDataError

__all__ = ["CSV_COLUMNS", "REQUIRED_COLUMNS", "LabelledDialogue", "read_exchange_csv", "write_exchange_csv"]

#: Columns written by :func:`write_exchange_csv`, in order.
CSV_COLUMNS: tuple[str, ...] = ("dialogue_id", *EXCHANGE_KEYS, "iq")
_OPTIONAL = frozenset({"system_act", "user_act"})
#: Columns :func:`read_exchange_csv` insists on.
REQUIRED_COLUMNS: tuple[str, ...] = tuple(c for c in CSV_COLUMNS if c not in _OPTIONAL)

_BOOL_COLUMNS = ("reprompt", "confirmation", "informed_venue", "success_so_far")
_INT_COLUMNS = ("constraints_filled", "user_goal_constraints")
_TRUE = frozenset({"1", "true"})
_FALSE = frozenset({"0", "false"})


@dataclass(frozen=True)
class LabelledDialogue:
    """One dialogue of a corpus: its exchanges and the IQ label after each of them."""

    dialogue_id: str
    exchanges: tuple[dict, ...]
    labels: tuple[int, ...]


def _fail(path: Path, row: int, column: str, message: str) -> IQDataError:
    # row = 1-based data row; the file line is row + 1 because of the header
    return IQDataError(f"{path}: row {row} (line {row + 1}), column {column!r}: {message}")


def read_exchange_csv(path: str | Path) -> list[LabelledDialogue]:
    """Read and validate an exchange-level IQ corpus (format in the module docstring).

    Every problem raises :class:`IQDataError` naming the file, the data row (and its line) and
    the column.
    """
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as err:
        raise IQDataError(f"{path}: cannot open the IQ corpus ({err.strerror or err})") from None
    with handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise IQDataError(
                f"{path}: missing required column(s) {', '.join(map(repr, missing))}; "
                f"the header has {', '.join(map(repr, header)) or 'nothing'}"
            )
        dialogues: list[LabelledDialogue] = []
        seen: set[str] = set()
        current_id: str | None = None
        exchanges: list[dict] = []
        labels: list[int] = []

        def close() -> None:
            if current_id is not None:
                dialogues.append(LabelledDialogue(current_id, tuple(exchanges), tuple(labels)))

        for row_no, raw in enumerate(reader, start=1):
            if None in raw:  # more fields than header columns
                n_fields = len(header) + len(raw[None])
                raise _fail(path, row_no, "<extra>", f"{n_fields} fields for {len(header)} columns")
            for col in REQUIRED_COLUMNS:
                if raw[col] is None:
                    raise _fail(
                        path, row_no, col, f"missing value (row has fewer fields than the header's {len(header)})"
                    )
            did = raw["dialogue_id"].strip()
            if not did:
                raise _fail(path, row_no, "dialogue_id", "empty dialogue id")
            if did != current_id:
                if did in seen:
                    raise _fail(
                        path,
                        row_no,
                        "dialogue_id",
                        f"dialogue {did!r} appears again after other dialogues; keep its rows together",
                    )
                close()
                seen.add(did)
                current_id, exchanges, labels = did, [], []
            ex = _parse_exchange(path, row_no, raw, expected_turn=len(exchanges) + 1)
            exchanges.append(ex)
            labels.append(_parse_label(path, row_no, raw["iq"]))
        close()
    if not dialogues:
        raise IQDataError(f"{path}: no data rows after the header")
    return dialogues


def _parse_int(path: Path, row: int, col: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise _fail(path, row, col, f"expected an integer, got {text!r}") from None


def _parse_label(path: Path, row: int, text: str) -> int:
    try:
        value = float(text.strip())
    except ValueError:
        raise _fail(path, row, "iq", f"expected an integer IQ label in 1..5, got {text!r}") from None
    if value != int(value) or not 1 <= value <= 5:
        raise _fail(path, row, "iq", f"expected an integer IQ label in 1..5, got {text!r}")
    return int(value)


def _parse_exchange(path: Path, row: int, raw: dict, *, expected_turn: int) -> dict:
    turn = _parse_int(path, row, "turn", raw["turn"])
    if turn != expected_turn:
        raise _fail(
            path,
            row,
            "turn",
            f"expected turn {expected_turn} of dialogue {raw['dialogue_id'].strip()!r} "
            f"(turns run 1, 2, ... in order), got {turn}",
        )
    ex: dict = {"turn": turn}
    for col in ("system_act", "system_act_type", "user_act", "user_act_type"):
        ex[col] = (raw.get(col) or "").strip()
    for col in _BOOL_COLUMNS:
        text = raw[col].strip().lower()
        if text in _TRUE:
            ex[col] = True
        elif text in _FALSE:
            ex[col] = False
        else:
            raise _fail(path, row, col, f"expected a boolean (1/0/true/false), got {raw[col]!r}")
    try:
        conf = float(raw["asr_confidence"].strip())
    except ValueError:
        raise _fail(
            path, row, "asr_confidence", f"expected a number in [0, 1], got {raw['asr_confidence']!r}"
        ) from None
    if not 0.0 <= conf <= 1.0:
        raise _fail(path, row, "asr_confidence", f"expected a number in [0, 1], got {raw['asr_confidence']!r}")
    ex["asr_confidence"] = conf
    for col in _INT_COLUMNS:
        value = _parse_int(path, row, col, raw[col])
        if value < 0:
            raise _fail(path, row, col, f"expected an integer >= 0, got {value}")
        ex[col] = value
    return {k: ex[k] for k in EXCHANGE_KEYS}


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_exchange_csv(path: str | Path, rows: list[tuple[str, dict, int]]) -> Path:
    """Write ``(dialogue_id, exchange, iq)`` rows in the corpus format; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for did, ex, iq in rows:
            writer.writerow([did, *(_cell(ex[k]) for k in EXCHANGE_KEYS), str(int(iq))])
    return path
