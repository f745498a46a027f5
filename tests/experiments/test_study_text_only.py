"""A policy that answers with text only (an end-to-end model's kind of answer) in a study: its pairs
get the text scores, and their semantic scores are marked not applicable end to end — NaN means
with an ``n_na_<score>`` count beside them in results/policies.csv (failures stay 0), a true
``semantic_na`` on its per-context rows, and the count in the report; the study's own comparisons
keep their bytes.

The policy (``_text_only.py`` beside this file) is the handcrafted policy's prompt without its act,
so against the handcrafted policy its text is the same on every context: BLEU-4 is what NLTK gives
a sentence against itself, the cosine of one embedding with itself 1."""

import dataclasses
import math
import re
import shutil

import numpy as np
import pandas as pd
import pytest
from _text_only import ID, SPEC

from behavsim import DEFAULT_SCORES, ResponseTable, compare, score_info
from experiments.study import load_config, run_study

SEMANTIC = [s for s in DEFAULT_SCORES if score_info(s).level == "semantic"]
TEXT = [s for s in DEFAULT_SCORES if score_info(s).level == "text"]


@pytest.fixture(scope="module")
def text_only(tiny_run, tmp_path_factory):
    run = tmp_path_factory.mktemp("text-only") / "run"
    run.mkdir()
    shutil.copytree(tiny_run / "train", run / "train")  # the trials as they are: nothing trained again
    cfg = dataclasses.replace(load_config("tiny"), policies=(SPEC,), report=True, robustness=())
    run_study(cfg, run, log=lambda m: None)
    return run


def _tables(run):
    rdir = run / "responses" / "ccol-all"
    tables = [ResponseTable.load(p) for p in sorted(rdir.glob("*.jsonl"))]
    return {t.id: t for t in tables}


def test_the_text_only_policy_answers_the_handcrafted_text_without_acts(text_only):
    tables = _tables(text_only)
    mine, hc = tables[ID], tables["handcrafted"]
    assert mine.context_ids == hc.context_ids and len(mine) > 0
    assert all(a is None for a in mine.acts) and all(e is None for e in mine.errors)  # text only, no failure
    assert mine.prompts == hc.prompts and all(isinstance(p, str) and p for p in hc.prompts)


def test_its_pairs_have_text_scores_and_semantic_scores_not_applicable(text_only):
    cfg = load_config("tiny")
    assert set(SEMANTIC) == {"TMR", "DMR", "CER", "CMR"} and set(SEMANTIC + TEXT) == set(cfg.scores)
    m = pd.read_csv(text_only / "results" / "policies.csv")
    n_base = len(cfg.rewards) * len(cfg.seeds) + 1  # last checkpoints and handcrafted
    assert len(m) == n_base and set(m["a"]) == {ID}
    hc = _tables(text_only)["handcrafted"]
    n = len(hc)
    for _, row in m.iterrows():  # against every base policy: no act on its side, on any context
        assert row["n"] == n
        for s in SEMANTIC:
            assert math.isnan(row[s]) and math.isnan(row[f"{s}_lo"]) and math.isnan(row[f"{s}_hi"]), (row["b"], s)
            assert row[f"n_na_{s}"] == n and row[f"n_missing_{s}"] == 0, (row["b"], s)
        for s in TEXT:
            assert not math.isnan(row[s]) and row[f"n_missing_{s}"] == 0, (row["b"], s)
            assert f"n_na_{s}" not in m.columns  # text scores apply to text
    same = m[m["b"] == "handcrafted"].iloc[0]
    for s in TEXT:  # the same text on every context: each text score 1 there (identical texts score 1)
        assert same[s] == 1.0, s


def _nltk_bleu4(p, q):
    """BLEU-4 of one prompt pair by NLTK: both directions averaged, tokens as behavsim takes them
    (lower case, split on white space), smoothing method1 with epsilon 0.1; identical texts 1."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    if p == q:
        return 1.0
    smooth = SmoothingFunction(epsilon=0.1).method1
    x, y = p.lower().split(), q.lower().split()
    return (sentence_bleu([y], x, smoothing_function=smooth) + sentence_bleu([x], y, smoothing_function=smooth)) / 2


def test_its_text_scores_against_each_trial_are_the_handcrafted_policys(text_only):
    """Its text is the handcrafted policy's: against a trial's last checkpoint, BLEU-4 is NLTK's
    on the two tables' prompts, and every text score is the handcrafted policy's against that
    trial (computed here from the two tables)."""
    m = pd.read_csv(text_only / "results" / "policies.csv").set_index("b")
    tables = _tables(text_only)
    hc = tables["handcrafted"]
    trials = [b for b in m.index if b != "handcrafted"]
    assert len(trials) == 4
    for b in trials:
        want = np.mean([_nltk_bleu4(p, q) for p, q in zip(hc.prompts, tables[b].prompts)])
        assert m.loc[b, "BLEU4"] == pytest.approx(want, abs=1e-12), b
        assert m.loc[b, "BLEU4"] < 1  # the trials say some acts otherwise (their own generator seeds)
    comp = compare([hc, *(tables[b] for b in trials)], [("handcrafted", b) for b in trials], scores=TEXT)
    want = comp.means.set_index("b")
    for b in trials:
        for s in TEXT:
            assert m.loc[b, s] == pytest.approx(want.loc[b, s], abs=1e-12), (b, s)


def test_the_per_context_rows_mark_its_contexts(text_only):
    per = pd.read_csv(text_only / "results" / "per_context" / "all.csv", low_memory=False)
    assert per["semantic_na"].dtype == bool  # true or false on every row, never blank
    mine = per[(per["kind"] == "policies") & (per["a"] == ID)]
    n = len(_tables(text_only)["handcrafted"])
    assert len(mine) == 5 * n  # 4 trials and handcrafted
    assert mine["semantic_na"].all()
    assert mine[SEMANTIC].isna().all().all() and mine[TEXT].notna().all().all()
    others = per[per["kind"] != "policies"]
    assert len(others) > 0 and not others["semantic_na"].any()  # every other pair has acts on both sides
    assert others[SEMANTIC].notna().all().all()


def test_the_studys_own_comparisons_keep_their_bytes(text_only, tiny_run):
    for name in ("convergence.csv", "seeds.csv", "rewards.csv", "table1.csv"):
        assert (text_only / "results" / name).read_bytes() == (tiny_run / "results" / name).read_bytes(), name


def test_the_report_shows_the_not_applicable_count(text_only):
    """Beside the means of each row, how many contexts the semantic scores do not apply to (their
    means read n/a), and a note naming the pairs."""
    html = (text_only / "report.html").read_text(encoding="utf-8")
    section = html[html.index('id="policies"') :]
    section = section[: section.index("</section>")]
    n = len(_tables(text_only)["handcrafted"])
    assert "<th>semantic n/a</th>" in section
    rows = re.findall(r'<tr title="([^"]*)">(.*?)</tr>', section)
    assert len(rows) == 5 and all(title.startswith(f"{ID} vs ") for title, _ in rows)
    for _, row in rows:
        assert f'<td class="key">{n}</td><td class="num">{n}</td>' in row  # semantic n/a, then n
        assert row.count('<span class="v">n/a</span>') == len(SEMANTIC)  # their means: not applicable
        assert row.count('<span class="v">') == len(SEMANTIC) + len(TEXT)
    assert f"{ID} vs handcrafted: {n} of {n} contexts" in section
