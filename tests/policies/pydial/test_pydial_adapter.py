"""The PyDial adapter, tested against a minimal stand-in of PyDial3's interfaces
(``tests/policies/pydial/fake_pydial``, copied to a temporary "PyDial root") — not against PyDial."""

from __future__ import annotations

import itertools
import json
import random
import sys
from pathlib import Path

import pytest

from behavsim import ConfigError, ContextSet, ModelNotAvailable, ResponseTable, load_policy
from behavsim.cli import main
from behavsim.policy import respond, respond_many
from policies.pydial import PyDialAdapter, StateVectorMismatch

pytestmark = pytest.mark.filterwarnings("ignore::behavsim.policy.PolicyErrorsWarning")

FAKE = Path(__file__).parent / "fake_pydial"
DOMAIN = "CamRestaurants"


def grid(levels=(0.0, 0.5, 1.0)) -> ContextSet:
    from policies.simulation.domain import resolve_domain
    from policies.simulation.tracker import make_belief

    d = resolve_domain("camrestaurants")
    beliefs = [
        make_belief(
            d, {"area": {"centre": a}, "pricerange": {"cheap": p}, "food": {"italian": f}}, method={"byconstraints": m}
        )
        for a, p, f, m in itertools.product(levels, repeat=4)
    ]
    return ContextSet(beliefs)


def _load_maker():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fake_pydial_make_root", FAKE / "make_root.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


maker = _load_maker()


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A temporary stand-in PyDial root: fake modules, an ontology, configs, GP policy files."""
    monkeypatch.delenv("PYDIAL_ROOT", raising=False)
    saved_path = list(sys.path)
    maker.forget_pydial()
    yield maker.make_fake_root(tmp_path / "pydial3")
    sys.path[:] = saved_path
    maker.forget_pydial()


@pytest.fixture(scope="module")
def contexts() -> ContextSet:
    return grid()


@pytest.fixture
def on_path(root, monkeypatch):
    monkeypatch.syspath_prepend(str(root))
    return root


def test_gp_policy_from_config(root, contexts, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # far from the root: the adapter must chdir for PyDial's relative paths
    a = load_policy("pydial:config/gp.cfg", pydial_root=root)
    assert isinstance(a, PyDialAdapter)
    m = a.meta
    assert (m["id"], m["name"], m["kind"], m["policy"], m["domain"]) == (
        "pydial-gp",
        "pydial-gp",
        "pydial",
        "gp",
        DOMAIN,
    )
    p = m["path"]
    assert p["file"] == str(root / "config/gp.cfg") and p["sha256"].startswith("sha256:") and p["root"] == str(root)
    assert p["policy_file"] == "policies/gp-camrest" and len(p["policy_sha256"]) == 2 and p["dictionary_size"] == 3
    assert m["nlg"] == "BasicSemO:semo/templates/fake.json" and m["rng_seed"] == 0
    # evaluation is forced deterministic whatever the config says (learning = True, scale = 3)
    assert a.policy.scale == -1 and a._config.get("policy", "learning") == "False"
    t = respond(a, contexts)
    assert t.n_errors == 0
    assert t.acts[0] == "request(area)" and t.prompts[0] == "which area would you like?"
    informs = [i for i, x in enumerate(t.acts) if x.startswith("inform(")]
    assert informs and all(t.prompts[i].startswith("there is a place with") for i in informs)
    assert t.acts[-1].startswith('inform(area="centre",food="italian",name=')
    assert Path.cwd() == tmp_path


def test_sys_path_is_restored_after_pydial_loads_and_answers(root, contexts, tmp_path, monkeypatch):
    """PyDial's root is on sys.path only while PyDial loads or answers; its modules stay loaded,
    so a second adapter (and the first, asked again) finds them."""
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    gp = load_policy("pydial:config/gp.cfg", pydial_root=root)
    assert sys.path == before and str(root) not in sys.path
    assert Path(sys.modules["utils.Settings"].__file__).is_relative_to(root)
    first = respond(gp, contexts)
    assert first.n_errors == 0 and sys.path == before
    hdc = load_policy("pydial:config/hdc.cfg", pydial_root=root)
    assert respond(hdc, contexts).n_errors == 0 and sys.path == before
    assert respond(gp, contexts).acts == first.acts and sys.path == before


def test_answers_do_not_depend_on_context_order(on_path, contexts):
    root = on_path
    a = load_policy(f"pydial:{root / 'config/gp.cfg'}")
    forward = respond(a, contexts)
    backward = respond(a, contexts.select(list(range(len(contexts)))[::-1]))
    assert backward.acts[::-1] == forward.acts and backward.prompts[::-1] == forward.prompts
    again = respond(load_policy(f"pydial:{root / 'config/gp.cfg'}:seed=0"), contexts)
    assert again.acts == forward.acts
    state = random.getstate()
    respond(a, contexts.select(range(5)))
    assert random.getstate() == state  # PyDial's template shuffle does not touch the caller's generator


def test_root_found_on_sys_path_and_hdc(on_path, contexts):
    a = load_policy("pydial:config/hdc.cfg")  # relative config: looked up under the root
    assert a.meta["policy"] == "hdc" and a.meta["nlg"] is None and "policy_file" not in a.meta["path"]
    t = respond(a, contexts)
    assert t.n_errors == 0 and set(t.prompts) == {None}
    assert t.acts[0] == "request(area)" and t.acts[-1].startswith("inform(")
    # restart() before every context: the stand-in HDC policy raises if state is carried over
    assert respond(a, contexts).acts == t.acts


def test_method_and_discourse_act_in_ontology_order(on_path, contexts):
    """PyDial reads method/discourseAct values in dict order; respond hands over sorted keys, so the
    adapter must restore the ontology's order (else the GP vectors are silently permuted)."""
    import numpy as np

    from behavsim import canonical_copy as _sorted_copy

    a = load_policy("pydial:config/gp.cfg:nlg=off")
    assert a.meta["nlg"] is None
    rules = json.loads((on_path / f"ontology/ontologies/{DOMAIN}-rules.json").read_text())
    for b in contexts.beliefs[::10]:  # make_belief: the tracker's (= the ontology's) order
        shuffled = json.loads(json.dumps(b))
        for key in ("method", "discourseAct"):
            shuffled["beliefs"][key] = dict(reversed(list(b["beliefs"][key].items())))
        for given in (_sorted_copy(b), shuffled):
            fixed = a._pydial_belief(given)
            assert list(fixed["beliefs"]["method"]) == rules["method"]
            assert list(fixed["beliefs"]["discourseAct"]) == rules["discourseAct"] + ["bye"]
            with a.session():
                assert np.array_equal(a.policy.get_State(fixed).beliefStateVec, a.policy.get_State(b).beliefStateVec)


def test_state_vector_length_is_checked(on_path, contexts):
    a = load_policy("pydial:config/gp.cfg")
    bad = json.loads(json.dumps(contexts.beliefs[:3]))
    bad[1]["beliefs"]["food"]["martian"] = 0.0  # a value PyDial's ontology does not have
    # a whole context set off PyDial's ontology is refused before the first context ...
    with pytest.raises(
        ConfigError,
        match=r"contexts are built on domain \(unnamed\) \(slot 'food': 1 values PyDial "
        r"lacks \(e.g. 'martian'\)\) but pydial:.*gp.cfg loads CamRestaurants",
    ):
        respond(a, ContextSet(bad))
    # ... and one belief asked directly still fails on its state vector's length
    with pytest.raises(StateVectorMismatch):
        a.respond_one(bad[1])


def test_config_errors(on_path, tmp_path):
    with pytest.raises(ConfigError, match="PyDial config 'nothere.cfg' not found"):
        load_policy("pydial:nothere.cfg")
    (on_path / "config/dqn.cfg").write_text(f"[GENERAL]\ndomains = {DOMAIN}\n[policy]\npolicytype = dqn\n")
    with pytest.raises(
        ConfigError,
        match="policytype 'dqn' is not supported by the PyDial adapter "
        r"\(supported: gp, hdc\); record its answers elsewhere",
    ):
        load_policy("pydial:config/dqn.cfg")
    (on_path / "config/untrained.cfg").write_text(
        f"[GENERAL]\ndomains = {DOMAIN}\n[policy]\npolicytype = gp\ninpolicyfile = policies/none\n"
    )
    with pytest.raises(
        ConfigError,
        match="policy files not found .*policies/none.dct, policies/none.prm; PyDial "
        "would silently run an untrained policy",
    ):
        load_policy("pydial:config/untrained.cfg")
    with pytest.raises(ConfigError, match="domain 'SFHotels' is not among"):
        load_policy("pydial:config/gp.cfg:domain=SFHotels")
    with pytest.raises(ConfigError, match="unknown option 'domian'.*Did you mean 'domain'"):
        load_policy("pydial:config/gp.cfg:domian=x")


def test_not_a_pydial_root(tmp_path):
    with pytest.raises(ModelNotAvailable, match=r"is not a PyDial3 root folder \(missing utils/Settings.py"):
        load_policy("pydial:x.cfg", pydial_root=tmp_path)
    with pytest.raises(ModelNotAvailable, match="PYTHONPATH or pass --pydial-root DIR"):
        load_policy("pydial:x.cfg", pydial_root=tmp_path / "nothing")


def test_respond_many_and_cli(root, contexts, tmp_path, capsys):
    specs = [f"pydial:config/gp.cfg:root={root}", f"pydial:config/hdc.cfg:root={root}"]
    serial = [respond(s, contexts) for s in specs]
    parallel = respond_many(specs, contexts, workers=2)
    assert [t.acts for t in parallel] == [t.acts for t in serial]
    assert [t.prompts for t in parallel] == [t.prompts for t in serial]
    cfile = contexts.save(tmp_path / "ctx.jsonl")
    out = tmp_path / "gp.jsonl"
    rc = main(
        [
            "respond",
            "--policy",
            "pydial:config/gp.cfg",
            "--pydial-root",
            str(root),
            "--id",
            "pd",
            "--contexts",
            str(cfile),
            "-o",
            str(out),
        ]
    )
    assert rc == 0, capsys.readouterr().err
    t = ResponseTable.load(out)
    assert t.id == "pd" and t.acts == serial[0].acts
