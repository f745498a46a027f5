"""Speed of GP-SARSA training in the built-in environment, and the projected paper grid.

    python benchmarks/training.py                 # ~1 minute
    python benchmarks/training.py --long 10000    # also continue one trial to 10,000 dialogues
    python benchmarks/training.py --tables runs/paper   # markdown tables of a finished run

Measures, in one process with BLAS limited to one thread (as the training runner does):

1. GP-SARSA training dialogues/s over the first ``--dialogues`` (default 1,000) dialogues,
   environment included, and greedy evaluation dialogues/s;
2. optionally (``--long N``) the same trial continued to N dialogues, speed per block;
3. the cost of one exploring decision, one greedy decision and one learning step as a
   function of the dictionary size m (dictionaries inflated with random belief vectors, which
   the real environment never needs: it stays at a few hundred points) and the dialogues/s
   that this implies with the measured environment cost — an extrapolation, said so;
4. the handcrafted policy's dialogues/s (environment + rules);
5. the projected wall time of the paper's grid (2 rewards × 3 seeds × 40,000 training
   dialogues + 40 × 100 evaluation dialogues per trial) on ``--cores`` cores (default 2).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _train(policy, env, reward, start: int, stop: int, seed: int = 0) -> tuple[float, int]:
    from policies.training.evaluation import run_dialogue, train_dialogue_seed

    turns = 0
    t0 = time.perf_counter()
    for i in range(start, stop):
        vecs, acts, total, info = run_dialogue(env, policy, train_dialogue_seed(seed, i), explore=True)
        policy.learner.learn_episode(np.asarray(vecs), acts, total + reward.final_reward(info))
        turns += len(acts)
    return time.perf_counter() - t0, turns


def _evaluate(policy, env, n: int) -> tuple[float, int]:
    from policies.training.evaluation import eval_dialogue_seed, run_dialogue

    turns = 0
    t0 = time.perf_counter()
    for j in range(n):
        _, acts, _, info = run_dialogue(env, policy, eval_dialogue_seed(j), explore=False)
        turns += int(info["turns"])
    return time.perf_counter() - t0, turns


def _inflate(learner, m_target: int, rng: np.random.Generator) -> None:
    """Grow the dictionary with random (sparse, sorted-looking) belief vectors."""
    while learner.dictionary_size < m_target:
        T = 5
        B = rng.random((T, learner.dim)) * (rng.random((T, learner.dim)) < 0.2)
        A = rng.integers(0, learner.n_actions, size=T).tolist()
        learner.learn_episode(B, A, float(rng.normal(10, 5)))


def _cost_vs_size(sizes, dim: int, n_actions: int, reps: int = 300) -> list[dict]:
    from policies.gp.sarsa import GPSarsa

    rng = np.random.default_rng(0)
    out = []
    learner = GPSarsa(n_actions, dim, seed=0)
    mask = np.ones(n_actions, dtype=bool)
    mask[[13, 15]] = False  # repeat, restart
    for m in sizes:
        _inflate(learner, m, rng)
        bs = rng.random((reps, dim)) * (rng.random((reps, dim)) < 0.2)
        t0 = time.perf_counter()
        for b in bs:
            learner.select(b, mask, explore=True)
        t_explore = (time.perf_counter() - t0) / reps
        t0 = time.perf_counter()
        for b in bs:
            learner.select(b, mask, explore=False)
        t_greedy = (time.perf_counter() - t0) / reps
        eps = [
            (rng.random((5, dim)) * (rng.random((5, dim)) < 0.2), rng.integers(0, n_actions, 5).tolist())
            for _ in range(reps // 5)
        ]
        # time learning on a copy so the measured sizes stay put
        from policies.gp.sarsa import GPSarsa as _G

        probe = _G.from_state(*learner.get_state())
        t0 = time.perf_counter()
        for B, A in eps:
            probe.learn_episode(B, A, 10.0)
        t_learn_step = (time.perf_counter() - t0) / (len(eps) * 5)
        out.append(
            {
                "m": learner.dictionary_size,
                "explore_decision_s": t_explore,
                "greedy_decision_s": t_greedy,
                "learn_step_s": t_learn_step,
            }
        )
    return out


# the paper's Table 1 (R_TS, R_IQ) for comparison
PAPER_TABLE1 = {
    1000: (0.98, 0.99, 3.78, 3.85, 4.46, 4.44),
    5000: (0.99, 0.98, 3.78, 3.81, 4.41, 4.51),
    10000: (1.00, 0.98, 3.81, 3.80, 4.32, 4.47),
    15000: (1.00, 0.99, 3.79, 3.81, 4.36, 4.43),
    20000: (1.00, 0.97, 3.86, 3.73, 4.15, 4.62),
    25000: (1.00, 0.98, 3.77, 3.85, 4.37, 4.30),
    30000: (1.00, 0.96, 3.71, 3.87, 4.49, 4.41),
    35000: (0.99, 0.96, 3.73, 3.84, 4.42, 4.46),
    40000: (1.00, 0.94, 3.77, 3.77, 4.35, 4.75),
}


def tables(run_dir: str) -> str:
    """Markdown tables of a run folder (as in docs/training.md): per checkpoint the TSR of every
    seed and the means; Table 1 beside the paper's values when the checkpoints exist."""
    from pathlib import Path

    from policies.training.evaluation import table1
    from policies.training.files import read_metrics

    rows = read_metrics(Path(run_dir) / "metrics.csv")
    out = [
        "| dialogues | TSR R_TS per seed | mean | TSR R_IQ per seed | mean | AIQ R_TS | AIQ R_IQ | ADL R_TS | ADL R_IQ |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    t1 = {(r["dialogues"], r["reward"]): r for r in table1(rows)}
    for n in sorted({r["dialogues"] for r in rows}):
        per = {
            rw: " / ".join(
                f"{r['tsr']:.2f}"
                for r in sorted(rows, key=lambda x: x["seed"])
                if r["reward"] == rw and r["dialogues"] == n
            )
            for rw in ("ts", "iq")
        }
        ts, iq = t1.get((n, "ts")), t1.get((n, "iq"))
        if ts is None or iq is None:
            continue
        out.append(
            f"| {n:,} | {per['ts']} | {ts['tsr']:.3f} | {per['iq']} | {iq['tsr']:.3f} | {ts['aiq']:.2f} | "
            f"{iq['aiq']:.2f} | {ts['adl']:.2f} | {iq['adl']:.2f} |"
        )
    if any((n, "ts") in t1 and (n, "iq") in t1 for n in PAPER_TABLE1):
        out += [
            "",
            "| training dialogues | TSR R_TS | TSR R_IQ | AIQ R_TS | AIQ R_IQ | ADL R_TS | ADL R_IQ | paper TSR | paper AIQ | paper ADL |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for n, p in PAPER_TABLE1.items():
            ts, iq = t1.get((n, "ts")), t1.get((n, "iq"))
            if ts is None or iq is None:
                continue
            out.append(
                f"| {n:,} | {ts['tsr']:.2f} | {iq['tsr']:.2f} | {ts['aiq']:.2f} | {iq['aiq']:.2f} | {ts['adl']:.2f} | "
                f"{iq['adl']:.2f} | {p[0]:.2f} / {p[1]:.2f} | {p[2]:.2f} / {p[3]:.2f} | {p[4]:.2f} / {p[5]:.2f} |"
            )
    for rw in ("ts", "iq"):
        xs = [r["tsr"] for r in rows if r["reward"] == rw]
        if xs:
            out.append(
                f"\nmin TSR {rw}: {min(xs):.2f} over {len(xs)} checkpoints; final dictionary sizes "
                f"{[r['dictionary_size'] for r in rows if r['reward'] == rw and r['dialogues'] == max(x['dialogues'] for x in rows)]}"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialogues", type=int, default=1000, help="first training dialogues timed (default 1000)")
    ap.add_argument("--long", type=int, default=0, metavar="N", help="continue the trial to N dialogues (default: no)")
    ap.add_argument(
        "--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000], help="dictionary sizes for the cost curve"
    )
    ap.add_argument("--cores", type=int, default=2, help="cores for the projection (default 2)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    ap.add_argument("--tables", metavar="RUN_DIR", help="only print the markdown tables of a finished run folder")
    args = ap.parse_args(argv)
    if args.tables:
        print(tables(args.tables))
        return 0

    from threadpoolctl import threadpool_limits

    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.simulation.env import DialogueEnv
    from policies.simulation.rewards import get_reward
    from policies.training.train import TrainConfig, learner_kind

    threadpool_limits(1)
    res: dict = {}
    env = DialogueEnv()
    reward = get_reward("ts")
    policy = learner_kind("gp").build(TrainConfig(), 0)  # the trainer's fresh GP-SARSA policy

    dt, turns = _train(policy, env, reward, 0, args.dialogues)
    res["gp_first"] = {
        "dialogues": args.dialogues,
        "seconds": dt,
        "dialogues_per_s": args.dialogues / dt,
        "turns_per_dialogue": turns / args.dialogues,
        "dictionary": policy.learner.dictionary_size,
    }
    print(
        f"GP-SARSA training, dialogues 1-{args.dialogues}: {args.dialogues / dt:.0f} dialogues/s "
        f"({turns / args.dialogues:.1f} turns/dialogue, dictionary {policy.learner.dictionary_size})"
    )
    dt_e, _ = _evaluate(policy, env, 200)
    res["gp_eval_dialogues_per_s"] = 200 / dt_e
    print(f"GP-SARSA greedy evaluation: {200 / dt_e:.0f} dialogues/s")

    blocks = []
    done = args.dialogues
    while done < args.long:
        stop = min(args.long, done + 2000)
        dt, turns = _train(policy, env, reward, done, stop)
        blocks.append(
            {
                "from": done,
                "to": stop,
                "dialogues_per_s": (stop - done) / dt,
                "dictionary": policy.learner.dictionary_size,
            }
        )
        print(
            f"  dialogues {done + 1}-{stop}: {(stop - done) / dt:.0f} dialogues/s, dictionary "
            f"{policy.learner.dictionary_size}"
        )
        done = stop
    res["gp_long"] = blocks

    hc = HandcraftedPolicy(nlg_seed=None)
    dt_h, turns_h = _evaluate(hc, env, 1000)
    res["handcrafted_dialogues_per_s"] = 1000 / dt_h
    print(f"handcrafted policy: {1000 / dt_h:.0f} dialogues/s ({turns_h / 1000:.1f} turns/dialogue)")

    # environment cost per turn, from a run of the handcrafted policy (rules are cheap)
    env_turn_s = dt_h / turns_h
    T = res["gp_first"]["turns_per_dialogue"]
    print(
        f"\nDecision and learning cost vs dictionary size m (random inflated dictionaries; "
        f"projection = {T:.1f} turns x (env {env_turn_s * 1e3:.2f} ms + explore + learn)):"
    )
    curve = _cost_vs_size(args.sizes, policy.learner.dim, policy.learner.n_actions)
    for c in curve:
        per_dialogue = T * (env_turn_s + c["explore_decision_s"] + c["learn_step_s"])
        c["projected_train_dialogues_per_s"] = 1.0 / per_dialogue
        print(
            f"  m={c['m']:>5}: explore {c['explore_decision_s'] * 1e6:7.0f} us, greedy {c['greedy_decision_s'] * 1e6:6.0f} us, "
            f"learn step {c['learn_step_s'] * 1e6:7.0f} us -> ~{1.0 / per_dialogue:.0f} training dialogues/s"
        )
    res["cost_vs_dictionary"] = curve

    # projection of the paper grid
    rate_train = blocks[-1]["dialogues_per_s"] if blocks else res["gp_first"]["dialogues_per_s"]
    rate_eval = res["gp_eval_dialogues_per_s"]
    trials, n_train, n_eval = 6, 40_000, 40 * 100
    cpu_s = trials * (n_train / rate_train + n_eval / rate_eval)
    wall = cpu_s / args.cores
    res["paper_grid"] = {
        "cpu_seconds": cpu_s,
        "wall_seconds_on_cores": wall,
        "cores": args.cores,
        "train_rate_used": rate_train,
    }
    print(
        f"\nPaper grid (6 trials x 40,000 training + 4,000 evaluation dialogues) at {rate_train:.0f} training "
        f"dialogues/s per core: {cpu_s / 60:.1f} CPU-minutes, ~{wall / 60:.1f} min wall on {args.cores} cores "
        f"(PyDial: ~14 CPU-hours). Measured directly: `behavsim train --rewards ts iq --seeds 0 1 2 -o DIR`."
    )
    if args.json:
        print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
