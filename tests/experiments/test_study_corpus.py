"""The study against people (experiments/corpus.py): a tiny study on a small corpus written here
in ConvLab-3's unified format, end to end — the human wizard against the handcrafted policy, the
GP-SARSA trials' last checkpoints and an extra policy (the wizard's own table replayed as
``recorded:FILE``, which must score 1 against it) — and the one-line errors of a missing or bad
corpus."""

import json

import pandas as pd
import pytest

from behavsim import ConfigError, ResponseTable
from behavsim.cli import main as cli_main
from experiments.corpus import import_corpus
from experiments.study import load_config, run_study

# Two dialogues: the first as in docs/contexts.md (a value off the ontology, a bare nooffer beside
# a request, a system turn without acts); the second asks for the area, then the food, then says
# goodbye (a `general` act).
_CORPUS = [
    {
        "dataset": "lab",
        "data_split": "test",
        "dialogue_id": "lab-test-0",
        "domains": ["restaurant"],
        "turns": [
            {
                "speaker": "user",
                "utterance": "Cheap Klingon food in the north, please.",
                "dialogue_acts": {
                    "binary": [],
                    "categorical": [
                        {"intent": "inform", "domain": "restaurant", "slot": "price range", "value": "cheap"},
                        {"intent": "inform", "domain": "restaurant", "slot": "area", "value": "north"},
                    ],
                    "non-categorical": [
                        {"intent": "inform", "domain": "restaurant", "slot": "food", "value": "Klingon"}
                    ],
                },
                "state": {"restaurant": {"price range": "cheap", "area": "north", "food": "klingon"}},
            },
            {
                "speaker": "system",
                "utterance": "There is no Klingon place. Would Indian do?",
                "dialogue_acts": {
                    "binary": [
                        {"intent": "nooffer", "domain": "restaurant", "slot": ""},
                        {"intent": "request", "domain": "restaurant", "slot": "food"},
                    ]
                },
            },
            {
                "speaker": "user",
                "utterance": "Indian is fine. What is the address?",
                "dialogue_acts": {
                    "binary": [{"intent": "request", "domain": "restaurant", "slot": "address"}],
                    "non-categorical": [
                        {"intent": "inform", "domain": "restaurant", "slot": "food", "value": "indian"}
                    ],
                },
                "state": {"restaurant": {"price range": "cheap", "area": "north", "food": "indian"}},
            },
            {"speaker": "system", "utterance": "Royal Spice is at Victoria Avenue Chesterton."},
        ],
    },
    {
        "dataset": "lab",
        "data_split": "test",
        "dialogue_id": "lab-test-1",
        "domains": ["restaurant"],
        "turns": [
            {
                "speaker": "user",
                "utterance": "I want an expensive restaurant.",
                "dialogue_acts": {
                    "categorical": [
                        {"intent": "inform", "domain": "restaurant", "slot": "price range", "value": "expensive"}
                    ]
                },
                "state": {"restaurant": {"price range": "expensive", "area": "", "food": ""}},
            },
            {
                "speaker": "system",
                "utterance": "Which part of town?",
                "dialogue_acts": {"binary": [{"intent": "request", "domain": "restaurant", "slot": "area"}]},
            },
            {
                "speaker": "user",
                "utterance": "The centre.",
                "dialogue_acts": {
                    "categorical": [{"intent": "inform", "domain": "restaurant", "slot": "area", "value": "centre"}]
                },
                "state": {"restaurant": {"price range": "expensive", "area": "centre", "food": ""}},
            },
            {
                "speaker": "system",
                "utterance": "What kind of food would you like?",
                "dialogue_acts": {"binary": [{"intent": "request", "domain": "restaurant", "slot": "food"}]},
            },
        ],
    },
]

# a tiny study: one reward, two seeds (the seed claim needs two), minutes of nothing
_CONFIG = """
rewards = ["ts"]
seeds = [0, 1]
dialogues = 100
checkpoint_every = 100
eval_dialogues = 2
grid_step = 0.5
collect_dialogues = 1
bootstrap = 50
permutations = 100
disagreements = 2
scores = ["TMR", "DMR", "CER", "CMR", "USE_cos", "BLEU4"]
corpus_split = "test"
corpus_policies = ["recorded:{wizard}"]
"""

ACT_SCORES = ["TMR", "DMR", "CER", "CMR"]


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    """The corpus, the wizard's table made by the CLI, and one run of the tiny study on them."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "lab" / "data").mkdir(parents=True)
    (root / "lab" / "data" / "dialogues.json").write_text(json.dumps(_CORPUS), encoding="utf-8")
    assert cli_main(["contexts", "import", str(root / "lab"), "--split", "test", "-o", str(root / "ct.jsonl")]) == 0
    assert cli_main(["contexts", "wizard", str(root / "ct.jsonl"), "-o", str(root / "wizard.jsonl")]) == 0
    replayed = ResponseTable.load(root / "wizard.jsonl")  # under another id: ids are unique in a comparison
    replayed.policy = {**replayed.policy, "id": "wizard-replayed"}
    replayed.save(root / "replayed.jsonl")
    (root / "study.toml").write_text(_CONFIG.replace("{wizard}", str(root / "replayed.jsonl")), encoding="utf-8")
    cfg = load_config(str(root / "study.toml"), corpus=str(root / "lab"))
    logs: list[str] = []
    run = run_study(cfg, root / "run", log=logs.append)
    return root, run, logs


def _policy_rows(run):
    return pd.read_csv(run / "results" / "corpus.csv").set_index("policy")


def test_the_corpus_is_one_of_the_run_s_context_sets_and_every_policy_answers_it(corpus_run):
    root, run, logs = corpus_run
    assert "      corpus-test: 4 contexts of 2 dialogues; the human wizard's acts on 3" in logs
    index = json.loads((run / "responses" / "corpus-test" / "index.json").read_text())
    assert "wizard" in index and "handcrafted" in index
    # every checkpoint answers it in the respond stage, as they answer C_gen and C_col
    assert sum(k.startswith("checkpoint:train/") for k in index) == 2
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["context_sets"]["corpus-test"]["size"] == 4


def test_each_policy_against_the_human_wizard(corpus_run):
    root, run, _ = corpus_run
    rows = _policy_rows(run)
    assert list(rows.index) == ["handcrafted", "GP ts seed 0", "GP ts seed 1", f"recorded:{root / 'replayed.jsonl'}"]
    assert set(rows["a"]) == {"wizard"}
    assert (rows["n"] == 4).all()
    # the act scores count the 3 contexts where the wizard's turn has acts; the 4th is n/a
    assert (rows[[f"n_na_{s}" for s in ACT_SCORES]] == 1).all().all()
    # the wizard's own answers replayed: 1 on every score
    me = rows.loc[f"recorded:{root / 'replayed.jsonl'}"]
    for s in [*ACT_SCORES, "BLEU4"]:
        assert me[s] == 1.0 and me[f"{s}_lo"] == 1.0 and me[f"{s}_hi"] == 1.0
    assert me["USE_cos"] == pytest.approx(1.0, abs=1e-6)
    # each interval holds its mean
    for s in ACT_SCORES:
        assert (rows[f"{s}_lo"] <= rows[s] + 1e-12).all() and (rows[s] <= rows[f"{s}_hi"] + 1e-12).all()


def test_the_handcrafted_policy_s_scores_equal_behavsim_compare_on_the_same_tables(corpus_run, tmp_path):
    root, run, _ = corpus_run
    folder = run / "responses" / "corpus-test"
    index = json.loads((folder / "index.json").read_text())
    hc = folder / index["handcrafted"]
    assert (
        cli_main(
            [
                "compare",
                str(root / "wizard.jsonl"),
                str(hc),
                "--scores",
                "TMR,DMR,CER,CMR",
                "-o",
                str(tmp_path / "c.csv"),
            ]
        )
        == 0
    )
    per = pd.read_csv(tmp_path / "c.csv")
    row = _policy_rows(run).loc["handcrafted"]
    for s in ACT_SCORES:
        assert row[s] == pytest.approx(per[s].mean(skipna=True), abs=1e-12)
    # and by hand: TMR is the share of the wizard's act contexts where the acts are equal
    wiz, hand = ResponseTable.load(root / "wizard.jsonl"), ResponseTable.load(hc)
    pairs = [(a, b) for a, b in zip(wiz.acts, hand.acts) if a is not None]
    assert row["TMR"] == pytest.approx(sum(str(a) == str(b) for a, b in pairs) / len(pairs))


def test_slices_disagreements_seeds_and_agreement(corpus_run):
    root, run, _ = corpus_run
    res = run / "results"
    sl = pd.read_csv(res / "corpus_slices.csv")
    assert set(sl["slice"]) == {"acttype", "turn"}
    hc = sl[(sl["policy"] == "handcrafted") & (sl["slice"] == "acttype")].set_index("value")
    # the wizard's act types: inform|request (Klingon), request (twice), none (the text-only turn)
    assert hc.loc["request", "n_contexts"] == 2 and hc.loc["inform|request", "n_contexts"] == 1
    d = pd.read_csv(res / "corpus_disagreements.csv", keep_default_na=False)
    klingon = d[d["context_id"] == "lab-test-0/t1"]
    assert not klingon.empty
    assert set(klingon["user_said"]) == {"Cheap Klingon food in the north, please."}
    assert set(klingon["wizard_said"]) == {"There is no Klingon place. Would Indian do?"}
    seeds = pd.read_csv(res / "corpus_seeds.csv").set_index("score")
    assert set(seeds["reward"]) == {"ts"} and (seeds["n_seeds"] == 2).all()
    assert (seeds.loc[ACT_SCORES, "n_contexts"] == 3).all() and seeds.loc["BLEU4", "n_contexts"] == 4
    assert (seeds["min_p"] == 0.5).all()  # two seeds: 4 sign vectors, the smallest two-sided p is 1/2
    # by hand: the seed pair's TMR over the wizard's act contexts, and each seed's TMR against the wizard
    folder = run / "responses" / "corpus-test"
    index = json.loads((folder / "index.json").read_text())
    ck = sorted(k for k in index if k.startswith("checkpoint:"))
    s0, s1 = (ResponseTable.load(folder / index[k]) for k in ck)
    wiz = ResponseTable.load(root / "wizard.jsonl")
    keep = [i for i, a in enumerate(wiz.acts) if a is not None]
    same = lambda x, y: sum(str(x.acts[i]) == str(y.acts[i]) for i in keep) / len(keep)  # noqa: E731
    assert seeds.loc["TMR", "seed_vs_seed"] == pytest.approx(same(s0, s1))
    assert seeds.loc["TMR", "seed_vs_wizard"] == pytest.approx((same(s0, wiz) + same(s1, wiz)) / 2)
    agreement = pd.read_csv(res / "corpus_agreement.csv")
    overall = agreement[(agreement["policy"] == "all policies") & ~agreement["only_mismatch"]].iloc[0]
    assert overall["n"] == 4 * 3  # 4 policies x the 3 contexts where the wizard has acts (and text)
    assert (run / "results" / "per_context" / "corpus.csv").is_file()


def test_the_report_has_the_study_against_people(corpus_run):
    _, run, _ = corpus_run
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "The study against people" in html and "human wizard" in html
    assert 'id="corpus-means"' in html and 'id="corpus-seeds"' in html


def test_the_study_resumes_with_nothing_to_do(corpus_run):
    root, run, _ = corpus_run
    before = (run / "results" / "corpus.csv").read_bytes()
    logs: list[str] = []
    run_study(load_config(str(root / "study.toml"), corpus=str(root / "lab")), run, log=logs.append)
    assert any("the study against people" in m and "up to date" in m for m in logs)
    assert (run / "results" / "corpus.csv").read_bytes() == before


def test_the_readme_tables_of_the_study_against_people_are_the_run_s(corpus_run, capsys):
    """``python -m experiments.readme_tables RUN`` prints the README's tables from the CSVs."""
    from experiments.readme_tables import corpus_tables

    _, run, _ = corpus_run
    corpus_tables(run / "results")
    lines = capsys.readouterr().out.splitlines()
    means = pd.read_csv(run / "results" / "corpus.csv")
    for _, x in means.iterrows():
        row = next(line for line in lines if line.startswith(f"| {x.policy} | {x.TMR:.3f} "))
        assert f"| {x.CER:.3f} ({x.CER_lo:.3f}–{x.CER_hi:.3f}) |" in row and row.endswith(f"| {x.BLEU4:.3f} |")
    missing = next(line for line in lines if line.startswith("Contexts failed, no usable act"))
    x = means.iloc[-1]
    assert f"{x.policy} {x.n_missing_TMR} / {x.n_missing_USE_cos}" in missing
    counted = next(line for line in lines if line.startswith("Contexts the act scores count"))
    assert f"{x.policy} {x.n - x.n_na_TMR - x.n_missing_TMR}," in counted + ","
    seeds = pd.read_csv(run / "results" / "corpus_seeds.csv")
    x = seeds.iloc[0]
    assert any(line.startswith(f"| {x.reward} | {x.score} | {x.seed_vs_seed:.3f} (") for line in lines)
    agreement = pd.read_csv(run / "results" / "corpus_agreement.csv")
    x = agreement[(agreement.policy == "handcrafted") & ~agreement.only_mismatch].iloc[0]
    assert any(line.startswith(f"| handcrafted | {x.pearson:.2f} | {int(x.n):,} |") for line in lines)


def test_a_missing_or_bad_corpus_is_one_line(tmp_path, capsys):
    assert cli_main(["reproduce", "--config", "camrest676", "-o", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--corpus PATH" in err[0]
    assert (
        cli_main(
            ["reproduce", "--config", "camrest676", "--corpus", str(tmp_path / "nope.zip"), "-o", str(tmp_path / "b")]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope.zip" in err[0] and "not found" in err[0]
    (tmp_path / "damaged.zip").write_text("not a zip")
    assert (
        cli_main(
            [
                "reproduce",
                "--config",
                "camrest676",
                "--corpus",
                str(tmp_path / "damaged.zip"),
                "-o",
                str(tmp_path / "c"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "damaged.zip" in err[0]
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()  # refused before any work
    with pytest.raises(ConfigError, match="corpus_split"):
        load_config("quick", corpus=str(tmp_path / "x.zip"))


def test_corpus_dialogues_keeps_the_first_dialogues(corpus_run):
    root, _, _ = corpus_run
    cs = import_corpus(load_config(str(root / "study.toml"), corpus=str(root / "lab"), corpus_dialogues=1))
    assert list(cs.ids) == ["lab-test-0/t1", "lab-test-0/t2"]
    assert "its first 1 dialogues" in cs.meta["description"]
    full = import_corpus(load_config(str(root / "study.toml"), corpus=str(root / "lab")))
    assert len(full) == 4 and full.meta["description"].startswith("the test split of a corpus")


def test_reproduce_help_names_the_config_and_the_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli_main(["reproduce", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "camrest676" in out and "--corpus PATH" in out


# ------------------------------------------------------------ the study's own end-to-end models
def _split_copy(dialogue: dict, split: str, k: int) -> dict:
    return {**json.loads(json.dumps(dialogue)), "data_split": split, "dialogue_id": f"lab-{split}-{k}"}


# the same people in a train split (4 dialogues: one batch) and a validation split; the test split as above
_SPLITS = [_split_copy(d, "train", k) for k, d in enumerate(_CORPUS * 2)] + [
    _split_copy(d, "validation", k) for k, d in enumerate(_CORPUS)
]
_E2E_CONFIG = (
    _CONFIG.replace('corpus_policies = ["recorded:{wizard}"]\n', "")
    + 'corpus_e2e = ["simulation", "people"]\ne2e_dialogues = 20\ne2e_epochs = 1\ncorpus_e2e_epochs = 2\n'
)


@pytest.fixture(scope="module")
def e2e_run(tmp_path_factory):
    """The tiny study against people with both end-to-end models of its own."""
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("corpus-e2e")
    (root / "lab" / "data").mkdir(parents=True)
    (root / "lab" / "data" / "dialogues.json").write_text(json.dumps(_CORPUS + _SPLITS), encoding="utf-8")
    (root / "study.toml").write_text(_E2E_CONFIG, encoding="utf-8")
    logs: list[str] = []
    run = run_study(load_config(str(root / "study.toml"), corpus=str(root / "lab")), root / "run", log=logs.append)
    return root, run, logs


def test_the_study_s_end_to_end_models_answer_every_context_and_face_the_wizard(e2e_run):
    """Each model writes one row per context of the test split and is compared with the wizard;
    a context it fails on (these models are trained for seconds) is counted, not dropped."""
    _, run, logs = e2e_run
    rows = pd.read_csv(run / "results" / "corpus.csv").set_index("policy")
    tables = {t.id: t for t in map(ResponseTable.load, (run / "responses" / "corpus-test").glob("*.jsonl"))}
    for label, teacher in (("e2e (simulation)", "handcrafted"), ("e2e (people)", "wizard")):
        row = rows.loc[label]
        table = tables[row["b"]]
        assert table.policy["kind"] == "e2e" and table.id.startswith(f"e2e-{teacher}-seed0-")
        assert (row["n"], len(table)) == (4, 4)
        # its failed contexts, and any act it wrote without words (the text scores have no text)
        assert row["n_missing_USE_cos"] == sum(p is None for p in table.prompts) >= table.n_errors
        assert any(f"{label}:" in m and "answers" in m for m in logs), logs


def test_the_people_model_is_the_one_the_train_command_makes(e2e_run, tmp_path):
    """The study's model trained on people has the bytes of ``behavsim train --policy e2e --corpus``'s
    with the same split, epochs and seed; the checkpoint that answers is the best on validation."""
    root, run, _ = e2e_run
    folder = run / "train" / "corpus-e2e-people"
    record = json.loads((folder / "corpus-e2e.json").read_text())
    assert record["checkpoint"] == json.loads((folder / "e2e-best.json").read_text())["checkpoint"]
    argv = ["train", "--policy", "e2e", "--corpus", str(root / "lab"), "--split", "train", "--epochs", "2"]
    assert cli_main([*argv, "--seed", "0", "-o", str(tmp_path / "cli")]) == 0
    ours = sorted(p.name for p in folder.glob("ckpt-*"))
    assert ours == sorted(p.name for p in (tmp_path / "cli").glob("ckpt-*")) and ours
    for name in ours:
        a = (folder / name / "model.safetensors").read_bytes()
        assert a == (tmp_path / "cli" / name / "model.safetensors").read_bytes()


def test_a_rerun_trains_no_model_again(e2e_run):
    root, run, _ = e2e_run
    ckpts = sorted((run / "train").glob("corpus-e2e-*/ckpt-*/model.safetensors"))
    stamps = [p.stat().st_mtime_ns for p in ckpts]
    logs: list[str] = []
    run_study(load_config(str(root / "study.toml"), corpus=str(root / "lab")), run, log=logs.append)
    assert [p.stat().st_mtime_ns for p in ckpts] == stamps and len(ckpts) >= 2
    assert any("the study against people" in m and "up to date" in m for m in logs)


def test_a_people_model_s_table_answered_again_is_compared_again_and_greedy_words_of_before_are_replaced(
    e2e_run, tmp_path
):
    """Other answers under the same id make the study against people run again (its key holds the
    tables' digests); a table of the model trained on people with greedy words (before 4 beams were
    its default: no ``beam`` recorded, none asked) is answered again when the folder resumes."""
    import dataclasses
    import shutil

    root, run, _ = e2e_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    folder = copy / "responses" / "corpus-test"
    index = json.loads((folder / "index.json").read_text())
    name = next(v for v in index.values() if isinstance(v, str) and v.startswith("e2e-wizard-"))
    table = ResponseTable.load(folder / name)
    assert table.policy["beam"] == 4 and not table.id.endswith("-beam4")
    n = len(table)  # other answers (this model, trained for seconds, makes no act yet)
    other = {"acts": ["request(food)"] * n, "prompts": ["what food ?"] * n, "errors": [None] * n, "source": None}
    dataclasses.replace(table, **other).save(folder / name)
    config = load_config(str(root / "study.toml"), corpus=str(root / "lab"))
    before = (run / "results" / "corpus.csv").read_bytes()
    logs: list[str] = []
    run_study(config, copy, log=logs.append)
    assert not any("the study against people" in m and "up to date" in m for m in logs)
    assert (copy / "results" / "corpus.csv").read_bytes() != before  # the other words were compared
    # the same words, greedy, as an earlier version wrote them: answered again, compared again
    old = {k: v for k, v in table.policy.items() if k != "beam"}
    dataclasses.replace(table, policy=old, **other).save(folder / name)
    logs.clear()
    run_study(config, copy, log=logs.append)
    assert any("greedy words of a model trained on people" in m for m in logs), logs
    again = ResponseTable.load(folder / name)  # (the folder it names is the copy's)
    assert again.policy["beam"] == 4 and (again.acts, again.prompts, again.errors) == (
        table.acts,
        table.prompts,
        table.errors,
    )
    assert (copy / "results" / "corpus.csv").read_bytes() == before


def test_a_people_model_trained_by_the_earlier_rule_for_turns_without_an_act_is_trained_again(e2e_run, tmp_path):
    """A folder whose model of people was trained before the empty act was a target (its run file
    names no ``no_act_turns``) resumes with that model trained again, to the same bytes as a new run's."""
    import shutil

    root, run, _ = e2e_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    folder = copy / "train" / "corpus-e2e-people"
    runfile = folder / "e2e-run.json"
    data = json.loads(runfile.read_text())
    assert data["config"]["no_act_turns"] == "empty"
    del data["config"]["no_act_turns"]
    runfile.write_text(json.dumps(data))
    stale = folder / "ckpt-000000-stale"
    stale.mkdir()  # anything in the old folder goes with it
    logs: list[str] = []
    run_study(load_config(str(root / "study.toml"), corpus=str(root / "lab")), copy, log=logs.append)
    assert any("turns without an act trained words only; training again" in m for m in logs), logs
    assert not stale.exists() and json.loads(runfile.read_text())["config"]["no_act_turns"] == "empty"
    for path in sorted((run / "train" / "corpus-e2e-people").glob("ckpt-*/model.safetensors")):
        assert (folder / path.parent.name / path.name).read_bytes() == path.read_bytes()
    assert (copy / "results" / "corpus.csv").read_bytes() == (run / "results" / "corpus.csv").read_bytes()


def test_only_an_unasked_greedy_table_of_a_people_model_counts_as_an_earlier_default():
    from policies.e2e import greedy_by_an_earlier_default as old

    people = {"kind": "e2e", "teacher": "wizard", "id": "e2e-wizard-seed0-004040"}
    assert old("e2e:train/corpus-e2e-people/ckpt-004040", people)
    assert not old("e2e:train/corpus-e2e-people/ckpt-004040", {**people, "beam": 4})  # today's default
    assert not old("e2e:train/corpus-e2e-people/ckpt-004040:beam=1", people)  # greedy words asked for
    assert not old("e2e:train/e2e-handcrafted-s0/ckpt-001000", {**people, "teacher": "handcrafted"})
    assert not old("recorded:wizard.jsonl", {"kind": "recorded", "id": "e2e-wizard-seed0-004040"})


@pytest.mark.parametrize(
    "change, message",
    [
        ({"corpus_e2e": ("robot",)}, r"study config 'corpus_e2e': expected some of \['simulation', 'people'\]"),
        ({"corpus_e2e": ("people", "people")}, r"study config 'corpus_e2e': a model is listed twice"),
        ({"corpus_e2e_epochs": -1}, r"study config 'corpus_e2e_epochs': expected a non-negative integer"),
        ({"corpus_train_split": ""}, r"study config 'corpus_train_split': expected a split name"),
    ],
)
def test_bad_end_to_end_settings_are_refused_in_one_line(tmp_path, change, message):
    with pytest.raises(ConfigError, match=message):
        load_config("camrest676", corpus=str(tmp_path / "lab"), **change)


def test_a_missing_training_split_is_one_line_before_any_work(tmp_path, capsys):
    (tmp_path / "lab" / "data").mkdir(parents=True)
    (tmp_path / "lab" / "data" / "dialogues.json").write_text(json.dumps(_CORPUS), encoding="utf-8")  # no train split
    out = tmp_path / "run"
    assert cli_main(["reproduce", "--config", "camrest676", "--corpus", str(tmp_path / "lab"), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "corpus_e2e" in err[0] and "'train'" in err[0], err
    assert not out.exists()
