"""Language models as policies: ``openai:MODEL@URL`` against a real ``transformers serve`` on
127.0.0.1 and ``hf:DIR`` on the same model folder; prompt templates, answer parsing, the answer
cache, failures that stop a run resumably, and self-agreement (``respond --repeat K``)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from behavsim import ConfigError, ContextSet, ResponseTable, check_policy, default_cache_dir, parse_spec, respond
from behavsim.policy import PolicySpec
from policies.llm._adapter import LLMServiceError, model_policy_id
from policies.llm._openai import split_target
from policies.llm._prompts import (
    OffDomainAnswer,
    UnparsableAnswer,
    list_templates,
    load_template,
)
from policies.simulation.domain import resolve_domain

pytestmark = pytest.mark.filterwarnings("ignore::behavsim.PolicyErrorsWarning", "ignore::UserWarning")


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    with one_torch_thread():
        yield


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """An answer cache of this test's own (it counts requests), for this process and the CLI's."""
    monkeypatch.setenv("BEHAVSIM_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _answers_cached(model_key_prefix: str) -> int:
    db = default_cache_dir() / "llm-answers.sqlite"
    if not db.is_file():
        return 0
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM answers WHERE model LIKE ?", (model_key_prefix + "%",)).fetchone()[0]


def _distinct_requests(spec: str, cs: ContextSet) -> int:
    """How many different requests a policy makes for a context set (contexts it sees the same once)."""
    from behavsim import canonical_copy, load_policy

    a = load_policy(spec)
    return len({a.cache_key(a._messages(canonical_copy(b), cs.history(i))) for i, b in enumerate(cs.beliefs)})


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "behavsim.cli", *args], capture_output=True, text=True, timeout=600)


# ----------------------------------------------------------------------------- specs
@pytest.mark.parametrize(
    "target, model, url",
    [
        ("my-model@http://127.0.0.1:8000/v1", "my-model", "http://127.0.0.1:8000/v1"),
        ("llama3.2:1b@http://localhost:11434/v1", "llama3.2:1b", "http://localhost:11434/v1"),
        ("org/model@v2@https://api.example.org/v1", "org/model@v2", "https://api.example.org/v1"),
        ("/models/run/checkpoint-500@http://127.0.0.1:9/v1", "/models/run/checkpoint-500", "http://127.0.0.1:9/v1"),
    ],
)
def test_openai_target_splits_at_the_last_at(target, model, url):
    assert split_target(PolicySpec("openai:" + target, "openai", target)) == (model, url)


def test_openai_spec_options_follow_the_url():
    s = parse_spec("openai:llama3.2:1b@http://localhost:11434/v1:temperature=0.7:concurrency=4")
    assert (s.kind, s.target, s.options) == (
        "openai",
        "llama3.2:1b@http://localhost:11434/v1",
        {"temperature": "0.7", "concurrency": "4"},
    )


@pytest.mark.parametrize(
    "model, temperature, pid",
    [
        ("Qwen/Qwen2.5-0.5B-Instruct", 0, "Qwen2.5-0.5B-Instruct"),
        ("llama3.2:1b", 0.7, "llama3.2:1b-t0.7"),
        ("/runs/e2e/checkpoint-500", 0, "e2e-checkpoint-500"),
        ("/tmp/x/my model/", 1, "my-model-t1"),
    ],
)
def test_policy_id_from_model_name_never_holds_a_slash(model, temperature, pid):
    assert model_policy_id(model, temperature) == pid and "/" not in pid


def test_bad_openai_specs_say_what_is_wrong(tmp_path):
    from behavsim import load_policy

    with pytest.raises(ConfigError, match="expected openai:MODEL@BASE_URL"):
        load_policy("openai:no-url")
    with pytest.raises(ConfigError, match="must be http"):
        load_policy("openai:m@ftp://host/v1")
    with pytest.raises(ConfigError, match="put no credentials in the base URL"):
        load_policy("openai:m@http://user:secret@127.0.0.1:8000/v1")
    with pytest.raises(ConfigError, match="unknown option 'temprature'.*Did you mean 'temperature'"):
        load_policy("openai:m@http://127.0.0.1:8000/v1:temprature=1")
    with pytest.raises(ConfigError, match="api_key_env names an environment variable"):
        load_policy("openai:m@http://127.0.0.1:8000/v1:api_key_env=sk-abc.def")
    with pytest.raises(ConfigError, match="model folder .* not found"):
        load_policy(f"hf:{tmp_path / 'none'}")
    with pytest.raises(ConfigError, match="holds no Hugging Face model"):
        load_policy(f"hf:{tmp_path}")
    conf = tmp_path / "llm.toml"
    conf.write_text('model = "m"\nbase_url = "http://127.0.0.1:8000/v1"\ntemperature = 0.5\nseed = 3\n')
    a = load_policy(f"openai:{conf}:seed=4")
    assert (a.model, a.base_url, a.decoding["temperature"], a.decoding["seed"]) == (
        "m",
        "http://127.0.0.1:8000/v1",
        0.5,
        4,
    )
    conf.write_text('model = "m"\nbase_url = "http://127.0.0.1:8000/v1"\napi_key = "sk-1"\n')
    with pytest.raises(ConfigError, match="unknown key 'api_key'"):
        load_policy(f"openai:{conf}")


def test_api_key_comes_from_the_environment_and_never_reaches_the_table(monkeypatch):
    from behavsim import load_policy

    monkeypatch.setenv("MY_LLM_KEY", "sk-very-secret")
    a = load_policy("openai:m@http://127.0.0.1:8000/v1:api_key_env=MY_LLM_KEY")
    assert a._headers()["Authorization"] == "Bearer sk-very-secret"
    assert "sk-very-secret" not in json.dumps(a.meta)
    monkeypatch.delenv("MY_LLM_KEY")
    assert "Authorization" not in a._headers()


# ----------------------------------------------------------------------------- templates
def test_shipped_template_renders_domain_belief_and_history(llm_contexts):
    assert {"camrestaurants", "history-chat"} <= set(list_templates())
    t, d = load_template("camrestaurants"), resolve_domain(None)
    b = llm_contexts.beliefs[2]
    system, user = t.render(b, d)
    assert system["role"] == "system" and "request(SLOT)" in system["content"]
    assert (
        "- food: afghan, african," in system["content"]
        and "pricerange: cheap, moderate, expensive" in system["content"]
    )
    assert user["role"] == "user" and "The dialogue so far" not in user["content"]
    assert "What the system believes the user wants" in user["content"]
    assert "two lines" in user["content"]
    hist = [{"speaker": "user", "text": "i want cheap food", "act": None}]
    _, user2 = t.render(b, d, history=hist, utterance=False)
    assert "The dialogue so far:\nuser: i want cheap food" in user2["content"] and "one line" in user2["content"]
    assert t.digest.startswith("sha256:") and t.info() == {"name": "camrestaurants", "digest": t.digest}


def test_history_is_the_context_sets_and_history_templates_refuse_sets_without(llm_contexts, with_histories, tmp_path):
    """The LLM kinds read a context's history from the context set (one source of truth) and
    read what their template uses: history-chat the history only (a text-only context answers;
    a set without histories is refused up front), camrestaurants the belief and the history."""
    from behavsim import UnanswerableContexts, load_policy, respond

    h = with_histories(llm_contexts.select(range(3)))
    assert llm_contexts.histories is None and h.history(0)[1]["speaker"] == "user"
    chat = load_template("history-chat")
    assert chat.reads == ("history",) and load_template("camrestaurants").reads == ("belief", "history")
    msgs = chat.render(None, resolve_domain(None), history=h.history(0))
    assert [m["role"] for m in msgs] == ["assistant", "user"] and msgs[0]["content"] == "hello, how may i help you?"
    assert chat.render(None, resolve_domain(None), history=[]) == []  # the system speaks first
    with pytest.raises(ConfigError, match="needs a dialogue history, and this context has none"):
        chat.render(h.beliefs[0], resolve_domain(None))
    with pytest.raises(ConfigError, match="reads the belief state, and this context has none"):
        load_template("camrestaurants").render(None, resolve_domain(None), history=h.history(0))
    a = load_policy("openai:m@http://127.0.0.1:9/v1:template=history-chat")
    assert a.reads == ("history",) and load_policy("openai:m@http://127.0.0.1:9/v1").reads == ("belief", "history")
    a.check_contexts(h)  # every context has a history
    a.check_contexts(h.text_only())  # ... and no belief: what history-chat reads
    llm_contexts.source = "collected.jsonl"
    try:
        with pytest.raises(
            ConfigError,
            match=r"reads the dialogue history, and \d+ of \d+ contexts of collected.jsonl "
            r"have none .*collect contexts with histories",
        ):
            a.check_contexts(llm_contexts)
        with pytest.raises(
            UnanswerableContexts,
            match=r"reads dialogue histories, but context set 'collected.jsonl' "
            r"has none",
        ):
            respond(a, llm_contexts)
    finally:
        llm_contexts.source = None
    # a history kept anywhere but the context set is not read
    hidden = ContextSet(
        [{**b, "history": t} for b, t in zip(h.beliefs, h.histories)],
        [{**m, "history": t} for m, t in zip(h.metas, h.histories)],
    )
    with pytest.raises(UnanswerableContexts):
        respond(a, hidden)
    p = tmp_path / "t.toml"
    p.write_text(
        'format = "behavsim-prompt"\nversion = 1\nneeds_history = true\n[[messages]]\nrole = "user"\n'
        'content = "{{ belief.n_matches }}"\n'
    )
    with pytest.raises(ConfigError, match="needs_history = true, but no message uses the history"):
        load_template(p)


def test_template_files_are_checked_and_their_digest_follows_their_bytes(tmp_path):
    p = tmp_path / "t.toml"
    base = 'format = "behavsim-prompt"\nversion = 1\n[[messages]]\nrole = "user"\ncontent = "{{ belief.n_matches }}"\n'
    p.write_text(base)
    d1 = load_template(p).digest
    p.write_text(base.replace("n_matches", "requested"))
    assert load_template(p).digest != d1
    p.write_text(base.replace('"user"', '"robot"'))
    with pytest.raises(ConfigError, match="role must be system, user, assistant or history"):
        load_template(p)
    p.write_text(base.replace("{{ belief.n_matches }}", "{% if %}"))
    with pytest.raises(ConfigError, match="template error on line 1"):
        load_template(p)
    with pytest.raises(ConfigError, match="neither a file nor a shipped template. Did you mean 'camrestaurants'"):
        load_template("camrestaurant")


@pytest.mark.parametrize(
    "text, act, prompt",
    [
        (
            'inform(name="pizza hut city centre",food=italian)\nPizza Hut serves italian food.',
            'inform(food="italian",name="pizza hut city centre")',
            "Pizza Hut serves italian food.",
        ),
        ("  `request(area)`  \n\n what area? ", "request(area)", "what area?"),
        ("bye()", "bye()", None),
        ("select(pricerange=cheap,pricerange=expensive)", 'select(pricerange="cheap",pricerange="expensive")', None),
        ("inform(name=none,food=klingon)", None, "OffDomainAnswer: 'klingon' is not a value of slot 'food'"),
        ("greet()", None, "OffDomainAnswer: act type 'greet' is not a system act"),
        ("inform(colour=red)", None, "OffDomainAnswer: slot 'colour' is not a slot"),
        ("request()", None, "OffDomainAnswer: request takes 1 slot-value item"),
        ("request(food=italian)", None, "OffDomainAnswer: request names a slot without a value"),
        ("Sure! I would ask for the area.", None, "UnparsableAnswer: the first line is not an act"),
        ("", None, "UnparsableAnswer: empty answer"),
    ],
)
def test_answers_are_parsed_and_checked_against_the_domain(text, act, prompt):
    t, d = load_template("camrestaurants"), resolve_domain(None)
    if act is not None:
        r = t.parse(text, d)
        assert (r.act, r.prompt, r.raw) == (act, prompt, text)
    else:
        with pytest.raises((UnparsableAnswer, OffDomainAnswer)) as info:
            t.parse(text, d)
        assert f"{type(info.value).__name__}: {info.value}".startswith(prompt) and info.value.raw == text


# ----------------------------------------------------------------------------- hf: and openai:
def test_hf_is_deterministic_and_its_answers_are_cached(llm_models, llm_contexts, private_cache):
    spec = f"hf:{llm_models['chat']}"
    before = _answers_cached("hf:")
    t1 = respond(spec, llm_contexts)
    stored = _answers_cached("hf:") - before
    assert stored == _distinct_requests(spec, llm_contexts)
    t2 = respond(spec, llm_contexts)  # from the cache
    assert _answers_cached("hf:") - before == stored
    assert t1.rows() == t2.rows() and t1.n_errors < len(t1)
    fresh = respond(spec + ":cache=off", llm_contexts)
    assert fresh.rows() == t1.rows()
    assert t1.policy["kind"] == "hf" and t1.id == "chat" and t1.policy["template"]["name"] == "tiny-test"
    assert t1.policy["decoding"] == {"temperature": 0.0, "top_p": None, "seed": 0, "max_tokens": 128}


def test_hf_batches_answer_as_one_context_at_a_time(llm_models, llm_contexts, with_and_without_histories, monkeypatch):
    """Greedy answers of left-padded batches (the default, 8) are those of one context at a time,
    with and without the near-tie check forcing every context of a batch to be answered again;
    the batch size is no part of the policy's metadata."""
    import policies.llm._hf as hf

    cs = with_and_without_histories(llm_contexts)
    model = llm_models["chat"]
    one = respond(f"hf:{model}:batch_size=1:cache=off", cs)
    calls = []
    checked = hf.HFAdapter._generate_checked

    def counting(self, batch, config):
        out = checked(self, batch, config)
        calls.append((len(batch), sum(t is None for t in out)))
        return out

    monkeypatch.setattr(hf.HFAdapter, "_generate_checked", counting)
    for spec in (f"hf:{model}:cache=off", f"hf:{model}:batch_size=3:cache=off"):
        t = respond(spec, cs)
        assert t.rows() == one.rows() and t.policy == one.policy
    assert calls and max(n for n, _ in calls) == 8
    monkeypatch.setattr(hf, "NEAR_TIE", float("inf"))  # every step a near tie: every context again, alone
    calls.clear()
    assert respond(f"hf:{model}:cache=off", cs).rows() == one.rows()
    assert all(redone == n for n, redone in calls)


def test_openai_answers_equal_hf_answers_and_a_rerun_asks_nothing(
    llm_models, llm_contexts, llm_server, tmp_path, private_cache, with_and_without_histories
):
    """transformers serve on the same folder, temperature 0, batch size 1: the same text for every
    context (so the same act wherever the model answered one); a rerun with the server up hits
    the cache — 0 requests at the server — and gives the same table."""
    cs = with_and_without_histories(llm_contexts)
    model = llm_models["chat"]
    hf = respond(f"hf:{model}:batch_size=1", cs)
    n0 = llm_server.requests()
    oa = respond(f"openai:{model}@{llm_server.url}", cs)
    asked = llm_server.requests() - n0
    assert asked == _distinct_requests(f"openai:{model}@{llm_server.url}", cs)
    assert oa.raws == hf.raws
    good = [i for i, e in enumerate(hf.errors) if e is None]
    assert len(good) >= 5, hf.errors
    assert [oa.acts[i] for i in good] == [hf.acts[i] for i in good]
    assert oa.errors == hf.errors
    again = respond(f"openai:{model}@{llm_server.url}", cs)
    assert llm_server.requests() - n0 == asked and again.rows() == oa.rows()
    assert oa.id == "chat" and oa.policy["kind"] == "openai" and oa.policy["endpoint"] == llm_server.url
    assert oa.policy["path"]["digest"] == hf.policy["path"]["digest"]


def test_unparsable_answers_are_errors_that_keep_their_text(llm_models, llm_contexts, llm_server, tmp_path):
    cs_file = tmp_path / "c.jsonl"
    llm_contexts.save(cs_file)
    out = tmp_path / "random.jsonl"
    r = _cli(
        "respond",
        "--policy",
        f"openai:{llm_models['random']}@{llm_server.url}:max_tokens=12",
        "--contexts",
        str(cs_file),
        "-o",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    t = ResponseTable.load(out)
    assert t.n_errors == len(t) and f"errors {len(t)}/{len(t)}" in r.stdout and "(first: " in r.stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    for row in rows:
        assert row["act"] is None and row["error"].startswith(("UnparsableAnswer", "OffDomainAnswer"))
        assert isinstance(row["raw"], str)
    assert t.raws == [row["raw"] for row in rows] and any(t.raws)
    t.save(tmp_path / "random.parquet")
    assert ResponseTable.load(tmp_path / "random.parquet").raws == t.raws


def test_self_agreement_of_sampling_is_below_one_and_of_greedy_is_one(llm_models, llm_contexts, llm_server, tmp_path):
    cs_file = tmp_path / "c.jsonl"
    llm_contexts.save(cs_file)
    model = llm_models["chat"]
    sampled = respond(f"hf:{model}:temperature=1", llm_contexts, repeat=3)
    assert sampled.id == "chat-t1" and sampled.n_repeats == 3
    assert 0 <= sampled.self_agreement_tmr < 1
    assert all(0 <= x <= 1 for x in sampled.agreement)
    assert len({r["raw"] for more in sampled.repeats for r in more}) > 1  # other seeds, other draws
    # through the server: the seed of repeat r is seed + r, sent with the request
    served = respond(f"openai:{model}@{llm_server.url}:temperature=1", llm_contexts, repeat=2)
    assert served.self_agreement_tmr < 1
    out = tmp_path / "greedy.jsonl"
    r = _cli(
        "respond",
        "--policy",
        f"openai:{model}@{llm_server.url}",
        "--contexts",
        str(cs_file),
        "--repeat",
        "2",
        "-o",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    assert "chat  self-agreement TMR 1.000" in r.stdout
    greedy = ResponseTable.load(out)
    assert greedy.self_agreement_tmr == 1.0 and greedy.agreement == [1.0] * len(greedy)
    head = json.loads(out.read_text().splitlines()[0])
    assert head["repeat"] == {"k": 2, "self_agreement_tmr": 1.0}
    assert [t.id for t in greedy.repeat_tables()] == ["chat", "chat#r1"]
    assert greedy.repeat_tables()[1].acts == greedy.acts


def test_answers_are_read_from_json_or_events_and_a_cut_answer_is_tried_again():
    from policies.llm._openai import ContextRefused, _answer_text, _Incomplete

    def sse(*events):
        return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()

    role = {"choices": [{"delta": {"role": "assistant"}, "index": 0}]}
    part = {"choices": [{"delta": {"content": "bye"}, "index": 0}]}
    end = {"choices": [{"delta": {"content": "()"}, "index": 0, "finish_reason": "stop"}]}
    assert _answer_text(200, "text/event-stream", sse(role, part, end)) == "bye()"
    assert _answer_text(200, "text/event-stream", sse(role, part) + b"data: [DONE]\n\n") == "bye"
    with pytest.raises(_Incomplete, match="stopped before its end"):
        _answer_text(200, "text/event-stream", sse(role, part))
    with pytest.raises(ContextRefused, match="failed on this context: boom"):
        _answer_text(200, "text/event-stream", sse(role, {"error": "boom"}))
    body = {"choices": [{"message": {"role": "assistant", "content": "request(food)"}, "finish_reason": "stop"}]}
    assert _answer_text(200, "application/json", json.dumps(body).encode()) == "request(food)"
    with pytest.raises(_Incomplete):
        _answer_text(200, "application/json", json.dumps(body).encode()[:30])


# ----------------------------------------------------------------------------- failures
def test_refused_connection_ends_in_one_clear_line(llm_models, llm_contexts, tmp_path, private_cache, free_port):

    cs_file = tmp_path / "c.jsonl"
    llm_contexts.save(cs_file)
    url = f"http://127.0.0.1:{free_port()}/v1"
    r = _cli(
        "respond",
        "--policy",
        f"openai:{llm_models['chat']}@{url}:retries=1:backoff=0.05",
        "--contexts",
        str(cs_file),
        "-o",
        str(tmp_path / "t.jsonl"),
    )
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"behavsim respond: error: openai:{llm_models['chat']}@{url}: connection refused at")
    assert "(2 tries)" in lines[0] and "0 of " in lines[0] and "run the same command again to resume" in lines[0]
    assert not (tmp_path / "t.jsonl").exists()


def _run_until(server, cmd: list[str], after: int, then) -> subprocess.CompletedProcess:
    """Start ``cmd``; once the server has received ``after`` more requests, call ``then()``."""
    start = server.requests()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while server.requests() - start < after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    then()
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize("failure", ["timeout", "killed"])
def test_a_server_that_stops_answering_ends_the_run_resumably(
    failure, llm_models, llm_contexts, own_server, tmp_path, private_cache, with_histories
):
    """The server hangs (SIGSTOP: requests time out) or dies (SIGKILL) mid-run: one clear line,
    the answers so far kept; the same command on a server again asks only for the rest, and the
    table equals the one of an uninterrupted run (hf:, the same model)."""
    cs = with_histories(llm_contexts)
    cs_file = tmp_path / "c.jsonl"
    cs.save(cs_file)
    model = llm_models["chat"]
    server = own_server()
    spec = f"openai:{model}@{server.url}:timeout=3:retries=1:backoff=0.1:seed=11"
    out = tmp_path / "t.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "behavsim.cli",
        "respond",
        "--policy",
        spec,
        "--contexts",
        str(cs_file),
        "-o",
        str(out),
        "--id",
        "m",
    ]
    sig = signal.SIGSTOP if failure == "timeout" else signal.SIGKILL
    r = _run_until(server, cmd, 4, lambda: server.signal(sig))
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"behavsim respond: error: openai:{model}@{server.url}: ")
    cause = (
        "no answer within the timeout of 3 s" if failure == "timeout" else "the connection failed|connection refused"
    )
    import re

    assert re.search(cause, lines[0]), lines[0]
    kept = int(re.search(r"— (\d+) of (\d+) answers kept in the answer cache", lines[0]).group(1))
    assert 3 <= kept < _distinct_requests(spec, cs) and not out.exists()
    if failure == "timeout":
        server.signal(signal.SIGCONT)
        again = server
    else:
        again = own_server()  # a new server, on another port: the cache does not key on the URL
    n0 = again.requests()
    r = _cli(
        "respond",
        "--policy",
        spec.replace(server.url, again.url),
        "--contexts",
        str(cs_file),
        "-o",
        str(out),
        "--id",
        "m",
    )
    assert r.returncode == 0, r.stderr
    assert again.requests() - n0 == _distinct_requests(spec, cs) - kept
    whole = respond(f"hf:{model}", cs)
    assert ResponseTable.load(out).raws == whole.raws
    assert (private_cache / "llm-answers.sqlite").is_file()


# ----------------------------------------------------------------------------- everywhere
def test_llm_policies_pass_the_checker_on_contexts_with_histories(llm_models, llm_contexts, llm_server, with_histories):
    cs = with_histories(llm_contexts.select(range(4)))
    assert check_policy(f"hf:{llm_models['bye']}", cs) == 4
    assert check_policy(f"openai:{llm_models['bye']}@{llm_server.url}", cs) == 4


def test_service_error_is_a_behavsim_error():
    from behavsim import BehavsimError

    assert issubclass(LLMServiceError, BehavsimError)


def test_llm_kinds_import_nothing_heavy_until_used():
    """Listing the kinds and parsing specs imports no torch, transformers or jinja2; an openai:
    policy never imports torch or transformers."""
    code = (
        "import sys, behavsim, policies.adapters, policies.commands.respond; behavsim.list_policy_kinds(); "
        "behavsim.parse_spec('hf:x'); behavsim.parse_spec('openai:m@http://127.0.0.1:9/v1'); "
        "h = lambda: [m for m in ('torch', 'transformers', 'jinja2') if m in sys.modules]; print(h()); "
        "behavsim.load_policy('openai:m@http://127.0.0.1:9/v1'); print(h())"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split("\n")[:2] == ["[]", "['jinja2']"], r.stderr


def test_monitor_follows_a_model_folder_per_training_step(llm_models, llm_contexts, llm_server, tmp_path):
    """``behavsim monitor DIR --pattern 'checkpoint-*' --loader 'hf:{}'`` (or ``'openai:{}@URL'``): each
    folder a snapshot at the step its name gives, compared with the one before."""
    import shutil

    from behavsim.monitor import read_convergence
    from policies.commands.monitor import main as monitor_main

    run = tmp_path / "run"
    for step, which in ((100, "random"), (200, "chat"), (300, "chat")):
        shutil.copytree(llm_models[which], run / f"checkpoint-{step}")
    llm_contexts.save(tmp_path / "c.jsonl")
    for loader, out in (("hf:{}", "mon-hf"), (f"openai:{{}}@{llm_server.url}", "mon-openai")):
        assert (
            monitor_main(
                [
                    str(run),
                    "--pattern",
                    "checkpoint-*",
                    "--loader",
                    loader,
                    "--contexts",
                    str(tmp_path / "c.jsonl"),
                    "--no-plot",
                    "-o",
                    str(tmp_path / out),
                ]
            )
            == 0
        )
        rows = read_convergence(tmp_path / out / "run" / "convergence.csv")
        assert [(r["dialogues"], r["prev_dialogues"]) for r in rows] == [(300, 200)]  # 100 answered nothing
        assert rows[0]["TMR"] == 1.0  # the same weights at 200 and 300
        failed = (tmp_path / out / "run" / "failed.csv").read_text().splitlines()
        assert failed[1].startswith("100,checkpoint-100,") and "answered none of the" in failed[1]
