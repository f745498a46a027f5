"""Text-only answers (an end-to-end model's: a prompt, no act, no error): the semantic scores of
their pairs do not apply there, and every output of the engine says so with counts — never a
value of 0, never a NaN counted as a failure."""

import numpy as np
import pandas as pd
import pytest

from behavsim import ResponseTable, compare

FP = "f" * 64


def _table(pid, acts, prompts, errors=None):
    n = len(acts)
    return ResponseTable(
        policy={"id": pid, "name": pid, "kind": "test"},
        context_fingerprint=FP,
        acts=acts,
        prompts=prompts,
        errors=errors or [None] * n,
        context_ids=[f"c{i}" for i in range(n)],
    )


@pytest.fixture
def tables():
    modular = _table(
        "modular",
        ["inform(food=thai)", "request(area)", "bye()", "hello()", None],
        ["thai food", "which area", "bye", "hi", None],
        [None, None, None, None, "the policy failed"],
    )
    e2e = _table(
        "e2e",
        [None, None, "bye()", "hello()", None],
        ["thai food it is", "which area", "goodbye", "hi", "hello"],
    )
    other = _table(
        "other",
        ["inform(food=thai)", "request(food)", "bye()", "hello()", "hello()"],
        ["thai food", "what food", "bye", "hi", "hello"],
    )
    return [modular, e2e, other]


def test_means_count_not_applicable_apart_from_failures(tables):
    """By hand: e2e answered contexts 0 and 1 with text only; modular failed on context 4."""
    c = compare(tables, "all", scores=["TMR", "CER", "BLEU4"])
    m = c.means.set_index(["a", "b"])
    me = m.loc[("modular", "e2e")]
    assert me["TMR"] == 1.0 and me["CER"] == 1.0  # contexts 2, 3: the same acts
    assert me["n_na_TMR"] == me["n_na_CER"] == 2  # contexts 0, 1
    assert me["n_missing_TMR"] == me["n_missing_CER"] == 1  # context 4 failed (and e2e has no act there)
    assert me["n_missing_BLEU4"] == 1 and "n_na_BLEU4" not in m.columns  # text scores apply to text
    mo = m.loc[("modular", "other")]
    assert mo["n_na_TMR"] == 0 and mo["n_missing_TMR"] == 1 and mo["TMR"] == 0.75
    eo = m.loc[("e2e", "other")]
    assert eo["n_na_TMR"] == 3 and eo["n_missing_TMR"] == 0  # contexts 0, 1 and 4: text only, no failure
    assert eo["TMR"] == 1.0
    for _, row in c.means.iterrows():  # every context counted once: a value, a failure or not applicable
        assert row["n"] == 5


def test_rows_mark_the_contexts_and_the_matrix_counts_agree(tables, tmp_path):
    c = compare(tables, "all", scores=["TMR", "BLEU4"], matrix=True, answers=True)
    rows = c.per_context
    na = rows.set_index(["a", "b", "context"])["semantic_na"]
    assert na.loc[("modular", "e2e")].tolist() == [True, True, False, False, False]
    assert na.loc[("modular", "other")].tolist() == [False] * 5
    assert rows.loc[rows["semantic_na"], "TMR"].isna().all()
    assert not rows.loc[rows["semantic_na"], "BLEU4"].isna().any()
    ids = ["modular", "e2e", "other"]
    want = pd.DataFrame(
        # diagonal: e2e against itself has no act on 0, 1, 4 (text only, no failure)
        [[0, 2, 0], [2, 3, 3], [0, 3, 0]],
        index=pd.Index(ids, name="a"),
        columns=pd.Index(ids, name="b"),
    )
    pd.testing.assert_frame_equal(c.n_na["TMR"], want, check_dtype=False)
    assert set(c.n_na) == {"TMR"}
    m = c.means.set_index(["a", "b"])
    for (a, b), row in m.iterrows():
        assert c.n_na["TMR"].loc[a, b] == row["n_na_TMR"]
        assert c.n_missing["TMR"].loc[a, b] == row["n_missing_TMR"]
    # streamed rows are the kept rows, whatever the chunk size
    pieces = []
    compare(tables, "all", scores=["TMR", "BLEU4"], per_context=pieces.append, chunk_cells=3)
    pd.testing.assert_frame_equal(
        pd.concat(pieces, ignore_index=True),
        c.per_context.drop(columns=list(("act_a", "act_b", "prompt_a", "prompt_b"))),
    )


def test_tables_without_text_only_answers_compare_as_before(tables):
    modular, _, other = tables
    c = compare([modular, other], "all", scores=["TMR", "BLEU4"], matrix=True)
    assert not any(col.startswith("n_na_") for col in c.means.columns)
    assert "semantic_na" not in c.per_context.columns and c.n_na is None
    assert np.array_equal(c.n_missing["TMR"].to_numpy(), [[1, 1], [1, 0]])


def test_a_table_of_text_only_answers_is_compared_not_refused(tables):
    """Every answer text only (an end-to-end model that gives no acts): its text scores are
    computed, its semantic scores are not applicable on every context — not a dead table."""
    modular, _, other = tables
    text = _table("text", [None] * 5, list(other.prompts))
    c = compare([text, other, modular], "all", scores=["TMR", "BLEU4"], matrix=True)
    m = c.means.set_index(["a", "b"])
    to = m.loc[("text", "other")]
    assert np.isnan(to["TMR"]) and to["n_na_TMR"] == 5 and to["n_missing_TMR"] == 0
    assert to["n_missing_BLEU4"] == 0 and to["BLEU4"] == 1.0  # the same text on every context
    tm = m.loc[("text", "modular")]
    assert tm["n_na_TMR"] == 4 and tm["n_missing_TMR"] == 1  # context 4: modular failed
    assert tm["n_missing_BLEU4"] == 1
    assert c.n_na["TMR"].loc["text", "text"] == 5


def test_the_cli_matrix_writes_the_not_applicable_counts(tables, tmp_path, capsys):
    """``compare --matrix DIR``: n_na.csv (a, b, one column per semantic score) beside n_missing.csv,
    the counts of the matrix by hand (as in the test above)."""
    from behavsim.cli import main

    paths = []
    for t in tables:
        paths.append(str(tmp_path / f"{t.id}.jsonl"))
        t.save(paths[-1])
    out = tmp_path / "m"
    rc = main(["compare", *paths, "--scores", "TMR,BLEU4", "--matrix", str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "n_na.csv" in cap.out
    na = pd.read_csv(out / "n_na.csv")
    assert list(na.columns) == ["a", "b", "TMR"]  # text scores apply to text
    ids = ["modular", "e2e", "other"]
    got = na.pivot(index="a", columns="b", values="TMR").loc[ids, ids]
    assert got.to_numpy().tolist() == [[0, 2, 0], [2, 3, 3], [0, 3, 0]]
    missing = pd.read_csv(out / "n_missing.csv").pivot(index="a", columns="b", values="TMR").loc[ids, ids]
    assert missing.to_numpy().tolist() == [[1, 1, 1], [1, 0, 0], [1, 0, 0]]  # failures only: modular's context 4
    rc = main(
        [
            "compare",
            *paths[::2],  # modular and other: no text-only answers, no n_na file
            "--scores",
            "TMR",
            "--matrix",
            str(tmp_path / "m2"),
        ]
    )
    assert rc == 0 and not (tmp_path / "m2" / "n_na.csv").exists() and (tmp_path / "m2" / "n_missing.csv").exists()
