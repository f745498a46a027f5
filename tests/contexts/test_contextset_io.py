"""Built context sets through save/load (JSONL and Parquet), fingerprints, damaged files."""

import json

import pytest

from behavsim import ContextSet, TableFormatError, canonical_copy
from contexts import collect, generate_grid


@pytest.fixture(scope="module")
def sets():
    return {"gen": generate_grid(step=0.5), "col": collect("handcrafted", dialogues=4, seed=0)}


@pytest.mark.parametrize("kind", ["gen", "col"])
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_round_trip(sets, kind, suffix, tmp_path):
    cs = sets[kind]
    path = cs.save(tmp_path / f"set{suffix}")
    back = ContextSet.load(path)
    assert back.fingerprint == cs.fingerprint
    assert back.beliefs == cs.beliefs and back.metas == cs.metas and back.ids == cs.ids
    assert back.meta == json.loads(json.dumps(cs.meta))


def test_fingerprint_changes_when_one_context_changes(sets):
    cs = sets["gen"]
    beliefs = [canonical_copy(b) for b in cs.beliefs]
    assert ContextSet(beliefs).fingerprint == cs.fingerprint
    beliefs[3]["beliefs"]["area"]["centre"] += 1e-9
    assert ContextSet(beliefs).fingerprint != cs.fingerprint
    beliefs = [canonical_copy(b) for b in cs.beliefs]
    beliefs[0]["features"]["dbMatches"] += 1
    assert ContextSet(beliefs).fingerprint != cs.fingerprint
    # metadata is not part of the fingerprint
    assert ContextSet(cs.beliefs, [{"origin": "logged"}] * len(cs)).fingerprint == cs.fingerprint


def test_hand_edited_jsonl_refused(sets, tmp_path):
    path = sets["gen"].save(tmp_path / "g.jsonl")
    lines = path.read_text().splitlines()
    row = json.loads(lines[2])
    row["belief"]["beliefs"]["food"]["indian"] = 0.123
    lines[2] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TableFormatError, match="does not match the (fingerprint|checksum)"):
        ContextSet.load(path)


def test_truncated_and_garbled_files_refused(sets, tmp_path):
    path = sets["col"].save(tmp_path / "c.jsonl")
    text = path.read_text().splitlines()
    path.write_text("\n".join(text[:-1]) + "\n")
    with pytest.raises(TableFormatError, match="truncated or damaged"):
        ContextSet.load(path)
    path.write_text(text[0] + "\n{not json\n")
    with pytest.raises(TableFormatError, match=r"c.jsonl:2: invalid JSON"):
        ContextSet.load(path)
    pq = sets["col"].save(tmp_path / "c.parquet")
    pq.write_bytes(pq.read_bytes()[:200])
    with pytest.raises(TableFormatError, match="cannot read Parquet"):
        ContextSet.load(pq)
