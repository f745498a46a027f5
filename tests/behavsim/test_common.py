"""Properties every registered score must have (symmetry, bounds, identity, missing values)."""

import math

import numpy as np
import pytest

from behavsim import UnknownScore
from behavsim.scores import DEFAULT_SCORES, get_score, list_scores, scores

ACTS = [
    "request(food)",
    "request(pricerange)",
    'inform(name="golden house",area=centre,food=chinese)',
    'inform(name="golden house",area=centre)',
    "bye()",
    "select(area=north,area=south)",
    'confirm(food="thai")',
    "reqmore()",
    "inform(name=none,area=east,food=korean)",
]
PROMPTS = [
    "what kind of food would you like",
    "what price range are you looking for",
    "golden house is a chinese restaurant in the centre of town",
    "golden house is in the centre",
    "goodbye",
    "would you like the north or the south of town",
    "did you say thai food",
    "can i help you with anything else",
    "sorry there is no korean restaurant in the east",
]


def test_registry_lists_the_eight_default_scores_in_spec_order_then_stsscore():
    assert list(DEFAULT_SCORES) == ["TMR", "DMR", "CER", "CMR", "USE_cos", "USE_ang", "BLEU4", "BERTScore"]
    assert list_scores() == [*DEFAULT_SCORES, "STSScore"]


def test_unknown_score_suggests_the_closest_name():
    with pytest.raises(UnknownScore, match=r"Did you mean 'BERTScore'\?"):
        get_score("bertscor")
    with pytest.raises(KeyError):  # also a KeyError
        get_score("nope")


def test_names_are_case_insensitive():
    assert get_score("use_COS").name == "USE_cos"


@pytest.fixture(scope="module", params=[*DEFAULT_SCORES, "STSScore"])
def score(request):
    if request.param == "STSScore":  # its model: a tiny one trained for the tests (tests/behavsim/conftest.py)
        return get_score("STSScore", model_path=request.getfixturevalue("tiny_sts_model"), cache=False)
    return get_score(request.param)


def _inputs(score):
    return ACTS if score.info.level == "semantic" else PROMPTS


def test_meta_every_registered_score_is_tested():
    assert set(scores.names()) == {*DEFAULT_SCORES, "STSScore"}


def test_symmetric_bounded_and_identity(score):
    xs = _inputs(score)
    a = [x for x in xs for _ in xs]
    b = [y for _ in xs for y in xs]
    ab = score.pairwise(a, b)
    ba = score.pairwise(b, a)
    assert np.array_equal(ab, ba), f"{score.name} is not symmetric"
    assert np.all(ab >= score.info.lower - 1e-12) and np.all(ab <= score.info.upper + 1e-12)
    same = score.pairwise(xs, xs)
    assert np.all(same == 1.0), f"{score.name}: identical inputs must score exactly 1"


def test_missing_values_give_nan(score):
    xs = _inputs(score)
    vals = score.pairwise([None, xs[0], None], [xs[1], None, None])
    assert all(math.isnan(v) for v in vals)


def test_signature_names_the_score(score):
    assert score.signature.startswith(score.name + "|")
    assert "behavsim:" in score.signature


def test_text_scores_empty_against_non_empty_is_zero(score):
    if score.info.level != "text":
        pytest.skip("text scores only")
    vals = score.pairwise(["", "   ", "hello there", ""], ["hello there", "goodbye", "", ""])
    assert list(vals) == [0.0, 0.0, 0.0, 1.0]


def test_length_mismatch_is_an_error(score):
    with pytest.raises(ValueError, match="differ in length"):
        score.pairwise(_inputs(score)[:2], _inputs(score)[:3])
