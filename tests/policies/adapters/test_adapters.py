"""Policy adapters: spec strings, the registry of kinds, each built-in kind, metadata, errors."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from behavsim import (
    ConfigError,
    ContextSetMismatch,
    TableFormatError,
    UnknownName,
    list_policy_kinds,
    load_policy,
    policy_kinds,
)
from behavsim.policy import Adapter, CallableAdapter, PolicyAdapter, Response, as_adapter, check_policy, parse_spec
from policies.adapters import RecordedAdapter


# ----------------------------------------------------------------------------- spec strings
@pytest.mark.parametrize(
    "text, kind, target, options",
    [
        ("handcrafted", "handcrafted", "", {}),
        ("Handcrafted:nlg_seed=3", "handcrafted", "", {"nlg_seed": "3"}),
        ("runs/ts-seed0/ckpt-001000.npz", "checkpoint", "runs/ts-seed0/ckpt-001000.npz", {}),
        ("runs/x.npz:nlg_seed=none", "checkpoint", "runs/x.npz", {"nlg_seed": "none"}),
        ("checkpoint:runs/x.npz", "checkpoint", "runs/x.npz", {}),
        ("mypkg.mod:answer", "callable", "mypkg.mod:answer", {}),
        ("callable:mypkg.mod:Policy.answer", "callable", "mypkg.mod:Policy.answer", {}),
        ("recorded:answers.jsonl", "recorded", "answers.jsonl", {}),
        (
            "pydial:config/gp.cfg:domain=CamRestaurants:nlg=off",
            "pydial",
            "config/gp.cfg",
            {"domain": "CamRestaurants", "nlg": "off"},
        ),
        ("e2e:runs/e2e/ckpt-001000:batch=8", "e2e", "runs/e2e/ckpt-001000", {"batch": "8"}),
    ],
)
def test_parse_spec(text, kind, target, options):
    s = parse_spec(text)
    assert (s.kind, s.target, s.options) == (kind, target, options)


def test_registry_lists_kinds_and_rejects_unknown_with_closest():
    assert sorted(list_policy_kinds()) == [
        "callable",
        "checkpoint",
        "e2e",
        "handcrafted",
        "hf",
        "openai",
        "pydial",
        "recorded",
    ]
    assert "HANDCRAFTED" in policy_kinds
    with pytest.raises(UnknownName, match=r"unknown policy kind 'handcraftd'\. Did you mean 'handcrafted'\?"):
        parse_spec("handcraftd")
    with pytest.raises(
        UnknownName, match="Valid policy kinds: callable, checkpoint, e2e, handcrafted, hf, openai, pydial, recorded"
    ):
        parse_spec("nonsense spec")


def test_bad_specs_have_clear_messages(tmp_path):
    with pytest.raises(ConfigError, match="empty string"):
        parse_spec("  ")
    with pytest.raises(ConfigError, match="unknown option 'nlg_sed' for kind 'handcrafted'. Did you mean 'nlg_seed'"):
        load_policy("handcrafted:nlg_sed=2")
    with pytest.raises(ConfigError, match="nlg_seed must be an integer or 'none', got 'x'"):
        load_policy("handcrafted:nlg_seed=x")
    with pytest.raises(ConfigError, match="checkpoint file .*missing.npz' not found"):
        load_policy(str(tmp_path / "missing.npz"))
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="corrupt or unreadable checkpoint"):
        load_policy(str(tmp_path / "bad.npz"))
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match="exists but is not a GP-SARSA checkpoint"):
        parse_spec(str(tmp_path / "notes.txt"))
    with pytest.raises(ConfigError, match="cannot import module 'recorde' \\(did you mean the policy kind 'recorded:'"):
        load_policy("recorde:answers.jsonl")
    with pytest.raises(ConfigError, match="has no attribute 'nope'"):
        load_policy("behavsim.policy:nope")
    with pytest.raises(ConfigError, match="is a list, not a callable"):
        load_policy("behavsim.policy:__all__")
    with pytest.raises(ConfigError, match="expected recorded:FILE"):
        load_policy("recorded:")
    with pytest.raises(ConfigError, match="takes no argument"):
        load_policy("handcrafted:foo")


# ----------------------------------------------------------------------------- built-in kinds
def test_handcrafted_adapter(contexts):
    a = load_policy("handcrafted")
    assert isinstance(a, PolicyAdapter) and a.kind == "handcrafted"
    assert a.meta == {
        "id": "handcrafted",
        "name": "handcrafted",
        "kind": "handcrafted",
        "policy": "handcrafted",
        "domain": "restaurant",
        "nlg_seed": 0,
        "confirm_threshold": 0.8,
    }
    r = a.respond_one(contexts[0])
    assert r.act == "request(area)" and isinstance(r.prompt, str) and r.summary_action == "request_area"
    assert load_policy("handcrafted:nlg_seed=4").id == "handcrafted-nlg4"
    quiet = load_policy("handcrafted:nlg_seed=none")
    assert quiet.id == "handcrafted-nlgnone" and quiet.respond_one(contexts[0]).prompt is None


def test_checkpoint_adapter_metadata_and_greedy(run_dir, contexts):
    from behavsim.policy import file_sha256
    from policies.gp.checkpoint import load_checkpoint

    path = run_dir / "ts-seed1" / "ckpt-000020.npz"
    a = load_policy(str(path))
    assert a.kind == "checkpoint"
    assert a.meta == {
        "id": "ts-seed1-000020",
        "name": "gp-sarsa",
        "kind": "checkpoint",
        "policy": "gp",
        "domain": "restaurant",
        "reward": "ts",
        "seed": 1,
        "checkpoint": 20,
        "reward_signature": a.meta["reward_signature"],
        "nlg_seed": 0,
        "path": {"file": str(path), "sha256": file_sha256(path)},
    }
    pol = load_checkpoint(path)
    for b in contexts.beliefs[::7]:
        assert a.respond_one(b) == pol.act(b)  # greedy, the checkpoint's own decisions
    other = load_policy(f"{path}:nlg_seed=5")
    assert other.meta["nlg_seed"] == 5
    b = contexts[-1]
    assert other.respond_one(b).act == a.respond_one(b).act  # same decisions, other paraphrases
    assert check_policy(a.policy, contexts.beliefs[:20]) == 20


def test_checkpoint_tables_pair_by_trial(run_dir, contexts):
    """compare's 'consecutive' mode groups tables whose metadata differ only in id, checkpoint
    and path: file-specific details (the hash) must live under path."""
    from behavsim import plan_pairs
    from behavsim.policy import respond

    paths = sorted(run_dir.glob("*/ckpt-*.npz"))  # seed0: 10, 20; seed1: 10, 20
    tables = [respond(str(p), contexts.select(range(3))) for p in paths]
    assert plan_pairs(tables, "consecutive") == [(0, 1), (2, 3)]
    assert plan_pairs(tables, "cross", by="seed") == [(0, 2), (0, 3), (1, 2), (1, 3)]


def answer(belief):
    """A callable policy for the tests: request the first unknown slot, else inform."""
    for slot in ("area", "food", "pricerange"):
        if belief["beliefs"][slot].get("**NONE**", 0.0) > 0.5:
            return f"request({slot})", f"which {slot}?"
    return 'inform(name="x")'


def answer_response(belief):
    return Response(act="bye()", prompt="goodbye")


def test_callable_adapter_forms(contexts, tmp_path, monkeypatch):
    a = load_policy(f"{__name__}:answer")
    assert isinstance(a, CallableAdapter)
    assert a.meta["id"] == f"{__name__}.answer" and a.meta["kind"] == "callable"
    assert a.meta["path"]["file"].endswith("test_adapters.py") and a.meta["path"]["sha256"].startswith("sha256:")
    assert a.respond_one(contexts[0]) == Response("request(area)", "which area?")
    assert a.respond_one(contexts[-1]) == Response('inform(name="x")', None)
    assert load_policy(f"callable:{__name__}:answer_response").respond_one(contexts[0]) == Response("bye()", "goodbye")
    mod = tmp_path / "my_policy_mod.py"
    mod.write_text(
        textwrap.dedent("""
        class Policy:
            name = "mine"
            def act(self, belief):
                return "hello()"
        POLICY = Policy()
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_policy("my_policy_mod:POLICY.act").respond_one({}) == Response("hello()")


def test_as_adapter_wraps_objects(contexts):
    from policies.handcrafted.policy import HandcraftedPolicy

    a = as_adapter(HandcraftedPolicy())
    assert isinstance(a, PolicyAdapter) and a.id == "handcrafted"
    assert as_adapter(a) is a
    assert isinstance(as_adapter(answer), CallableAdapter)
    with pytest.raises(ConfigError, match="expected a policy spec string"):
        as_adapter(42)
    with pytest.raises(TypeError, match="expected an act string"):
        as_adapter(lambda b: 42).respond_one({})


def test_adapter_meta_needs_id_and_name():
    with pytest.raises(ConfigError, match="'id' must be a non-empty string"):
        Adapter({"name": "x"})


# ----------------------------------------------------------------------------- recorded
def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_recorded_adapter_reads_format(tmp_path, contexts):
    small = contexts.select(range(3))
    f = _write(
        tmp_path / "sys.jsonl",
        [
            {
                "format": "behavsim-recorded",
                "version": 1,
                "policy": {"id": "e2e", "name": "my-e2e-system", "seed": 3},
                "context_set": {"fingerprint": small.fingerprint},
            },
            {"context_id": "c2", "act": "request(food)", "prompt": "what food?"},
            {"context_id": "c0", "act": "bye()"},
            {"context_id": "c1", "act": None, "error": "timeout after 30 s"},
            {"context_id": "c99", "act": "hello()"},
        ],
    )
    a = load_policy(f"recorded:{f}")
    assert isinstance(a, RecordedAdapter)
    assert {k: a.meta[k] for k in ("id", "name", "kind", "seed")} == {
        "id": "e2e",
        "name": "my-e2e-system",
        "kind": "recorded",
        "seed": 3,
    }
    assert a.meta["path"]["file"] == str(f) and a.meta["path"]["sha256"].startswith("sha256:")
    a.prepare(small)
    assert a.respond_one({}, context_id="c2") == Response("request(food)", "what food?")
    with pytest.raises(Exception, match="timeout after 30 s"):
        a.respond_one({}, context_id="c1")
    with pytest.raises(ContextSetMismatch, match="recorded on context set"):
        a.prepare(contexts)


def test_recorded_missing_ids_are_named(tmp_path, contexts):
    f = _write(tmp_path / "part.jsonl", [{"context_id": f"c{i}", "act": "bye()"} for i in range(0, 81, 2)])
    a = load_policy(f"recorded:{f}")
    assert a.id == "part"  # no header: the file name
    with pytest.raises(
        ConfigError,
        match=r"no recorded response for 40 of 81 contexts; missing context ids: "
        r"c1, c3, c5, c7, c9, c11, c13, c15, c17, c19, \.\.\.",
    ):
        a.prepare(contexts)


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            [{"context_id": "c0", "act": "bye()"}, {"context_id": "c0", "act": "hello()"}],
            r":2: context id 'c0' recorded twice \(first on line 1\)",
        ),
        ([{"context_id": "c0"}], ":1: context 'c0' has neither an act, a prompt nor an error"),
        ([{"act": "bye()"}], ":1: 'context_id' must be a string"),
        ([{"context_id": "c0", "act": 3}], ":1: 'act' must be a string or null"),
        (
            [{"context_id": "c0", "act": "bye()"}, {"format": "behavsim-recorded", "version": 1}],
            ":2: a header line may only come first",
        ),
        ([{"format": "behavsim-recorded", "version": 2}], ":1: format version 2 is not supported"),
        ([{"format": "other", "version": 1}], ":1: unknown format 'other'"),
    ],
)
def test_recorded_format_errors(tmp_path, rows, message):
    f = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(TableFormatError, match=message):
        load_policy(f"recorded:{f}")


def test_recorded_invalid_json(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"context_id": "c0", "act": "bye()"}\n{oops\n')
    with pytest.raises(TableFormatError, match=r"bad.jsonl:2: invalid JSON"):
        load_policy(f"recorded:{f}")
    with pytest.raises(ConfigError, match="not found"):
        load_policy(f"recorded:{tmp_path / 'nothing.jsonl'}")


def test_pydial_spec_needs_pydial(tmp_path, monkeypatch):
    from behavsim import ModelNotAvailable

    monkeypatch.delenv("PYDIAL_ROOT", raising=False)
    for name in ("utils", "ontology", "policy", "semo"):
        assert name not in sys.modules or "fake_pydial" not in str(getattr(sys.modules[name], "__path__", ""))
    with pytest.raises(ModelNotAvailable, match="git clone https://github.com/helloric/pydial3"):
        load_policy("pydial:config.cfg")


# ----------------------------------------------------------------------------- common checks
def _fake_pydial_root(tmp_path):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "fake_pydial_make_root", Path(__file__).parents[1] / "pydial" / "fake_pydial" / "make_root.py"
    )
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    maker.forget_pydial()
    return maker, maker.make_fake_root(tmp_path / "pydial3")


def _spec_for(kind, run_dir, contexts, tmp_path, request=None):
    """A working spec of each registered kind (the meta-test below makes sure none is forgotten)."""
    from behavsim.policy import respond

    if kind == "handcrafted":
        return "handcrafted:nlg_seed=1"
    if kind == "checkpoint":
        return f"checkpoint:{run_dir / 'ts-seed0' / 'ckpt-000020.npz'}"
    if kind == "callable":
        return f"callable:{__name__}:answer"
    if kind == "recorded":
        from policies.adapters import write_recorded

        return f"recorded:{write_recorded(respond('handcrafted', contexts), tmp_path / 'rec.jsonl')}"
    if kind == "pydial":
        return f"pydial:config/gp.cfg:root={_fake_pydial_root(tmp_path)[1]}"
    if kind == "e2e":
        return f"e2e:{request.getfixturevalue('e2e_run')[2]}"
    if kind == "hf":  # a small model trained to answer bye() to anything (tests/policies/llm/_llm_model.py)
        return f"hf:{request.getfixturevalue('llm_models')['bye']}"
    if kind == "openai":  # the same model behind transformers serve on 127.0.0.1
        return f"openai:{request.getfixturevalue('llm_models')['bye']}@{request.getfixturevalue('llm_server').url}"
    raise AssertionError(f"no test spec for adapter kind {kind!r}")


@pytest.mark.parametrize("kind", list_policy_kinds())
def test_every_kind_works_everywhere(kind, run_dir, contexts, contexts_with_histories, tmp_path, request):
    """Every registered policy kind passes the policy checker and is taken, as a spec string, by
    respond, the convergence monitor and contexts collect (a recorded file answers only the contexts
    it was recorded on, so it cannot play dialogues: a clear error says so). A kind that reads
    dialogue histories is given collected contexts with histories (the grid has none)."""
    from behavsim import check_policy as core_check_policy
    from behavsim import respond as core_respond
    from behavsim.monitor import ConvergenceMonitor
    from behavsim.policy import reads_of
    from contexts import collect

    saved = list(sys.path)
    try:
        spec = _spec_for(kind, run_dir, contexts, tmp_path, request)
        if "belief" not in reads_of(load_policy(spec)):
            contexts = contexts_with_histories
        assert parse_spec(spec).kind == kind
        assert load_policy(spec).kind == kind
        assert core_check_policy(spec, contexts) == len(contexts)
        table = core_respond(spec, contexts)
        assert table.n_errors == 0 and len(table) == len(contexts)
        mon = ConvergenceMonitor(contexts, out_dir=tmp_path / "monitor", plot=False)
        mon.snapshot(spec, 100)
        second = mon.snapshot(spec, 200)
        assert second.n_errors == 0 and second.scores["TMR"] == 1.0  # a fixed policy: no change
        if kind == "recorded":
            with pytest.raises(ConfigError, match="cannot play new dialogues"):
                collect([spec], dialogues=1)
        else:
            cs = collect([spec], dialogues=2, seed=0)
            assert len(cs) >= 2 and cs.meta["sources"][0]["kind"] == kind
            assert cs.fingerprint == collect([spec], dialogues=2, seed=0).fingerprint
    finally:
        if kind == "pydial":  # the stand-in's modules have generic names: leave nothing behind
            sys.path[:] = saved
            for name in list(sys.modules):
                if name.split(".")[0] in ("utils", "ontology", "policy", "semo"):
                    del sys.modules[name]


def test_check_policy_catches_broken_adapters(contexts):
    import itertools as it

    from behavsim.policy import PolicyCheckError, PolicyFailed, check_policy

    counter = it.count()
    with pytest.raises(PolicyCheckError, match="two runs on the same contexts gave different tables"):
        check_policy(lambda b: f"request(s{next(counter) % 2})", contexts)
    with pytest.raises(PolicyFailed, match="ActParseError"):
        check_policy(lambda b: "not an act", contexts)
