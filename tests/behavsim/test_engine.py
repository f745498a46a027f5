import numpy as np
import pytest

from behavsim import (
    ConfigError,
    ContextSetMismatch,
    ResponseTable,
    TableFormatError,
    compare,
    context_fingerprint,
    plan_pairs,
)
from behavsim.scores import ScoreInfo, SemanticScore, TextScore, concept_error, get_score
from behavsim.scores._base import unique_pairs  # private: the dedup the engine relies on

CONTEXTS = [{"beliefs": {"area": {"north": p, "**NONE**": 1 - p}}} for p in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)]
FP = context_fingerprint(CONTEXTS)

ACTS = {
    "p0": [
        "request(area)",
        "request(food)",
        "confirm(area=north)",
        'inform(name="x",area=north)',
        "bye()",
        "reqmore()",
    ],
    "p1": ["request(area)", "request(pricerange)", "confirm(area=north)", 'inform(area=north,name="x")', "bye()", None],
    "p2": [
        "request(food)",
        "request(food)",
        "select(area=north,area=south)",
        'inform(name="y",area=north)',
        "reqmore()",
        "bye()",
    ],
}
PROMPTS = {
    "p0": ["which area", "what food", "north, right?", "x is in the north", "bye", "anything else"],
    "p1": ["which part of town", "what price range", "north, right?", "x is in the north", "goodbye", None],
    "p2": ["what food", "what food", "north or south?", "y is in the north", "anything else", "bye"],
}


def make(pid, **meta):
    errors = [None if a is not None else "ValueError: boom" for a in ACTS[pid]]
    return ResponseTable(
        policy={"id": pid, **meta}, context_fingerprint=FP, acts=ACTS[pid], prompts=PROMPTS[pid], errors=errors
    )


FAST = ["TMR", "DMR", "CER", "CMR", "BLEU4"]


def test_fingerprint_changes_when_one_context_changes():
    changed = [dict(c) for c in CONTEXTS]
    changed[3] = {"beliefs": {"area": {"north": 0.61, "**NONE**": 0.39}}}
    assert context_fingerprint(changed) != FP
    assert context_fingerprint(CONTEXTS[::-1]) != FP
    assert context_fingerprint(CONTEXTS) == FP


def test_engine_equals_naive_loop_and_means():
    tables = [make(p) for p in ACTS]
    comp = compare(tables, "all", scores=FAST)
    assert len(comp.means) == 3 and len(comp.per_context) == 18
    for name in FAST:
        s = get_score(name)
        for _, row in comp.means.iterrows():
            a, b = row["a"], row["b"]
            vals = []
            for i in range(6):
                x = (ACTS if s.info.level == "semantic" else PROMPTS)[a][i]
                y = (ACTS if s.info.level == "semantic" else PROMPTS)[b][i]
                vals.append(np.nan if x is None or y is None else s.score(x, y))
            got = comp.per_context[(comp.per_context.a == a) & (comp.per_context.b == b)][name].to_numpy()
            np.testing.assert_array_equal(got, np.asarray(vals))
            assert row[name] == pytest.approx(np.nanmean(vals))
            assert row[f"n_missing_{name}"] == int(np.isnan(vals).sum())


def test_hand_checked_means():
    comp = compare([make("p0"), make("p1")], "all", scores=["TMR", "DMR"])
    # contexts 0, 2, 3, 4 match (3 differs only in item order); 1 differs; 5 missing
    assert comp.means.loc[0, "TMR"] == pytest.approx(4 / 5)
    assert comp.means.loc[0, "DMR"] == pytest.approx(5 / 5)
    assert comp.means.loc[0, "n_missing_TMR"] == 1


def test_refuses_tables_from_different_context_sets():
    other = ResponseTable(
        policy={"id": "q"},
        context_fingerprint=context_fingerprint(CONTEXTS[:5] + [{"x": 1}]),
        acts=ACTS["p0"],
        prompts=PROMPTS["p0"],
    )
    with pytest.raises(ContextSetMismatch, match=r"'p0'.*'q'"):
        compare([make("p0"), other], scores=["TMR"])


def test_pair_modes():
    ts = [
        make("p0", reward="ts", seed=0, checkpoint=1000),
        make("p1", reward="ts", seed=0, checkpoint=2000),
        make("p2", reward="iq", seed=0, checkpoint=2000),
    ]
    assert plan_pairs(ts, "all") == [(0, 1), (0, 2), (1, 2)]
    assert plan_pairs(ts, "consecutive") == [(0, 1)]
    assert plan_pairs(ts, "cross", by="reward") == [(0, 2), (1, 2)]
    with pytest.raises(ConfigError, match=r"pairs='cross' needs by=.*got by=None"):
        plan_pairs(ts, "cross")
    with pytest.raises(ConfigError, match=r"needs by="):
        compare(ts, "cross", scores=["TMR"])
    assert compare(ts, "cross", by="reward", scores=["TMR"]).means[["a", "b"]].values.tolist() == [
        ["p0", "p2"],
        ["p1", "p2"],
    ]
    with pytest.raises(ConfigError, match="exactly two groups"):
        plan_pairs(ts, "cross", by="seed")
    with pytest.raises(ConfigError, match="pairs must be one of"):
        plan_pairs(ts, "every")
    comp = compare(ts, [("p2", "p0")], scores=["TMR"])
    assert list(comp.means[["a", "b"]].iloc[0]) == ["p2", "p0"]
    with pytest.raises(ConfigError, match="neither a table index nor a policy id"):
        compare(ts, [("p2", "zz")], scores=["TMR"])


def test_duplicate_ids_and_too_few_tables():
    with pytest.raises(ConfigError, match="unique"):
        compare([make("p0"), make("p0")], scores=["TMR"])
    with pytest.raises(ConfigError, match="at least two"):
        compare([make("p0")], scores=["TMR"])


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_table_round_trip(tmp_path, suffix):
    t = make("p1", seed=3, reward="iq")
    path = t.save(tmp_path / f"t{suffix}")
    u = ResponseTable.load(path)
    assert u.acts == t.acts and u.prompts == t.prompts and u.errors == t.errors
    assert u.policy == {"id": "p1", "seed": 3, "reward": "iq"} and u.context_fingerprint == FP
    assert u.acts[3] == 'inform(area="north",name="x")'  # canonical form is stored


def _write(tmp_path, lines):
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_damaged_files_give_clear_errors(tmp_path):
    good = make("p0").save(tmp_path / "good.jsonl").read_text().splitlines()
    cases = [
        (good[:-1], "header says 6 contexts but the file has 5 rows"),
        ([good[0].replace('"version":1', '"version":9')] + good[1:], "version 9 is not supported"),
        (['{"format": "something-else"}'] + good[1:], "not a behavsim response table"),
        (good[:3] + ["{not json"] + good[4:], "bad.jsonl:4: invalid JSON"),
        (good[:2] + [good[2].replace('"request(food)"', '"request(food"')] + good[3:], "bad.jsonl:3: cannot parse"),
        (good[:2] + [good[2].replace('"i":1', '"i":7')] + good[3:], "expected context index i=1"),
    ]
    for lines, message in cases:
        with pytest.raises(TableFormatError, match=message.replace("(", r"\(")):
            ResponseTable.load(_write(tmp_path, lines))
    with pytest.raises(TableFormatError, match="no such"):
        ResponseTable.load(tmp_path / "missing.jsonl")
    (tmp_path / "x.parquet").write_bytes(b"PAR1garbage")
    with pytest.raises(TableFormatError, match="cannot read Parquet"):
        ResponseTable.load(tmp_path / "x.parquet")


def test_comparison_is_deterministic(tmp_path):
    tables = [make(p) for p in ACTS]
    a = compare(tables, scores=FAST).per_context.to_csv(index=False)
    b = compare(tables, scores=FAST).per_context.to_csv(index=False)
    assert a == b


class _ConceptErrorScore(SemanticScore):
    """A toy asymmetric score: CE(a, b), the concept error of a against b."""

    info = ScoreInfo("CE", "concept error of a against b", "semantic", symmetric=False)

    def _pairwise(self, a, b):
        return np.array([np.nan if x is None or y is None else concept_error(x, y) for x, y in zip(a, b)])


def test_asymmetric_score_is_computed_on_ordered_pairs():
    ce = _ConceptErrorScore()
    comp = compare([make("p0"), make("p2")], [("p0", "p2"), ("p2", "p0")], scores=[ce, "CER"])
    per = comp.per_context
    forward = per[per.pair == 0]["CE"].to_numpy()
    backward = per[per.pair == 1]["CE"].to_numpy()
    # context 2: confirm(area=north) against select(area=north,area=south): items [area, north]
    # against [area, north, area, south] -> (4 - 2) / 4 = 0.5; the other way (2 - 2) / 2 = 0
    assert forward[2] == 0.5 and backward[2] == 0.0
    # context 1: request(food) against itself; context 0: request(area) vs request(food): (2 - 1) / 2
    assert forward[1] == backward[1] == 1.0 and forward[0] == backward[0] == 0.5
    # context 4: bye() against reqmore(): no items either way -> 1
    assert forward[4] == backward[4] == 1.0
    for k, (x, y) in enumerate(zip(ACTS["p0"], ACTS["p2"])):
        assert forward[k] == concept_error(x, y) and backward[k] == concept_error(y, x)
    # the symmetric CER of the same run is the same both ways
    np.testing.assert_array_equal(per[per.pair == 0]["CER"].to_numpy(), per[per.pair == 1]["CER"].to_numpy())


def test_unique_pairs_symmetric_and_ordered():
    a = np.array([0, 1, 1, 2, 0])
    b = np.array([1, 0, 1, 0, 1])
    first, second, inverse = unique_pairs(a, b)
    assert list(zip(first.tolist(), second.tolist())) == [(0, 1), (0, 2), (1, 1)]
    assert inverse.tolist() == [0, 0, 2, 1, 0]
    first, second, inverse = unique_pairs(a, b, symmetric=False)
    assert list(zip(first.tolist(), second.tolist())) == [(0, 1), (1, 0), (1, 1), (2, 0)]
    assert inverse.tolist() == [0, 1, 2, 3, 0]


class _LengthShare(TextScore):
    """A toy asymmetric text score: the share of a's words in the words of both prompts."""

    info = ScoreInfo("LengthShare", "len(a) / (len(a) + len(b)) in words", "text", symmetric=False)

    def _text_pairs(self, a, b):
        pairs, where = self._distinct_pairs(a, b)
        vals = np.array([len(x.split()) / (len(x.split()) + len(y.split())) for x, y in pairs])
        return vals[where]


def test_asymmetric_text_score_keeps_each_order():
    s = _LengthShare()
    np.testing.assert_array_equal(
        s.pairwise(["a b", "a b c d", "a b", None], ["a b c d", "a b", "a b c d", "x"]), [1 / 3, 2 / 3, 1 / 3, np.nan]
    )
    t0 = ResponseTable(policy={"id": "u"}, context_fingerprint=FP, acts=ACTS["p0"], prompts=["a b"] * 6)
    t1 = ResponseTable(policy={"id": "v"}, context_fingerprint=FP, acts=ACTS["p0"], prompts=["a b c d"] * 6)
    comp = compare([t0, t1], [("u", "v"), ("v", "u")], scores=[s])
    assert comp.means["LengthShare"].tolist() == pytest.approx([1 / 3, 2 / 3])


def test_refuses_tables_whose_acts_are_all_errors(tmp_path, capsys):
    from behavsim.cli import main

    dead = ResponseTable(
        policy={"id": "dead"},
        context_fingerprint=FP,
        acts=[None] * 6,
        prompts=[None] * 6,
        errors=["ConfigError: no PyDial"] * 6,
    )
    with pytest.raises(
        ConfigError,
        match=r"response table\(s\) 'dead' answered none of their 6 contexts \(every act "
        r"is an error; first: ConfigError: no PyDial\)",
    ):
        compare([make("p0"), dead], scores=["TMR"])
    paths = []
    for t in (make("p0"), dead):
        paths.append(tmp_path / f"{t.id}.jsonl")
        t.save(paths[-1])
    rc = main(["compare", *map(str, paths), "--scores", "TMR", "-o", str(tmp_path / "out")])
    assert rc != 0 and "'dead' answered none of their 6 contexts" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    # asked for (a study's first checkpoints): NaN means, every context counted missing
    comp = compare([make("p0"), dead, make("p1")], [(0, 1), (1, 2)], scores=["TMR", "DMR"], allow_unanswered=True)
    assert comp.means["TMR"].isna().tolist() == [True, True]
    assert comp.means["n_missing_TMR"].tolist() == [6, 6] and comp.means["n"].tolist() == [6, 6]
