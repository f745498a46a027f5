"""Speed of the built-in dialogue environment (user + tracker + action mapping + DB lookups).

Runs the handcrafted policy for N seeded dialogues (default 2,000) in one process and prints
turns per second, the environment's own cost per turn (policy time subtracted), and the cost
of the GP state vector and of the action mask.

    python benchmarks/environment.py [--dialogues 2000] [--hello] [--error-rate 0.0]
"""

from __future__ import annotations

import argparse
import platform
import time

from policies.handcrafted.policy import HandcraftedPolicy
from policies.simulation.actions import action_mask
from policies.simulation.env import DialogueEnv
from policies.simulation.features import belief_vector
from policies.simulation.tracker import ErrorModel


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialogues", type=int, default=2000)
    ap.add_argument("--hello", action="store_true", help="the system opens with hello()")
    ap.add_argument("--error-rate", type=float, default=0.0)
    ap.add_argument("--nbest", type=int, default=1)
    args = ap.parse_args(argv)

    em = ErrorModel(args.error_rate, args.nbest) if args.error_rate or args.nbest > 1 else None
    env = DialogueEnv(hello=args.hello, error_model=em)
    policy = HandcraftedPolicy(env.domain, nlg_seed=None)
    turns = successes = 0
    policy_s = 0.0
    beliefs = []
    t0 = time.perf_counter()
    for seed in range(args.dialogues):
        belief, info = env.reset(seed=seed)
        done = False
        while not done:
            if len(beliefs) < 5000:
                beliefs.append(belief)
            t1 = time.perf_counter()
            a = policy.summary_action(belief)
            policy_s += time.perf_counter() - t1
            belief, _, term, trunc, info = env.step(a)
            turns += 1
            done = term or trunc
        successes += info["success"]
    total = time.perf_counter() - t0
    t1 = time.perf_counter()
    for b in beliefs:
        belief_vector(b, env.domain)
    vec_us = 1e6 * (time.perf_counter() - t1) / len(beliefs)
    t1 = time.perf_counter()
    for b in beliefs:
        action_mask(b, env.domain)
    mask_us = 1e6 * (time.perf_counter() - t1) / len(beliefs)
    res = {
        "dialogues": args.dialogues,
        "turns": turns,
        "success_rate": successes / args.dialogues,
        "avg_turns": turns / args.dialogues,
        "turns_per_s": turns / total,
        "dialogues_per_s": args.dialogues / total,
        "env_us_per_turn": 1e6 * (total - policy_s) / turns,
        "belief_vector_us": vec_us,
        "action_mask_us": mask_us,
    }
    print(
        f"behavsim environment benchmark ({platform.python_implementation()} "
        f"{platform.python_version()}, {platform.machine()}, one process)"
    )
    print(
        f"  {res['dialogues']} dialogues, {turns} turns, handcrafted success "
        f"{res['success_rate']:.3f}, {res['avg_turns']:.2f} turns/dialogue"
    )
    print(
        f"  {res['turns_per_s']:,.0f} turns/s ({res['dialogues_per_s']:,.0f} dialogues/s) with the handcrafted policy"
    )
    print(
        f"  environment alone: {res['env_us_per_turn']:.0f} us/turn (user + tracker + mapping + "
        f"DB + NLG, reset amortised)"
    )
    print(f"  belief_vector: {vec_us:.1f} us, action_mask: {mask_us:.1f} us")
    return res


if __name__ == "__main__":
    main()
