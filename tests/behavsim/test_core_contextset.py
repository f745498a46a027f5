import json

import pytest

from behavsim import ContextSet, ResponseTable, TableFormatError, compare


def beliefs(n):
    return [
        {"beliefs": {"area": {"north": k / n, "**NONE**": 1 - k / n}}, "features": {"dbMatches": k}} for k in range(n)
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_round_trip_keeps_everything(tmp_path, suffix):
    cs = ContextSet(beliefs(4), [{"origin": "generated"}] * 4, meta={"builder": "test", "step": 0.25})
    back = ContextSet.load(cs.save(tmp_path / f"c{suffix}"))
    assert back.beliefs == cs.beliefs and back.metas == cs.metas and back.ids == cs.ids
    assert back.meta == cs.meta and back.fingerprint == cs.fingerprint


def test_fingerprint_covers_beliefs_and_order_not_metadata():
    a = ContextSet(beliefs(4))
    assert ContextSet(beliefs(4), [{"origin": "x"}] * 4).fingerprint == a.fingerprint
    assert ContextSet(beliefs(4)[::-1]).fingerprint != a.fingerprint
    changed = beliefs(4)
    changed[2]["features"]["dbMatches"] = 99
    assert ContextSet(changed).fingerprint != a.fingerprint


def test_edited_or_truncated_files_are_refused(tmp_path):
    p = ContextSet(beliefs(3)).save(tmp_path / "c.jsonl")
    lines = p.read_text().splitlines()
    edited = lines[1].replace('"dbMatches":0', '"dbMatches":5')
    p.write_text("\n".join([lines[0], edited, *lines[2:]]) + "\n")
    with pytest.raises(TableFormatError, match="damaged file: its content does not match the checksum"):
        ContextSet.load(p)
    # a file without a checksum (made elsewhere) is still checked against its fingerprint
    header = json.loads(lines[0])
    del header["checksum"]
    p.write_text("\n".join([json.dumps(header), edited, *lines[2:]]) + "\n")
    with pytest.raises(TableFormatError, match="does not match the fingerprint"):
        ContextSet.load(p)
    p.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(TableFormatError, match="header says 3 contexts but the file has 2"):
        ContextSet.load(p)
    p.write_text('{"format": "behavsim-responses", "version": 1}\n')
    with pytest.raises(TableFormatError, match="not a behavsim context set"):
        ContextSet.load(p)


def test_nan_beliefs_cannot_be_saved(tmp_path):
    cs = ContextSet([{"beliefs": {"area": {"north": float("nan")}}}])
    with pytest.raises(TableFormatError, match="cannot save"):
        cs.save(tmp_path / "c.jsonl")
    assert not (tmp_path / "c.jsonl").exists()


def test_select_and_concat_record_their_origin():
    cs = ContextSet(beliefs(5), [{"turn": t} for t in (1, 2, 1, 3, 1)])
    sub = cs.select(lambda b, m: m["turn"] == 1, description="first turns")
    assert len(sub) == 3 and sub.meta["indices"] == [0, 2, 4] and sub.meta["parent"] == cs.fingerprint
    both = ContextSet.concat([cs, sub])
    assert len(both) == 8 and len(set(both.ids)) == 8
    with pytest.raises(IndexError):
        cs.select([7])


def test_tables_on_a_context_set_compare():
    cs = ContextSet(beliefs(2))
    t = [
        ResponseTable({"id": i}, cs.fingerprint, acts, [])
        for i, acts in (("a", ["request(food)", "bye()"]), ("b", ["request(area)", "bye()"]))
    ]
    assert compare(t, scores=["TMR"]).means.loc[0, "TMR"] == 0.5
