"""STSScore, its training (``behavsim scores train-sts``), STS-B's data and ``behavsim scores validate``."""

import json
import math
import subprocess
import sys
from importlib import metadata

import numpy as np
import pytest
from safetensors.torch import load_file

from behavsim import ConfigError, ModelNotAvailable, ResponseTable, compare
from behavsim._sts_train import (  # private: the trainer's schedule and batches
    STSTrainConfig,
    epoch_batches,
    epoch_sequences,
    lr_at,
    train_sts,
)
from behavsim._stsb import STSB_INSTALL, load_stsb  # private: the STS-B reader against the files
from behavsim.scores import STSScore, get_score, score_info

PAIRS = [
    ("what kind of food would you like", "what type of food are you looking for"),
    ("which part of town", "what area would you like"),
    ("golden house is a chinese restaurant", "goodbye"),
    ("what food would you like", "which part of town"),
]


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "behavsim.cli", *args], capture_output=True, text=True, env=env)


# ------------------------------------------------------------------------------------ STS-B's files
def test_stsb_splits_are_read_whole_and_the_test_split_is_the_test_split():
    train, dev, test = (load_stsb(s) for s in ("train", "dev", "test"))
    assert (len(train), len(dev), len(test)) == (5749, 1500, 1379)
    # the first pair of each file, as it stands in the file
    assert (test.first[0], test.second[0], test.labels[0]) == (
        "A girl is styling her hair.",
        "A girl is brushing her hair.",
        2.5,
    )
    assert test.first[0] != dev.first[0]  # the package's own loader returns the dev split as the test split
    # quotes are text, not CSV quoting: read with quoting, the test split shrinks to 1,119 rows
    assert sum('"' in s for s in test.first + test.second) > 0
    assert all(0 <= v <= 5 for v in test.labels)
    assert train.digest.startswith("sha256:") and train.digest != test.digest


def test_stsb_without_the_package_is_one_line_naming_the_install(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "files", missing)
    with pytest.raises(ModelNotAvailable) as exc:
        load_stsb("test")
    assert STSB_INSTALL in str(exc.value) and "\n" not in str(exc.value)


# ------------------------------------------------------------------------------------ training
def test_epoch_batches_cover_every_pair_once_in_one_order_each():
    lengths = [5 + (k * 7) % 13 for k in range(2 * 50)]
    cfg = STSTrainConfig(batch_size=8)
    batches = epoch_batches(lengths, 50, cfg, epoch=0)
    seqs = np.concatenate(batches)
    assert sorted(seqs // 2) == list(range(50))  # each pair once, in one of its two orders
    assert [len(b) for b in batches].count(8) == 6 and sum(len(b) for b in batches) == 50
    again = epoch_batches(lengths, 50, cfg, epoch=0)
    assert all(np.array_equal(x, y) for x, y in zip(batches, again))
    other = np.concatenate(epoch_batches(lengths, 50, cfg, epoch=1))
    assert not np.array_equal(seqs, other)


def test_epoch_batches_with_both_orders_show_every_pair_in_each_order_once():
    lengths = [5 + (k * 7) % 13 for k in range(2 * 50)]
    cfg = STSTrainConfig(batch_size=8, orders="both")
    seqs = np.concatenate(epoch_batches(lengths, 50, cfg, epoch=0))
    assert sorted(seqs) == list(range(100)) and epoch_sequences(50, cfg) == 100
    assert epoch_sequences(50, STSTrainConfig()) == 50
    with pytest.raises(ConfigError, match="orders must be one of both, one"):
        STSTrainConfig(orders="two")


def test_learning_rate_warms_up_then_decays_to_zero():
    cfg = STSTrainConfig(lr=1e-4, warmup=0.1)
    assert lr_at(cfg, 0, 100) == pytest.approx(1e-5)
    assert lr_at(cfg, 9, 100) == pytest.approx(1e-4)
    assert lr_at(cfg, 55, 100) == pytest.approx(1e-4 * 45 / 90)
    assert lr_at(cfg, 100, 100) == 0.0


def _train(tmp_path, name, **kw):
    cfg = {"limit": 32, "epochs": 2, "batch_size": 8, "threads": 1, "checkpoint_every": 2, **kw}
    stop = cfg.pop("stop_after", None)
    return train_sts(tmp_path / name, STSTrainConfig(**cfg), progress=False, say=lambda m: None, stop_after=stop)


def test_the_architecture_decides_the_defaults_and_the_losses():
    bi, cross = STSTrainConfig(), STSTrainConfig(architecture="cross")
    assert (bi.architecture, bi.epochs, bi.lr, bi.loss) == ("bi", 1, 5e-5, "cosine")
    assert (cross.epochs, cross.lr, cross.loss) == (5, 8e-5, "bce")
    assert STSTrainConfig(architecture="cross", epochs=2).epochs == 2
    with pytest.raises(ConfigError, match="loss of a bi-encoder must be one of cosine, got 'bce'"):
        STSTrainConfig(loss="bce")
    with pytest.raises(ConfigError, match="architecture must be one of bi, cross"):
        STSTrainConfig(architecture="dual")


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("architecture", ["bi", "cross"])
def test_training_is_deterministic_and_resumes_to_the_same_bytes(tmp_path, architecture):
    a = _train(tmp_path, "a", architecture=architecture)
    b = _train(tmp_path, "b", architecture=architecture)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    # interrupted after 3 of 8 steps (a checkpoint at step 2, mid-epoch), then run again: the same bytes
    _train(tmp_path, "c", stop_after=3, architecture=architecture)
    assert not (tmp_path / "c").exists() and (tmp_path / "c.training" / "ckpt-000002").is_dir()
    c = _train(tmp_path, "c", architecture=architecture)
    assert (c / "model.safetensors").read_bytes() == (a / "model.safetensors").read_bytes()
    assert not (tmp_path / "c.training").exists()
    record = json.loads((c / "behavsim-sts.json").read_text())
    assert record["config"]["seed"] == 0 and record["config"]["threads"] == 1 and record["steps"] == 8
    assert record["data"]["pairs"] == 32 and record["architecture"] == architecture
    # another seed: other weights
    d = _train(tmp_path, "d", seed=1, architecture=architecture)
    wa, wd = load_file(str(a / "model.safetensors")), load_file(str(d / "model.safetensors"))
    assert sorted(wa) == sorted(wd) and any(not np.array_equal(wa[k].numpy(), wd[k].numpy()) for k in wa)
    # other settings on an unfinished training are refused, naming the folder
    _train(tmp_path, "e", stop_after=2, architecture=architecture)
    with pytest.raises(Exception, match="other settings"):
        _train(tmp_path, "e", seed=3, architecture=architecture)


@pytest.mark.timeout(1200)
def test_train_sts_interrupted_by_a_signal_resumes_to_the_same_bytes(tmp_path):
    import os
    import signal
    import time

    args = [
        "scores",
        "train-sts",
        "--limit",
        "24",
        "--epochs",
        "2",
        "--batch-size",
        "8",
        "--threads",
        "1",
        "--checkpoint-every",
        "1",
        "--no-progress",
    ]
    ref = cli(*args, "-o", str(tmp_path / "ref"))
    assert ref.returncode == 0, ref.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "behavsim.cli", *args, "-o", str(tmp_path / "m")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 900
    while (
        not [p for p in (tmp_path / "m.training").glob("ckpt-*") if "tmp" not in p.name] and time.monotonic() < deadline
    ):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130 and err.strip().endswith("interrupted"), err
    assert not (tmp_path / "m").exists()
    again = cli(*args, "-o", str(tmp_path / "m"))
    assert again.returncode == 0 and "resuming from ckpt-" in again.stderr, again.stderr
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == (tmp_path / "ref" / "model.safetensors").read_bytes()


def test_a_finished_model_is_kept_unless_forced(tiny_sts_model, capsys):
    said = []
    assert train_sts(tiny_sts_model, STSTrainConfig(limit=32, epochs=1, threads=1), progress=False, say=said.append)
    assert "already trained" in said[0]


# ------------------------------------------------------------------------------------ the score
def _reference(model_dir, a, b):
    """f(a, b) straight from transformers, one sequence at a time."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    with torch.no_grad():
        return float(model(**tok(a, b, return_tensors="pt")).logits[0, 0])


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def test_stsscore_of_the_bi_encoder_is_sentence_transformers_cosine_clipped(tiny_sts_model, tmp_path):
    """train-sts's default: a bi-encoder in sentence-transformers' format, read by it as well."""
    from sentence_transformers import SentenceTransformer

    record = json.loads((tiny_sts_model / "behavsim-sts.json").read_text())
    assert record["architecture"] == "bi" and record["config"]["loss"] == "cosine" and "cos(" in record["score"]
    st = SentenceTransformer(str(tiny_sts_model), device="cpu")
    assert st.max_seq_length == 128 and len(st) == 3  # transformer, mean pooling, normalisation
    s = STSScore(model_path=tiny_sts_model, cache=tmp_path / "c")
    for a, b in PAIRS + [("thank you goodbye", "is there anything else")]:
        e = st.encode([a, b], normalize_embeddings=True, convert_to_numpy=True).astype(np.float64)
        assert s.score(a, b) == pytest.approx(min(1.0, max(0.0, float(e[0] @ e[1]))), abs=1e-6)
        assert s.score(a, b) == s.score(b, a)  # exactly: symmetric by construction
    assert s.score("which area", "which area") == 1.0 and math.isnan(s.score(None, "x"))
    assert s.score("", "x") == 0.0 and "sym:cosine" in s.signature and "bi:mean" in s.signature


def test_a_bi_encoder_pooling_the_cls_token_is_read_as_sentence_transformers_reads_it(tiny_sts_model, tmp_path):
    import shutil

    from sentence_transformers import SentenceTransformer

    model = tmp_path / "cls"
    shutil.copytree(tiny_sts_model, model)
    pooling = json.loads((model / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (model / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    a, b = PAIRS[0]
    e = SentenceTransformer(str(model), device="cpu").encode([a, b], normalize_embeddings=True).astype(np.float64)
    s = STSScore(model_path=model, cache=False)
    assert "bi:cls" in s.signature and s.score(a, b) == pytest.approx(max(0.0, float(e[0] @ e[1])), abs=1e-6)
    pooling.update(pooling_mode_cls_token=False, pooling_mode_max_tokens=True)
    (model / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(ConfigError, match="mean or \\[CLS\\] pooling; the bi-encoder .* pools by \\['max_tokens'\\]"):
        STSScore(model_path=model, cache=False)


def test_a_negative_cosine_is_clipped_to_zero(tiny_sts_model, tmp_path):
    s = STSScore(model_path=tiny_sts_model, cache=False)
    e = s.model.embed(["red", "blue"])
    s.model.embed = lambda texts: np.array([e[0], -e[0]])[: len(texts)]  # two opposite embeddings
    assert s.pairwise(["red"], ["blue"]).tolist() == [0.0]


def test_stsscore_of_a_cross_encoder_is_the_mean_of_both_orders_sigmoids(tiny_sts_cross_model, tmp_path):
    """train-sts --architecture cross (loss bce) learns label / 5 as a probability and says so in config.json."""
    model = tiny_sts_cross_model
    config = json.loads((model / "config.json").read_text())
    assert config["sbert_ce_default_activation_function"] == "torch.nn.modules.activation.Sigmoid"
    record = json.loads((model / "behavsim-sts.json").read_text())
    assert record["config"]["loss"] == "bce" and "sigmoid" in record["score"]
    s = STSScore(model_path=model, cache=tmp_path / "c")
    for a, b in PAIRS:
        f = (_sigmoid(_reference(model, a, b)) + _sigmoid(_reference(model, b, a))) / 2
        assert s.score(a, b) == pytest.approx(f, abs=1e-6)
        assert s.score(a, b) == s.score(b, a)
    assert score_info("stsscore").needs_model and s.signature.startswith("STSScore|model:model@")
    assert "sym:mean-of-orders" in s.signature and "scale:sigmoid" in s.signature


def test_stsscore_of_a_model_of_the_0_5_label_is_the_mean_of_both_orders_over_five_clipped(
    tiny_sts_mse_model, tmp_path
):
    config = json.loads((tiny_sts_mse_model / "config.json").read_text())
    assert "sbert_ce_default_activation_function" not in config
    s = STSScore(model_path=tiny_sts_mse_model, cache=tmp_path / "c")
    for a, b in PAIRS:
        f = (_reference(tiny_sts_mse_model, a, b) + _reference(tiny_sts_mse_model, b, a)) / 2 / 5
        assert s.score(a, b) == pytest.approx(min(1.0, max(0.0, f)), abs=1e-5)
        assert s.score(a, b) == s.score(b, a)
    assert "scale:/5,clip:0-1" in s.signature


def test_a_sentence_transformers_cross_encoder_naming_the_sigmoid_is_read_through_it(tiny_sts_mse_model, tmp_path):
    """sentence-transformers 3+ writes its cross-encoders' activation under ``sentence_transformers``."""
    import shutil

    model = tmp_path / "st-model"
    shutil.copytree(tiny_sts_mse_model, model)
    config = json.loads((model / "config.json").read_text())
    config["sentence_transformers"] = {"activation_fn": "torch.nn.modules.activation.Sigmoid"}
    (model / "config.json").write_text(json.dumps(config))
    a, b = PAIRS[0]
    f = (_sigmoid(_reference(model, a, b)) + _sigmoid(_reference(model, b, a))) / 2
    assert STSScore(model_path=model, cache=False).score(a, b) == pytest.approx(f, abs=1e-6)


@pytest.mark.parametrize("fixture", ["tiny_sts_model", "tiny_sts_cross_model"])
def test_a_pairs_value_does_not_depend_on_the_others_scored_with_it(fixture, request):
    model = request.getfixturevalue(fixture)
    alone = [STSScore(model_path=model, cache=False).score(a, b) for a, b in PAIRS]
    many = [(f"filler {k} " + "word " * (k % 5), f"other {k}") for k in range(37)] + PAIRS
    together = STSScore(model_path=model, cache=False).pairwise([a for a, _ in many], [b for _, b in many])
    assert list(together[-len(PAIRS) :]) == alone  # bitwise


@pytest.mark.parametrize("fixture", ["tiny_sts_model", "tiny_sts_cross_model"])
def test_predictions_are_cached_on_disk_under_the_signature(fixture, request, tmp_path, monkeypatch):
    model = request.getfixturevalue(fixture)
    first = STSScore(model_path=model, cache=tmp_path / "c")
    values = first.pairwise([a for a, _ in PAIRS], [b for _, b in PAIRS])
    again = STSScore(model_path=model, cache=tmp_path / "c")
    monkeypatch.setattr(again.model, "_compute", lambda keys: pytest.fail(f"recomputed {len(keys)} inputs"))
    assert np.array_equal(again.pairwise([a for a, _ in PAIRS], [b for _, b in PAIRS]), values)


def test_without_a_trained_model_it_is_one_line_naming_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("BEHAVSIM_CACHE_DIR", str(tmp_path))
    with pytest.raises(ModelNotAvailable, match="behavsim scores train-sts") as exc:
        get_score("STSScore")
    assert "\n" not in str(exc.value)
    r = cli(
        "pair",
        "request(food)",
        "request(area)",
        "--prompts",
        "what food",
        "which area",
        "--scores",
        "STSScore",
        env={**__import__("os").environ, "BEHAVSIM_CACHE_DIR": str(tmp_path)},
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "behavsim scores train-sts" in r.stderr


def _three_tables() -> list[ResponseTable]:
    prompts = {
        "p": ["what food", "which area", "bye"],
        "q": ["what food", "what area", "goodbye"],
        "r": ["which area", "what area", "bye"],
    }
    return [
        ResponseTable(policy={"id": k}, context_fingerprint="sha256:test:3", acts=["bye()"] * 3, prompts=v)
        for k, v in prompts.items()
    ]


def test_the_engine_embeds_each_distinct_prompt_once_for_a_bi_encoder(tiny_sts_model):
    s = STSScore(model_path=tiny_sts_model, cache=False)
    seen: list[str] = []
    compute = s.model._compute
    s.model._compute = lambda texts: seen.extend(texts) or compute(texts)
    comp = compare(_three_tables(), "all", scores=[s], matrix=True)
    # the prompts of the three distinct pairs of different prompts, each once, in string order
    assert seen == ["bye", "goodbye", "what area", "what food", "which area"]
    assert comp.n_distinct["STSScore"] == 8
    expected = (s.score("what food", "which area") + s.score("which area", "what area") + 1.0) / 3
    assert comp.matrices["STSScore"].loc["p", "r"] == pytest.approx(expected, abs=1e-12)


def test_the_engine_scores_each_distinct_prompt_pair_once_for_a_cross_encoder(tiny_sts_cross_model):
    tables = _three_tables()
    s = STSScore(model_path=tiny_sts_cross_model, cache=False)
    seen = []
    compute = s.model._compute
    s.model._compute = lambda keys: seen.extend(keys) or compute(keys)
    comp = compare(tables, "all", scores=[s], matrix=True)
    # the model ran on the three distinct pairs of different prompts, each once, in string order
    assert sorted(json.loads(k) for k in seen) == [
        ["bye", "goodbye"],
        ["what area", "which area"],
        ["what food", "which area"],
    ]
    assert comp.n_distinct["STSScore"] == 8  # with the five pairs of identical prompts (1.0 without the model)
    expected = (s.score("what food", "which area") + s.score("which area", "what area") + 1.0) / 3
    assert comp.matrices["STSScore"].loc["p", "r"] == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------------------ the command line
def test_scores_alone_lists_every_registered_score_and_its_model(tiny_sts_model):
    r = cli("scores")
    assert r.returncode == 0, r.stderr
    names = [line.split()[0] for line in r.stdout.splitlines() if line and not line.startswith(" ")][:9]
    assert names == ["TMR", "DMR", "CER", "CMR", "USE_cos", "USE_ang", "BLEU4", "BERTScore", "STSScore"]
    assert "model: all-MiniLM-L6-v2" in r.stdout
    r2 = cli("scores", "list", "--sts-model", str(tiny_sts_model))
    assert r2.returncode == 0 and f"model: bi-encoder {tiny_sts_model}" in r2.stdout


def test_pair_with_stsscore(tiny_sts_model):
    r = cli(
        "pair",
        "request(food)",
        "request(area)",
        "--prompts",
        "what food would you like",
        "which part of town",
        "--scores",
        "STSScore",
        "--json",
        "--sts-model",
        str(tiny_sts_model),
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    ref = STSScore(model_path=tiny_sts_model, cache=False).score("what food would you like", "which part of town")
    assert out["scores"]["STSScore"] == ref and out["signatures"]["STSScore"].startswith("STSScore|")


def test_train_sts_refuses_bad_settings_in_one_line(tmp_path):
    r = cli("scores", "train-sts", "-o", str(tmp_path / "m"), "--epochs", "0")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "epochs must be a positive integer" in r.stderr
    r = cli("scores", "train-sts", "-o", str(tmp_path / "m"), "--loss", "mse")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "loss of a bi-encoder" in r.stderr


@pytest.mark.timeout(900)
def test_validate_csv_rows_agree_with_scipy_on_nltk_bleu():
    nltk_bleu = pytest.importorskip("nltk.translate.bleu_score")
    from scipy.stats import pearsonr, spearmanr

    r = cli("scores", "validate", "--format", "csv", "--scores", "BLEU4")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "score,pearson,spearman,n" and len(lines) == 2
    name, pearson, spearman, n = lines[1].split(",")
    test = load_stsb("test")
    smooth = nltk_bleu.SmoothingFunction().method1

    def bleu(h, ref):
        return nltk_bleu.sentence_bleu([ref.lower().split()], h.lower().split(), smoothing_function=smooth)

    ref = np.array([1.0 if a == b else (bleu(a, b) + bleu(b, a)) / 2 for a, b in zip(test.first, test.second)])
    assert (name, int(n)) == ("BLEU4", 1379)
    assert float(pearson) == pytest.approx(pearsonr(ref, test.labels)[0], abs=1e-4)
    assert float(spearman) == pytest.approx(spearmanr(ref, test.labels)[0], abs=1e-4)


@pytest.mark.timeout(1800)
def test_validate_skips_a_model_not_on_the_machine_with_a_note(tiny_sts_model, tmp_path):
    r = cli("scores", "validate", "--format", "csv", "--scores", "STSScore", "--sts-model", str(tmp_path / "none"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["score,pearson,spearman,n"]
    assert "note: STSScore skipped" in r.stderr and str(tmp_path / "none") in r.stderr
    r = cli(
        "scores",
        "validate",
        "--format",
        "csv",
        "--scores",
        "STSScore",
        "--sts-model",
        str(tiny_sts_model),
        "--plots",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    name, pearson, spearman, n = r.stdout.splitlines()[1].split(",")
    assert (name, n) == ("STSScore", "1379") and -1 <= float(pearson) <= 1
    assert (tmp_path / "sts_validation.png").is_file()


def test_the_papers_bertscore_model_is_a_row_of_its_own_or_a_note():
    from behavsim._sts_validate import text_score_variants, validate_text_scores  # private: validation against scipy

    variants = [v for v in text_score_variants() if v[0] == "BERTScore/roberta-large"]
    assert variants == [
        ("BERTScore/roberta-large", "BERTScore", {"model": "hf", "model_path": "roberta-large", "num_layers": 17})
    ]
    try:
        get_score("BERTScore", **variants[0][2])
    except ModelNotAvailable:
        result = validate_text_scores(variants)
        assert result.rows == [] and "roberta-large" in result.skipped["BERTScore/roberta-large"]
    else:  # pragma: no cover - only where roberta-large is in the Hugging Face cache
        pytest.skip("roberta-large is on this machine: its row is computed by `behavsim scores validate`")
