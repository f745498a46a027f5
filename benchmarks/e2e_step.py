"""One training step of behavsim's end-to-end model: the training forward against a padded batch
through ``transformers``' own forward with a dense 4-D attention mask (the baseline), in the same
run, on the same rows.

    python benchmarks/e2e_step.py                 # 400 teacher dialogues, 200 steps per round
    python benchmarks/e2e_step.py --steps 300 --rounds 3

Both arms train a fresh model from the same seed with the default settings (2 threads, fused
AdamW), alternating round by round so that the machine's drift falls on both; each prints its
milliseconds per step, the candidate's ratio to the baseline, and the first step's losses (equal
to about 1e-6: the same computation in another order of floating-point operations).
"""

from __future__ import annotations

import argparse
import time


def _dense_mask(torch, row, width: int):
    """The baseline's mask: a row's attention as an additive (width × width) mask."""
    n = len(row.ids)
    idx = torch.arange(width)
    blk = torch.full((width,), -2, dtype=torch.long)
    blk[:n] = torch.tensor(row.block)
    seen_k = torch.tensor([*row.seen, width], dtype=torch.long)
    seen = torch.where(blk >= 0, seen_k[blk.clamp(min=0, max=len(row.seen))], width)
    causal = idx[None, :] <= idx[:, None]
    allow = (blk[:, None] == blk[None, :]) & causal & (blk[:, None] != -2)
    allow |= (blk[:, None] >= 0) & (blk[None, :] == -1) & (idx[None, :] < seen[:, None])
    allow |= torch.eye(width, dtype=torch.bool)
    return torch.where(allow, 0.0, torch.finfo(torch.float32).min)


def _padded_forward(torch, model, rows, pad: int):
    """The baseline: main rows and chat rows each as a padded batch through the model's forward."""
    logits, targets = [], []
    for group in ([r for r in rows if not r.chat], [r for r in rows if r.chat]):
        if not group:
            continue
        width = max(len(r.ids) for r in group)
        x = torch.full((len(group), width), pad, dtype=torch.long)
        p = torch.zeros((len(group), width), dtype=torch.long)
        for i, r in enumerate(group):
            x[i, : len(r.ids)] = torch.tensor(r.ids)
            p[i, : len(r.pos)] = torch.tensor(r.pos)
        mask = torch.stack([_dense_mask(torch, r, width) for r in group])[:, None]
        hidden = model.transformer(input_ids=x, attention_mask=mask, position_ids=p).last_hidden_state
        src = torch.tensor([[i, j] for i, r in enumerate(group) for j, _ in r.targets], dtype=torch.long)
        logits.append(model.lm_head(hidden[src[:, 0], src[:, 1]]))
        targets.append(torch.tensor([t for r in group for _, t in r.targets], dtype=torch.long))
    return torch.cat(logits), torch.cat(targets)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialogues", type=int, default=400)
    ap.add_argument("--steps", type=int, default=200, help="steps per arm and round")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    from policies.e2e import _train as T
    from policies.e2e._data import play_teacher
    from policies.simulation.domain import resolve_domain

    config = T.E2EConfig(dialogues=args.dialogues)
    domain = resolve_domain(None)
    cs, table = play_teacher(
        "handcrafted", dialogues=args.dialogues, seed=0, domain=domain, env_options={"max_turns": 25}
    )
    texts = [T._texts(cs, table, domain, idx) for idx in T._by_dialogue(cs, args.dialogues)]
    tokenizer = T.build_tokenizer((x for t in texts for x in T._all_texts(t)), domain)
    rows, _ = T._rows(config, tokenizer, texts)
    steps = min(args.steps, len(rows) // config.batch_dialogues)
    arms = {
        "padded batch, dense mask (baseline)": lambda torch, model, rs: _padded_forward(
            torch, model, rs, tokenizer.pad_token_id
        ),
        "unpadded, attention by part": T._forward,
    }
    times: dict[str, list[float]] = {name: [] for name in arms}
    first: dict[str, float] = {}
    print(
        f"{args.dialogues} teacher dialogues, {len(cs)} contexts; {steps} steps per arm and round, {config.threads} threads"
    )
    with T._torch_settings(config.threads) as torch:
        for _ in range(args.rounds):
            for name, forward in arms.items():
                model = T._new_model(torch, config, tokenizer)
                opt = T._optimizer(torch, model, config)
                model.train()
                t0 = time.perf_counter()
                for step in range(steps):
                    chosen = rows[step * config.batch_dialogues : (step + 1) * config.batch_dialogues]
                    logits, targets = forward(torch, model, [r for d in chosen for r in d])
                    loss = torch.nn.functional.cross_entropy(logits, targets)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    first.setdefault(name, float(loss.detach()))
                times[name].append((time.perf_counter() - t0) / steps * 1000)
    base = sum(times[next(iter(arms))])
    for name, ts in times.items():
        per = ", ".join(f"{t:.1f}" for t in ts)
        print(
            f"  {name:38s} {sum(ts) / len(ts):6.1f} ms/step (rounds: {per}); ratio to baseline {sum(ts) / base:.2f}; first loss {first[name]:.6f}"
        )


if __name__ == "__main__":
    main()
