"""Corpora in ConvLab-3's unified data format as context sets (contexts/corpus.py): CamRest676 from
the shared folder (../shared/corpora/camrest676, read there, never copied into the project) and a
small corpus of another shape written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from behavsim import ContextSet, ResponseTable, compare, parse_acts
from contexts import logged_responses
from contexts.corpus import BELIEF_SOURCES, from_unified, state_agreement
from policies.corpora import LogFormatError, read_unified
from policies.simulation.domain import resolve_domain

REPO = Path(__file__).resolve().parents[2]
SPLITS = {"train": (406, 1671), "validation": (135, 538), "test": (135, 535)}
SLOT = {"price range": "pricerange", "area": "area", "food": "food"}


@pytest.fixture(scope="module")
def camrest(shared) -> Path:
    return shared("corpora", "camrest676", need="data.zip") / "data.zip"


@pytest.fixture(scope="module")
def raw(camrest) -> list[dict]:
    with zipfile.ZipFile(camrest) as z:
        return json.loads(z.read("data/dialogues.json"))


@pytest.fixture(scope="module")
def test_set(camrest) -> ContextSet:
    return from_unified(camrest, split="test")


def behavsim(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = "import sys; from behavsim.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def one_error_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("behavsim contexts: error: "), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def expected_contexts(raw: list[dict], split: str) -> list[tuple[str, list[tuple[str, str]], dict[str, str]]]:
    """Per system turn of the split, from the corpus file alone: id, history (speaker, text) and the
    annotated state of the last user turn before it (PyDial's slot names, '**NONE**' for empty)."""
    out = []
    for d in raw:
        if d["data_split"] != split:
            continue
        k = 0
        for n, t in enumerate(d["turns"]):
            if t["speaker"] != "system":
                continue
            k += 1
            st = next((u["state"]["restaurant"] for u in reversed(d["turns"][:n]) if u["speaker"] == "user"), {})
            state = {SLOT[s]: v.lower() or "**NONE**" for s, v in st.items()}
            out.append((f"{d['dialogue_id']}/t{k}", [(u["speaker"], u["utterance"]) for u in d["turns"][:n]], state))
    return out


def top_values(belief: dict) -> dict[str, str]:
    return {s: max(belief["beliefs"][s].items(), key=lambda kv: kv[1])[0] for s in ("area", "food", "pricerange")}


# ---------------------------------------------------------------------------------------- CamRest676
@pytest.mark.parametrize("split", list(SPLITS))
def test_each_split_imports_with_the_corpus_text(camrest, raw, split):
    cs = from_unified(camrest, split=split)
    n_dialogues, n_contexts = SPLITS[split]
    assert (cs.meta["dialogues"], len(cs)) == (n_dialogues, n_contexts)
    want = expected_contexts(raw, split)
    assert cs.ids == [cid for cid, _, _ in want]
    for i, (_, history, _) in enumerate(want):
        assert [(t["speaker"], t["text"]) for t in cs.history(i)] == history
    assert cs.n_beliefs == len(cs) and cs.meta["corpus"] == "camrest" and cs.meta["split"] == split
    assert {m["origin"] for m in cs.metas} == {"logged"}


#: The contexts whose belief (acts replayed through the tracker) differs from the annotated state:
#: the user's act says dontcare, the annotation left the slot empty (both dialogues, from the turn on).
DIFFER = {
    "train": ("camrest-train-45", "pricerange", 3),
    "validation": ("camrest-validation-103", "area", 3),
    "test": None,
}


@pytest.mark.parametrize("split", list(SPLITS))
def test_beliefs_top_values_equal_the_annotated_state(camrest, raw, split):
    want = {cid: state for cid, _, state in expected_contexts(raw, split)}
    by_tracker = from_unified(camrest, split=split)
    by_state = from_unified(camrest, split=split, belief="state")
    differ = [
        (cid, s, top, want[cid][s])
        for cid, b in zip(by_tracker.ids, by_tracker.beliefs)
        for s, top in top_values(b).items()
        if top != want[cid][s]
    ]
    if DIFFER[split] is None:
        assert differ == []
    else:
        dialogue, slot, n = DIFFER[split]
        assert len(differ) == n and {(c.split("/")[0], s, top, w) for c, s, top, w in differ} == {
            (dialogue, slot, "dontcare", "**NONE**")
        }
    assert all(top_values(b) == want[cid] for cid, b in zip(by_state.ids, by_state.beliefs))
    agreement = state_agreement(by_tracker)
    assert agreement["contexts"] == len(want) and agreement["agree"] == len(want) - len(differ)
    assert agreement["differ"] == [cid for cid, *_ in differ]
    assert state_agreement(by_state)["agree"] == len(want)
    assert sum(top_values(b) == want[cid] for cid, b in zip(by_tracker.ids, by_tracker.beliefs)) >= 0.9 * len(want)
    # the same moments otherwise: the state replaces only the informable slots (and what depends on them)
    same = [
        a["beliefs"]["requested"] == b["beliefs"]["requested"] and a["beliefs"]["method"] == b["beliefs"]["method"]
        for a, b in zip(by_tracker.beliefs, by_state.beliefs)
    ]
    assert all(same)


def test_act_mapping_counted_against_the_corpus(test_set, raw):
    entries = Counter()
    several, no_act = Counter(), Counter()
    for d in raw:
        if d["data_split"] != "test":
            continue
        for t in d["turns"]:
            acts = [a for k in ("binary", "categorical", "non-categorical") for a in t["dialogue_acts"][k]]
            entries["all"] += len(acts)
            entries["price range"] += sum(a["slot"] == "price range" for a in acts)
            entries["address"] += sum(a["slot"] == "address" for a in acts)
            entries["nooffer"] += sum(a["intent"] == "nooffer" for a in acts)
            several[t["speaker"]] += len({a["intent"] for a in acts}) > 1
            no_act[t["speaker"]] += not acts
    got = test_set.meta["import"]
    assert got["entries"] == entries["all"] == 1664
    assert (
        got["renamed"]
        == {
            "price range -> pricerange": entries["price range"],
            "address -> addr": entries["address"],
            "nooffer -> inform(name=none)": entries["nooffer"],
        }
        == {"price range -> pricerange": 249, "address -> addr": 224, "nooffer -> inform(name=none)": 53}
    )
    assert got["mapped"] == 526 and got["kept"] == 1664 - 526 and got["dropped"] == {}
    assert got["several_intents"] == dict(several) == {"system": 75, "user": 32}
    assert got["no_act"] == dict(no_act) == {"system": 150, "user": 165}
    assert got["off_ontology"] == {} and got["off_ontology_state"] == {}
    # several intents stay whole: 75 system turns answer with an act set
    assert sum(len(parse_acts(m["system_act"])) > 1 for m in test_set.metas if m["system_act"]) == 75


def test_acts_by_hand(test_set, raw):
    d = next(d for d in raw if d["dialogue_id"] == "camrest-test-0")
    cs = test_set.select([i for i, cid in enumerate(test_set.ids) if cid.startswith("camrest-test-0/")])
    for m in cs.metas:
        assert m["system_text"] == d["turns"][m["utt_idx"]]["utterance"] and m["corpus"] == "camrest"
    # PyDial's slot names (address -> addr), values lower-cased, one intent of several slots one act
    assert [m["system_act"] for m in cs.metas] == [
        "request(food)",
        'inform(food="european")',
        'inform(addr="cambridge lodge hotel 139 huntingdon road city centre",food="european",'
        'name="cambridge lodge restaurant",phone="01223 355166")',
        None,
    ]
    assert [t["act"] for t in cs.history(3)] == [
        'inform(food="russian")',
        "request(food)",
        'inform(food="european")',
        'inform(food="european")',
        "request(addr,phone)",
        cs.metas[2]["system_act"],
        None,
    ]
    # the human's no-venue act: PyDial's inform(name=none, ...) with the annotated constraints
    for m in test_set.metas:
        for act in parse_acts(m["system_act"] or "bye()"):
            if ("name", "none") in act.items:
                constraints = {s: v for s, v in m["corpus_state"].items() if v not in ("", "dontcare")}
                assert act.items == tuple(sorted([("name", "none"), *constraints.items()]))


def test_text_of_turns_without_acts_kept(test_set):
    no_act = [i for i, m in enumerate(test_set.metas) if m["system_act"] is None]
    assert len(no_act) == 150 and all(test_set.metas[i]["system_text"] for i in no_act)


def test_zip_folder_and_dialogues_json_give_the_same_set(camrest, tmp_path, test_set):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "data.zip").symlink_to(camrest)
    with zipfile.ZipFile(camrest) as z:
        z.extract("data/dialogues.json", tmp_path / "extracted")
    for path in (tmp_path / "corpus", tmp_path / "extracted", tmp_path / "extracted" / "data" / "dialogues.json"):
        assert from_unified(path, split="test").fingerprint == test_set.fingerprint
    assert from_unified(camrest, split="test").fingerprint == test_set.fingerprint  # deterministic


# ---------------------------------------------------------------------------------------- policies
def test_handcrafted_gp_and_wizard_answer_and_compare(test_set, run_dir):
    from behavsim import respond

    ckpt = sorted(run_dir.glob("ts-seed0/ckpt-*.npz"))[-1]
    wizard = logged_responses(test_set, policy_id="wizard", name="human wizard")
    hc = respond("handcrafted", test_set, policy_id="handcrafted")
    gp = respond(str(ckpt), test_set, policy_id="gp")
    assert hc.n_errors == 0 and gp.n_errors == 0 and len(hc) == len(gp) == 535
    assert wizard.policy["name"] == "human wizard" and sum(a is not None for a in wizard.acts) == 385
    comp = compare([wizard, hc, gp], "all", scores=["TMR", "DMR", "CER", "CMR"])
    means = comp.means.set_index(["a", "b"])
    # the scores over the 385 contexts where the wizard has an act (the other 150: n/a, counted)
    assert (means.loc[("wizard", "handcrafted"), "n_na_TMR"], means.loc[("handcrafted", "gp"), "n_na_TMR"]) == (150, 0)
    per = comp.per_context
    hc_rows = per[(per["a"] == "wizard") & (per["b"] == "handcrafted")]
    tmr = [float(parse_acts(w) == parse_acts(h)) for w, h in zip(wizard.acts, hc.acts) if w is not None]
    assert means.loc[("wizard", "handcrafted"), "TMR"] == pytest.approx(sum(tmr) / len(tmr), abs=1e-12)
    assert hc_rows["TMR"].notna().sum() == 385


def test_pydial_answers_every_context(test_set, pydial_root, tmp_path):
    import shutil

    from behavsim import respond
    from policies.pydial import PyDialAdapter

    root = tmp_path / "root"
    shutil.copytree(pydial_root, root, ignore=shutil.ignore_patterns(".git", "_bslogs"))
    table = respond(
        PyDialAdapter(str(root / "env1-configs" / "adapter-gp.cfg"), root=str(root), nlg=False),
        test_set,
        policy_id="pydial-gp",
    )
    assert len(table) == 535 and table.n_errors == 0 and all(table.acts)
    wizard = logged_responses(test_set, policy_id="wizard", name="human wizard")
    means = compare([wizard, table], scores=["TMR", "DMR"]).means
    assert means.loc[0, "n_na_TMR"] == 150 and 0 <= means.loc[0, "TMR"] <= means.loc[0, "DMR"] <= 1


def test_e2e_writes_one_row_per_context(test_set, e2e_run, tmp_path):
    from behavsim import respond

    _, _, ckpt = e2e_run
    table = respond(f"e2e:{ckpt}", test_set)
    assert len(table) == 535
    failed = [e for e in table.errors if e is not None]
    assert all(a is None for a, e in zip(table.acts, table.errors) if e is not None)
    assert len(failed) == table.n_errors and all(a is not None for a, e in zip(table.acts, table.errors) if e is None)
    wizard = logged_responses(test_set, policy_id="wizard", name="human wizard")
    means = compare([wizard, table], scores=["TMR", "DMR"]).means
    assert means.loc[0, "n"] == 535 and means.loc[0, "n_na_TMR"] >= 150 and 0 <= means.loc[0, "TMR"] <= 1


# ---------------------------------------------------------------------------------------- command line
def test_cli_import_prints_counts_and_respond_answers(camrest, tmp_path):
    r = behavsim("contexts", "import", str(camrest), "--split", "test", "-o", "ct.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == (
        "camrest split test, domain restaurant: 135 dialogues, 535 contexts (one per system turn); beliefs: tracker"
    )
    assert out[1] == (
        "act entries: 1664: 1138 kept as they are, 526 mapped (price range -> pricerange 249, address -> "
        "addr 224, nooffer -> inform(name=none) 53), 0 not kept"
    )
    assert out[2].startswith(
        "turns with several intents, kept whole as act sets: 75 system, 32 user; without an act: 150 system, 165 user"
    )
    assert out[-1].startswith("wrote 535 contexts to ct.jsonl")
    r = behavsim(
        "respond", "--policy", "handcrafted", "--contexts", "ct.jsonl", "-o", "hc.jsonl", "--no-progress", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert ResponseTable.load(tmp_path / "hc.jsonl").n_errors == 0
    r = behavsim("contexts", "wizard", "ct.jsonl", "-o", "wizard.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "wrote the answers of 'human wizard' to 535 contexts (385 with an act, 150 text only) to wizard.jsonl"
    )
    wizard = ResponseTable.load(tmp_path / "wizard.jsonl")
    assert (
        wizard.policy["name"] == "human wizard"
        and wizard.context_fingerprint == ContextSet.load(tmp_path / "ct.jsonl").fingerprint
    )
    r = behavsim("compare", "wizard.jsonl", "hc.jsonl", "--scores", "TMR", "DMR", "-o", "cmp.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def _damaged_zip(camrest: Path, tmp: Path) -> Path:
    p = tmp / "damaged.zip"
    p.write_bytes(camrest.read_bytes()[:5000])
    return p


def _zip_without_dialogues(camrest: Path, tmp: Path) -> Path:
    p = tmp / "foreign.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("readme.txt", "hello")
    return p


def _truncated_json(camrest: Path, tmp: Path) -> Path:
    with zipfile.ZipFile(camrest) as z:
        text = z.read("data/dialogues.json")
    p = tmp / "dialogues.json"
    p.write_bytes(text[:20000])
    return p


def _ontology(camrest: Path, tmp: Path) -> Path:
    with zipfile.ZipFile(camrest) as z:
        z.extract("data/ontology.json", tmp)
    return tmp / "data" / "ontology.json"


def _bad_speaker(camrest: Path, tmp: Path) -> Path:
    p = tmp / "bad.json"
    p.write_text(
        json.dumps(
            [
                {
                    "dialogue_id": "x-0",
                    "data_split": "test",
                    "domains": ["restaurant"],
                    "turns": [{"speaker": "wizard", "utterance": "hi"}],
                }
            ]
        )
    )
    return p


@pytest.mark.parametrize(
    "make, extra, needle",
    [
        (_damaged_zip, ["--split", "test"], "damaged.zip: not a readable zip file"),
        (
            _zip_without_dialogues,
            ["--split", "test"],
            "foreign.zip: not a unified-format corpus: no dialogues.json in the zip",
        ),
        (_truncated_json, ["--split", "test"], "dialogues.json: invalid JSON at line"),
        (
            _ontology,
            ["--split", "test"],
            "ontology.json: not a unified-format corpus: expected a non-empty list of dialogues",
        ),
        (_bad_speaker, ["--split", "test"], "bad.json: dialogue 0 ('x-0'): turn 0: speaker must be 'user' or 'system'"),
        (
            lambda c, t: c,
            ["--split", "dev"],
            "data.zip:data/dialogues.json: no split 'dev' (--split; splits: test 135, "
            "train 406, validation 135 dialogues)",
        ),
        (lambda c, t: c, [], "data.zip:data/dialogues.json: choose a split (--split;"),
        (
            lambda c, t: c,
            ["--split", "test", "--corpus-domain", "restaurants"],
            "no domain 'restaurants' in split 'test' (domains: restaurant 135 dialogues). Did you mean 'restaurant'?",
        ),
        (lambda c, t: t, ["--split", "test"], "no unified-format corpus in this folder"),
        (lambda c, t: t / "missing.zip", ["--split", "test"], "missing.zip: no such corpus"),
    ],
)
def test_bad_corpora_one_line_naming_the_file(camrest, tmp_path, make, extra, needle):
    path = make(camrest, tmp_path)
    line = one_error_line(behavsim("contexts", "import", str(path), *extra, "-o", "out.jsonl", cwd=tmp_path))
    assert needle in line
    assert not (tmp_path / "out.jsonl").exists()


def test_options_of_the_other_kind_refused(camrest, tmp_path):
    (tmp_path / "log.jsonl").write_text('{"beliefs": {"area": {"north": 1.0}}}\n')
    line = one_error_line(behavsim("contexts", "import", "log.jsonl", "--split", "test", "-o", "o.jsonl", cwd=tmp_path))
    assert "--split: for a corpus in the unified format" in line and "log.jsonl" in line
    line = one_error_line(
        behavsim("contexts", "import", str(camrest), "--split", "test", "--lenient", "-o", "o.jsonl", cwd=tmp_path)
    )
    assert "--lenient: applies to JSONL logs" in line
    with pytest.raises(Exception, match="belief: expected one of tracker, state, none"):
        from_unified(camrest, split="test", belief="trackr")
    assert BELIEF_SOURCES == ("tracker", "state", "none")


# ---------------------------------------------------------------------------------------- another shape
def _acts(binary=(), categorical=(), noncat=()):
    return {
        "binary": [dict(zip(("intent", "domain", "slot"), b)) for b in binary],
        "categorical": [dict(zip(("intent", "domain", "slot", "value"), c)) for c in categorical],
        "non-categorical": [dict(zip(("intent", "domain", "slot", "value"), c)) for c in noncat],
    }


R = "restaurant"
STATE_1 = {R: {"area": "north", "food": "klingon", "price range": ""}}
STATE_2 = {R: {"area": "north", "food": "thai|chinese", "price range": "dontcare", "book people": "2"}}
OTHER = [
    {
        "dataset": "lab",
        "data_split": "test",
        "dialogue_id": "lab-test-0",
        "domains": [R, "general"],
        "turns": [
            {
                "speaker": "system",
                "utterance": "Hello, welcome!",
                "utt_idx": 0,
                "dialogue_acts": _acts(binary=[("greet", "general", "")]),
            },
            {
                "speaker": "user",
                "utterance": "Klingon food  in the north, and the phone please.",
                "utt_idx": 1,
                "dialogue_acts": _acts(
                    binary=[("request", R, "phone")],
                    categorical=[("inform", R, "area", "North")],
                    noncat=[("inform", R, "food", "Klingon")],
                ),
                "state": STATE_1,
            },
            {
                "speaker": "system",
                "utterance": "There is no Klingon place in the north.",
                "dialogue_acts": _acts(noncat=[("nooffer", R, "food", "klingon")]),
            },
            {
                "speaker": "user",
                "utterance": "Then Thai, any price, and book a table for two.",
                "dialogue_acts": _acts(
                    binary=[("book", R, "")],
                    categorical=[("inform", R, "price range", "dontcare")],
                    noncat=[("inform", R, "food", "thai"), ("inform", R, "book people", "2")],
                ),
                "state": STATE_2,
            },
            {"speaker": "system", "utterance": "Bangkok City is a Thai place. Shall I book it?"},
            {
                "speaker": "user",
                "utterance": "No thanks, bye.",
                "dialogue_acts": _acts(binary=[("thank", "general", ""), ("bye", "general", "")]),
                "state": STATE_2,
            },
            {
                "speaker": "system",
                "utterance": "Goodbye.",
                "dialogue_acts": _acts(binary=[("bye", "general", ""), ("welcome", "general", "")]),
            },
        ],
    },
    {
        "dataset": "lab",
        "data_split": "test",
        "dialogue_id": "lab-test-1",
        "domains": [R, "hotel"],
        "turns": [
            {"speaker": "user", "utterance": "A hotel and a restaurant.", "dialogue_acts": _acts()},
            {"speaker": "system", "utterance": "Sure."},
        ],
    },
    {
        "dataset": "lab",
        "data_split": "train",
        "dialogue_id": "lab-train-0",
        "domains": [R],
        "turns": [
            {
                "speaker": "user",
                "utterance": "cheap food please",
                "state": {R: {"price range": "cheap"}},
                "dialogue_acts": _acts(categorical=[("inform", R, "price range", "cheap")]),
            },
            {"speaker": "system", "utterance": "What kind of food?", "dialogue_acts": _acts()},
            {"speaker": "user", "utterance": "italian", "state": {R: {"price range": "cheap", "food": "italian"}}},
            {"speaker": "system", "utterance": "Pizza Hut City Centre is cheap and Italian."},
        ],
    },
]


@pytest.fixture
def other(tmp_path) -> Path:
    p = tmp_path / "lab" / "data" / "dialogues.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(OTHER))
    return tmp_path / "lab"


def test_other_shape_needs_its_domain_named(other):
    with pytest.raises(Exception, match=r"split 'test' has 2 domains \(hotel 1, restaurant 2 dialogues\); choose one"):
        from_unified(other, split="test")
    with pytest.raises(Exception, match="no domain 'hotels' in split 'test'.*Did you mean 'hotel'"):
        from_unified(other, split="test", corpus_domain="hotels")


def test_other_shape_acts_beliefs_and_counts(other):
    cs = from_unified(other, split="test", corpus_domain=R)
    assert cs.ids == ["lab-test-0/t1", "lab-test-0/t2", "lab-test-0/t3", "lab-test-0/t4"]
    assert cs.meta["dialogues"] == 1 and cs.meta["dialogues_left_out"] == {"hotel": 1}
    history = cs.history(3)
    assert [t["text"] for t in history] == [t["utterance"] for t in OTHER[0]["turns"][:6]]
    assert [t["act"] for t in history] == [
        "hello()",
        'inform(area="north",food="klingon")|request(phone)',  # several intents: one act set; case folded
        'inform(food="klingon",name="none")',  # nooffer with its own slot-value
        'inform(food="thai",pricerange="dontcare")',  # book, book people: not kept (counted)
        None,  # a system turn without acts
        "bye()|thankyou()",
    ]
    assert [m["system_act"] for m in cs.metas] == ["hello()", 'inform(food="klingon",name="none")', None, "bye()"]
    got = cs.meta["import"]
    assert got["entries"] == 13 and got["kept"] == 6 and got["mapped"] == 4
    assert got["renamed"] == {
        "greet -> hello": 1,
        "nooffer -> inform(name=none)": 1,
        "price range -> pricerange": 1,
        "thank -> thankyou": 1,
    }
    assert got["dropped"] == {"intent book": 1, "intent welcome": 1, "slot book people": 1}
    assert got["several_intents"] == {"system": 1, "user": 3} and got["no_act"] == {"system": 1}
    assert got["off_ontology"] == {"food=klingon": 2} and got["off_ontology_state"] == {"food=klingon": 1}
    assert got["state_dropped"] == {"slot book people": 2}
    assert got["no_venue_from_state"] == 0
    # beliefs: the first turn is PyDial's initial belief; the off-ontology food is in no belief
    tops = [top_values(b) for b in cs.beliefs]
    assert tops == [
        {"area": "**NONE**", "food": "**NONE**", "pricerange": "**NONE**"},
        {"area": "north", "food": "**NONE**", "pricerange": "**NONE**"},
        {"area": "north", "food": "thai", "pricerange": "dontcare"},
        {"area": "north", "food": "thai", "pricerange": "dontcare"},
    ]
    assert cs.beliefs[1]["beliefs"]["requested"]["phone"] == 1.0
    assert cs.metas[1]["corpus_state"] == {"area": "north", "food": "klingon", "pricerange": ""}
    assert cs.metas[2]["corpus_state"] == {"area": "north", "food": "thai", "pricerange": "dontcare"}
    by_state = from_unified(other, split="test", corpus_domain=R, belief="state")
    assert [top_values(b) for b in by_state.beliefs] == tops
    text_only = from_unified(other, split="test", corpus_domain=R, belief="none")
    assert text_only.n_beliefs == 0 and text_only.n_histories == 4


def test_system_turns_without_acts_give_text_only_wizard_answers(other, tmp_path):
    cs = from_unified(other / "data" / "dialogues.json", split="train")
    wizard = logged_responses(cs, policy_id="wizard", name="human wizard")
    assert wizard.acts == [None, None] and wizard.prompts == [
        "What kind of food?",
        "Pizza Hut City Centre is cheap and Italian.",
    ]
    assert top_values(cs.beliefs[1]) == {
        "area": "**NONE**",
        "food": "**NONE**",
        "pricerange": "cheap",
    }  # no act: no food
    assert from_unified(other, split="train", belief="state").beliefs[1]["beliefs"]["food"]["italian"] == 1.0
    assert cs.meta["import"]["no_act"] == {"system": 2, "user": 1}


def test_read_unified_checks_every_dialogue(tmp_path):
    p = tmp_path / "d.json"
    p.write_text(json.dumps([{"dialogue_id": "a", "data_split": "test", "turns": []}, {"turns": []}]))
    with pytest.raises(
        LogFormatError,
        match=r"d.json: dialogue 1: not a unified-format corpus: a dialogue has no "
        r"'dialogue_id', 'data_split'",
    ):
        read_unified(p)
    p.write_text(
        json.dumps(
            [
                {
                    "dialogue_id": "a",
                    "data_split": "test",
                    "domains": [R],
                    "turns": [
                        {"speaker": "user", "utterance": "x", "dialogue_acts": {"binary": [{"intent": "inform"}]}}
                    ],
                }
            ]
        )
    )
    with pytest.raises(
        LogFormatError,
        match=r"dialogue 0 \('a'\): turn 0: dialogue_acts.binary: expected "
        r"\{intent, domain, slot\} strings",
    ):
        from_unified(p, split="test")


def test_default_domain_is_camrestaurants(test_set):
    assert test_set.meta["domain_rules"] == "CamRestaurants-rules.json"
    assert test_set.meta["domain_venues"] == len(resolve_domain(None).venues)


def test_wizard_of_a_set_not_from_dialogues_refused(tmp_path, make_grid):
    make_grid((0.0, 1.0)).save(tmp_path / "grid.jsonl")
    line = one_error_line(behavsim("contexts", "wizard", "grid.jsonl", "-o", "w.jsonl", cwd=tmp_path))
    assert "grid.jsonl: context 'c0' is not from logged dialogues (no system_text in its meta;" in line
    assert not (tmp_path / "w.jsonl").exists()
