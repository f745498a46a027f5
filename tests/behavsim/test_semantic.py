import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from behavsim import DialogueAct, format_act, parse_act
from behavsim.scores import (
    CER,
    CMR,
    DMR,
    TMR,
    act_match,
    concept_error,
    concept_match,
    get_score,
    symmetric_concept_error,
    total_match,
)

# test vectors: the paper's Appendix A acts with their TMR, DMR, CER, CMR
VECTORS = [
    ("request(pricerange)", "request(food)", 0, 1, 0.5, 0.2),
    (
        'inform(food="mediterranean",pricerange="expensive",name="la mimosa",area="centre")',
        'inform(food="mediterranean",pricerange="expensive",name="la mimosa",area="centre")',
        1,
        1,
        1,
        1,
    ),
    (
        'inform(food="mediterranean",pricerange="expensive",name="la mimosa",area="centre")',
        "request(pricerange)",
        0,
        0,
        0,
        0.1,
    ),
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
    from behavsim._encoders import TFHubEncoder  # private: the encoder class, as the scores build it

    sigs = []
    for i, content in enumerate((b"model one", b"model two", b"model one")):
        d = tmp_path / str(i) / "use"
        (d / "variables").mkdir(parents=True)
        (d / "saved_model.pb").write_bytes(content)
        (d / "variables" / "variables.index").write_bytes(b"index")
        sigs.append(TFHubEncoder(handle=str(d)).signature)
    assert sigs[0] != sigs[1] and sigs[0] == sigs[2]
    assert sigs[0].startswith("tfhub:use@")


# ---------------------------------------------------------------------------- act sets
def _levenshtein_dp(a, b):
    """The textbook dynamic programme (the reference for the bit-parallel distance)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def _reference(a, b):
    """TMR, DMR, CER, CMR of two single acts as SPEC.md defines them, from DialogueAct alone."""
    pa, pb = parse_act(a), parse_act(b)

    def ce(h, r):
        hs, rs = h.item_sequence(), r.item_sequence()
        if not rs:
            return 1.0 if not hs else 0.0
        return max(0.0, (len(rs) - _levenshtein_dp(hs, rs)) / len(rs))

    same = pa.act_type == pb.act_type
    cer = (ce(pa, pb) + ce(pb, pa)) / 2 if same else 0.0
    ca, cb = pa.concepts(), pb.concepts()
    return float(pa == pb), float(same), cer, (float(same) + len(ca & cb)) / (1 + len(ca | cb))


_names = st.sampled_from(["inform", "request", "confirm", "bye", "select"])
_slots = st.sampled_from(["area", "food", "name", "pricerange", "name!"])
_values = st.sampled_from(["", "north", "south", "thai", "none", "la mimosa"])
_acts = st.builds(lambda t, its: DialogueAct.create(t, its), _names, st.lists(st.tuples(_slots, _values), max_size=5))


@settings(max_examples=400, deadline=None)
@given(_acts, _acts)
def test_single_acts_score_as_the_spec_defines(a, b):
    """The act-set forms leave every single act's value as it was (SPEC.md's formulas)."""
    sa, sb = format_act(a), format_act(b)
    got = (total_match(sa, sb), act_match(sa, sb), symmetric_concept_error(sa, sb), concept_match(sa, sb))
    assert got == pytest.approx(_reference(sa, sb), abs=1e-15)
    for score, want in zip((TMR(), DMR(), CER(), CMR()), _reference(sa, sb)):
        assert score.pairwise([sa, a], [sb, b]).tolist() == pytest.approx([want, want], abs=1e-15)


SET = "inform(area=south)|request(food)"


@pytest.mark.parametrize(
    "a, b, tm, dm, ce, cm",
    [
        # the same set in another order: every score 1
        (SET, "request(food)|inform(area=south)", 1, 1, 1, 1),
        # types {inform, request} vs {inform}: DMR and CER 0; concepts {area, (area,south), food, (food,"")}
        # vs {area, (area,south)}: M = 2, U = 4 -> (0 + 2) / (1 + 4)
        (SET, "inform(area=south)", 0, 0, 0, 0.4),
        # same types; item sequences [area, south, food, ""] vs [area, north, food, ""]: dist 1 -> 3/4 both ways;
        # concepts: M = {area, food, (food,"")} = 3, U = 5 -> (1 + 3) / (1 + 5)
        (SET, "inform(area=north)|request(food)", 0, 1, 0.75, 4 / 6),
        # two informs against one: one type each ({inform}); sequences [area, east, name, x] + [name, none]
        # vs [name, none]: dist 4, |r| = 2 -> CE(a, b) = 0, CE(b, a) = (6 - 4) / 6 = 1/3 -> 1/6;
        # concepts {area, (area,east), name, (name,x), (name,none)} vs {name, (name,none)}: (1 + 2) / (1 + 5)
        ("inform(name=none)|inform(area=east,name=x)", "inform(name=none)", 0, 1, 1 / 6, 0.5),
    ],
)
def test_act_sets_by_hand(a, b, tm, dm, ce, cm):
    for x, y in ((a, b), (b, a)):
        assert total_match(x, y) == tm
        assert act_match(x, y) == dm
        assert symmetric_concept_error(x, y) == pytest.approx(ce, abs=1e-12)
        assert concept_match(x, y) == pytest.approx(cm, abs=1e-12)
    for score, want in zip((TMR(), DMR(), CER(), CMR()), (tm, dm, ce, cm)):
        assert score.pairwise([a, b, None], [b, a, a]).tolist()[:2] == pytest.approx([want, want], abs=1e-12)
