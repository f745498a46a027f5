"""respond / respond_many / behavsim respond: tables, per-context errors, determinism, CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from behavsim import ConfigError, ContextSet, ResponseTable, UnknownName
from behavsim.cli import main
from behavsim.policy import PolicyErrorsWarning, PolicyFailed, Response, respond, respond_many
from policies.adapters import write_recorded

pytestmark = pytest.mark.filterwarnings("ignore::behavsim.policy.PolicyErrorsWarning")


@pytest.fixture(scope="module")
def ckpts(run_dir):
    return sorted(str(p) for p in run_dir.glob("*/ckpt-*.npz"))


def flaky(belief):
    """Fails in three ways on some contexts: raises, an unparseable act, a non-string prompt."""
    area = belief["beliefs"]["area"]["centre"]
    food = belief["beliefs"]["food"]["italian"]
    if area == 0.5 and food == 0.5:
        raise ValueError("no idea\nsecond line")
    if area == 1.0 and food == 0.0:
        return "inform(name=", None
    if area == 1.0 and food == 0.5:
        return Response("bye()", prompt=3)  # type: ignore[arg-type]
    return f'inform(food="italian",area="centre",name="x{area}")', f"p{area}"


def mutating(belief):
    belief["beliefs"]["area"]["centre"] = 99.0
    return "request(area)"


# ----------------------------------------------------------------------------- respond
def test_respond_table(contexts):
    t = respond("handcrafted", contexts)
    assert isinstance(t, ResponseTable) and len(t) == len(contexts) == 81
    assert t.context_fingerprint == contexts.fingerprint and t.context_ids == contexts.ids
    assert t.id == "handcrafted" and t.n_errors == 0
    assert t.acts[0] == "request(area)" and all(isinstance(p, str) for p in t.prompts)
    assert respond("handcrafted", contexts, policy_id="hc").id == "hc"
    with pytest.raises(ConfigError, match="contexts: expected a behavsim.ContextSet, got list"):
        respond("handcrafted", contexts.beliefs)


def test_acts_are_canonical(contexts):
    t = respond(lambda b: ' INFORM( name = "b" , area=centre ) ', contexts.select(range(2)))
    assert t.acts == ['inform(area="centre",name="b")'] * 2 and t.prompts == [None, None]


def test_errors_are_recorded_per_context(contexts):
    with pytest.warns(
        PolicyErrorsWarning,
        match=r"policy 'test_respond.flaky' failed on 27 of 81 contexts \(recorded "
        r"in the table's errors; first: ValueError: no idea\)",
    ):
        t = respond(flaky, contexts)
    area = [b["beliefs"]["area"]["centre"] for b in contexts]
    food = [b["beliefs"]["food"]["italian"] for b in contexts]
    raised = [i for i in range(81) if (area[i], food[i]) == (0.5, 0.5)]
    bad_act = [i for i in range(81) if (area[i], food[i]) == (1.0, 0.0)]
    bad_prompt = [i for i in range(81) if (area[i], food[i]) == (1.0, 0.5)]
    assert t.n_errors == 27
    assert all(t.errors[i] == "ValueError: no idea" and t.acts[i] is None for i in raised)
    assert all(t.errors[i].startswith("ActParseError: cannot parse dialogue act 'inform(name='") for i in bad_act)
    assert all(t.errors[i] == "TypeError: the prompt must be a string or None, got int" for i in bad_prompt)
    ok = [i for i in range(81) if t.errors[i] is None]
    assert all(t.acts[i].startswith("inform(") and t.prompts[i] for i in ok)
    with pytest.raises(
        PolicyFailed, match=rf"failed on context {raised[0]} \(id 'c{raised[0]}'\): ValueError: no idea"
    ):
        respond(flaky, contexts, strict=True)


def test_beliefs_are_not_modified(contexts):
    small = contexts.select(range(3))
    before = json.dumps(small.beliefs, sort_keys=True)
    assert respond(mutating, small).acts == ["request(area)"] * 3
    assert json.dumps(small.beliefs, sort_keys=True) == before


def test_two_runs_give_byte_identical_tables(contexts, make_grid, ckpts, tmp_path):
    for spec in ("handcrafted", ckpts[0], "handcrafted:nlg_seed=2", f"{__name__}:flaky"):
        for suffix in ("jsonl", "parquet"):
            a = respond(spec, contexts).save(tmp_path / f"a.{suffix}")
            b = respond(spec, make_grid()).save(tmp_path / f"b.{suffix}")
            assert a.read_bytes() == b.read_bytes(), (spec, suffix)


def test_respond_many_equals_serial(contexts, ckpts, tmp_path):
    specs = [*ckpts, "handcrafted", f"{__name__}:flaky"]
    serial = [respond(s, contexts) for s in specs]
    parallel = respond_many(specs, contexts, workers=2)
    assert [t.id for t in parallel] == [t.id for t in serial]
    for s, p in zip(serial, parallel):
        assert s.save(tmp_path / "s.jsonl").read_bytes() == p.save(tmp_path / "p.jsonl").read_bytes()
    from policies.handcrafted.policy import HandcraftedPolicy

    mixed = respond_many(
        [lambda b: "bye()", HandcraftedPolicy(nlg_seed=None), "handcrafted"],
        contexts,
        workers=2,
        policy_ids=["lam", "obj", None],
    )  # the lambda cannot be pickled: runs here
    assert [t.id for t in mixed] == ["lam", "obj", "handcrafted"] and set(mixed[0].acts) == {"bye()"}
    assert mixed[1].acts == mixed[2].acts and set(mixed[1].prompts) == {None}
    one = respond_many(specs[:2], contexts, workers=1, policy_ids=["a", "b"])
    assert [t.id for t in one] == ["a", "b"] and one[0].acts == serial[0].acts


def test_respond_many_errors(contexts):
    with pytest.raises(UnknownName, match="Did you mean 'handcrafted'"):
        respond_many(["handcrafted", "handcraftd"], contexts)
    with pytest.raises(ConfigError, match="policy_ids: expected 2 entries"):
        respond_many(["handcrafted", "handcrafted"], contexts, policy_ids=["a"])
    with pytest.raises(ConfigError, match="workers: expected a positive integer"):
        respond_many(["handcrafted"], contexts, workers=0)
    with pytest.raises(PolicyFailed, match="ValueError: no idea"):
        respond_many(["handcrafted", f"{__name__}:flaky"], contexts, workers=2, strict=True)
    with pytest.raises(ConfigError, match="not found"):
        respond_many(["handcrafted", "recorded:/nonexistent.jsonl"], contexts, workers=2)


def test_recorded_round_trip(contexts, ckpts, tmp_path):
    for spec in (ckpts[-1], f"{__name__}:flaky"):
        original = respond(spec, contexts)
        f = write_recorded(original, tmp_path / "rec.jsonl")
        back = respond(f"recorded:{f}", contexts)
        assert back.id == original.id and back.policy["kind"] == "recorded"
        assert back.policy["recorded_kind"] == original.policy["kind"]
        assert back.policy["path"]["recorded_from"] == original.policy["path"]
        assert (back.acts, back.prompts, back.errors, back.context_ids, back.context_fingerprint) == (
            original.acts,
            original.prompts,
            original.errors,
            original.context_ids,
            original.context_fingerprint,
        )
        # a saved response table serves as a recording too
        table_file = original.save(tmp_path / "table.jsonl")
        again = respond(f"recorded:{table_file}", contexts)
        assert (again.acts, again.prompts, again.errors) == (original.acts, original.prompts, original.errors)


# ----------------------------------------------------------------------------- command line
@pytest.fixture(scope="module")
def contexts_file(contexts, tmp_path_factory):
    return contexts.save(tmp_path_factory.mktemp("ctx") / "grid.jsonl")


def test_cli_one_policy(contexts, contexts_file, tmp_path, capsys):
    out = tmp_path / "hc.jsonl"
    assert main(["respond", "--policy", "handcrafted", "--contexts", str(contexts_file), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "handcrafted  errors 0/81" in printed and "contexts/s" in printed
    t = ResponseTable.load(out)
    assert t.acts == respond("handcrafted", contexts).acts and t.id == "handcrafted"


def test_cli_domain_option(tmp_path, capsys):
    """--domain gives the built-in policies the contexts' domain (the example domain here; the
    default is PyDial's CamRestaurants); without it they refuse contexts of another domain before
    answering any; a bad name is one line."""
    from contexts import generate_grid
    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.simulation.domain import resolve_domain

    example = resolve_domain("example-restaurants")
    path = generate_grid(example, step=0.5).save(tmp_path / "example.jsonl")
    out = tmp_path / "hc.jsonl"
    assert main(["respond", "--policy", "handcrafted", "--contexts", str(path), "-o", str(out)]) == 2
    assert "--domain NAME" in capsys.readouterr().err and not out.exists()
    argv = [
        "respond",
        "--policy",
        "handcrafted",
        "--domain",
        "example-restaurants",
        "--contexts",
        str(path),
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    table = ResponseTable.load(out)
    assert table.n_errors == 0 and table.policy["domain"] == example.name
    assert table.acts == respond(HandcraftedPolicy(example), ContextSet.load(path)).acts
    argv[4] = "camrestaurnt"
    assert main(argv) == 2
    assert "Did you mean 'camrestaurants'" in capsys.readouterr().err


def test_cli_several_policies(contexts, contexts_file, ckpts, tmp_path, capsys):
    out = tmp_path / "tables"
    args = [
        "respond",
        "--contexts",
        str(contexts_file),
        "-o",
        str(out),
        "--workers",
        "2",
        "--format",
        "parquet",
        "--policy",
        ckpts[0],
        ckpts[1],
        "--policy",
        f"{__name__}:flaky",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "errors 27/81" in printed and "(first: ValueError: no idea)" in printed
    ids = [respond(s, contexts).id for s in ckpts[:2]]
    for i in ids:
        assert ResponseTable.load(out / f"{i}.parquet").acts == respond(ckpts[ids.index(i)], contexts).acts
    assert (out / "test_respond.flaky.parquet").is_file()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "handcraftd"], "unknown policy kind 'handcraftd'. Did you mean 'handcrafted'?"),
        (["--policy", "handcrafted:nlg_seed=-1"], "option nlg_seed must be non-negative"),
        (["--policy", "nothere.npz"], "checkpoint file 'nothere.npz' not found"),
        (["--policy", "recorded:nothere.jsonl"], "recorded responses: file 'nothere.jsonl' not found"),
        (["--policy", "handcrafted", "--policy", "handcrafted", "-o", "dir"], "policy ids must be unique"),
        (
            ["--policy", "handcrafted", "--policy", "handcrafted:nlg_seed=1"],
            "with several policies -o must be a directory",
        ),
        (["--policy", "handcrafted", "--id", "a", "--id", "b"], "--id: give it once per --policy"),
        (["--policy", f"{__name__}:flaky", "--strict"], "failed on context 30 (id 'c30'): ValueError: no idea"),
        (["--policy", "pydial:x.cfg"], "PyDial is not available"),
    ],
)
def test_cli_bad_input_is_one_line(contexts_file, tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.delenv("PYDIAL_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    rc = main(["respond", "--contexts", str(contexts_file), "-o", "out.jsonl", *args])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err
    assert err.startswith("behavsim respond: error:")


def test_cli_bad_output_and_contexts(contexts_file, tmp_path, capsys):
    assert (
        main(["respond", "--policy", "handcrafted", "--contexts", str(contexts_file), "-o", str(tmp_path / "x.csv")])
        == 2
    )
    assert "must end in .jsonl or .parquet" in capsys.readouterr().err
    assert main(["respond", "--policy", "handcrafted", "--contexts", str(tmp_path / "no.jsonl"), "-o", "x.jsonl"]) == 2
    assert "no such context-set file" in capsys.readouterr().err


def test_cli_entry_point(contexts_file, tmp_path):
    exe = [sys.executable, "-c", "import sys; from behavsim.cli import main; sys.exit(main())"]
    r = subprocess.run(
        [
            *exe,
            "respond",
            "--policy",
            "handcrafted:nlg_seed=1",
            "--contexts",
            str(contexts_file),
            "-o",
            str(tmp_path / "t.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert ResponseTable.load(tmp_path / "t.jsonl").id == "handcrafted-nlg1"
    r = subprocess.run(
        [*exe, "respond", "--policy", "nope:", "--contexts", str(contexts_file), "-o", "t.jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_loaded_and_in_memory_contexts_answer_alike(contexts, contexts_file, tmp_path):
    # The grid has ties (value 0.5 against **NONE** 0.5) that dict order would break differently.
    loaded = ContextSet.load(contexts_file)
    for spec in ("handcrafted", f"{__name__}:flaky"):
        a = respond(spec, contexts).save(tmp_path / "a.jsonl")
        b = respond(spec, loaded).save(tmp_path / "b.jsonl")
        assert a.read_bytes() == b.read_bytes()


def test_docs_quick_start_runs(capsys):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "adapters.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(block, "docs/adapters.md", "exec"), {})
    out = capsys.readouterr().out
    assert "handcrafted 81 0 request(area)" in out and "recorded" in out


def test_policy_and_contexts_of_different_domains_are_refused():
    from contexts import generate_grid
    from policies.simulation.domain import Domain

    example = Domain.builtin()
    grid_example = generate_grid(example, step=0.5)
    with pytest.raises(
        ConfigError,
        match="works on the domain of 'CamRestaurants-rules.json', but the contexts "
        "were built on behavsim-restaurants-rules.json",
    ):
        respond("handcrafted", grid_example.select(range(4)))  # subsets keep the parent's domain
    from policies.handcrafted.policy import HandcraftedPolicy

    assert respond(HandcraftedPolicy(example), grid_example).n_errors == 0
