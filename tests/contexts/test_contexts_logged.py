"""Logged contexts: ContextRecorder and from_jsonl."""

import json

import pytest

from behavsim import BehavsimError, ConfigError, ContextSet
from contexts import ContextRecorder, collect, from_jsonl
from policies.corpora import LogFormatError
from policies.handcrafted.policy import HandcraftedPolicy
from policies.simulation.env import DialogueEnv


def test_recorder_in_a_dialogue_loop_matches_collect():
    env, pol = DialogueEnv(), HandcraftedPolicy()
    rec = ContextRecorder(source="loop")
    from contexts import dialogue_seed

    for j in range(3):
        belief, _ = env.reset(seed=dialogue_seed(0, j))
        done, turn = False, 0
        while not done:
            turn += 1
            rec.record(belief, dialogue=j, turn=turn)
            belief, _, term, trunc, _ = env.step(pol.summary_action(belief))
            done = term or trunc
    cs = rec.to_context_set()
    assert cs.fingerprint == collect("handcrafted", dialogues=3, seed=0, histories=False).fingerprint
    assert all(m["origin"] == "logged" for m in cs.metas)
    assert cs.metas[0] == {"dialogue": 0, "turn": 1, "origin": "logged"}
    assert cs.meta["builder"] == "logged" and cs.meta["source"] == "loop"


def test_recorder_copies():
    rec = ContextRecorder()
    b = {"beliefs": {"area": {"north": 0.5, "**NONE**": 0.5}}}
    rec.record(b)
    b["beliefs"]["area"]["north"] = 1.0
    cs = rec.to_context_set()
    assert cs.beliefs[0]["beliefs"]["area"]["north"] == 0.5
    rec.record(b)
    assert len(cs) == 1 and len(rec) == 2


def test_recorder_rejects_bad_input():
    rec = ContextRecorder()
    with pytest.raises(
        LogFormatError, match=r"context 0: beliefs: expected \{slot: \{value: probability\}\}, got nothing"
    ):
        rec.record({"area": {"north": 1.0}})
    with pytest.raises(LogFormatError, match=r"non-finite"):
        rec.record({"beliefs": {"area": {"north": float("nan")}}})
    with pytest.raises(LogFormatError, match=r"probability in \[0, 1\]"):
        rec.record({"beliefs": {"area": {"north": 2}}})
    with pytest.raises(ConfigError, match=r"meta 'when': value .* not JSON-serialisable"):
        rec.record({"beliefs": {"area": {"north": 1.0}}}, when=object())
    assert ContextRecorder(strict=False).record({"state": [1, 2]}) == 0


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_from_jsonl_bare_and_wrapped(tmp_path):
    b1 = {"beliefs": {"area": {"north": 0.7, "**NONE**": 0.3}}}
    b2 = {"beliefs": {"food": {"thai": 1.0, "**NONE**": 0.0}}, "features": {"dbMatches": 3}}
    path = _write(
        tmp_path / "log.jsonl",
        [json.dumps(b1), "", json.dumps({"belief": b2, "meta": {"turn": 2, "origin": "x"}, "id": "call-7"})],
    )
    cs = from_jsonl(path)
    assert cs.beliefs == [b1, b2]
    assert cs.metas == [{"origin": "logged", "log_line": 1}, {"turn": 2, "origin": "logged", "log_line": 3}]
    assert cs.ids == ["log.jsonl:1", "call-7"]
    assert cs.meta["builder"] == "logged" and cs.meta["source"] == str(path)
    back = ContextSet.load(cs.save(tmp_path / "out.parquet"))
    assert back.fingerprint == cs.fingerprint


@pytest.mark.parametrize(
    "line,pattern",
    [
        ("{not json", r"log.jsonl:2: invalid JSON"),
        ("[1, 2]", r"log.jsonl:2: expected a JSON object"),
        ('{"beliefs": {"area": {"north": NaN}}}', r"log.jsonl:2: non-finite number NaN"),
        ('{"belief": {"beliefs": {"a": {"x": 1}}}, "meta": [1]}', r"log.jsonl:2: 'meta' must be an object"),
        ('{"belief": {"beliefs": {"a": {"x": 1}}}, "extra": 1}', r"log.jsonl:2: unexpected keys \['extra'\]"),
        ('{"area": {"north": 1.0}}', r"log.jsonl:2: beliefs: expected \{slot: \{value: probability\}\}, got nothing"),
        (
            '{"beliefs": {"area": {"north": "high"}}}',
            r"log.jsonl:2: beliefs.area.north: expected a probability in \[0, 1\], got a string",
        ),
        ('{"beliefs": {"area": ["north"]}}', r"log.jsonl:2: beliefs.area: expected \{value: probability\}, got a list"),
        ('{"format": "behavsim-contexts", "version": 1}', r"log.jsonl:2: this is a saved behavsim context set"),
    ],
)
def test_from_jsonl_bad_lines(tmp_path, line, pattern):
    path = _write(tmp_path / "log.jsonl", ['{"beliefs": {"area": {"north": 1.0}}}', line])
    with pytest.raises(LogFormatError, match=pattern):
        from_jsonl(path)


def test_from_jsonl_file_problems(tmp_path):
    with pytest.raises(LogFormatError, match="no such log file"):
        from_jsonl(tmp_path / "missing.jsonl")
    with pytest.raises(LogFormatError, match="no belief states"):
        from_jsonl(_write(tmp_path / "empty.jsonl", [""]))
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LogFormatError, match="not a UTF-8"):
        from_jsonl(tmp_path / "bin.jsonl")
    assert issubclass(LogFormatError, BehavsimError)


def test_from_jsonl_lenient_skips_and_lists_bad_lines(tmp_path):
    good = '{"beliefs": {"area": {"north": 1.0}}}'
    path = _write(tmp_path / "log.jsonl", [good, '{"dialogue_state": [0.1, 0.9]}', "{not json", good])
    with pytest.raises(LogFormatError, match="log.jsonl:2: beliefs: expected"):
        from_jsonl(path)
    cs = from_jsonl(path, strict=False)
    assert len(cs) == 2 and [m["log_line"] for m in cs.metas] == [1, 4]
    assert [s["line"] for s in cs.meta["skipped"]] == [2, 3]
    assert cs.meta["skipped"][1]["problem"].startswith(f"{path}:3: invalid JSON")
    assert "skipped" not in from_jsonl(_write(tmp_path / "good.jsonl", [good]), strict=False).meta
    with pytest.raises(LogFormatError, match=r"no belief states in the file \(1 bad lines skipped; the first: .*:1: "):
        from_jsonl(_write(tmp_path / "bad.jsonl", ["[1]"]), strict=False)


def test_logged_beliefs_stored_with_sorted_keys(tmp_path):
    path = _write(tmp_path / "log.jsonl", ['{"beliefs": {"food": {"thai": 1.0, "**NONE**": 0.0}, "area": {"x": 1}}}'])
    cs = from_jsonl(path)
    assert list(cs.beliefs[0]["beliefs"]) == ["area", "food"] and list(cs.beliefs[0]["beliefs"]["food"]) == [
        "**NONE**",
        "thai",
    ]
    rec = ContextRecorder()
    rec.record({"beliefs": {"food": {"thai": 1.0}, "area": {"x": 1}}})
    assert list(rec.to_context_set().beliefs[0]["beliefs"]) == ["area", "food"]
