"""behavsim's end-to-end model: its text format, tokenizer, training (checkpoints in Hugging Face's
format, determinism, resuming), the ``e2e:DIR`` policy kind, and dialogues it plays."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from _e2e_teacher import SMALL

import contexts
from behavsim import ConfigError, ContextSet, check_policy, respond
from behavsim.policy import UnanswerableContexts


@pytest.fixture(scope="module")
def ccol() -> ContextSet:
    return contexts.collect(["handcrafted"], dialogues=3, seed=424242)


# ----------------------------------------------------------------------------- the text format
def test_format_round_trips_the_teachers_answers(ccol):
    """Every act and prompt the teacher gives survives delexicalisation and filling back."""
    from policies.e2e._data import constraints_of
    from policies.e2e._format import (
        MAX_MATCHES,
        Lexicon,
        belief_text,
        clean,
        db_query,
        db_text,
        delex_act,
        delex_prompt,
        history_text,
        lex_act,
        lex_prompt,
        parse_belief,
    )
    from policies.simulation.domain import resolve_domain

    domain = resolve_domain(None)
    table = respond("handcrafted", ccol)
    pointed = 0
    for i in range(len(ccol)):
        lex = Lexicon(domain)
        history_text(ccol.history(i), lex)
        cons = constraints_of(ccol.beliefs[i], domain)
        assert parse_belief(belief_text(cons, lex), domain, lex) == cons
        result = db_query(domain, cons)
        db_text(result, lex)
        shown = lex.recent(result.names)[:MAX_MATCHES]
        act = table.acts[i]
        assert lex_act(delex_act(act, domain, lex), domain, lex) == act
        written = delex_act(act, domain, lex, shown, cons)
        assert lex_act(written, domain, lex, shown, cons) == act
        pointed += "name = [v]" in written
        assert lex_prompt(delex_prompt(table.prompts[i], act), act) == clean(table.prompts[i])
    assert pointed > 0  # the venue the database shows first is written [v]


def test_the_database_s_first_venue_is_written_v_and_another_by_its_placeholder():
    from policies.e2e._format import Lexicon, delex_act, history_text
    from policies.simulation.domain import resolve_domain

    domain = resolve_domain(None)
    first, second = domain.venues[0], domain.venues[1]
    lex = Lexicon(domain)
    history_text([{"speaker": "system", "text": f"{second['name']} is a nice place"}], lex)
    shown = [first["name"], second["name"]]
    act = f'inform(name="{first["name"]}",phone="{first["phone"]}")'
    assert delex_act(act, domain, lex, shown) == " inform name = [v] ; phone = [v]"
    act = f'inform(name="{second["name"]}",phone="{second["phone"]}")'
    assert delex_act(act, domain, lex, shown) == " inform name = [name_1] ; phone = [v]"
    # the venue comes first, whatever the slots' alphabetical order: what is said of it follows
    act = f'inform(name="{first["name"]}",addr="{first["addr"]}",area="{first["area"]}")'
    assert delex_act(act, domain, lex, shown) == " inform name = [v] ; addr = [v] ; area = [v]"
    assert delex_act('inform(name="none",food="chinese")', domain, lex, shown) == " inform name = none ; food = chinese"


def test_no_venue_acts_write_the_query_s_values_as_v():
    from behavsim import canonical_act
    from policies.e2e._format import E2EFormatError, Lexicon, delex_act, lex_act
    from policies.simulation.domain import resolve_domain

    domain = resolve_domain(None)
    lex = Lexicon(domain)
    cons = [("area", "north"), ("food", "chinese"), ("pricerange", "dontcare")]
    act = 'inform(name="none",area="north",food="chinese")'
    written = delex_act(act, domain, lex, (), cons)
    assert written == " inform name = none ; area = [v] ; food = [v]"
    assert lex_act(written, domain, lex, (), cons) == canonical_act(act)
    # a value the constraints do not hold stays as it is, and [v] of a slot they lack is refused
    assert delex_act('inform(name="none",area="south")', domain, lex, (), cons) == " inform name = none ; area = south"
    with pytest.raises(E2EFormatError, match="fills phone from its constraints, which hold none"):
        lex_act(" inform name = none ; phone = [v]", domain, lex, (), cons)
    # an act naming a venue fills [v] from the venue, never from the constraints
    v = domain.venues[0]
    assert lex_act(f" inform name = {v['name']} ; area = [v]", domain, lex, (), cons) == canonical_act(
        f'inform(name="{v["name"]}",area="{v["area"]}")'
    )


def test_history_is_delexicalised_with_the_ontology():
    from policies.e2e._format import Lexicon, db_query, db_text, history_text
    from policies.simulation.domain import resolve_domain

    domain = resolve_domain(None)
    lex = Lexicon(domain)
    text = history_text(
        [
            {"speaker": "user", "text": "I want  North American food in the north"},
            {"speaker": "system", "text": "How about Hakka? It serves chinese food.", "act": "x()"},
            {"speaker": "user", "text": "no, north american please"},
        ],
        lex,
    )
    assert text == (
        "<|user|> i want [food_1] food in the north<|system|> how about [name_1]? it serves [food_2] "
        "food.<|user|> no, [food_1] please"
    )
    assert lex.value("[food_2]") == "chinese" and lex.ref("hakka") == "[name_1]" and lex.value("north") == "north"
    # the database result names venues the dialogue mentioned by their placeholder, new ones by the next
    res = db_query(domain, [("area", "north"), ("food", "chinese"), ("pricerange", "dontcare")])
    assert res.count == 3 and not res.differ
    assert res.names[0] == "hakka"
    assert db_text(res, lex) == " matches 3 ; differ no ; [name_1] ; [name_2] ; [name_3]"
    assert [lex.value(f"[name_{k}]") for k in (1, 2, 3)] == list(res.names)


def test_tokenizer_pieces_decode_exactly_and_chat_template():
    from policies.e2e._tokenizer import build_tokenizer
    from policies.simulation.domain import resolve_domain

    domain = resolve_domain(None)
    text = "<|user|> i want north american food, at [name_2]?<|belief|> food = [food_1]"
    tok = build_tokenizer([text], domain)
    ids = tok(text)["input_ids"]
    assert tok.convert_ids_to_tokens(ids) == [
        "<|user|>",
        " i",
        " want",
        " north american",
        " food",
        ",",
        " at",
        " [name_2]",
        "?",
        "<|belief|>",
        " food",
        " =",
        " [food_1]",
    ]
    assert tok.decode(ids) == text
    assert tok.convert_ids_to_tokens(tok(" la mimosa")["input_ids"]) == [" la mimosa"]  # every value: one token
    assert tok.convert_ids_to_tokens(tok(" 01223")["input_ids"]) == ["<|unk|>"]
    chat = tok.apply_chat_template(
        [{"role": "user", "content": "Thai food"}, {"role": "assistant", "content": "ok"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert chat == "<|endoftext|><|user|> thai food<|system|> ok<|answer|>"  # the chat mode's answer follows


# ----------------------------------------------------------------------------- training
FILES = {
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "behavsim-e2e.json",
    "optimizer.safetensors",
    "trainer_state.json",
}


def _bytes(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_checkpoints_are_hugging_face_folders(e2e_run):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2LMHeadModel, PreTrainedTokenizerFast

    config, out, last = e2e_run
    names = sorted(p.name for p in out.iterdir())
    assert names == ["ckpt-000240", "ckpt-000480", "e2e-run.json", "teacher-contexts.jsonl", "teacher-responses.jsonl"]
    assert {p.name for p in last.iterdir()} == FILES
    model = AutoModelForCausalLM.from_pretrained(last)
    tok = AutoTokenizer.from_pretrained(last)
    assert isinstance(model, GPT2LMHeadModel) and isinstance(tok, PreTrainedTokenizerFast)
    assert model.config.n_layer == 1 and model.config.n_embd == 32 and model.config.vocab_size == len(tok)
    info = json.loads((last / "behavsim-e2e.json").read_text())
    assert (
        info["reads"] == ["history"]
        and info["dialogues"] == 480
        and info["teacher"]["id"] == "_e2e_teacher.always_request_area"
    )
    state = json.loads((last / "trainer_state.json").read_text())
    assert [r["dialogues"] for r in state["losses"]] == [240, 480]
    assert state["losses"][1]["loss"] < state["losses"][0]["loss"]  # it learns
    teacher = ContextSet.load(out / "teacher-contexts.jsonl")
    assert teacher.n_histories == len(teacher) and {m["dialogue"] for m in teacher.metas} == set(range(8))


def test_same_seed_same_bytes_and_resuming_gives_the_same_bytes(e2e_run, tmp_path):
    from policies.e2e import E2EConfig, train_e2e

    config, out, last = e2e_run
    again = train_e2e(config, tmp_path / "again")[-1][1]
    assert _bytes(again) == _bytes(last)
    stopped = train_e2e(config, tmp_path / "resumed", stop_after=240)
    assert [n for n, _ in stopped] == [240]
    resumed = train_e2e(config, tmp_path / "resumed")
    assert [n for n, _ in resumed] == [240, 480] and _bytes(resumed[-1][1]) == _bytes(last)
    other = train_e2e(E2EConfig(**{**SMALL, "seed": 1}), tmp_path / "seed1")[-1][1]
    assert (other / "model.safetensors").read_bytes() != (last / "model.safetensors").read_bytes()


def test_a_folder_of_another_run_is_refused(e2e_run, tmp_path):
    from policies.e2e import E2EConfig, train_e2e

    config, out, _ = e2e_run
    with pytest.raises(ConfigError, match="holds an end-to-end run with other settings \\(differs in epochs, seed\\)"):
        train_e2e(E2EConfig(**{**SMALL, "seed": 3, "epochs": 2}), out)
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ConfigError, match="is not an end-to-end training run"):
        train_e2e(config, tmp_path)
    with pytest.raises(ConfigError, match="must be multiples of batch_dialogues"):
        E2EConfig(dialogues=10, batch_dialogues=4)


# ----------------------------------------------------------------------------- the policy kind
def test_e2e_kind_answers_histories_from_their_text(e2e_run, ccol):
    from behavsim import load_policy

    _, _, last = e2e_run
    spec = f"e2e:{last}"
    a = load_policy(spec)
    assert a.kind == "e2e" and a.reads == ("history",)
    assert a.meta["id"] == "e2e-_e2e_teacher.always_request_area-seed0-000480" and a.meta["checkpoint"] == 480
    assert a.model.beam == 1 and "beam" not in a.meta  # a teacher's model answers greedily by default
    table = respond(spec, ccol)
    assert len(table) == len(ccol)
    # the same answers with the beliefs and the turn acts removed: it reads text only
    text = respond(spec, ccol.text_only())
    assert text.acts == table.acts and text.prompts == table.prompts and text.errors == table.errors
    # and the same with other beliefs beside the same words
    other = ContextSet([{"beliefs": {}}] * len(ccol), histories=ccol.histories)
    assert respond(spec, other).acts == table.acts
    # batched answers equal one-by-one answers
    model = load_policy(spec).model
    singles = [model.answer([ccol.history(i)])[0] for i in range(len(ccol))]
    assert [getattr(r, "act", None) for r in singles] == table.acts


def test_e2e_kind_passes_the_checker_and_imitates_its_teacher(e2e_run, ccol):
    _, _, last = e2e_run
    assert check_policy(f"e2e:{last}", ccol) == len(ccol)
    table = respond(f"e2e:{last}", ccol)  # dialogues it never saw: the teacher's answer everywhere
    assert table.n_errors == 0 and set(table.acts) == {"request(area)"}
    assert set(table.prompts) == {"what part of town do you have in mind?"}


def test_a_set_without_histories_is_refused_up_front(e2e_run, tmp_path, capsys):
    from behavsim.cli import main

    _, _, last = e2e_run
    grid = contexts.generate_grid(step=1.0)
    with pytest.raises(UnanswerableContexts, match="reads dialogue histories, but context set .* has none"):
        respond(f"e2e:{last}", grid)
    path = grid.save(tmp_path / "grid.jsonl")
    code = main(["respond", "--policy", f"e2e:{last}", "--contexts", str(path), "-o", str(tmp_path / "t.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(
        "behavsim respond: error: policy 'e2e-_e2e_teacher.always_request_area-seed0-000480' reads dialogue "
        f"histories, but context set '{path}' has none"
    )
    assert "behavsim contexts collect" in err[0]


def test_bad_e2e_specs(tmp_path):
    from behavsim import load_policy

    with pytest.raises(ConfigError, match="expected e2e:DIR"):
        load_policy("e2e:")
    with pytest.raises(ConfigError, match="not found"):
        load_policy(f"e2e:{tmp_path / 'nothing'}")
    with pytest.raises(ConfigError, match="is not a behavsim end-to-end checkpoint folder"):
        load_policy(f"e2e:{tmp_path}")


def test_the_chat_mode_answers_through_the_llm_kinds(e2e_run, ccol, tmp_path):
    """The folder is a chat model for tools that know nothing of behavsim: hf:DIR renders the
    history with the folder's own prompt template (behavsim-prompt.toml) and the tokenizer's chat
    template, and the model writes its act in behavsim's syntax; a run without the chat mode
    writes no template."""
    from behavsim import load_policy
    from policies.e2e import E2EConfig, train_e2e

    _, _, plain = e2e_run  # SMALL has no chat mode
    assert not (plain / "behavsim-prompt.toml").exists()
    last = train_e2e(E2EConfig(**{**SMALL, "chat": True, "epochs": 30, "checkpoint_every": 240}), tmp_path / "chat")[
        -1
    ][1]
    assert (last / "behavsim-prompt.toml").is_file()
    a = load_policy(f"hf:{last}")
    assert a.reads == ("history",) and a.meta["template"]["name"] == "e2e-chat" and a.utterance is False
    table = respond(f"hf:{last}", ccol)
    assert table.n_errors == 0 and set(table.acts) == {"request(area)"} and set(table.prompts) == {None}
    with pytest.raises(UnanswerableContexts):
        respond(f"hf:{last}", contexts.generate_grid(step=1.0))


def test_a_packed_row_computes_what_transformers_computes_for_each_block_alone():
    """A block sees its shared part up to its decision point and itself, causally, at the positions
    it would have alone: the training forward (rows unpadded, attention by part) gives the logits
    `transformers`' own GPT-2 forward gives for the shared part alone and for each block's own
    sequence (shared prefix, then the block); a row beside it changes nothing."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from policies.e2e._rows import TrainRow
    from policies.e2e._train import _forward

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=50, n_positions=64, n_embd=32, n_layer=2, n_head=4, activation_function="gelu")
    cfg.resid_pdrop = cfg.embd_pdrop = cfg.attn_pdrop = 0.0
    model = GPT2LMHeadModel(cfg).eval()
    g = torch.Generator().manual_seed(1)
    shared, b0, b1 = (torch.randint(0, 50, (k,), generator=g).tolist() for k in (7, 4, 3))
    # block 0 after 4 shared tokens, block 1 after all 7; every position a target
    ids = shared + b0 + b1
    pos = [*range(7), *range(4, 8), *range(7, 10)]
    row = TrainRow(ids, pos, [-1] * 7 + [0] * 4 + [1] * 3, [4, 7], [(i, 0) for i in range(len(ids))])
    other = TrainRow(b1 + b0, list(range(7)), [-1] * 7, [], [(i, 0) for i in range(7)])
    with torch.no_grad():
        got = _forward(torch, model, [other, row])[0][7:]
        alone = [model(torch.tensor([seq])).logits[0] for seq in (shared, shared[:4] + b0, shared + b1)]
    want = torch.cat([alone[0], alone[1][4:], alone[2][7:]])
    assert got.shape == want.shape == (14, 50)
    assert torch.allclose(got, want, atol=1e-5), float((got - want).abs().max())
    # and a different block 1 moves neither the shared part's nor block 0's logits
    row.ids = shared + b0 + [(t + 1) % 50 for t in b1]
    with torch.no_grad():
        moved = _forward(torch, model, [row])[0]
    assert torch.equal(moved[:11], got[:11]) and not torch.allclose(moved[11:], got[11:])


# ----------------------------------------------------------------------------- dialogues
def test_play_dialogues_measures_any_policy_alike(e2e_run):
    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.training.evaluation import evaluate_policy
    from policies.training.play import play_dialogues

    _, _, last = e2e_run
    hc = play_dialogues("handcrafted", 12)
    ref = evaluate_policy(HandcraftedPolicy(), 12)
    assert hc.success == ref.success and hc.turns == ref.turns and hc.failed_turns == 0
    e2e = play_dialogues(f"e2e:{last}", 12, batch=5)
    assert len(e2e.success) == 12 and all(t >= 1 for t in e2e.turns)
    assert play_dialogues(f"e2e:{last}", 12, batch=12).success == e2e.success  # batching changes nothing


def test_train_command(tmp_path, capsys):
    from behavsim.cli import main

    args = [
        "train",
        "--policy",
        "e2e",
        "--teacher",
        "handcrafted",
        "--dialogues",
        "8",
        "--epochs",
        "1",
        "--batch-dialogues",
        "4",
        "--layers",
        "1",
        "--width",
        "32",
        "--heads",
        "2",
        "--no-progress",
        "-o",
        str(tmp_path / "run"),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ckpt-000008" in out and "end-to-end model:" in out and "CPU" in out
    assert main(["train", "--policy", "e2e", "-o", str(tmp_path / "x")]) == 2
    assert "needs --teacher SPEC" in capsys.readouterr().err
    assert main(["train", "--teacher", "handcrafted", "-o", str(tmp_path / "y")]) == 2
    assert "--teacher applies to --policy e2e only" in capsys.readouterr().err
    assert main(["train", "--policy", "e2e", "--teacher", "handcraftd", "-o", str(tmp_path / "z")]) == 2
    assert "Did you mean 'handcrafted'" in capsys.readouterr().err
    bad = ["train", "--policy", "e2e", "--teacher", "handcrafted", "--dagger-dialogues", "700", "-o"]
    assert main([*bad, str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "3 DAgger rounds of 700 dialogues leave no room for the teacher's 2000" in err
    assert not (tmp_path / "w").exists()
    assert main([*bad[:-2], "-1", "-o", str(tmp_path / "v")]) == 2  # -1 is the library's AUTO, not a count
    assert "--dagger-dialogues must be 0 (no DAgger rounds) or more, got -1" in capsys.readouterr().err
    assert main([*bad[:-3], "--belief-weight", "0", "-o", str(tmp_path / "u")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "belief_weight must be a positive number, got 0.0" in err


def test_an_untrained_model_answers_long_dialogues_in_any_batch(e2e_run, ccol, tmp_path):
    """A model that writes every span to its limit (random weights) on histories at very different
    stages: a batch's padded cache would outgrow the model's positions, so it is answered in parts;
    the answers equal one-by-one answers and nothing raises (a study's first checkpoints are such models)."""
    import shutil

    import torch
    from safetensors.torch import save_file
    from transformers import GPT2LMHeadModel

    from behavsim import load_policy

    _, _, last = e2e_run
    folder = tmp_path / "untrained"
    shutil.copytree(last, folder)
    model = GPT2LMHeadModel.from_pretrained(folder)
    torch.manual_seed(1)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=1.0)  # no stop token is ever the likeliest: every span is written in full
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"},
        folder / "model.safetensors",
    )
    # the dialogue so far as it grows, long enough that the positions run out
    long = [ccol.history(i) for i in range(len(ccol))]
    longest = max(long, key=len)
    grown = [longest * k for k in (1, 2, 3, 4)]
    e2e = load_policy(f"e2e:{folder}:batch=8").model
    batched = e2e.answer([*long, *grown])
    singles = [load_policy(f"e2e:{folder}:batch=1").model.answer([h])[0] for h in [*long, *grown]]
    assert [repr(x) for x in batched] == [repr(x) for x in singles]
    assert any(isinstance(x, Exception) for x in batched)  # junk words make no act: failed, in place


# ----------------------------------------------------------------------------- DAgger rounds
def _system_acts_after(cs, dialogue):
    """Per context of one dialogue (in order): the act of the system turn that followed it (None for
    the last), read from the next context's history."""
    idx = [i for i, m in enumerate(cs.metas) if m["dialogue"] == dialogue]
    return idx, [cs.history(j)[len(cs.history(i))]["act"] for i, j in zip(idx, idx[1:])] + [None]


def test_corrected_dialogues_are_driven_by_the_model_and_labelled_by_the_teacher(e2e_run):
    """The model's act is played whenever it gives one; every label is the teacher's answer at the
    same moment (asked again here on the saved contexts)."""
    from behavsim import canonical_act
    from policies.e2e import E2EModel
    from policies.e2e._data import play_corrected
    from policies.simulation.domain import resolve_domain

    _, _, last = e2e_run  # a model that always asks for the area, unlike its teacher here
    domain = resolve_domain(None)
    model = E2EModel(last)
    cs, table = play_corrected(model.answer, "handcrafted", dialogues=3, seed=5, epoch=2, domain=domain, batch=2)
    assert cs.n_histories == len(cs) and {m["dialogue"] for m in cs.metas} == {0, 1, 2}
    assert table.acts == respond("handcrafted", cs).acts  # the teacher's labels
    assert cs.meta["model_turns"] == cs.meta["turns"] == len(cs)  # the model answered every turn
    answers = model.answer([cs.history(i) for i in range(len(cs))])
    for d in range(3):
        idx, played = _system_acts_after(cs, d)
        assert played[:-1] == [canonical_act(answers[i].act) for i in idx[:-1]]
    assert sum(a != b for a, b in zip(table.acts, (canonical_act(r.act) for r in answers))) >= len(cs) // 2
    # a model that answers nothing: the teacher's act is played, and the labels are unchanged in kind
    failing = play_corrected(
        lambda hs: [ValueError("no act")] * len(hs), "handcrafted", dialogues=2, seed=5, epoch=2, domain=domain
    )[0]
    assert failing.meta["model_turns"] == 0
    teacher = respond("handcrafted", failing)
    for d in range(2):
        idx, played = _system_acts_after(failing, d)
        assert played[:-1] == [teacher.acts[i] for i in idx[:-1]]
    # the rounds' dialogues are seeded apart from the teacher's and from other rounds
    other = play_corrected(model.answer, "handcrafted", dialogues=3, seed=5, epoch=3, domain=domain)[0]
    assert [h[:2] for h in other.histories] != [h[:2] for h in cs.histories]


#: the DAgger tests' run: with the default belief weight (3), so resuming is checked on the weighted loss too
DAGGER = dict(
    SMALL,
    teacher="handcrafted",
    dialogues=8,
    epochs=3,
    checkpoint_every=8,
    dagger_dialogues=2,
    dagger_from=1,
    belief_weight=3.0,
)


def test_dagger_rounds_join_later_epochs_and_resume_to_the_same_bytes(tmp_path):
    from policies.e2e import E2EConfig, train_e2e
    from policies.e2e._train import _epoch_order

    config = E2EConfig(**DAGGER)
    assert config.dagger_rounds == 2 and config.schedule() == [8, 16, 24]
    lines: list[str] = []
    last = train_e2e(config, tmp_path / "a", report=lines.append)[-1][1]
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert [n for n in names if n.startswith("corrected")] == [
        f"corrected-e{b}-{k}.jsonl" for b in (1, 2) for k in ("contexts", "responses")
    ]
    assert sum("DAgger round after epoch" in line for line in lines) == 2
    rnd = ContextSet.load(tmp_path / "a" / "corrected-e1-contexts.jsonl")
    assert rnd.meta["builder"] == "e2e-corrected" and {m["dialogue"] for m in rnd.metas} == {0, 1}
    # an epoch: every corrected dialogue so far, and teacher dialogues filling it
    for epoch, extra in ((0, 0), (1, 2), (2, 4)):
        order = sorted(int(i) for i in _epoch_order(config, epoch, extra))
        assert len(order) == 8 and len(set(order)) == 8 and order[8 - extra :] == list(range(8, 8 + extra))
    # stopped at the first round's checkpoint, before the round was played: the same bytes
    stopped = train_e2e(config, tmp_path / "b", stop_after=8)
    assert [n for n, _ in stopped] == [8] and not (tmp_path / "b" / "corrected-e1-contexts.jsonl").exists()
    assert _bytes(train_e2e(config, tmp_path / "b")[-1][1]) == _bytes(last)
    # a round's files lost with the checkpoints after it: played again, the same bytes
    for p in ("corrected-e2-contexts.jsonl", "corrected-e2-responses.jsonl"):
        (tmp_path / "b" / p).unlink()
    import shutil

    shutil.rmtree(tmp_path / "b" / "ckpt-000024")
    assert _bytes(train_e2e(config, tmp_path / "b")[-1][1]) == _bytes(last)
    for p in ("contexts", "responses"):
        name = f"corrected-e2-{p}.jsonl"
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
    # without rounds, the run is the one it was before rounds existed
    plain = train_e2e(E2EConfig(**{**DAGGER, "dagger_dialogues": 0}), tmp_path / "c")[-1][1]
    assert _bytes(plain) != _bytes(last)


def test_bad_dagger_settings_and_configurations_from_before_them():
    from policies.e2e import E2EConfig

    with pytest.raises(ConfigError, match="every epoch must end at a checkpoint"):
        E2EConfig(**{**DAGGER, "checkpoint_every": 16})
    with pytest.raises(ConfigError, match="2 DAgger rounds of 4 dialogues leave no room for the teacher's 8"):
        E2EConfig(**{**DAGGER, "dagger_dialogues": 4})
    with pytest.raises(ConfigError, match="dagger_from must be a positive integer"):
        E2EConfig(**{**DAGGER, "dagger_from": 0})
    old = {k: v for k, v in E2EConfig(**SMALL).to_dict().items() if not k.startswith(("dagger", "belief"))}
    assert E2EConfig.from_dict(old).dagger_dialogues == 0 and E2EConfig.from_dict(old).belief_weight == 1.0
    for bad in (0, -1.0, float("nan"), True):
        with pytest.raises(ConfigError, match="belief_weight must be a positive number"):
            E2EConfig(**{**SMALL, "belief_weight": bad})


def test_belief_weight_weighs_the_targets_of_the_belief_spans_only():
    """The loss is the mean cross-entropy over all targets; with a belief weight W the belief spans'
    targets (read from a main row's shared part) count W times, the acts' and the chat rows' once."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from policies.e2e._rows import TrainRow
    from policies.e2e._train import _forward, _step

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=30, n_positions=32, n_embd=16, n_layer=1, n_head=2, activation_function="gelu")
    cfg.resid_pdrop = cfg.embd_pdrop = cfg.attn_pdrop = 0.0
    model = GPT2LMHeadModel(cfg)
    # main row: 4 shared tokens (2 belief targets), a block of 3 (2 act targets); a chat row: 1 target
    row = TrainRow(
        list(range(7)),
        [0, 1, 2, 3, 4, 5, 6],
        [-1] * 4 + [0] * 3,
        [4],
        [(1, 5), (2, 6), (4, 7), (5, 8)],
        belief_targets=2,
    )
    chat = TrainRow([1, 2, 3], [0, 1, 2], [-1, -1, 0], [2], [(2, 9)], chat=True)
    with torch.no_grad():
        logits, targets = _forward(torch, model, [row, chat])
        ce = torch.nn.functional.cross_entropy(logits, targets, reduction="none").tolist()
    frozen = torch.optim.SGD(model.parameters(), lr=0.0)
    assert _step(torch, model, frozen, [row, chat]) == pytest.approx(sum(ce) / 5, rel=1e-6)
    want = (3 * (ce[0] + ce[1]) + ce[2] + ce[3] + ce[4]) / 9
    assert _step(torch, model, frozen, [row, chat], 3.0) == pytest.approx(want, rel=1e-6)


def test_a_rows_belief_targets_are_its_first_those_its_shared_part_predicts(e2e_run):
    """What the belief weight weighs, on a run's own rows: a main row's first ``belief_targets``
    targets are exactly those predicted inside its shared part (the belief spans and their ends);
    a chat row has none."""
    import dataclasses

    from behavsim import ContextSet, ResponseTable
    from policies.e2e import E2EModel
    from policies.e2e._rows import dialogue_texts
    from policies.e2e._train import _by_dialogue, _rows

    config, out, last = e2e_run
    model = E2EModel(last)
    cs = ContextSet.load(out / "teacher-contexts.jsonl")
    table = ResponseTable.load(out / "teacher-responses.jsonl")
    texts = [dialogue_texts(cs, table, model.domain, idx) for idx in _by_dialogue(cs, config.dialogues)]
    rows, _ = _rows(dataclasses.replace(config, chat=True), model.tokenizer, texts)
    assert len(rows) == config.dialogues
    for main, chat in rows:
        shared = [r.block[i] == -1 for r in (main,) for i, _ in r.targets]
        assert main.belief_targets == sum(shared) > 0 and all(shared[: main.belief_targets])
        assert chat.chat and chat.belief_targets == 0


def test_a_dialogue_longer_than_the_positions_ends_at_its_last_decision_point_that_fits(e2e_run):
    """A long dialogue (a DAgger round's model can play 24 turns: 1,079 tokens) is cut, not fed
    past the model's positions: its shared part ends after the last belief span that fits, the
    contexts after it are left out and counted, the rest of the row is unchanged."""
    from behavsim import ContextSet, ResponseTable
    from policies.e2e import E2EModel
    from policies.e2e._rows import all_texts, chat_row, dialogue_texts, encoder, main_row
    from policies.e2e._train import _by_dialogue

    config, out, last = e2e_run
    model = E2EModel(last)
    cs = ContextSet.load(out / "teacher-contexts.jsonl")
    table = ResponseTable.load(out / "teacher-responses.jsonl")
    texts = [dialogue_texts(cs, table, model.domain, idx) for idx in _by_dialogue(cs, config.dialogues)]
    t = max(texts, key=lambda x: len(x.segments))
    assert len(t.segments) >= 3
    encode = encoder(model.tokenizer, all_texts(t))
    full, none = main_row(model.tokenizer, t, 10**6, encode)
    shared = full.block.count(-1)
    cut, dropped = main_row(model.tokenizer, t, shared - 1, encode)
    kept = cut.block.count(-1)
    assert none == 0 and 0 < kept < shared and max(cut.pos) < shared - 1
    assert cut.ids[:kept] == full.ids[:kept] and cut.ids[kept - 1] == model.sp["db"]  # ends after a span
    assert cut.belief_targets == len([i for i, _ in full.targets[: full.belief_targets] if i < kept])
    assert dropped == len(full.seen) - len(cut.seen) >= 1 and all(s <= kept for s in cut.seen)
    chat = chat_row(model.tokenizer, t, 10**6, encode)
    short = chat_row(model.tokenizer, t, chat.block.count(-1) - 1, encode)
    assert max(short.pos) < chat.block.count(-1) - 1 and len(short.seen) < len(chat.seen)
    assert short.ids[: short.block.count(-1)] == chat.ids[: short.block.count(-1)]


def test_default_checkpoints_once_per_epoch_and_dagger_rounds_of_a_tenth():
    from policies.e2e import E2EConfig

    d = E2EConfig()
    assert (d.dialogues, d.checkpoint_every, d.dagger_dialogues, d.dagger_rounds) == (2000, 2000, 200, 3)
    assert d.belief_weight == 3.0  # the belief spans' tokens weigh three times in the loss
    assert d.schedule() == [2000, 4000, 6000, 8000, 10000]
    small = E2EConfig(dialogues=8, epochs=2, batch_dialogues=4)
    assert (small.checkpoint_every, small.dagger_dialogues, small.dagger_rounds) == (8, 0, 0)
    assert E2EConfig(dialogues=100).dagger_dialogues == 10
    assert E2EConfig.from_dict(d.to_dict()) == d  # stored resolved: a run folder's settings are numbers


def test_a_name_written_as_v_is_the_first_venue_the_database_showed():
    from behavsim import canonical_act
    from policies.e2e._format import E2EFormatError, Lexicon, lex_act
    from policies.simulation.domain import resolve_domain

    domain = resolve_domain(None)
    first, second = domain.venues[0], domain.venues[1]
    lex = Lexicon(domain)
    act = lex_act(" inform name = [v] ; addr = [v] ; addr = [v]", domain, lex, [first["name"], second["name"]])
    assert act == canonical_act(f'inform(name="{first["name"]}",addr="{first["addr"]}")')
    with pytest.raises(E2EFormatError, match="fills name from a venue but names none"):
        lex_act(" inform name = [v] ; addr = [v]", domain, lex)  # the database showed none
    # an act naming its venue keeps it: the database's first venue fills only a name written [v]
    named = lex_act(f" inform name = {second['name']} ; addr = [v]", domain, lex, [first["name"]])
    assert named == canonical_act(f'inform(name="{second["name"]}",addr="{second["addr"]}")')


def test_the_act_names_a_venue_or_none_after_name_and_generation_follows_rules(e2e_run):
    """After `` name =`` the act may write only ``[v]`` (when the database showed a venue), ``none``,
    a venue placeholder the dialogue holds or a venue's name; a rule is obeyed by generation."""
    import torch

    from policies.e2e import E2EModel
    from policies.e2e._format import Lexicon, history_text
    from policies.e2e._model import _Row
    from policies.e2e._session import Session

    _, _, last = e2e_run
    model = E2EModel(last)
    vocab = dict(model._vocab)
    for w in (" name", " =", " none"):  # the small run's teacher never writes them: give them ids
        vocab.setdefault(w, max(vocab.values()) + 1)
    model._vocab = vocab
    lex = Lexicon(model.domain)
    first, second = model.domain.venues[0], model.domain.venues[1]
    history_text([{"speaker": "system", "text": f"how about {second['name']}?"}], lex)
    row = _Row(None)  # type: ignore[arg-type]
    row.lexicon, row.shown = lex, [first["name"]]
    rule = model._name_rule(row)
    after = [vocab[" name"], vocab[" ="]]
    allowed = set(rule([vocab[" name"], *after]) or ())
    assert {vocab[" [v]"], vocab[" none"], vocab[" [name_1]"]} <= allowed
    assert vocab.get(" centre") not in allowed and vocab[" [name_2]"] not in allowed  # [name_2]: not held
    assert allowed - {vocab[" [v]"], vocab[" none"], vocab[" [name_1]"]} <= model._venue_ids
    assert rule([vocab[" ="]]) is None and rule([*after, model.sp["response"], *after]) is None
    row.shown = []  # the database showed no venue: no [v]
    assert vocab[" [v]"] not in set(model._name_rule(row)(after) or ())

    def generate(rules):
        session = Session(torch, model.model, 2, model.sp["pad"])
        session.feed([[model.sp["eos"]], [model.sp["eos"]]])
        return session.generate([model.sp["eos"], model.sp["eos"]], [3, 3], None, rules)

    tok = model.sp["act"]
    free, ruled = generate(None), generate([lambda w: [tok], None])
    assert free[0] != [tok, tok, tok] and ruled[0] == [tok, tok, tok]
    assert ruled[1] == free[1]  # a row without a rule writes as before


class _Bigram:
    """A model whose next-token probabilities depend on the last token only (a table), with a
    cache of the tokens it read (legacy tuples), as :class:`Session` drives a causal LM."""

    def __init__(self, table):
        import torch

        self.log = torch.log(torch.tensor(table, dtype=torch.float32))

    def __call__(self, input_ids, attention_mask, position_ids, past_key_values, use_cache):
        import torch

        seen = input_ids[:, None, :, None].float()
        past = seen if past_key_values is None else torch.cat([past_key_values[0][0], seen], dim=2)
        return SimpleNamespace(past_key_values=((past, past),), logits=self.log[input_ids])


def _bigram_session(n):
    """Tokens 0 pad, 1 start, 2 a, 3 b, 4 z, 5 end: from start a .5, b .4, end .1; after a: z .4,
    a .3, b .3; after b: end .9, a .1; after z: end. Greedy: a z end (p .2); the most probable
    continuation: b end (p .36)."""
    import torch

    e = 1e-9
    table = [
        [e, e, e, e, e, 1.0],
        [e, e, 0.5, 0.4, e, 0.1],
        [e, e, 0.3, 0.3, 0.4, e],
        [e, e, 0.1, e, e, 0.9],
        [e, e, e, e, e, 1.0],
        [e, e, e, e, e, 1.0],
    ]
    from policies.e2e._session import Session

    session = Session(torch, _Bigram(table), n, 0)
    session.feed([[1]] * n)
    return session


def test_beam_search_finds_the_most_probable_words_checked_by_hand():
    """Beam search on a bigram table worked out by hand: two beams find ``b end`` (p .36) where
    greedy writes ``a z end`` (p .2); a length penalty of 3 favours the longer one (log .2 / 3^3 >
    log .36 / 2^3); a banned token is never written; rows not chosen write nothing."""
    assert _bigram_session(1).generate([5], [10]) == [[2, 4, 5]]
    assert _bigram_session(2).beam([True, False], 2, 5, 10, [[], []]) == [[3, 5], []]
    assert _bigram_session(1).beam([True], 2, 5, 10, [[]], length_penalty=3.0) == [[2, 4, 5]]
    assert _bigram_session(1).beam([True], 2, 5, 10, [[3]]) == [[2, 4, 5]]
    assert _bigram_session(1).beam([True], 1, 5, 10, [[]]) == [[2, 4, 5]]  # one beam: greedy
    assert _bigram_session(1).beam([True], 2, 5, 1, [[]]) == [[2]]  # at the limit: the best beam so far
    assert _bigram_session(1).beam([True], 2, 5, 10, [[2, 3, 4]]) != [[5]]  # never the stop alone
    two = _bigram_session(2).beam([True, True], 2, 5, 10, [[], [3]])
    assert two == [[3, 5], [2, 4, 5]]  # rows apart: each its own
