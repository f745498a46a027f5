"""The batched path of the respond protocol (``Adapter.respond_batch``) against the per-context path,
which stays the reference: the same tables, errors in their places, contexts lacking what a model
reads, adapters that decline or break the protocol; and the table writer that serves it."""

from __future__ import annotations

import json
import random

import pytest

from behavsim import ContextSet, Executor, ResponseTable
from behavsim.io import canonical_json
from behavsim.policy import (
    Adapter,
    PolicyAdapter,
    PolicyCheckError,
    PolicyFailed,
    Response,
    check_policy,
    respond,
    respond_many,
)


def _contexts(n: int = 9, histories: bool = False) -> ContextSet:
    beliefs = [{"beliefs": {"food": {"x": i / n}}, "k": i} for i in range(n)]
    hist = None
    if histories:  # every third context text only, every third without a history
        hist = [[{"speaker": "user", "text": f"u{i}"}] if i % 3 != 2 else None for i in range(n)]
        beliefs = [None if i % 3 == 0 else b for i, b in enumerate(beliefs)]
    return ContextSet(beliefs, ids=[f"c{i}" for i in range(n)], histories=hist)


def _answer(belief: dict) -> Response:
    """A toy policy: an act from the belief, an error on every fourth context, a text-only answer
    on every fifth."""
    k = belief["k"]
    if k % 4 == 3:
        raise ValueError(f"no answer for {k}")
    if k % 5 == 4:
        return Response(act=None, prompt=f"text {k}")
    return Response(act=f"request(s{k % 2})", prompt=f"say {k}")


class Toy(Adapter):
    """Answers one at a time with ``_answer``, or many at once the same way (``batched``), or
    wrongly (``broken``: one answer short; ``different``: another act on the last context)."""

    kind = "toy"

    def __init__(self, mode: str = "batched", reads: tuple[str, ...] = ("belief",)) -> None:
        super().__init__({"id": f"toy-{mode}", "name": "toy"})
        self.mode = mode
        self.reads = reads
        self.calls: list[list[int]] = []

    def respond_one(self, belief, *, context_id=None, context_meta=None, history=None) -> Response:
        return _answer(belief if belief is not None else {"k": int(history[0]["text"][1:])})

    def respond_batch(self, contexts, indices):
        if self.mode == "declines":
            return None
        self.calls.append(list(indices))
        out: list = []
        for i in indices:
            b = contexts.beliefs[i]
            try:
                out.append(_answer(b if b is not None else {"k": i}))
            except ValueError as exc:
                out.append(exc)
        if self.mode == "broken":
            out.pop()
        if self.mode == "different" and out:
            out[-1] = Response(act="bye()")
        return out


def _same(a: ResponseTable, b: ResponseTable) -> bool:
    """The same table, but for the policy's id."""
    ha, hb = a.header(), b.header()
    ha["policy"], hb["policy"] = {**ha["policy"], "id": ""}, {**hb["policy"], "id": ""}
    return json.dumps([ha, a.rows()]) == json.dumps([hb, b.rows()])


@pytest.mark.parametrize("reads", [("belief",), ("history",), ("belief", "history")])
def test_batched_tables_equal_the_per_context_ones(reads):
    cs = _contexts(13, histories=True)
    batched, single = Toy(reads=reads), Toy(reads=reads)
    with pytest.warns(UserWarning, match="failed on"):
        a = respond(batched, cs)
    with pytest.warns(UserWarning, match="failed on"):
        b = respond(single, cs, per_context=True)
    assert _same(a, b)
    assert single.calls == [] and batched.calls  # each path was the one taken
    missing = [i for i, e in enumerate(a.errors) if e and e.startswith("MissingInput")]
    assert bool(missing) == (len(reads) == 1)  # contexts without what the model reads are errors ...
    assert not set(missing) & {i for call in batched.calls for i in call}  # ... never given to respond_batch
    assert a.errors[7] == "ValueError: no answer for 7" and a.acts[7] is None
    assert a.acts[4] is None and a.prompts[4] == "text 4" and a.errors[4] is None  # text only


def test_blocks_and_declining(monkeypatch):
    import behavsim.policy._respond as r  # private: the batched runner's internals patched

    monkeypatch.setattr(r, "BLOCK", 4)
    cs = _contexts(10)
    toy = Toy()
    with pytest.warns(UserWarning):
        a = respond(toy, cs)
    assert toy.calls == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    with pytest.warns(UserWarning):
        assert _same(respond(Toy("declines"), cs), a)  # declined: the per-context path, the same table
    with pytest.raises(PolicyCheckError, match="gave 3 answers for 4 contexts"):
        respond(Toy("broken"), cs)


def test_strict_stops_at_the_first_failing_context_in_order():
    with pytest.raises(PolicyFailed, match=r"failed on context 3 \(id 'c3'\): ValueError: no answer for 3"):
        respond(Toy(), _contexts(), strict=True)


def test_check_policy_compares_the_batched_answers_with_the_per_context_ones():
    cs = ContextSet([{"beliefs": {}, "k": 2 * i} for i in range(3)])  # no failures
    assert check_policy(Toy(), cs) == 3
    with pytest.raises(PolicyCheckError, match="one at a time"):
        check_policy(Toy("different"), cs)


class Doubler:
    """A policy object with its own respond_batch (an answer per context: act strings, pairs,
    an exception, and something that is no answer)."""

    name = "doubler"

    def act(self, belief):
        k = belief["k"]
        if k == 2:
            raise KeyError("two")
        if k == 3:
            return 42  # not an answer: a TypeError in the table
        return ("bye()", f"p{k}") if k % 2 else "reqmore()"

    def respond_batch(self, contexts, indices):
        out = []
        for i in indices:
            try:
                out.append(self.act(contexts.beliefs[i]))
            except KeyError as exc:
                out.append(exc)
        return out


def test_policy_objects_may_answer_many_at_once():
    cs = ContextSet([{"beliefs": {}, "k": i} for i in range(6)])
    adapter = PolicyAdapter(Doubler())
    with pytest.warns(UserWarning):
        a = respond(adapter, cs)
    with pytest.warns(UserWarning):
        b = respond(PolicyAdapter(Doubler()), cs, per_context=True)
    assert _same(a, b)
    assert a.errors[2] == "KeyError: 'two'" and a.errors[3].startswith("TypeError: expected an act string")
    assert a.acts[:2] == ["reqmore()", "bye()"] and a.prompts[1] == "p1"


def test_respond_many_can_hand_over_tables_without_keeping_them():
    cs = _contexts()
    got = {}
    with pytest.warns(UserWarning):
        out = respond_many([Toy(), Toy("declines")], cs, workers=1, keep=False, on_result=got.__setitem__)
    assert out == [] and sorted(got) == [0, 1]
    assert _same(got[0], got[1])


def _random_text(rng: random.Random) -> str:
    alphabet = ["a", "Z", " ", '"', "\\", "\n", "\t", "\x00", "\x1f", "é", "\U0001f600", "/", "'", "{"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))


def test_jsonl_rows_are_written_as_canonical_json_writes_them(tmp_path):
    """The table writer encodes each distinct value once; the bytes are those of canonical_json per row."""
    rng = random.Random(7)
    n = 300
    acts = [rng.choice([None, "bye()", 'inform(name="a \\"b\\" é")', "request(food)"]) for _ in range(n)]
    prompts = [rng.choice([None, _random_text(rng)]) for _ in range(n)]
    errors = [None if a is not None or p is not None else _random_text(rng) + "x" for a, p in zip(acts, prompts)]
    ids = [_random_text(rng) + str(i) for i in range(n)]
    t = ResponseTable(
        policy={"id": "p"}, context_fingerprint="f", acts=acts, prompts=prompts, errors=errors, context_ids=ids
    )
    t.save(tmp_path / "t.jsonl")
    lines = (tmp_path / "t.jsonl").read_bytes().decode("utf-8").split("\n")
    assert lines[1:] == [canonical_json(r) for r in t.rows()] + [""]
    back = ResponseTable.load(tmp_path / "t.jsonl")
    assert (back.acts, back.prompts, back.errors, back.context_ids) == (t.acts, t.prompts, t.errors, t.context_ids)


class Recording(Executor):
    """An executor (not a local pool) that runs its tasks here, in order, and counts them."""

    kind = "recording"
    spec = "recording"

    def __init__(self) -> None:
        self.items: list = []

    def map(self, fn, items, *, shared=None, on_result=None, on_progress=None, keep=True):
        out = []
        for i, item in enumerate(items):
            self.items.append(item)
            r = fn(shared, item)
            if on_result is not None:
                on_result(i, r)
            out.append(r if keep else None)
        return out


def test_other_executors_answer_groups_of_policies_per_task(monkeypatch):
    import behavsim.policy._respond as r  # private: the batched runner's internals patched

    monkeypatch.setattr(r, "MAX_TASKS", 4)
    cs = ContextSet([{"beliefs": {}, "k": 2 * i} for i in range(5)])
    specs = [Toy() for _ in range(10)]
    ids = [f"p{i}" for i in range(10)]
    ex = Recording()
    got = respond_many(specs, cs, executor=ex, policy_ids=ids)
    assert [len(jobs) for _cwd, jobs in ex.items] == [3, 3, 3, 1]  # consecutive policies, at most 4 tasks
    assert [t.id for t in got] == ids
    assert all(_same(t, respond(Toy(), cs, per_context=True)) for t in got)
