"""Contexts with dialogue histories: the format, fingerprints, the text-only view, collected
histories, logged dialogues, and what the policy protocol does with them."""

from __future__ import annotations

import json

import pytest

import contexts
from behavsim import ContextSet, ResponseTable, TableFormatError, check_policy, respond
from behavsim.policy import PolicyErrorsWarning, UnanswerableContexts
from policies.corpora import LogFormatError

# Fingerprints computed by behavsim before histories existed (commit e874c1d): sets without
# histories must keep them.
GRID_05_BEFORE = "sha256:9ce050ebe0e079097de10e08baf4e566:81"
COLLECT_HC_3_SEED0_BEFORE = "sha256:c82837463754416e550272275fe81cc6:15"


def _small() -> ContextSet:
    b = {"beliefs": {"area": {"north": 1.0, "**NONE**": 0.0}}}
    h0 = [{"speaker": "user", "text": "i want to eat in the north", "act": 'inform(area="north")'}]
    h1 = h0 + [
        {"speaker": "system", "text": "what food?", "act": "request(food)"},
        {"speaker": "user", "text": "thai please"},
    ]
    return ContextSet([b, None], [{"origin": "logged"}, {}], ["a", "b"], {"builder": "test"}, histories=[h0, h1])


@pytest.fixture(scope="module")
def ccol() -> ContextSet:
    return contexts.collect(["handcrafted"], dialogues=3, seed=0)


# ----------------------------------------------------------------------------- the format
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_histories_round_trip(tmp_path, suffix):
    cs = _small()
    back = ContextSet.load(cs.save(tmp_path / f"h{suffix}"))
    assert back.fingerprint == cs.fingerprint and back.histories == cs.histories and back.beliefs == cs.beliefs
    assert back.history(1)[2] == {"speaker": "user", "text": "thai please", "act": None}  # a missing act is None
    assert back.history(1)[1]["act"] == "request(food)" and back.metas == cs.metas and back.ids == cs.ids


def test_fingerprint_covers_histories_not_metadata():
    cs = _small()
    other = _small()
    other.histories[1][2]["text"] = "thai, please"
    assert ContextSet(other.beliefs, histories=other.histories).fingerprint != cs.fingerprint
    acts = _small()
    acts.histories[1][1]["act"] = "request(area)"
    assert ContextSet(acts.beliefs, histories=acts.histories).fingerprint != cs.fingerprint
    meta = _small()
    meta.metas[0]["note"] = "x"
    assert ContextSet(meta.beliefs, meta.metas, histories=meta.histories).fingerprint == cs.fingerprint
    # equal acts in another spelling are the same act
    spelled = _small()
    spelled.histories[0][0]["act"] = "inform( area = north )"
    assert ContextSet(spelled.beliefs, histories=spelled.histories).fingerprint == cs.fingerprint


def test_sets_without_histories_keep_their_fingerprint_and_file_format(tmp_path, ccol):
    grid = contexts.generate_grid(step=0.5)
    assert grid.histories is None and grid.fingerprint == GRID_05_BEFORE
    old = contexts.collect(["handcrafted"], dialogues=3, seed=0, histories=False)
    assert old.fingerprint == COLLECT_HC_3_SEED0_BEFORE
    assert ccol.beliefs == old.beliefs and ccol.metas == old.metas  # the same beliefs, with histories beside
    assert ccol.fingerprint != old.fingerprint
    lines = grid.save(tmp_path / "g.jsonl").read_text().splitlines()
    assert set(json.loads(lines[0])) == {"format", "version", "size", "fingerprint", "meta", "checksum"}
    assert set(json.loads(lines[1])) == {"i", "id", "belief", "meta"}
    assert ContextSet.load(tmp_path / "g.jsonl").fingerprint == GRID_05_BEFORE


@pytest.mark.parametrize(
    "history, message",
    [
        ("hello", "'history' must be a list of turns"),
        ([{"speaker": "bot", "text": "hi"}], "speaker must be 'system' or 'user', got 'bot'"),
        ([{"speaker": "user", "text": 3}], "text must be a string, got int"),
        ([{"speaker": "user", "text": "x", "act": "inform(("}], "history turn 0: "),
        ([{"speaker": "user", "text": "x", "mood": "happy"}], r"unknown key\(s\) \['mood'\]"),
    ],
)
def test_bad_histories_are_named(history, message):
    with pytest.raises(TableFormatError, match=message):
        ContextSet([{"beliefs": {}}], histories=[history])
    with pytest.raises(TableFormatError, match="context 0: has neither a belief state nor a history"):
        ContextSet([None])


def test_select_and_concat_keep_histories():
    cs = _small()
    assert cs.select([1]).histories == [cs.history(1)]
    both = ContextSet.concat([cs, contexts.generate_grid(step=1.0)])
    assert both.n_histories == 2 and both.history(2) is None and len(both) == 2 + 16


# ----------------------------------------------------------------------------- the text-only view
def test_text_only_view(tmp_path, ccol):
    text = ccol.text_only()
    assert text.n_beliefs == 0 and all(t["act"] is None for h in text.histories for t in h)
    assert [[t["text"] for t in h] for h in text.histories] == [[t["text"] for t in h] for h in ccol.histories]
    assert text.fingerprint == ccol.text_fingerprint != ccol.fingerprint
    # a copy of the file with every belief and turn act removed loads as the text-only view
    path = ccol.save(tmp_path / "c.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    stripped = tmp_path / "c_text.jsonl"
    with open(stripped, "w") as f:
        f.write(json.dumps(rows[0]) + "\n")
        for r in rows[1:]:
            r = {k: v for k, v in r.items() if k != "belief"}
            r["history"] = [{k: v for k, v in t.items() if k != "act"} for t in r["history"]]
            f.write(json.dumps(r) + "\n")
    loaded = ContextSet.load(stripped)
    assert loaded.fingerprint == ccol.text_fingerprint and loaded.meta["parent"] == ccol.fingerprint
    assert loaded.histories == text.histories
    # removing the beliefs only is an edit, refused
    half = tmp_path / "c_half.jsonl"
    half.write_text(
        json.dumps(rows[0])
        + "\n"
        + "".join(json.dumps({k: v for k, v in r.items() if k != "belief"}) + "\n" for r in rows[1:])
    )
    with pytest.raises(TableFormatError, match="a text-only copy must remove every belief and every turn act"):
        ContextSet.load(half)
    with pytest.raises(TableFormatError, match="3 of 18 contexts have no history"):
        ContextSet.concat([ccol.select(range(15)), contexts.generate_grid(step=1.0).select(range(3))]).text_only()


# ----------------------------------------------------------------------------- collected histories
def test_collected_histories_are_the_dialogue_so_far(ccol):
    from policies.simulation.nlg import TemplateNLG

    nlg = TemplateNLG(0)
    for i in range(len(ccol)):
        h, m = ccol.history(i), ccol.metas[i]
        assert h[-1]["speaker"] == "user" and h[0]["speaker"] == "user"
        assert [t["speaker"] for t in h] == ["user", "system"] * (len(h) // 2) + ["user"]
        assert len(h) == 2 * m["turn"] - 1
        for t in h:
            if t["speaker"] == "system":
                assert t["text"] == nlg.generate(t["act"])  # the system's generator
        if i + 1 < len(ccol) and ccol.metas[i + 1]["dialogue"] == m["dialogue"]:
            nxt = ccol.history(i + 1)
            assert nxt[: len(h)] == h and len(nxt) == len(h) + 2
            assert nxt[len(h)]["act"] == respond("handcrafted", ccol.select([i])).acts[0]  # what it played


def test_user_text_says_the_act():
    import numpy as np

    from policies.simulation.user_nlg import UserTemplateNLG, user_nlg_rng

    nlg = UserTemplateNLG()
    said = nlg.generate('inform(area="north",food="north american",pricerange="dontcare")', np.random.default_rng(1))
    assert "north" in said and "north american" in said and "any" in said
    assert "phone number" in nlg.generate("request(phone)", np.random.default_rng(0))
    assert "hakka" in nlg.generate('request(name="hakka",addr)', np.random.default_rng(0))
    # one stream per dialogue: the same seed gives the same words, paraphrases vary across dialogues
    a = [nlg.generate("thankyou()", user_nlg_rng(7)) for _ in range(2)]
    assert a[0] == a[1]
    assert len({nlg.generate("thankyou()", user_nlg_rng(s)) for s in range(20)}) > 1
    assert nlg.generate("unknownact(x=1)", user_nlg_rng(0)) == "unknownact x 1"


# ----------------------------------------------------------------------------- logged dialogues
def _log(tmp_path, dialogues):
    p = tmp_path / "dialogues.jsonl"
    p.write_text("".join(json.dumps(d) + "\n" for d in dialogues))
    return p


BELIEF = {"beliefs": {"area": {"north": 1.0, "**NONE**": 0.0}}}


def test_import_logged_dialogues(tmp_path):
    p = _log(
        tmp_path,
        [
            {
                "id": "d1",
                "meta": {"corpus": "lab"},
                "turns": [
                    {"speaker": "user", "text": "I want to eat in the north", "act": 'inform(area="north")'},
                    {"speaker": "system", "text": "What food?", "act": "request(food)", "belief": BELIEF},
                    {"speaker": "user", "text": "thai"},
                    {"speaker": "system", "text": "Sala Thong is nice."},
                ],
            },
            {"turns": [{"speaker": "system", "text": "Hello!", "act": "hello()"}, {"speaker": "user", "text": "bye"}]},
        ],
    )
    cs = contexts.from_dialogues_jsonl(p)
    assert len(cs) == 3 and cs.ids == ["d1/t1", "d1/t2", f"{p.name}:2/t1"]
    assert cs.history(0) == [{"speaker": "user", "text": "I want to eat in the north", "act": 'inform(area="north")'}]
    assert len(cs.history(1)) == 3 and cs.history(2) == []
    assert cs.beliefs[0] == BELIEF and cs.beliefs[1] is None and cs.n_beliefs == 1
    assert cs.metas[0] == {
        "corpus": "lab",
        "origin": "logged",
        "dialogue": "d1",
        "turn": 1,
        "log_line": 1,
        "system_text": "What food?",
        "system_act": "request(food)",
    }
    table = contexts.logged_responses(cs)
    assert table.acts == ["request(food)", None, "hello()"] and table.prompts[1] == "Sala Thong is nice."
    assert table.n_errors == 0 and table.n_text_only == 1
    assert contexts.is_dialogue_log(p)


@pytest.mark.parametrize(
    "dialogue, message",
    [
        ({"turns": []}, ":1: 'turns' must be a non-empty list"),
        ({"turns": [{"speaker": "agent", "text": "x"}]}, ":1: turn 0: speaker must be 'system' or 'user'"),
        (
            {"turns": [{"speaker": "user", "text": "x", "belief": BELIEF}]},
            ":1: turn 0: only a system turn carries a belief",
        ),
        ({"turns": [{"speaker": "system", "text": "x", "act": "inform(("}]}, ":1: turn 0: "),
        (
            {"turns": [{"speaker": "system", "text": "x", "belief": {"beliefs": {}}}]},
            r":1: turn 0: beliefs: expected \{slot: \{value: probability\}\}, got an empty object",
        ),
        ({"turns": [{"speaker": "user", "text": "x"}]}, "no system turns in the file"),
        ({"turns": [{"speaker": "system", "text": "x"}], "who": 1}, r":1: unexpected keys \['who'\]"),
    ],
)
def test_dialogue_log_errors_are_named(tmp_path, dialogue, message):
    with pytest.raises(LogFormatError, match=message):
        contexts.from_dialogues_jsonl(_log(tmp_path, [dialogue]))


def test_lenient_import_skips_bad_dialogues_and_lists_them(tmp_path, capsys):
    from behavsim.cli import main

    good = {"id": "d1", "turns": [{"speaker": "user", "text": "hi"}, {"speaker": "system", "text": "hello"}]}
    bad_belief = {"id": "d2", "turns": [{"speaker": "system", "text": "x", "belief": {"beliefs": {"area": [1]}}}]}
    p = _log(tmp_path, [good, bad_belief, good])  # line 3: d1 again
    with pytest.raises(LogFormatError, match=r":2: turn 0: beliefs\.area: expected \{value: probability\}"):
        contexts.from_dialogues_jsonl(p)
    cs = contexts.from_dialogues_jsonl(p, strict=False)
    assert cs.ids == ["d1/t1"] and cs.meta["dialogues"] == 1
    assert [k["line"] for k in cs.meta["skipped"]] == [2, 3]
    assert cs.meta["skipped"][1]["problem"] == f"{p}:3: dialogue id 'd1' also on line 1"
    assert main(["contexts", "import", str(p), "--lenient", "-o", str(tmp_path / "d.jsonl")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"skipped {p}:2: turn 0: beliefs.area:")
    assert err[-1] == f"skipped 2 bad dialogue lines of {p}; kept 1 contexts"
    with pytest.raises(LogFormatError, match=r"no system turns in the file \(every .*\(2 bad lines skipped"):
        contexts.from_dialogues_jsonl(_log(tmp_path, [bad_belief, {"turns": []}]), strict=False)


def test_contexts_import_cli_reads_both_kinds_of_log(tmp_path, capsys):
    from behavsim.cli import main

    p = _log(tmp_path, [{"turns": [{"speaker": "user", "text": "hi"}, {"speaker": "system", "text": "hello"}]}])
    assert main(["contexts", "import", str(p), "-o", str(tmp_path / "d.jsonl")]) == 0
    assert ContextSet.load(tmp_path / "d.jsonl").history(0) == [{"speaker": "user", "text": "hi", "act": None}]
    beliefs = tmp_path / "beliefs.jsonl"
    beliefs.write_text(json.dumps(BELIEF) + "\n")
    assert main(["contexts", "import", str(beliefs), "-o", str(tmp_path / "b.jsonl")]) == 0
    assert ContextSet.load(tmp_path / "b.jsonl").histories is None


# ----------------------------------------------------------------------------- the protocol
def _reads_history(history):
    return None, f"you said: {history[-1]['text']}"


_reads_history.reads = ("history",)


def _reads_both(belief, history=None):
    return ("request(food)" if belief is not None else "bye()"), str(len(history or []))


_reads_both.reads = ("belief", "history")


def test_text_only_answers_are_not_failures(tmp_path, ccol):
    table = respond(_reads_history, ccol)
    assert table.n_errors == 0 and table.n_text_only == len(ccol) and table.acts == [None] * len(ccol)
    assert table.prompts[0] == f"you said: {ccol.history(0)[-1]['text']}"
    for suffix in (".jsonl", ".parquet"):
        back = ResponseTable.load(table.save(tmp_path / f"t{suffix}"))
        assert back.acts == table.acts and back.prompts == table.prompts and back.errors == table.errors
    assert check_policy(_reads_history, ccol) == len(ccol)


def test_a_policy_reading_histories_refuses_a_set_without_them(ccol):
    grid = contexts.generate_grid(step=1.0)
    with pytest.raises(
        UnanswerableContexts,
        match=r"reads dialogue histories, but context set \(generated, "
        r"sha256:.*\) has none .*behavsim contexts collect",
    ):
        respond(_reads_history, grid)
    with pytest.raises(UnanswerableContexts, match="reads belief states, but context set .* is text only"):
        respond("handcrafted", ccol.text_only())
    # a mixed set: the contexts without what the policy reads are that context's error
    mixed = ContextSet.concat([ccol.select([0]), grid.select([0])])
    with pytest.warns(PolicyErrorsWarning, match="failed on 1 of 2 contexts"):
        t = respond(_reads_history, mixed)
    assert (
        t.errors[0] is None
        and t.errors[1] == "MissingInput: the context has no dialogue history (this policy reads histories)"
    )
    both = respond(_reads_both, ContextSet.concat([ccol.select([0]), ccol.text_only().select([1])]))
    assert both.acts == ["request(food)", "bye()"] and both.prompts == ["1", "3"]


def test_every_modular_kind_answers_contexts_with_histories(ccol):
    """Histories beside beliefs change nothing for a policy that reads beliefs."""
    old = contexts.collect(["handcrafted"], dialogues=3, seed=0, histories=False)
    a, b = respond("handcrafted", ccol), respond("handcrafted", old)
    assert a.acts == b.acts and a.prompts == b.prompts and a.context_fingerprint == ccol.fingerprint


def test_neither_act_nor_prompt_is_an_error(ccol):
    def nothing(history):
        return None, None

    nothing.reads = ("history",)
    with pytest.warns(PolicyErrorsWarning):
        t = respond(nothing, ccol.select([0]))
    assert t.errors == ["TypeError: the answer has neither an act nor a prompt"]
