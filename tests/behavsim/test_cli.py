import json
import subprocess
import sys

import pandas as pd
import pytest

from behavsim import ResponseTable, context_fingerprint
from behavsim.cli import main

FP = context_fingerprint([{"c": i} for i in range(3)])


def run(*args):
    return subprocess.run([sys.executable, "-m", "behavsim.cli", *args], capture_output=True, text=True)


def test_pair_json(capsys):
    assert (
        main(
            [
                "pair",
                "request(pricerange)",
                "request(food)",
                "--scores",
                "TMR",
                "DMR",
                "CER",
                "CMR",
                "BLEU4",
                "--prompts",
                "what price range are you interested in",
                "what kind of food are you looking for",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["scores"] == pytest.approx(
        {"TMR": 0.0, "DMR": 1.0, "CER": 0.5, "CMR": 0.2, "BLEU4": 0.0660102}, abs=1e-6
    )
    assert set(out["signatures"]) == set(out["scores"])


def test_pair_without_prompts_gives_null_text_scores(capsys):
    assert main(["pair", "bye()", "bye()", "--scores", "TMR,BLEU4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scores"] == {"TMR": 1.0, "BLEU4": None}


def test_bad_input_gives_a_message_not_a_traceback():
    r = run("pair", 'inform(name="x', "bye()")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "unterminated quoted value" in r.stderr
    r = run("pair", "bye()", "bye()", "--scores", "BLUE4")
    assert r.returncode == 2 and "Did you mean 'BLEU4'" in r.stderr


def test_compare_end_to_end(tmp_path, capsys):
    paths = []
    for pid, acts in {
        "a": ["request(food)", "bye()", "reqmore()"],
        "b": ["request(area)", "bye()", "reqmore()"],
    }.items():
        t = ResponseTable(policy={"id": pid}, context_fingerprint=FP, acts=acts, prompts=[None, None, None])
        paths.append(str(t.save(tmp_path / f"{pid}.jsonl")))
    out = tmp_path / "out.csv"
    assert main(["compare", *paths, "--scores", "TMR", "CMR", "BLEU4", "-o", str(out)]) == 0
    per = pd.read_csv(out)
    assert list(per["TMR"]) == [0.0, 1.0, 1.0]
    means = pd.read_csv(tmp_path / "out.means.csv")
    assert means.loc[0, "TMR"] == pytest.approx(2 / 3)
    assert means.loc[0, "CMR"] == pytest.approx((0.2 + 1 + 1) / 3)
    assert means.loc[0, "n_missing_BLEU4"] == 3
    meta = json.loads((tmp_path / "out.meta.json").read_text())
    assert meta["context_fingerprint"] == FP and set(meta["signatures"]) == {"TMR", "CMR", "BLEU4"}


def test_compare_refuses_mismatched_context_sets(tmp_path):
    t1 = ResponseTable(policy={"id": "a"}, context_fingerprint=FP, acts=["bye()"] * 3, prompts=[])
    t2 = ResponseTable(policy={"id": "b"}, context_fingerprint="sha256:other:3", acts=["bye()"] * 3, prompts=[])
    r = run(
        "compare", str(t1.save(tmp_path / "a.jsonl")), str(t2.save(tmp_path / "b.jsonl")), "-o", str(tmp_path / "o.csv")
    )
    assert r.returncode == 2 and "different context sets" in r.stderr and "Traceback" not in r.stderr


def test_compare_cross_needs_by(tmp_path, capsys):
    paths = []
    for pid, reward in (("a", "ts"), ("b", "ts"), ("c", "iq")):
        t = ResponseTable(
            policy={"id": pid, "reward": reward}, context_fingerprint=FP, acts=["bye()"] * 3, prompts=[None] * 3
        )
        paths.append(str(t.save(tmp_path / f"{pid}.jsonl")))
    out = tmp_path / "out.csv"
    assert main(["compare", *paths, "--pairs", "cross", "--scores", "TMR", "-o", str(out)]) == 2
    assert "pairs='cross' needs by=" in capsys.readouterr().err
    assert main(["compare", *paths, "--pairs", "cross", "--by", "reward", "--scores", "TMR", "-o", str(out)]) == 0
    means = pd.read_csv(tmp_path / "out.means.csv")
    assert list(zip(means["a"], means["b"])) == [("a", "c"), ("b", "c")]
