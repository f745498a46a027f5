import pytest

from behavsim.scores import (CER, CMR, DMR, TMR, act_match, concept_error, concept_match, get_score,
                             symmetric_concept_error, total_match)


# test vectors: the paper's Appendix A acts with their TMR, DMR, CER, CMR
VECTORS = [
    ("request(pricerange)", "request(food)", 0, 1, 0.5, 0.2),
    ('inform(food="mediterranean",pricerange="expensive",name="la mimosa",area="centre")',
     'inform(food="mediterranean",pricerange="expensive",name="la mimosa",area="centre")', 1, 1, 1, 1),
    ('inform(food="mediterranean",pricerange="expensive",name="la mimosa",area="centre")',
     "request(pricerange)", 0, 0, 0, 0.1),
]


@pytest.mark.parametrize("a, b, tm, dm, ce, cm", VECTORS)
def test_spec_vectors(a, b, tm, dm, ce, cm):
    assert total_match(a, b) == tm
    assert act_match(a, b) == dm
    assert symmetric_concept_error(a, b) == pytest.approx(ce, abs=1e-12)
    assert concept_match(a, b) == pytest.approx(cm, abs=1e-12)


def test_appendix_a_semantic_columns_exactly(appendix_a):
    a = [r[0] for r in appendix_a]
    b = [r[2] for r in appendix_a]
    for score, col in ((TMR(), 4), (DMR(), 5), (CER(), 6), (CMR(), 7)):
        assert list(score.pairwise(a, b)) == pytest.approx([r[col] for r in appendix_a], abs=1e-12), score.name


def test_concept_error_by_hand():
    # h = [area, north, food, thai] ; r = [area, north]  -> dist 2, |r| = 2 -> (2-2)/2 = 0
    assert concept_error("inform(area=north,food=thai)", "inform(area=north)") == 0.0
    # r = [area, north, food, thai]; h = [area, north] -> dist 2, |r| = 4 -> 0.5
    assert concept_error("inform(area=north)", "inform(area=north,food=thai)") == 0.5
    # the paper's formula would give (2 - 6)/2 = -2 here; concept_error clips at 0
    assert concept_error("inform(a=1,b=2,c=3,d=4)", "inform(e=5)") == 0.0
    # empty reference
    assert concept_error("bye()", "bye()") == 1.0
    assert concept_error("bye(x=1)", "bye()") == 0.0
    # different act types: CER is 0 whatever the items
    assert symmetric_concept_error("confirm(area=north)", "inform(area=north)") == 0.0


def test_concept_match_by_hand():
    assert concept_match("bye()", "bye()") == 1.0
    # concepts: {area, (area,north)} vs {area, (area,south)}: U=3, M=1 -> (1+1)/(1+3)
    assert concept_match("confirm(area=north)", "confirm(area=south)") == 0.5
    # select with a repeated slot: concepts {area,(area,n),(area,s)} vs {area,(area,n)}: U=3,M=2
    assert concept_match("select(area=n,area=s)", "select(area=n)") == pytest.approx(3 / 4)


def test_class_and_function_agree_and_missing_is_nan():
    s = get_score("cer")
    assert s.score("request(food)", "request(pricerange)") == 0.5
    vals = s.pairwise(["request(food)", None], ["request(food)", "bye()"])
    assert vals[0] == 1.0 and vals[1] != vals[1]


def test_tfhub_cache_key_names_the_models_content(tmp_path):
    """Two SavedModels in folders of the same name never share cached vectors: the signature
    (the embedding cache's key) carries a digest of the folder's files."""
    from behavsim._encoders import TFHubEncoder

    sigs = []
    for i, content in enumerate((b"model one", b"model two", b"model one")):
        d = tmp_path / str(i) / "use"
        (d / "variables").mkdir(parents=True)
        (d / "saved_model.pb").write_bytes(content)
        (d / "variables" / "variables.index").write_bytes(b"index")
        sigs.append(TFHubEncoder(handle=str(d)).signature)
    assert sigs[0] != sigs[1] and sigs[0] == sigs[2]
    assert sigs[0].startswith("tfhub:use@")
