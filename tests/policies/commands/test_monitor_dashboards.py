"""Convergence in the lab's own dashboards: lags (previous, k back, first, reference, final) in the
monitor's CSV, the same values in TensorBoard event files (read back with TensorBoard's own
reader and through a running TensorBoard's HTTP data API), and ``behavsim monitor --pattern
--loader`` following a PyTorch trainer of one's own."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from behavsim import ContextSet, compare
from behavsim.monitor import LAGS, ConvergenceMonitor, lag_column, read_convergence
from contexts import generate_grid
from policies.commands.monitor import main

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

SCORES = ["TMR", "DMR", "CER", "CMR"]
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _contexts() -> ContextSet:
    return ContextSet([{"x": i} for i in range(40)])


def _stage(k: int):
    """Snapshot k answers differently on the contexts x < 4k (a policy drifting one way)."""
    return lambda b: "request(food)" if b["x"] >= 4 * k else f'inform(food="f{b["x"] % 3}")'


def _scalars(logdir: Path) -> dict[str, dict[int, float]]:
    """Tag → {step: value} of every scalar in a TensorBoard run folder, with TensorBoard's reader."""
    ea = EventAccumulator(str(logdir))
    ea.Reload()
    return {tag: {e.step: e.value for e in ea.Scalars(tag)} for tag in ea.Tags()["scalars"]}


def _expected(rows) -> dict[str, dict[int, float]]:
    """The CSV rows as TensorBoard stores them (float32), undefined values left out."""
    out: dict[str, dict[int, float]] = {}
    for r in rows:
        for lag in LAGS:
            for s in SCORES:
                v = r[lag_column(s, lag)]
                if not math.isnan(v):
                    out.setdefault(f"behavsim/{s}/{lag}", {})[r["dialogues"]] = float(np.float32(v))
    return out


def test_lags_in_the_csv_equal_direct_comparisons(tmp_path):
    cs = _contexts()
    ref = lambda b: "bye()" if b["x"] % 2 else "request(food)"  # noqa: E731
    mon = ConvergenceMonitor(cs, every=100, out_dir=tmp_path / "m", lag=2, reference=ref, plot=False)
    results = [mon.snapshot(_stage(k), 100 * (k + 1)) for k in range(5)]
    mon.finish()
    rows = read_convergence(tmp_path / "m" / "convergence.csv")
    assert [r["dialogues"] for r in rows] == [200, 300, 400, 500]
    assert [r["lag_dialogues"] for r in rows] == [None, 100, 200, 300]
    assert [r["first_dialogues"] for r in rows] == [100] * 4
    assert [r["final_dialogues"] for r in rows] == [500] * 4
    # k snapshots back differ on 4·(distance) contexts of 40: exact values
    assert [r["TMR"] for r in rows] == [0.9] * 4
    assert math.isnan(rows[0]["TMR_vs_lag"]) and [r["TMR_vs_lag"] for r in rows[1:]] == [0.8] * 3
    assert [r["TMR_vs_first"] for r in rows] == [0.9, 0.8, 0.7, 0.6]
    assert [r["TMR_vs_final"] for r in rows] == [0.7, 0.8, 0.9, 1.0]
    assert results[2].lags["vs_lag"]["TMR"] == 0.8 and results[2].lags["vs_first"]["TMR"] == 0.8
    # every lag column is behavsim.compare on the saved snapshots (and the reference)
    snaps = {d: mon._load_table(mon.snapshot_path(d)) for d in (100, 200, 300, 400, 500)}
    reference = mon.reference
    for r in rows:
        for lag, other in (
            ("vs_prev", snaps[r["prev_dialogues"]]),
            ("vs_first", snaps[100]),
            ("vs_final", snaps[500]),
            ("vs_ref", reference),
        ):
            m = compare([_renamed(other, "a"), _renamed(snaps[r["dialogues"]], "b")], scores=SCORES).means.iloc[0]
            for s in SCORES:
                assert r[lag_column(s, lag)] == m[s], (lag, s, r["dialogues"])
    # the settings record lag and reference; reopening with another lag recomputes vs_lag
    meta = json.loads((tmp_path / "m" / "monitor.json").read_text())
    assert meta["lag"] == 2 and meta["reference"]["answers"].startswith("sha256:")
    again = ConvergenceMonitor(cs, every=100, out_dir=tmp_path / "m", lag=1, reference=ref, plot=False)
    assert [r["TMR_vs_lag"] for r in again.rows] == [0.9] * 4
    assert [r["lag_dialogues"] for r in again.rows] == [100, 200, 300, 400]


def _renamed(table, pid):
    from behavsim import ResponseTable

    meta = dict(table.policy)
    meta["id"] = pid
    meta.pop("checkpoint", None)
    return ResponseTable(
        policy=meta,
        context_fingerprint=table.context_fingerprint,
        acts=table.acts,
        prompts=table.prompts,
        errors=table.errors,
        context_ids=table.context_ids,
    )


def test_a_later_snapshot_empties_vs_final(tmp_path):
    mon = ConvergenceMonitor(_contexts(), every=100, out_dir=tmp_path / "m", plot=False)
    for k in range(3):
        mon.snapshot(_stage(k), 100 * (k + 1))
    assert [r["final_dialogues"] for r in mon.finish()] == [300, 300]
    mon.snapshot(_stage(3), 400)
    rows = read_convergence(tmp_path / "m" / "convergence.csv")
    assert [r["final_dialogues"] for r in rows] == [None, None, None]
    assert all(math.isnan(r["TMR_vs_final"]) for r in rows)


def test_event_files_hold_exactly_the_csv_values(tmp_path):
    """TensorBoard's own reader finds, step by step and for every lag, the CSV's values; a
    trainer's own writer in the same folder is left intact."""
    from torch.utils.tensorboard import SummaryWriter

    tb = tmp_path / "tb" / "trial"
    own = SummaryWriter(str(tb))  # the trainer's writer, same run folder
    for step in (100, 200, 300):
        own.add_scalar("train/loss", 1.0 / step, step)
    own.flush()
    cs = _contexts()
    mon = ConvergenceMonitor(cs, every=100, out_dir=tmp_path / "m", lag=2, reference=_stage(6), tensorboard=tb)
    for k in range(6):
        mon.snapshot(_stage(k), 100 * (k + 1))
    mon.finish()
    mon.close()
    own.close()
    rows = read_convergence(tmp_path / "m" / "convergence.csv")
    got = _scalars(tb)
    want = _expected(rows)
    assert sorted(want) == sorted(f"behavsim/{s}/{lag}" for s in SCORES for lag in LAGS)
    for tag, by_step in want.items():
        assert got[tag] == by_step, tag
    assert sorted(got["behavsim/TMR/vs_lag"]) == [300, 400, 500, 600]
    assert sorted(got["behavsim/TMR/vs_prev"]) == [200, 300, 400, 500, 600]
    assert got["train/loss"] == {s: float(np.float32(1.0 / s)) for s in (100, 200, 300)}
    names = sorted(p.name for p in tb.iterdir())
    assert len(names) == 2 and sum(n.endswith(".behavsim") for n in names) == 1
    ea = EventAccumulator(str(tb))
    ea.Reload()
    assert "behavsim/convergence" in ea.Tags()["images"]
    img = ea.Images("behavsim/convergence")[-1]
    assert img.encoded_image_string == (tmp_path / "m" / "convergence.png").read_bytes()


def test_monitor_cli_lags_reference_and_tensorboard(tmp_path, capsys):
    """`behavsim monitor RUN --lag 2 --reference handcrafted --tensorboard TB` on a finished training run."""
    from policies.training.train import TrainConfig, run_training

    run_training(TrainConfig(dialogues=400, checkpoint_every=100, eval_dialogues=3), tmp_path / "run", progress=False)
    grid = generate_grid(step=0.5).save(tmp_path / "grid.jsonl")
    assert (
        main(
            [
                str(tmp_path / "run"),
                "--contexts",
                str(grid),
                "--lag",
                "2",
                "--reference",
                "handcrafted",
                "--tensorboard",
                str(tmp_path / "tb"),
                "-o",
                str(tmp_path / "mon"),
            ]
        )
        == 0
    )
    rows = read_convergence(tmp_path / "mon" / "ts-seed0" / "convergence.csv")
    assert [(r["dialogues"], r["lag_dialogues"], r["final_dialogues"]) for r in rows] == [
        (200, None, 400),
        (300, 100, 400),
        (400, 200, 400),
    ]
    assert rows[-1]["TMR_vs_final"] == 1.0
    assert all(0.0 <= r["TMR_vs_ref"] <= 1.0 for r in rows)
    got = _scalars(tmp_path / "tb" / "ts-seed0")
    for tag, by_step in _expected(rows).items():
        assert got[tag] == by_step, tag
    # the same command again: nothing new, nothing duplicated
    assert (
        main(
            [
                str(tmp_path / "run"),
                "--contexts",
                str(grid),
                "--lag",
                "2",
                "--reference",
                "handcrafted",
                "--tensorboard",
                str(tmp_path / "tb"),
                "-o",
                str(tmp_path / "mon"),
            ]
        )
        == 0
    )
    assert read_convergence(tmp_path / "mon" / "ts-seed0" / "convergence.csv") == rows


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read().decode("utf-8"))


def test_tensorboard_serves_the_scalars_over_http(tmp_path):
    """A TensorBoard on 127.0.0.1 over the folder: its scalars data API (what the page draws)
    returns the CSV's values for every lag."""
    tb = tmp_path / "tb"
    mon = ConvergenceMonitor(
        _contexts(),
        every=100,
        out_dir=tmp_path / "m",
        lag=2,
        reference=_stage(6),
        tensorboard=tb / "trial-a",
        plot=False,
    )
    for k in range(5):
        mon.snapshot(_stage(k), 100 * (k + 1))
    mon.finish()
    mon.close()
    want = _expected(read_convergence(tmp_path / "m" / "convergence.csv"))
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tensorboard.main",
            "--logdir",
            str(tb),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--load_fast",
            "false",
            "--reload_interval",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        tags: dict = {}
        while time.monotonic() < deadline:
            try:
                tags = _get_json(f"{base}/data/plugin/scalars/tags")
                if "trial-a" in tags and "behavsim/TMR/vs_final" in tags["trial-a"]:
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"tensorboard exited: {proc.stderr.read()[-2000:]}")
            time.sleep(0.5)
        assert sorted(t for t in tags["trial-a"] if t.startswith("behavsim/")) == sorted(want)
        for tag, by_step in want.items():
            q = urllib.parse.urlencode({"run": "trial-a", "tag": tag})
            points = _get_json(f"{base}/data/plugin/scalars/scalars?{q}")  # [[wall_time, step, value], ...]
            assert {int(step): float(np.float32(v)) for _, step, v in points} == by_step, tag
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_follows_a_pytorch_trainer_through_pattern_and_loader(tmp_path):
    """A toy PyTorch trainer writes state_dict checkpoints while `behavsim monitor --pattern
    --loader --follow` (started first) scores each one; figure, CSV and event file result."""
    shutil.copy(HERE / "_torch_toy.py", tmp_path / "toy_trainer.py")
    generate_grid(step=0.5).save(tmp_path / "grid.jsonl")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([env.get("PYTHONPATH", ""), str(ROOT)])
    monitor = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "behavsim.cli",
            "monitor",
            "ckpts",
            "--pattern",
            "policy-step*.pt",
            "--loader",
            "toy_trainer:load_policy",
            "--contexts",
            "grid.jsonl",
            "--lag",
            "2",
            "--follow",
            "--interval",
            "0.3",
            "--stop-after",
            "15",
            "--tensorboard",
            "tb",
            "-o",
            "mon",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(1.0)
    trainer = subprocess.run(
        [sys.executable, "toy_trainer.py", "ckpts", "--steps", "600", "--every", "100", "--pause", "0.4"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert trainer.returncode == 0, trainer.stderr
    out, _ = monitor.communicate(timeout=300)
    assert monitor.returncode == 0, out
    assert "ckpts: no file matches --pattern 'policy-step*.pt' yet; following" in out
    assert "ckpts     600 vs 500: TMR " in out
    rows = read_convergence(tmp_path / "mon" / "ckpts" / "convergence.csv")
    assert [(r["dialogues"], r["prev_dialogues"]) for r in rows] == [(d, d - 100) for d in range(200, 700, 100)]
    assert [r["final_dialogues"] for r in rows] == [600] * 5 and rows[-1]["TMR_vs_final"] == 1.0
    png = tmp_path / "mon" / "ckpts" / "convergence.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    events = list((tmp_path / "tb" / "ckpts").glob("events.out.tfevents.*.behavsim"))
    assert len(events) == 1
    got = _scalars(tmp_path / "tb" / "ckpts")
    for tag, by_step in _expected(rows).items():
        assert got[tag] == by_step, tag
    # the snapshots are the loader's policy: the last checkpoint answers the same when loaded again
    sys.path.insert(0, str(tmp_path))
    try:
        import toy_trainer

        act = toy_trainer.load_policy(str(tmp_path / "ckpts" / "policy-step000600.pt"))
    finally:
        sys.path.remove(str(tmp_path))
    from behavsim import ResponseTable

    snap = ResponseTable.load(tmp_path / "mon" / "ckpts" / "snapshots" / "responses-000600.jsonl")
    grid = ContextSet.load(tmp_path / "grid.jsonl")
    assert list(snap.acts) == [act(b) for b in grid.beliefs]


def test_pattern_problems_are_one_line_each_and_the_run_goes_on(tmp_path, capsys, monkeypatch):
    shutil.copy(HERE / "_torch_toy.py", tmp_path / "toy_trainer.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_trainer

    toy_trainer.train(tmp_path / "ck", steps=300, every=100, pause=0.0)
    shutil.copy(tmp_path / "ck" / "policy-step000300.pt", tmp_path / "ck" / "policy-best.pt")  # no step
    (tmp_path / "ck" / "policy-step000250.pt").write_bytes(b"not a checkpoint")  # loader fails
    generate_grid(step=0.5).save(tmp_path / "grid.jsonl")
    assert (
        main(
            [
                "ck",
                "--pattern",
                "policy-*.pt",
                "--loader",
                "toy_trainer:load_policy",
                "--contexts",
                "grid.jsonl",
                "--no-plot",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert "policy-best.pt: no training-dialogue count in the name (--step-regex '(\\\\d+)(?!.*\\\\d)'); skipped" in out
    failed = [line for line in out if "policy-step000250.pt" in line]
    assert len(failed) == 1 and "the loader failed: UnpicklingError" in failed[0]
    assert failed[0].endswith("recorded as failed in ck/monitor/ck/failed.csv")
    rows = read_convergence(tmp_path / "ck" / "monitor" / "ck" / "convergence.csv")
    assert [(r["dialogues"], r["prev_dialogues"]) for r in rows] == [(200, 100), (300, 200)]  # 300 vs 200: goes on
    lines = (tmp_path / "ck" / "monitor" / "ck" / "failed.csv").read_text().splitlines()
    assert lines[0] == "dialogues,source,error" and lines[1].startswith("250,policy-step000250.pt,")
    # --step-regex: the count from a group
    assert (
        main(
            [
                "ck",
                "--pattern",
                "policy-step*.pt",
                "--loader",
                "toy_trainer:load_policy",
                "--step-regex",
                r"step0*(\d+)\.pt",
                "--contexts",
                "grid.jsonl",
                "--no-plot",
                "-o",
                "other",
            ]
        )
        == 0
    )
    assert [r["dialogues"] for r in read_convergence(tmp_path / "other" / "ck" / "convergence.csv")] == [200, 300]


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("behavsim monitor: error: ") and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--pattern", "*.pt"], "--pattern needs --loader MODULE:FUNCTION"),
        (["--loader", "x:y"], "--loader only makes sense with --pattern GLOB"),
        (["--pattern", "*.pt", "--loader", "nosuchmodule_xyz:load"], "cannot import module 'nosuchmodule_xyz'"),
        (["--pattern", "*.pt", "--loader", "noloader"], "expected MODULE:FUNCTION"),
        (["--pattern", "*.pt", "--loader", "json:loads", "--step-regex", "(a)(b)"], "at most one group"),
        (["--pattern", "*.pt", "--loader", "json:loads", "--step-regex", "("], "not a regular expression"),
        (["--pattern", "nothing-*.pt", "--loader", "json:loads"], "no file matches --pattern 'nothing-*.pt'"),
        (["--lag", "0"], "--lag: expected a positive number"),
        (["--reference", "nonsense"], "unknown policy kind 'nonsense'"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, extra, match):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "ckpt-000100.npz").write_bytes(b"")
    grid = generate_grid(step=0.5).save(tmp_path / "grid.jsonl")
    assert main([str(tmp_path / "d"), "--contexts", str(grid), *extra]) == 2
    assert match in _err(capsys)


def test_tensorboard_folder_that_cannot_be_written(tmp_path, capsys):
    grid = generate_grid(step=0.5).save(tmp_path / "grid.jsonl")
    (tmp_path / "d").mkdir()
    assert main([str(tmp_path / "d"), "--contexts", str(grid), "--tensorboard", str(grid / "tb")]) == 2
    assert f"--tensorboard '{grid / 'tb'}': cannot write there" in _err(capsys)


def test_without_tensorboard_the_option_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    grid = generate_grid(step=0.5).save(tmp_path / "grid.jsonl")
    (tmp_path / "d").mkdir()
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard -> ImportError
    assert main([str(tmp_path / "d"), "--contexts", str(grid), "--tensorboard", str(tmp_path / "tb")]) == 2
    assert "--tensorboard needs the tensorboard package: pip install 'behavsim[tensorboard]'" in _err(capsys)
    from behavsim import BehavsimError

    with pytest.raises(BehavsimError, match=r"pip install 'behavsim\[tensorboard\]'"):
        ConvergenceMonitor(_contexts(), out_dir=tmp_path / "m", tensorboard=tmp_path / "tb")


def test_train_tensorboard_logs_tsr_aiq_adl_beside_the_monitor(tmp_path, capsys):
    from behavsim.cli import main as behavsim_main

    cgen = generate_grid(step=0.5).save(tmp_path / "cgen.jsonl")
    out, tb = tmp_path / "run", tmp_path / "tb"
    assert (
        behavsim_main(
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
                "--monitor-lag",
                "1",
                "--monitor-reference",
                "handcrafted",
                "--tensorboard",
                str(tb),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    from policies.training.files import read_metrics

    metrics = read_metrics(out / "metrics.csv")
    got = _scalars(tb / "ts-seed0")
    for tag, key in (("TSR", "tsr"), ("AIQ", "aiq"), ("ADL", "adl")):
        assert got[f"behavsim/eval/{tag}"] == {r["dialogues"]: float(np.float32(r[key])) for r in metrics}
    rows = read_convergence(out / "monitor" / "ts-seed0" / "convergence.csv")
    for tag, by_step in _expected(rows).items():
        assert got[tag] == by_step, tag
    assert sorted(got["behavsim/TMR/vs_prev"]) == [200, 300]
    assert [r["lag_dialogues"] for r in rows] == [100, 200] and sorted(got["behavsim/TMR/vs_ref"]) == [200, 300]
    assert [r["final_dialogues"] for r in rows] == [300, 300]  # the monitor finished with the run
    suffixes = sorted(p.name.rsplit(".", 1)[-1] for p in (tb / "ts-seed0").iterdir())
    assert suffixes == ["behavsim", "behavsim-train"]


def test_resume_writes_each_step_once_and_upgrades_an_old_folder(tmp_path):
    cs = _contexts()
    tb = tmp_path / "tb"
    first = ConvergenceMonitor(cs, every=100, out_dir=tmp_path / "m", lag=2, tensorboard=tb, plot=False)
    for k in range(3):
        first.snapshot(_stage(k), 100 * (k + 1))
    first.close()
    again = ConvergenceMonitor(cs, every=100, out_dir=tmp_path / "m", lag=2, tensorboard=tb, plot=False)
    for k in range(3, 5):
        again.snapshot(_stage(k), 100 * (k + 1))
    again.close()
    ea = EventAccumulator(str(tb))
    ea.Reload()
    # once each (two event files: the reader's order of them follows their names, not the steps)
    assert sorted(e.step for e in ea.Scalars("behavsim/TMR/vs_prev")) == [200, 300, 400, 500]
    assert sorted(e.step for e in ea.Scalars("behavsim/TMR/vs_lag")) == [300, 400, 500]
    rows = read_convergence(tmp_path / "m" / "convergence.csv")
    # a folder written before the lags (only the original columns, no lag in monitor.json): opened
    # again, its lag columns are computed from the saved snapshots
    csv_path, meta_path = tmp_path / "m" / "convergence.csv", tmp_path / "m" / "monitor.json"
    old_lines = [",".join(line.split(",")[:7]) for line in csv_path.read_text().splitlines()]
    csv_path.write_text("\n".join(old_lines) + "\n")
    meta = json.loads(meta_path.read_text())
    del meta["lag"], meta["reference"]
    meta_path.write_text(json.dumps(meta))
    upgraded = ConvergenceMonitor(cs, every=100, out_dir=tmp_path / "m", lag=2, plot=False)
    assert [r["TMR_vs_lag"] for r in upgraded.rows][1:] == [r["TMR_vs_lag"] for r in rows][1:]
    assert read_convergence(csv_path) == upgraded.rows
    assert json.loads(meta_path.read_text())["lag"] == 2


def test_train_tensorboard_folder_that_cannot_be_written(tmp_path, capsys):
    from behavsim.cli import main as behavsim_main

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert (
        behavsim_main(
            [
                "train",
                "--dialogues",
                "100",
                "--checkpoint-every",
                "100",
                "--tensorboard",
                str(blocker / "tb"),
                "-o",
                str(tmp_path / "run"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("behavsim train: error: --tensorboard ") and "cannot write there" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_tensorboard_is_imported_only_when_a_writer_opens(tmp_path):
    code = (
        "import sys; from behavsim import ContextSet; from behavsim.monitor import ConvergenceMonitor; "
        "m = ConvergenceMonitor(ContextSet([{'x': 1}]), out_dir=sys.argv[1]); "
        "print(sorted(k for k in sys.modules if k.split('.')[0] in ('tensorboard', 'torch')))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m")], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
