"""Environment 1's statistics against PyDial3's own simulation (issue 9).

1,000 dialogues of PyDial's handcrafted policy (``policytype = hdc``) in PyDial's own
Environment 1 (``Simulate.SimulationSystem`` driven by ``_pydial_simulate.py`` in two
subprocesses, on a temporary copy of the PyDial root, with a config derived from
``env1-configs/env1-gp-CR.cfg``), and 5,000 dialogues of behavsim's handcrafted policy in
behavsim's ``DialogueEnv(resolve_domain("camrestaurants"), user_config="env1")``.

Turns are counted as PyDial counts them: one per user act the system answers (PyDial's
evaluator counts each ``continue_call``; the agent's opening ``hello()`` is turn 0 and not
counted; the closing ``bye()`` answering the user's ``bye()`` is counted; at most 25). Our
environment is run as PyDial's loop runs (``_pydial_simulate.PYDIAL_LOOP``): PyDial's
single-domain agent always opens with ``hello()``, so ``hello=True``; our opening exchange
counts as turn 1, so ``max_turns=26`` and ``info["turns"] - 1`` is PyDial's count.

Criterion (an equivalence test, stated once): the environments agree on a metric when the
95% confidence interval of the difference PyDial − ours lies inside a margin
— success rates: Newcombe's hybrid score interval (built from the two Wilson
intervals; sound at rates near 100%) inside ±2 points; mean turns: Welch's t interval
(unequal variances) inside ±0.5 turns (≈ 8% of the ≈ 6-turn mean). Agreement has to be shown,
not merely "no difference found": a test of difference (interval of the difference contains
0, or the two 95% intervals overlap) passes more easily the *smaller* the samples are. The
weaker statements are in the failure message. Why a margin and not "the intervals overlap":
pooled over 5,000 PyDial and 13,000 of our dialogues PyDial's policy averages ≈ 5.96 turns and
ours ≈ 6.12 (≈ 5.83 with ``hello=False``) at ≈ 100% success on both sides — a ≈ 0.15-turn gap
that makes the overlap test pass or fail with the seeds (with the seeds here it fails: PyDial
5.917 [5.787, 6.047], ours 6.187 [6.126, 6.247]). The gap looks like the environment's, not
the policies': PyDial's own handcrafted policy asked through the ``pydial:`` adapter inside our
environment (``hello=True``) also averages ≈ 6.16 turns (2,000 dialogues; ``benchmarks/
pydial_env.py --adapter``). The seeds are fixed
(PyDial's processes also with ``PYTHONHASHSEED=0``: PyDial's dialogues vary with string
hashing), so the outcome is reproducible. ``test_known_bad_environment_fails`` shows the
criterion can fail: against the same PyDial sample it rejects our environment with the default
(non-Environment-1) user, ≈ 0.55 turns shorter, and with a turn limit of 7 instead of 25,
which lowers the success rate.

Runtime: PyDial simulates ≈ 9–12 dialogues/s per process, so ≈ 50–60 s on 2 free cores for
the 1,000 PyDial dialogues, ≈ 3.5–4 min on a loaded machine; our 7,000 dialogues take ≈ 5–20 s. Skipped, saying why, only when the
PyDial3 root (``../shared/pydial3`` beside the repository, or ``$BEHAVSIM_SHARED/pydial3``) is
absent.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
HELPER = Path(__file__).resolve().parent / "_pydial_simulate.py"
N_PYDIAL = 1000
N_OURS = 5000  # cheap (≈ 5 s); narrows our side of the interval
N_BAD = 1000
PYDIAL_SEED = 1
OURS_SEED = 0


def _load_helper():
    spec = importlib.util.spec_from_file_location("_pydial_simulate", HELPER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


sim = _load_helper()


# ---------------------------------------------------------------------- criterion
def newcombe_diff(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """95% interval of p1 − p2 (Newcombe 1998, method 10: hybrid of the Wilson intervals)."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = sim.wilson(k1, n1)
    l2, u2 = sim.wilson(k2, n2)
    d = p1 - p2
    return d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)


def welch_diff(x: list[float], y: list[float]) -> tuple[float, float]:
    """95% interval of mean(x) − mean(y), Welch's t (unequal variances)."""
    from scipy import stats

    n1, n2 = len(x), len(y)
    m1, m2 = sum(x) / n1, sum(y) / n2
    v1 = sum((a - m1) ** 2 for a in x) / (n1 - 1) / n1
    v2 = sum((b - m2) ** 2 for b in y) / (n2 - 1) / n2
    se = math.sqrt(v1 + v2)
    if se == 0.0:
        return m1 - m2, m1 - m2
    df = (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))
    half = float(stats.t.ppf(0.975, df)) * se
    return m1 - m2 - half, m1 - m2 + half


MARGIN_SUCCESS = 0.02  # success-rate points, as a fraction
MARGIN_TURNS = 0.5  # turns


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def disagreements(theirs: list[dict], ours: list[dict]) -> list[str]:
    """The metrics on which the two samples do not agree under the criterion (module doc)."""
    out = []
    k1, n1 = sum(r["success"] for r in theirs), len(theirs)
    k2, n2 = sum(r["success"] for r in ours), len(ours)
    lo, hi = newcombe_diff(k1, n1, k2, n2)
    if not -MARGIN_SUCCESS <= lo <= hi <= MARGIN_SUCCESS:
        w1, w2 = sim.wilson(k1, n1), sim.wilson(k2, n2)
        out.append(
            f"success {k1}/{n1} [{w1[0]:.4f}, {w1[1]:.4f}] (PyDial) vs {k2}/{n2} [{w2[0]:.4f}, {w2[1]:.4f}] "
            f"(ours): 95% CI of the difference [{lo:.4f}, {hi:.4f}] not inside ±{MARGIN_SUCCESS} "
            f"(intervals {'overlap' if overlap(w1, w2) else 'do not overlap'})"
        )
    t1, t2 = [r["turns"] for r in theirs], [r["turns"] for r in ours]
    lo, hi = welch_diff(t1, t2)
    if not -MARGIN_TURNS <= lo <= hi <= MARGIN_TURNS:
        m1, m2 = sim.mean_ci(t1), sim.mean_ci(t2)
        out.append(
            f"mean turns {m1[0]:.3f} [{m1[1]:.3f}, {m1[2]:.3f}] (PyDial) vs {m2[0]:.3f} [{m2[1]:.3f}, {m2[2]:.3f}] "
            f"(ours): 95% CI of the difference [{lo:.3f}, {hi:.3f}] not inside ±{MARGIN_TURNS} "
            f"(intervals {'overlap' if overlap(m1[1:], m2[1:]) else 'do not overlap'})"
        )
    return out


def test_criterion_on_known_samples():
    """The criterion itself: equal samples agree, 100% vs 100% agrees, shifts beyond the margins do not."""
    a = [{"success": True, "turns": t} for t in (4, 6, 8) * 334]  # mean 6, sd ≈ 1.6
    assert disagreements(a, a) == []
    lo, hi = newcombe_diff(1000, 1000, 1000, 1000)
    assert lo < 0 < hi and hi < 0.004
    assert disagreements(a, [{"success": i % 100 != 0, "turns": 6} for i in range(1000)]) == []  # 99%
    assert len(disagreements(a, [{"success": i % 40 != 0, "turns": 6} for i in range(1000)])) == 1  # 97.5%
    assert disagreements(a, [{"success": True, "turns": t + 0.2} for t in (4, 6, 8) * 334]) == []
    shifted = disagreements(a, [{"success": True, "turns": t + 0.5} for t in (4, 6, 8) * 334])
    assert len(shifted) == 1 and shifted[0].startswith("mean turns")
    assert len(disagreements(a, [{"success": i % 10 != 0, "turns": r["turns"] + 1} for i, r in enumerate(a)])) == 2


# ---------------------------------------------------------------------- the samples
@pytest.fixture(scope="module")
def pydial_rows(tmp_path_factory, pydial_root):
    root = tmp_path_factory.mktemp("pydial-statistics") / "pydial3"
    shutil.copytree(pydial_root, root, ignore=shutil.ignore_patterns(".git", "_bslogs"))
    config = sim.write_config(root)
    rows, _ = sim.run_pydial(root, config, N_PYDIAL, PYDIAL_SEED, workers=2)
    return rows


def test_turns_counted_like_pydial(pydial_rows):
    """PyDial's evaluator reward is −1 per counted turn plus 20 on success: the turns we read are those."""
    for r in pydial_rows:
        assert r["reward"] == 20 * r["success"] - r["turns"]
        assert 1 <= r["turns"] <= 25
    ours, _ = sim.run_ours(200, OURS_SEED)
    assert all(1 <= r["turns"] <= 25 for r in ours)


def test_success_and_turns_agree_with_pydial(pydial_rows):
    ours, _ = sim.run_ours(N_OURS, OURS_SEED)
    assert len(pydial_rows) == N_PYDIAL and len(ours) == N_OURS
    assert disagreements(pydial_rows, ours) == []


def test_our_default_environment_agrees_with_pydial(pydial_rows):
    """Our default Environment 1 (``DialogueEnv()``: the user speaks first, ``hello=False``; turns
    counted alike) against PyDial's: the equivalence criterion, and the 95% intervals of success
    and of mean turns overlap (the issue's wording; with these seeds: PyDial 5.917 [5.787, 6.047],
    ours about 5.83)."""
    ours, _ = sim.run_ours(N_OURS, OURS_SEED, hello=False, max_turns=25)
    assert disagreements(pydial_rows, ours) == []
    k1, k2 = sum(r["success"] for r in pydial_rows), sum(r["success"] for r in ours)
    assert overlap(sim.wilson(k1, len(pydial_rows)), sim.wilson(k2, len(ours)))
    m1, m2 = sim.mean_ci([r["turns"] for r in pydial_rows]), sim.mean_ci([r["turns"] for r in ours])
    assert overlap(m1[1:], m2[1:]), (m1, m2)


def test_known_bad_environment_fails(pydial_rows):
    """Known-bad variants of our environment must be told apart from PyDial's Environment 1 by
    the same criterion (1,000 dialogues each: enough to reject them)."""
    bad, _ = sim.run_ours(N_BAD, OURS_SEED, user_config="legacy")  # behavsim 0.1's user: patience 5, its ranges
    problems = disagreements(pydial_rows, bad)
    assert any(p.startswith("mean turns") for p in problems), problems
    bad, _ = sim.run_ours(N_BAD, OURS_SEED, max_turns=8)  # 7 counted turns instead of 25
    problems = disagreements(pydial_rows, bad)
    assert any(p.startswith("success") for p in problems), problems
