"""Smoke test of ``benchmarks/pydial_learning.py`` at tiny scale (1 seed, 20 training dialogues,
10 evaluation dialogues; ~20 s), against the real PyDial3 snapshot.

PyDial is looked for in ``../shared/pydial3`` beside the repository root (or
``$BEHAVSIM_SHARED/pydial3``); the test is skipped, saying so, only when that folder is absent.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_pydial_learning_tiny(pydial_root):
    PYDIAL = pydial_root
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    args = ["--seeds", "0", "--points", "20", "--eval-dialogues", "10", "--workers", "1", "--json"]
    r = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "pydial_learning.py"), *args, "--pydial-root", str(PYDIAL)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()

    # the printed table: | 20 | PyDial per seed | PyDial mean | ours per seed | ours mean | ADL | dictionary |
    rows = [line for line in lines if line.startswith("| 20 |")]
    assert len(rows) == 1, r.stdout
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    pydial_tsr, ours_tsr = float(cells[2]), float(cells[4])
    assert 0.0 <= pydial_tsr <= 1.0 and 0.0 <= ours_tsr <= 1.0
    ratio = re.search(r"ratio behavsim / PyDial3 \(both behavsim timings pooled\): ([0-9.]+)x", r.stdout)
    assert ratio and float(ratio.group(1)) > 0
    assert "behavsim's two runs gave identical curves" in r.stdout

    # PyDial's own process ran: its helper trained, saved and evaluated a real policy
    res = json.loads(lines[-1])
    (pyd,) = res["pydial"]
    (point,) = pyd["points"]
    assert point["train_dialogues"] == 20 and point["eval_dialogues"] == 10
    assert point["train_seconds"] > 0 and point["dictionary_size"] > 0
    assert point["tsr"] == pytest.approx(pydial_tsr, abs=0.005)
    (ours,) = res["behavsim"]
    assert ours["points"][0]["tsr"] == pytest.approx(ours_tsr, abs=0.005)
