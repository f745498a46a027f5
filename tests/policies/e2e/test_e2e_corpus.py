"""behavsim's end-to-end model trained on people's dialogues (``train --policy e2e --corpus``): the
examples a small unified-format corpus written here makes, checked by hand; bad input; a tiny
training that is deterministic, resumes to the same bytes and whose model loads and answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from behavsim import ConfigError, ResponseTable, parse_acts
from policies.simulation.domain import resolve_domain


def _acts(*entries):
    """``dialogue_acts`` of entries ``(intent, slot[, value])`` (``general`` for greetings)."""
    out = {"binary": [], "categorical": [], "non-categorical": []}
    for intent, slot, *value in entries:
        domain = "general" if intent in ("bye", "thank") else "restaurant"
        if not value:
            out["binary"].append({"intent": intent, "domain": domain, "slot": slot})
        else:
            kind = "non-categorical" if slot in ("name", "food") else "categorical"
            out[kind].append({"intent": intent, "domain": domain, "slot": slot, "value": value[0]})
    return out


def _user(text, acts, state):
    return {"speaker": "user", "utterance": text, "dialogue_acts": acts, "state": {"restaurant": state}}


def _system(text, acts):
    return {"speaker": "system", "utterance": text, "dialogue_acts": acts}


def _dialogues(split: str, n: int) -> list[dict]:
    """Dialogue 0: several intents in a system turn, a user value off the ontology (martian), a
    system turn without an act, a goodbye; dialogue 1: a question for the food."""
    first = [
        _user(
            "I want Chinese food in the north.",
            _acts(("inform", "food", "Chinese"), ("inform", "area", "north")),
            {"price range": "", "area": "north", "food": "chinese"},
        ),
        _system(
            "Golden Wok is a Chinese place in the north. What price range?",
            _acts(
                ("inform", "name", "Golden Wok"),
                ("inform", "food", "Chinese"),
                ("inform", "area", "north"),
                ("request", "price range"),
            ),
        ),
        _user(
            "Something martian please. The phone number?",
            _acts(("inform", "food", "martian"), ("request", "phone")),
            {"price range": "", "area": "north", "food": "martian"},
        ),
        _system("Sure.", _acts()),
        _user("Thank you, bye.", _acts(("thank", "none"), ("bye", "none")), {}),
        _system("Goodbye.", _acts(("bye", "none"))),
    ]
    second = [
        _user(
            "Cheap food in the centre.",
            _acts(("inform", "price range", "cheap"), ("inform", "area", "centre")),
            {"price range": "cheap", "area": "centre", "food": ""},
        ),
        _system("What kind of food would you like?", _acts(("request", "food"))),
    ]
    dialogues = []
    for i in range(n):
        turns = [dict(t, utt_idx=k) for k, t in enumerate(first if i % 2 == 0 else second)]
        dialogues.append(
            {
                "dataset": "toy",
                "data_split": split,
                "dialogue_id": f"toy-{split}-{i}",
                "domains": ["restaurant"],
                "turns": turns,
            }
        )
    return dialogues


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("toy")
    data = _dialogues("train", 2) + _dialogues("validation", 2) + _dialogues("test", 2)
    (folder / "dialogues.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_corpus_examples_checked_by_hand(corpus):
    from policies.e2e._corpus import corpus_data
    from policies.e2e._rows import dialogue_texts

    domain = resolve_domain(None)
    cs, table, groups = corpus_data(corpus, "train", domain)
    assert groups == [[0, 1, 2], [3]] and cs.ids == [
        "toy-train-0/t1",
        "toy-train-0/t2",
        "toy-train-0/t3",
        "toy-train-1/t1",
    ]
    assert isinstance(table, ResponseTable) and table.policy["id"] == "wizard"
    # the wizard's act: an act set for the turn of two intents, None for the turn without one
    assert table.acts == [
        'inform(area="north",food="chinese",name="golden wok")|request(pricerange)',
        None,
        "bye()",
        "request(food)",
    ]
    assert len(parse_acts(table.acts[0])) == 2
    t = dialogue_texts(cs, table, domain, groups[0], people=True)
    # the history: speakers and words, the big slots' values (food, name) as numbered placeholders
    assert t.segments == [
        "<|user|> i want [food_1] food in the north.",
        "<|system|> [name_1] is a [food_1] place in the north. what price range?"
        "<|user|> something martian please. the phone number?",
        "<|system|> sure.<|user|> thank you, bye.",
    ]
    # the belief span's labels: the tracker's constraints after the user's acts; the martian food
    # is off the ontology: the tracker keeps chinese
    assert t.beliefs == [" area = north ; food = [food_1]"] * 3
    (j0, db0, act0, words0), (j1, _, act1, words1), (j2, _, act2, words2) = t.blocks
    assert (j0, j1, j2) == (0, 1, 2)
    # three chinese venues in the north, in database order (hakka, golden wok, the hotpot): the act
    # names golden wok, not the first shown, so it is written by its placeholder; its area and food are [v]
    assert db0 == " matches 3 ; differ yes ; [name_1] ; [name_2] ; [name_3]"
    assert act0 == " inform name = [name_2] ; area = [v] ; food = [v] | request pricerange"
    # the words, delexicalised by the act and the ontology
    assert words0 == " [name] is a [food] place in the [area]. what price range?"
    assert (act1, words1) == (None, " sure.")  # no act: the words alone are targets
    assert (act2, words2) == (" bye", " goodbye.")


def test_a_turn_without_an_act_trains_its_empty_act_or_its_words_only(corpus):
    from policies.e2e._corpus import corpus_data
    from policies.e2e._rows import all_texts, dialogue_texts, encoder, main_row
    from policies.e2e._tokenizer import build_tokenizer

    domain = resolve_domain(None)
    cs, table, groups = corpus_data(corpus, "train", domain)
    t = dialogue_texts(cs, table, domain, groups[0], people=True)
    tok = build_tokenizer(list(all_texts(t)), domain)
    row, dropped = main_row(tok, t, 1024, encoder(tok, all_texts(t)))
    assert dropped == 0
    blocks = []
    for k in range(len(row.seen)):
        blocks.append(tok.decode([tok_id for (i, tok_id) in row.targets if row.block[i + 1] == k]))
    assert blocks == [
        " inform name = [name_2] ; area = [v] ; food = [v] | request pricerange<|response|>"
        " [name] is a [food] place in the [area]. what price range?<|endoftext|>",
        " sure.<|endoftext|>",  # the rule of runs before no_act_turns: its words alone are targets
        " bye<|response|> goodbye.<|endoftext|>",
    ]
    # no_act_turns "empty" (a corpus run's default): the empty act is a target too — right after
    # <|act|> comes <|response|> — and nothing else changes
    empty, _ = main_row(tok, t, 1024, encoder(tok, all_texts(t)), empty_acts=True)
    got = [tok.decode([tok_id for (i, tok_id) in empty.targets if empty.block[i + 1] == k]) for k in range(3)]
    assert got == [blocks[0], "<|response|> sure.<|endoftext|>", blocks[2]]
    # the model reads the same either way (<|act|><|response|> then the words): only the targets differ
    assert empty.ids == row.ids and len(empty.targets) == len(row.targets) + 1


def test_no_act_turns_setting_its_default_its_files_and_bad_values(corpus, tmp_path, capsys):
    from behavsim.cli import main
    from policies.e2e import NO_ACT_TURNS, E2EConfig, corpus_e2e_config

    assert NO_ACT_TURNS == ("empty", "words")
    config = corpus_e2e_config(corpus, "train", batch_dialogues=2)
    assert config.no_act_turns == "empty" and config.to_dict()["no_act_turns"] == "empty"
    # a corpus run's file from before the setting existed: its turns without an act trained the words only
    old = {k: v for k, v in config.to_dict().items() if k != "no_act_turns"}
    assert E2EConfig.from_dict(old).no_act_turns == "words"
    assert "no_act_turns" not in E2EConfig().to_dict()  # a teacher's run: its files as before
    with pytest.raises(ConfigError, match="no_act_turns must be one of empty, words, got 'none'") as exc:
        corpus_e2e_config(corpus, "train", batch_dialogues=2, no_act_turns="none")
    assert "\n" not in str(exc.value)
    base = ["train", "--policy", "e2e", "--no-progress", "-o", str(tmp_path / "x")]
    assert main([*base, "--teacher", "handcrafted", "--no-act-turns", "words"]) == 2
    assert "--no-act-turns: for --corpus PATH" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_words_off_the_vocabulary_are_unknown_one_by_one(corpus):
    from policies.e2e._tokenizer import build_tokenizer

    tok = build_tokenizer(["<|user|> i want chinese food"], resolve_domain(None))
    ids = tok("<|user|> i want zorblax food", add_special_tokens=False)["input_ids"]
    assert tok.convert_ids_to_tokens(ids) == ["<|user|>", " i", " want", "<|unk|>", " food"]


def test_bad_corpus_input_is_one_line(corpus, tmp_path, capsys):
    from behavsim.cli import main

    base = ["train", "--policy", "e2e", "--layers", "1", "--width", "32", "--heads", "2", "--batch-dialogues", "2"]
    base.append("--no-progress")
    assert main([*base, "--corpus", str(corpus), "--split", "dev", "-o", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no split 'dev' (--split; splits: test 2, train 2, validation 2 dialogues)" in err
    assert not (tmp_path / "a").exists()
    damaged = tmp_path / "data.zip"
    damaged.write_bytes(b"PK\x03\x04 not really a zip")
    assert main([*base, "--corpus", str(damaged), "-o", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "data.zip: not a readable zip file" in err
    assert main([*base, "--corpus", str(corpus), "--validation-split", "dev", "-o", str(tmp_path / "c")]) == 2
    assert "no split 'dev'" in capsys.readouterr().err
    assert main([*base, "--corpus", str(corpus), "--teacher", "handcrafted", "-o", str(tmp_path / "d")]) == 2
    assert "not both" in capsys.readouterr().err
    assert main([*base, "--teacher", "handcrafted", "--split", "train", "-o", str(tmp_path / "e")]) == 2
    assert "--split: for --corpus PATH" in capsys.readouterr().err
    assert main(["train", "--corpus", str(corpus), "-o", str(tmp_path / "f")]) == 2
    assert "--corpus applies to --policy e2e only" in capsys.readouterr().err


def test_early_stopping_by_validation_loss():
    from policies.e2e._train import _stopped

    losses = [{"validation": v} for v in (3.0, 2.0, 2.5, 2.1)]
    assert _stopped(losses, 2)  # 2.5 and 2.1: none better than 2.0
    assert not _stopped(losses, 3)  # 2.0 is better than 3.0
    assert not _stopped(losses, 0)
    assert not _stopped([{"loss": 1.0}] * 5, 1)  # no validation: never


TINY = dict(
    teacher="wizard",
    split="train",
    validation="validation",
    patience=0,
    dialogues=2,
    epochs=40,
    checkpoint_every=40,
    batch_dialogues=2,
    n_layer=1,
    n_embd=32,
    n_head=2,
    lr=1e-2,
    warmup_steps=2,
    chat=False,
    belief_weight=1.0,
)


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_tiny_training_is_deterministic_resumes_and_its_model_loads_and_answers(corpus, tmp_path):
    from transformers import AutoModelForCausalLM

    import contexts
    from behavsim import respond
    from policies.e2e import CORPUS_BEAM, E2EConfig, train_e2e

    config = E2EConfig(corpus=str(corpus), **TINY)
    a = train_e2e(config, tmp_path / "a")
    assert [n for n, _ in a] == [40, 80]
    b = train_e2e(config, tmp_path / "b", stop_after=40)
    assert [n for n, _ in b] == [40]
    b = train_e2e(config, tmp_path / "b")  # resumed
    assert _bytes(a[-1][1]) == _bytes(b[-1][1])
    state = json.loads((a[-1][1] / "trainer_state.json").read_text())
    assert [x["dialogues"] for x in state["losses"]] == [40, 80] and all("validation" in x for x in state["losses"])
    best = json.loads((tmp_path / "a" / "e2e-best.json").read_text())
    assert best["checkpoint"] in ("ckpt-000040", "ckpt-000080")
    info = json.loads((a[-1][1] / "behavsim-e2e.json").read_text())
    assert info["teacher"]["id"] == "wizard" and info["split"] == "train"
    model = AutoModelForCausalLM.from_pretrained(a[-1][1])
    assert model.config.n_embd == 32
    cs = contexts.from_unified(corpus, split="test")
    table = respond(f"e2e:{a[-1][1]}", cs)
    assert len(table.acts) == len(cs) == 4
    # the test split's dialogues are the training ones: the model says what the wizard said
    assert table.acts[3] == "request(food)" and table.prompts[3] == "what kind of food would you like?"
    assert table.acts[0] == 'inform(area="north",food="chinese",name="golden wok")|request(pricerange)'
    # where the wizard wrote no act ("Sure."), the model writes none: an answer of words alone, no error
    assert (table.acts[1], table.prompts[1], table.errors[1]) == (None, "sure.", None) and table.n_text_only == 1
    # a model trained on people searches its words with 4 beams by default (recorded; the id has
    # no suffix); greedy words are another policy; the acts are written greedily either way
    assert CORPUS_BEAM == 4 and table.policy["beam"] == 4 and not table.id.endswith("-beam4")
    assert respond(f"e2e:{a[-1][1]}:beam=4", cs).id == table.id
    greedy = respond(f"e2e:{a[-1][1]}:beam=1", cs)
    assert greedy.acts == table.acts and greedy.id == f"{table.id}-beam1" and "beam" not in greedy.policy
    assert greedy.prompts[3] == "what kind of food would you like?"
    with pytest.raises(ConfigError, match="beam must be a positive integer") as exc:
        respond(f"e2e:{a[-1][1]}:beam=0", cs)
    assert "\n" not in str(exc.value)
    # the environment plays its answers, act sets too (each dialogue's first answer is such a set)
    from policies.training.play import play_dialogues

    played = play_dialogues(f"e2e:{a[-1][1]}", 4, env_options={"user_config": "env1"})
    assert len(played.success) == 4 and "not a system act" not in (played.first_failure or "")


def test_dropout_is_deterministic_resumes_to_the_same_bytes_and_is_left_out_of_the_files_when_off(corpus, tmp_path):
    from policies.e2e import E2EConfig, train_e2e

    plain = E2EConfig(corpus=str(corpus), **TINY)
    dropped = E2EConfig(corpus=str(corpus), **{**TINY, "dropout": 0.3})
    a = train_e2e(dropped, tmp_path / "a")
    b = train_e2e(dropped, tmp_path / "b", stop_after=40)
    # resumed: the second half's masks are drawn alike (and the validation after the first
    # checkpoint, without dropout, left the model training with it: else the bytes would differ)
    b = train_e2e(dropped, tmp_path / "b")
    assert _bytes(a[-1][1]) == _bytes(b[-1][1])
    c = train_e2e(plain, tmp_path / "c")
    assert _bytes(c[-1][1])["model.safetensors"] != _bytes(a[-1][1])["model.safetensors"]
    run = lambda name: json.loads((tmp_path / name / "e2e-run.json").read_text())["config"]  # noqa: E731
    assert run("a")["dropout"] == 0.3 and "dropout" not in run("c")  # a run without: its files as before
    assert E2EConfig.from_dict(run("c")) == plain and E2EConfig.from_dict(run("a")) == dropped
    with pytest.raises(ConfigError, match=r"dropout must be a number in \[0, 1\)"):
        E2EConfig(corpus=str(corpus), **{**TINY, "dropout": 1.0})


def test_act_sets_read_back_and_a_model_of_people_leaves_out_what_it_cannot_fill():
    from policies.e2e._format import E2EFormatError, Lexicon, lex_act

    domain = resolve_domain(None)
    lex = Lexicon(domain)
    assert lex.text("golden wok") == "[name_1]"
    # an act of the set that names no venue fills [v] from the venue another act names (golden wok:
    # north, chinese in the database)
    got = lex_act(" inform name = [name_1] | inform area = [v] ; food = [v] | request pricerange", domain, lex)
    assert got == 'inform(area="north",food="chinese")|inform(name="golden wok")|request(pricerange)'
    # a no-venue act's [v] come from the query's constraints; phone is not one of them
    act = " inform name = none ; food = [v] ; phone = [v]"
    with pytest.raises(E2EFormatError, match="fills phone from its constraints, which hold none"):
        lex_act(act, domain, lex, [], [("food", "chinese")])
    assert lex_act(act, domain, lex, [], [("food", "chinese")], lenient=True) == 'inform(food="chinese",name="none")'


def test_a_response_s_open_placeholders_come_from_the_named_venue_s_entry():
    from policies.e2e._format import fill_from_venue

    domain = resolve_domain(None)
    # golden wok: 01223 350688, moderate, chinese, north (the database)
    act = 'inform(name="golden wok")'
    text = "[name] is [pricerange_adv] priced, call [phone]; [food] in the [area]"
    assert (
        fill_from_venue(text, act, domain) == "golden wok is moderately priced, call 01223 350688; chinese in the north"
    )
    assert fill_from_venue("call [phone]", "request(food)", domain) == "call [phone]"  # no venue: as it is


def test_words_alone_take_their_values_from_the_query_and_the_venue_it_shows_first():
    from types import SimpleNamespace

    from policies.e2e import E2EModel

    domain = resolve_domain(None)
    model = SimpleNamespace(domain=domain)
    row = SimpleNamespace(constraints=[("food", "chinese"), ("area", "north"), ("pricerange", "dontcare")], shown=[])
    words = " there are no [food] places in the [area] at a [pricerange] price. goodbye!"
    # no venue shown: the constraints fill what they hold (not dontcare); the rest stays as it is
    got = E2EModel._words_alone(model, row, words)
    assert got == "there are no chinese places in the north at a [pricerange] price. goodbye!"
    # golden wok (01223 350688, moderate): shown first, it fills the venue's placeholders
    row.shown = ["golden wok", "hakka"]
    got = E2EModel._words_alone(model, row, " [name] is [pricerange_adv] priced, call [phone]. bye")
    assert got == "golden wok is moderately priced, call 01223 350688. bye"
    assert E2EModel._words_alone(model, row, " ") is None  # no words: no prompt
