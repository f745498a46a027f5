"""``behavsim contexts`` sub-commands."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from behavsim import ContextSet
from behavsim.cli import main
from contexts import collect, generate_grid
from contexts.commands import parse_range


def run(capsys, *argv):
    rc = main(["contexts", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_generate(capsys, tmp_path):
    rc, out, err = run(capsys, "generate", "-o", tmp_path / "g.jsonl")
    assert rc == 0 and "wrote 1296 contexts" in out
    cs = ContextSet.load(tmp_path / "g.jsonl")
    assert cs.fingerprint == generate_grid().fingerprint
    rc, out, _ = run(
        capsys,
        "generate",
        "--step",
        "0.5",
        "--value",
        "area=north",
        "--value",
        "food=thai",
        "-o",
        tmp_path / "g.parquet",
    )
    cs = ContextSet.load(tmp_path / "g.parquet")
    assert rc == 0 and len(cs) == 81 and cs.meta["values"]["area"] == "north" and cs.meta["values"]["food"] == "thai"


def test_collect_select_info(capsys, tmp_path):
    rc, out, _ = run(
        capsys, "collect", "--policy", "handcrafted", "--dialogues", "5", "--seed", "2", "-o", tmp_path / "c.jsonl"
    )
    assert rc == 0
    cs = ContextSet.load(tmp_path / "c.jsonl")
    assert cs.fingerprint == collect("handcrafted", dialogues=5, seed=2).fingerprint
    rc, out, _ = run(
        capsys, "collect", "--policy", "hc=handcrafted", "--dedupe", "--dialogues", "20", "-o", tmp_path / "d.parquet"
    )
    d = ContextSet.load(tmp_path / "d.parquet")
    assert rc == 0 and d.meta["dedupe"] and {m["source_policy"] for m in d.metas} == {"hc"}

    rc, out, _ = run(
        capsys,
        "select",
        tmp_path / "c.jsonl",
        "--turn",
        "2:3",
        "--slot-belief",
        "food=0.5:1.0",
        "-o",
        tmp_path / "s.jsonl",
    )
    s = ContextSet.load(tmp_path / "s.jsonl")
    assert rc == 0 and len(s) and all(2 <= m["turn"] <= 3 for m in s.metas)
    assert s.meta["criteria"] == {"turn": [2, 3], "slot_belief": {"food": [0.5, 1.0]}}

    rc, out, _ = run(capsys, "info", tmp_path / "c.jsonl", "--show", "2")
    assert rc == 0 and f"size:        {len(cs)} contexts" in out and cs.fingerprint in out
    assert "origins:     collected" in out and "turns:       1: 5" in out and "[1] handcrafted/d0/t2" in out
    rc, out, _ = run(capsys, "info", tmp_path / "s.jsonl", "--json")
    info = json.loads(out)
    assert info["size"] == len(s) and info["meta"]["builder"] == "subset" and info["origins"] == {"collected": len(s)}


def test_import(capsys, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"beliefs": {"area": {"north": 1.0}}}\n{"belief": {"beliefs": {"area": {"south": 1}}}, "meta": {"turn": 1}}\n'
    )
    rc, out, _ = run(capsys, "import", log, "-o", tmp_path / "l.jsonl")
    cs = ContextSet.load(tmp_path / "l.jsonl")
    assert rc == 0 and len(cs) == 2 and {m["origin"] for m in cs.metas} == {"logged"}
    rc, out, _ = run(
        capsys, "select", tmp_path / "l.jsonl", "--turn", "1", "--origin", "logged", "-o", tmp_path / "l1.jsonl"
    )
    assert rc == 0 and len(ContextSet.load(tmp_path / "l1.jsonl")) == 1


@pytest.mark.parametrize(
    "argv,message",
    [
        (["generate", "--step", "0.3", "-o", "{t}/x.jsonl"], "step: 0.3 does not divide 1"),
        (["generate", "--slots", "area", "prices", "-o", "{t}/x.jsonl"], "Did you mean 'pricerange'?"),
        (["generate", "--value", "area", "-o", "{t}/x.jsonl"], "--value: expected KEY=VALUE"),
        (["generate", "--value", "area=mars", "-o", "{t}/x.jsonl"], "values: 'mars' is not a value of slot 'area'"),
        (["generate", "-o", "{t}/x.csv"], "must end in .jsonl or .parquet"),
        (["generate", "--domain", "{t}/no-rules.json", "{t}/no.db", "-o", "{t}/x.jsonl"], "--domain:"),
        (["collect", "--policy", "handcraftd", "-o", "{t}/x.jsonl"], "Did you mean 'handcrafted'?"),
        (["collect", "--policy", "{t}/bad.npz", "-o", "{t}/x.jsonl"], "bad.npz"),
        (
            ["collect", "--policy", "handcrafted", "--dialogues", "0", "-o", "{t}/x.jsonl"],
            "dialogues: expected a positive",
        ),
        (["import", "{t}/bad-log.jsonl", "-o", "{t}/x.jsonl"], "bad-log.jsonl:2: invalid JSON"),
        (["select", "{t}/missing.jsonl", "--turn", "1", "-o", "{t}/x.jsonl"], "no such context-set file"),
        (["select", "{t}/damaged.jsonl", "--turn", "1", "-o", "{t}/x.jsonl"], "does not match the checksum"),
        (["select", "{t}/ok.jsonl", "--turn", "a:b", "-o", "{t}/x.jsonl"], "--turn: expected a number or a range"),
        (["select", "{t}/ok.jsonl", "--slot-belief", "food", "-o", "{t}/x.jsonl"], "--slot-belief: expected KEY=VALUE"),
        (["select", "{t}/ok.jsonl", "--origin", "colected", "-o", "{t}/x.jsonl"], "Did you mean 'collected'?"),
        (["select", "{t}/ok.jsonl", "--turn", "1", "-o", "{t}/x.jsonl"], "no context of"),
        (["info", "{t}/damaged.jsonl"], "does not match the checksum"),
    ],
)
def test_errors_are_clean(capsys, tmp_path, argv, message):
    (tmp_path / "bad.npz").write_bytes(b"junk")
    (tmp_path / "bad-log.jsonl").write_text('{"beliefs": {"area": {"north": 1.0}}}\n{oops\n')
    ok = generate_grid(step=0.5).save(tmp_path / "ok.jsonl")
    lines = ok.read_text().splitlines()
    lines[1] = lines[1].replace('"north":0.0', '"north":0.5', 1)
    (tmp_path / "damaged.jsonl").write_text("\n".join(lines) + "\n")
    rc, out, err = run(capsys, *[a.format(t=tmp_path) for a in argv])
    assert rc == 2
    assert message in err and err.startswith("behavsim contexts: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.jsonl").exists()


def test_console_script_exit_code(tmp_path):
    exe = Path(sys.executable).with_name("behavsim")
    if not exe.exists():
        pytest.skip("behavsim console script not installed next to the interpreter")
    res = subprocess.run(
        [str(exe), "contexts", "generate", "--step", "0.3", "-o", str(tmp_path / "x.jsonl")],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert res.returncode == 2 and "step: 0.3 does not divide 1" in res.stderr and "Traceback" not in res.stderr
    res = subprocess.run(
        [str(exe), "contexts", "generate", "--step", "0.5", "-o", str(tmp_path / "g.jsonl")],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert res.returncode == 0 and len(ContextSet.load(tmp_path / "g.jsonl")) == 81


def test_parse_range():
    assert parse_range("0.5:1.0", "x") == (0.5, 1.0)
    assert parse_range(":1", "x") == (None, 1.0)
    assert parse_range("2:", "x") == (2.0, None)
    assert parse_range("3", "x") == 3.0
