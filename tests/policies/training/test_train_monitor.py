"""`behavsim train --monitor`: convergence is scored while the trials train."""

import csv

import pytest

from behavsim import ResponseTable, compare
from behavsim.cli import main
from contexts import generate_grid


def test_train_with_monitor_scores_every_checkpoint(tmp_path, capsys):
    cgen = generate_grid(step=0.5).save(tmp_path / "cgen.jsonl")
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--rewards",
                "ts",
                "--seeds",
                "0",
                "--dialogues",
                "300",
                "--checkpoint-every",
                "100",
                "--eval-dialogues",
                "3",
                "--no-progress",
                "--monitor",
                str(cgen),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(open(out / "monitor" / "ts-seed0" / "convergence.csv")))
    assert [(int(r["dialogues"]), int(r["prev_dialogues"])) for r in rows] == [(200, 100), (300, 200)]
    snaps = out / "monitor" / "ts-seed0" / "snapshots"
    a = ResponseTable.load(snaps / "responses-000200.jsonl")
    b = ResponseTable.load(snaps / "responses-000300.jsonl")
    a.policy["id"], b.policy["id"] = "a", "b"
    direct = compare([a, b], scores=["TMR", "DMR", "CER", "CMR"]).means.iloc[0]
    for s in ("TMR", "DMR", "CER", "CMR"):
        assert float(rows[1][s]) == pytest.approx(direct[s], abs=1e-12)


def test_train_monitor_needs_a_context_file(tmp_path, capsys):
    assert (
        main(
            [
                "train",
                "--dialogues",
                "100",
                "--checkpoint-every",
                "100",
                "--monitor",
                str(tmp_path / "none.jsonl"),
                "-o",
                str(tmp_path / "run"),
            ]
        )
        == 2
    )
    assert "--monitor: context-set file" in capsys.readouterr().err
