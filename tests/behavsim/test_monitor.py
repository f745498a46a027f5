"""behavsim.monitor: snapshots k vs k-1 equal a direct compare, resume, stop rule, cadence, errors."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from behavsim import ConfigError, ContextSet, ContextSetMismatch, ResponseTable, UnknownName, UnknownScore, compare
from behavsim.monitor import ConvergenceMonitor, SnapshotResult, StopRule, read_convergence

SCORES = ["TMR", "DMR", "CER", "CMR"]


def _contexts(n: int = 40) -> ContextSet:
    return ContextSet([{"x": i, "p": {"a": i / n, "b": 1 - i / n}} for i in range(n)])


def _stage_policy(stage: int):
    """A toy learner: after stage k, contexts x < 10*k answer differently."""

    def act(belief):
        x = belief["x"]
        if x < 10 * stage:
            return f'inform(food="f{x % 3}",area=centre)', f"food {x % 3} in the centre"
        if x % 2:
            return "request(food)"
        return "request(area)", "which area?"

    return act


class _Learner:
    """A policy object with a learning flag: explores (non-deterministic) while learning."""

    name = "learner"

    def __init__(self) -> None:
        self.learning = True
        self.stage = 0
        self.seen_learning: list[bool] = []

    def act(self, belief):
        self.seen_learning.append(self.learning)
        if self.learning:
            raise RuntimeError("exploring while a snapshot is taken")
        return _stage_policy(self.stage)(belief)


def _table(policy, cs: ContextSet, pid: str) -> ResponseTable:
    acts, prompts = [], []
    for b in cs.beliefs:
        out = policy(b)
        a, p = (out, None) if isinstance(out, str) else out
        acts.append(a)
        prompts.append(p)
    return ResponseTable(
        policy={"id": pid}, context_fingerprint=cs.fingerprint, acts=acts, prompts=prompts, context_ids=list(cs.ids)
    )


def test_csv_equals_direct_compare(tmp_path):
    cs = _contexts()
    mon = ConvergenceMonitor(cs, every=1000, out_dir=tmp_path / "m")
    results = [mon.snapshot(_stage_policy(k), 1000 * (k + 1)) for k in range(4)]
    assert isinstance(results[0], SnapshotResult) and not results[0].compared and results[0].scores == {}
    assert [r.prev_dialogues for r in results[1:]] == [1000, 2000, 3000]
    rows = read_convergence(tmp_path / "m" / "convergence.csv")
    assert [(r["dialogues"], r["prev_dialogues"], r["n"]) for r in rows] == [
        (2000, 1000, 40),
        (3000, 2000, 40),
        (4000, 3000, 40),
    ]
    # the same comparisons made directly, on independently built tables
    tables = [_table(_stage_policy(k), cs, f"stage{k}") for k in range(4)]
    for t, k in zip(tables, range(4)):
        t.policy["checkpoint"] = 1000 * (k + 1)
    comp = compare(tables, "consecutive", scores=SCORES)
    for row, (_, m), res in zip(rows, comp.means.iterrows(), results[1:]):
        for s in SCORES:
            assert row[s] == m[s]  # exact: the CSV keeps full precision
            assert res.scores[s] == m[s]
    assert rows[0]["TMR"] < 1.0 and math.isclose(rows[0]["TMR"], 30 / 40)
    # the saved snapshots are the responses, and re-comparing them gives the same numbers
    snaps = [
        ResponseTable.load(tmp_path / "m" / "snapshots" / f"responses-{1000 * (k + 1):06d}.jsonl") for k in range(4)
    ]
    assert [s.acts for s in snaps] == [t.acts for t in tables]
    assert [s.policy["checkpoint"] for s in snaps] == [1000, 2000, 3000, 4000]
    again = compare(snaps, "consecutive", scores=SCORES).means
    assert again[SCORES].values.tolist() == comp.means[SCORES].values.tolist()
    assert (tmp_path / "m" / "convergence.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "2000 vs 1000: TMR 0.750" in results[1].line()


def test_table_and_policy_object_inputs(tmp_path):
    cs = _contexts()
    learner = _Learner()
    mon = ConvergenceMonitor(cs, out_dir=tmp_path / "m", plot=False)
    mon.snapshot(_table(_stage_policy(0), cs, "given"), 1000)  # a ResponseTable as is
    learner.stage = 0
    r = mon.snapshot(learner, 2000)  # a policy object, made greedy
    assert r.scores["TMR"] == 1.0 and r.n_errors == 0
    assert learner.learning is True and set(learner.seen_learning) == {False}
    assert not (tmp_path / "m" / "convergence.png").exists()


def test_resume_continues_without_duplicates(tmp_path):
    cs = _contexts()
    full = ConvergenceMonitor(cs, out_dir=tmp_path / "full", name="trial")
    for k in range(4):
        full.snapshot(_stage_policy(k), 1000 * (k + 1))

    first = ConvergenceMonitor(cs, out_dir=tmp_path / "m", name="trial")
    for k in range(2):
        first.snapshot(_stage_policy(k), 1000 * (k + 1))
    again = ConvergenceMonitor(cs, out_dir=tmp_path / "m", name="trial")
    assert again.last_dialogues == 2000 and len(again.rows) == 1
    assert again.snapshot(_stage_policy(1), 2000) is None  # replayed count: skipped
    assert again.maybe_snapshot(_stage_policy(1), 2500) is None  # not due
    for k in range(2, 4):
        assert again.maybe_snapshot(_stage_policy(k), 1000 * (k + 1)) is not None
    rows = read_convergence(tmp_path / "m" / "convergence.csv")
    assert [r["dialogues"] for r in rows] == [2000, 3000, 4000]
    for name in ("convergence.csv", "convergence.png", "monitor.json", "snapshots/responses-004000.jsonl"):
        assert (tmp_path / "m" / name).read_bytes() == (tmp_path / "full" / name).read_bytes(), name


def test_resume_repairs_a_row_lost_in_a_stop(tmp_path):
    cs = _contexts()
    mon = ConvergenceMonitor(cs, out_dir=tmp_path / "m", plot=False)
    for k in range(3):
        mon.snapshot(_stage_policy(k), 1000 * (k + 1))
    csv_path = tmp_path / "m" / "convergence.csv"
    good = csv_path.read_text()
    # killed after saving snapshot 3000 but before its row: the row is recomputed from the tables
    csv_path.write_text("".join(good.splitlines(keepends=True)[:2]))
    back = ConvergenceMonitor(cs, out_dir=tmp_path / "m", plot=False)
    assert [r["dialogues"] for r in back.rows] == [2000, 3000]
    assert csv_path.read_text() == good


def test_resume_refuses_other_contexts_or_scores(tmp_path):
    cs = _contexts()
    mon = ConvergenceMonitor(cs, out_dir=tmp_path / "m", plot=False)
    mon.snapshot(_stage_policy(0), 1000)
    with pytest.raises(ContextSetMismatch, match="another context set"):
        ConvergenceMonitor(_contexts(39), out_dir=tmp_path / "m")
    with pytest.raises(ConfigError, match="scores"):
        ConvergenceMonitor(cs, out_dir=tmp_path / "m", scores=["TMR"])


def test_stop_rule_by_hand():
    rule = StopRule(score="tmr", threshold=0.99, patience=3)
    assert rule.score == "TMR"
    rows = [
        {"dialogues": d, "TMR": v}
        for d, v in [(2000, 0.98), (3000, 0.99), (4000, 1.0), (5000, 0.995), (6000, 0.97), (7000, math.nan)]
    ]
    assert rule.met_at(rows) == [False, False, False, True, False, False]
    assert rule.first_met(rows) == 5000
    assert rule.met(rows[:4]) and not rule.met(rows) and not rule.met([])
    assert StopRule.parse("DMR:0.9:2") == StopRule("DMR", 0.9, 2)
    assert StopRule.parse("CMR") == StopRule("CMR")
    for bad in ("TMR:x", "TMR:1.5", "TMR:0.9:0", "", "TMR:0.9:2:1"):
        with pytest.raises(ConfigError):
            StopRule.parse(bad)
    with pytest.raises(UnknownScore, match="Did you mean 'TMR'"):
        StopRule("TNR")


def test_should_stop_and_converged(tmp_path):
    cs = _contexts()
    mon = ConvergenceMonitor(cs, out_dir=tmp_path / "m", stop_rule=StopRule("TMR", 0.99, 2), plot=False)
    plain = ConvergenceMonitor(cs, out_dir=tmp_path / "p", plot=False)
    same = _stage_policy(4)
    flags = []
    for k in range(5):
        for m in (mon, plain):
            m.snapshot(same if k else _stage_policy(0), 1000 * (k + 1))
        flags.append((mon.should_stop, mon.converged, plain.should_stop, plain.converged))
    # rows: 2000 (changed), 3000, 4000, 5000 identical -> the 2-patience rule is met from 4000 on
    assert [f[0] for f in flags] == [False, False, False, True, True]
    assert [f[1] for f in flags] == [False, False, False, True, True]
    assert [f[2] for f in flags] == [False] * 5  # no rule given: never advises to stop
    assert [f[3] for f in flags] == [False, False, False, False, True]  # default rule: TMR >= 0.99, 3 rows


def test_maybe_snapshot_cadence(tmp_path):
    cs = _contexts(10)
    mon = ConvergenceMonitor(cs, every=1000, out_dir=tmp_path / "m", plot=False)
    taken = [n for n in range(0, 3501) if mon.maybe_snapshot(_stage_policy(0), n) is not None]
    assert taken == [1000, 2000, 3000]
    odd = ConvergenceMonitor(cs, every=1000, out_dir=tmp_path / "o", plot=False)
    taken = [n for n in range(0, 3501, 7) if odd.maybe_snapshot(_stage_policy(0), n) is not None]
    assert taken == [1001, 2002, 3003]  # the first count past each multiple


def test_progress_and_failures_recorded(tmp_path, capsys):
    cs = _contexts(10)
    seen = []
    mon = ConvergenceMonitor(cs, out_dir=tmp_path / "m", progress=seen.append, plot=False, name="toy")

    def flaky(belief):
        if belief["x"] == 3:
            raise ValueError("no idea\nsecond line")
        return "request(food)"

    mon.snapshot(flaky, 1000)
    r = mon.snapshot(flaky, 2000)
    assert seen == [seen[0], r] and r.n_errors == 1
    assert r.scores["TMR"] == 1.0 and r.n == 10  # mean over the answered contexts
    snap = ResponseTable.load(r.table_path)
    assert snap.errors[3] == "ValueError: no idea" and snap.acts[3] is None
    loud = ConvergenceMonitor(cs, out_dir=tmp_path / "l", progress=True, plot=False, name="toy")
    loud.snapshot(flaky, 1000)
    loud.snapshot(flaky, 2000)
    err = capsys.readouterr().err
    assert "toy  1000: first snapshot (10 contexts)  (1 contexts failed)" in err
    assert "toy  2000 vs 1000: TMR 1.000 DMR 1.000 CER 1.000 CMR 1.000" in err


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"every": 0}, "every: expected a positive integer"),
        ({"every": 1.5}, "every"),
        ({"scores": ["TMX"]}, "Did you mean 'TMR'"),
        ({"scores": ["TMR", "tmr"]}, "listed twice"),
        ({"stop_rule": "DMR:0.9:2", "scores": ["TMR"]}, "not among the monitored scores"),
        ({"respond": 3}, "respond: expected a function"),
        ({"progress": "yes"}, "progress"),
    ],
)
def test_bad_parameters(tmp_path, kwargs, match):
    with pytest.raises((ConfigError, UnknownScore), match=match):
        ConvergenceMonitor(_contexts(5), out_dir=tmp_path / "m", **kwargs)


def test_bad_snapshots(tmp_path):
    cs = _contexts(5)
    mon = ConvergenceMonitor(cs, out_dir=tmp_path / "m", plot=False)
    with pytest.raises(UnknownName, match="unknown policy kind 'handcraftd'"):
        mon.snapshot("handcraftd", 1000)  # spec strings of every kind are taken
    with pytest.raises(ConfigError, match="dialogues: expected a non-negative integer"):
        mon.snapshot(_stage_policy(0), -1)
    with pytest.raises(ConfigError, match="dialogues"):
        mon.maybe_snapshot(_stage_policy(0), "1000")
    with pytest.raises(ContextSetMismatch, match="not made on the monitor's contexts"):
        mon.snapshot(_table(_stage_policy(0), _contexts(6), "other"), 1000)
    with pytest.raises(ConfigError, match="ContextSet"):
        ConvergenceMonitor([{"x": 1}], out_dir=tmp_path / "x")
    assert not (tmp_path / "m").exists()  # nothing written by failed calls


def test_core_does_not_import_toolkits():
    code = (
        "import sys, behavsim.monitor; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('policies', 'contexts', 'experiments')); print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_snapshots_of_checkpoints_compare_consecutively(tmp_path):
    """Snapshots of a checkpoint run (each table with its own policy id and file) form one run for
    ``compare(..., "consecutive")``: snapshot k against k+1, in training order."""
    cs = _contexts(30)
    mon = ConvergenceMonitor(cs, out_dir=tmp_path / "m", plot=False)
    for k in (1, 2, 3):
        t = _table(_stage_policy(k), cs, f"ts-seed0-{k * 100:06d}")
        t.policy.update(kind="checkpoint", path={"file": f"ckpt-{k}.npz", "sha256": f"sha256:{k}"}, checkpoint=k * 100)
        mon.snapshot(t, k * 100)
    tables = [ResponseTable.load(p) for p in sorted((tmp_path / "m" / "snapshots").glob("*.jsonl"))]
    assert [t.policy["path"]["policy_id"] for t in tables] == ["ts-seed0-000100", "ts-seed0-000200", "ts-seed0-000300"]
    comp = compare(tables, "consecutive", scores=["TMR"], progress=False)
    assert [tuple(r) for r in comp.means[["a", "b"]].itertuples(index=False)] == [
        ("snapshot-000100", "snapshot-000200"),
        ("snapshot-000200", "snapshot-000300"),
    ]
    assert list(comp.means["TMR"]) == [r["TMR"] for r in mon.rows]


def test_convergence_figures_keep_the_legend_off_the_points(tmp_path, figure_text):
    """The monitor's figures (every trial's TMR; one trial's lags): the legend sits beside or below
    the axes, never over a point, even a last point in the lower right corner where it used to
    sit; no two texts overlap and none is cut (matplotlib's text extents of the drawn figure)."""
    from behavsim.monitor import plot_convergence, plot_lags

    def rows(last: float, k: int) -> list[dict]:
        out = [{"dialogues": 1000 * (i + 1), "TMR": 0.95 + 0.01 * ((i + k) % 3), "DMR": 0.97} for i in range(7)]
        out[-1]["TMR"] = last  # a drop at the end: the lower right corner
        return out

    series = {f"iq-seed{k}": rows(0.62 + 0.02 * k, k) for k in range(3)} | {"ts-seed0": rows(0.6, 0)}
    with figure_text.capture_figures() as figs:
        plot_convergence(
            series,
            tmp_path / "all.png",
            score="TMR",
            threshold=0.95,
            title="Convergence of every trial (TMR, checkpoint k vs k-1)",
        )
        lag_rows = [dict(r, **{"TMR_vs_first": r["TMR"] - 0.1, "DMR_vs_first": 0.9}) for r in rows(0.6, 0)]
        plot_lags(lag_rows, ["TMR", "DMR"], tmp_path / "lags.png", threshold=0.95)
    assert len(figs) == 2
    for fig in figs:
        texts = figure_text.drawn_texts(fig)
        assert figure_text.overlapping(texts) == [] and figure_text.cut(fig, texts) == []
        renderer = fig.canvas.get_renderer()
        legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        assert legends
        for ax in fig.axes:
            for line in [ln for ln in ax.get_lines() if ln.get_transform() is ax.transData]:  # not the threshold
                xy = ax.transData.transform(line.get_xydata())
                for leg in legends:
                    box = leg.get_window_extent(renderer)
                    inside = [(x, y) for x, y in xy if box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1]
                    assert inside == [], (line.get_label(), inside)
