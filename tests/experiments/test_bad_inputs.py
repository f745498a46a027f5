"""The CLI's error boundary, table-driven: bad input a user can give, over every sub-command, ends
in one line naming the file or option and exit status 2 — never a traceback, never exit 1 (which
is kept for behavsim's own bugs). Grown as users find new ways in."""

import pytest

from behavsim.cli import main


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """A workspace: a grid, two response tables, a trained run, damaged and odd files."""
    d = tmp_path_factory.mktemp("bad")
    assert main(["contexts", "generate", "--step", "0.5", "-o", str(d / "g.jsonl")]) == 0
    for pid in ("a", "b"):
        assert main(["respond", "--policy", "handcrafted", "--id", pid, "--contexts", str(d / "g.jsonl"),
                     "-o", str(d / f"{pid}.jsonl"), "--no-progress"]) == 0
    assert main(["train", "--rewards", "ts", "--seeds", "0", "--dialogues", "20", "--checkpoint-every", "10",
                 "--eval-dialogues", "2", "--no-progress", "-o", str(d / "run")]) == 0
    (d / "afile").write_text("a file, not a folder\n")
    (d / "deep.json").write_text("[" * 100_000 + "\n")
    lines = (d / "a.jsonl").read_text().splitlines()
    (d / "deep.jsonl").write_text("\n".join([lines[0], '{"i":0,"act":' + "[" * 100_000 + "}", *lines[2:]]) + "\n")
    surrogate = lines[:]
    surrogate[3] = surrogate[3].replace('"prompt":"', '"prompt":"\\udc81', 1)
    (d / "surrogate.jsonl").write_text("\n".join(surrogate) + "\n")
    (d / "list.json").write_text("[1, 2]\n")
    ck = sorted((d / "run" / "ts-seed0").glob("ckpt-*.npz"))[-1]
    (d / "ckpt.txt").write_text(str(ck))
    raw = bytearray(ck.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte in the middle of the zip
    (d / "flipped.npz").write_bytes(bytes(raw))
    (d / "short.npz").write_bytes(ck.read_bytes()[: len(raw) // 3])
    return d


CASES = [
    # ----------------------------------------------------------------------- outputs that cannot be written
    ("compare -o below a file", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "-o", "{d}/afile/x.csv"], r"afile"),
    ("compare --matrix below a file", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--matrix", "{d}/afile/m"], r"afile"),
    ("contexts generate -o below a file", ["contexts", "generate", "--step", "0.5", "-o", "{d}/afile/g.jsonl"],
     r"afile"),
    ("respond -o below a file", ["respond", "--policy", "handcrafted", "--contexts", "{d}/g.jsonl", "-o",
                                 "{d}/afile/r.jsonl", "--no-progress"], r"afile"),
    ("train -o below a file", ["train", "--rewards", "ts", "--seeds", "0", "--dialogues", "10", "--checkpoint-every",
                               "10", "--no-progress", "-o", "{d}/afile/run"], r"afile"),
    ("map -o below a file", ["map", "{d}/a.jsonl", "{d}/b.jsonl", "{d}/a.jsonl", "-o", "{d}/afile/map"],
     r"afile|unique|three"),
    ("contexts perturb -o below a file", ["contexts", "perturb", "{d}/g.jsonl", "--noise", "0.1", "-o",
                                          "{d}/afile/p.jsonl"], r"afile"),
    # ----------------------------------------------------------------------- damaged or odd input files
    ("context set nested too deeply", ["contexts", "info", "{d}/deep.json"], r"deep\.json:1: JSON nested too deeply"),
    ("table nested too deeply", ["compare", "{d}/deep.jsonl", "{d}/b.jsonl", "-o", "{d}/x.csv"],
     r"deep\.jsonl:2: JSON nested too deeply"),
    ("lone surrogate in a table", ["compare", "{d}/surrogate.jsonl", "{d}/b.jsonl", "-o", "{d}/x.csv"],
     r"surrogate\.jsonl:4: .*lone surrogate"),
    ("a table that is no table", ["compare", "{d}/list.json", "{d}/b.jsonl", "-o", "{d}/x.csv"], r"list\.json"),
    ("missing table", ["compare", "{d}/nope.jsonl", "{d}/b.jsonl", "-o", "{d}/x.csv"], r"nope\.jsonl"),
    ("checkpoint with a flipped byte", ["respond", "--policy", "{d}/flipped.npz", "--contexts", "{d}/g.jsonl",
                                        "-o", "{d}/r.jsonl", "--no-progress"], r"flipped\.npz"),
    ("truncated checkpoint", ["respond", "--policy", "{d}/short.npz", "--contexts", "{d}/g.jsonl",
                              "-o", "{d}/r.jsonl", "--no-progress"], r"short\.npz"),
    ("study config that is a JSON list", ["reproduce", "--config", "{d}/list.json", "-o", "{d}/study"],
     r"list\.json"),
    # ----------------------------------------------------------------------- options and values
    ("--scores with no name", ["pair", "request(food)", "request(area)", "--scores", ","], r"--scores names no score"),
    ("--use-model without tfhub", ["pair", "request(food)", "request(area)", "--prompts", "a b", "a c",
                                   "--use-model", "{d}"], r"--use-model .*--use-encoder tfhub"),
    ("--bert-layer out of range", ["pair", "request(food)", "request(area)", "--prompts", "a b", "a c",
                                   "--scores", "BERTScore", "--bert-layer", "99"], r"num_layers=99"),
    ("dialogues off the checkpoint grid", ["train", "--dialogues", "150", "--checkpoint-every", "100",
                                           "--no-progress", "-o", "{d}/run150"], r"not a multiple of checkpoint_every"),
    ("negative N-best", ["contexts", "collect", "--policy", "handcrafted", "--dialogues", "2", "--error-rate", "0.1",
                         "--nbest", "-3", "-o", "{d}/c.jsonl"], r"nbest"),
    ("error rate above 1", ["contexts", "collect", "--policy", "handcrafted", "--dialogues", "2", "--error-rate",
                            "1.5", "-o", "{d}/c.jsonl"], r"error_rate"),
    ("noise above 1", ["contexts", "perturb", "{d}/g.jsonl", "--noise", "2", "-o", "{d}/p.jsonl"], r"noise"),
    ("grid step 0", ["contexts", "generate", "--step", "0", "-o", "{d}/x.jsonl"], r"step"),
    ("negative workers", ["respond", "--policy", "handcrafted", "--contexts", "{d}/g.jsonl", "--workers", "-2",
                          "-o", "{d}/w.jsonl"], r"workers"),
    ("robustness at noise 2", ["robustness", "handcrafted", "--contexts", "{d}/g.jsonl", "--levels", "0", "2",
                               "-o", "{d}/rob"], r"noise|level"),
    ("robustness of a missing checkpoint", ["robustness", "{d}/nope.npz", "--contexts", "{d}/g.jsonl", "--levels",
                                            "0", "-o", "{d}/rob2"], r"nope\.npz"),
    ("map of two policies", ["map", "{d}/a.jsonl", "{d}/b.jsonl", "-o", "{d}/map2"], r"three"),
    ("--per-context without -o", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--per-context", "csv"], r"needs -o"),
    ("--slice with --matrix only", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--matrix", "--slice", "acttype", "-o",
                                    "{d}/s/out.csv"], r"--slice needs the per-context rows"),
    ("--chunk-contexts 0", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--matrix", "{d}/m0", "--chunk-contexts", "0"],
     r"chunk_contexts"),
    ("unknown score", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--scores", "TMX", "-o", "{d}/x.csv"], r"TMX"),
    ("report of a folder that is no run", ["report", "{d}", "-o", "{d}/r.html"], r"is not a run directory"),
    ("monitor of a missing folder", ["monitor", "{d}/no-such-run", "--contexts", "{d}/g.jsonl", "-o", "{d}/mon"],
     r"no-such-run"),
]


@pytest.mark.parametrize("argv, pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(ws, capsys, argv, pattern):
    import re

    argv = [a.format(d=ws) for a in argv]
    rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert rc == 2, (rc, err)
    assert re.search(pattern, err), err
    assert len(err.strip().splitlines()) <= 3, err  # one line (a parse error adds its pointer lines)


def test_internal_errors_exit_1_with_a_hint(monkeypatch, capsys, ws):
    """A bug (an unexpected exception) is not dressed up as the user's fault: exit 1 and a hint."""
    import behavsim.cli as cli

    def boom(args):
        raise ZeroDivisionError("x" * 5000)

    parser = cli.build_parser

    def patched():
        p = parser()
        p._subparsers._group_actions[0].choices["scores"].set_defaults(func=boom)
        return p

    monkeypatch.setattr(cli, "build_parser", patched)
    rc = cli.main(["scores"])
    err = capsys.readouterr().err
    assert rc == 1 and "internal error: ZeroDivisionError" in err and "please report" in err
    assert len(err) < 700  # the message is cut
    monkeypatch.setenv("BEHAVSIM_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        cli.main(["scores"])


def test_bad_inputs_cover_every_sub_command():
    """Each sub-command a user can run appears in the table above (grow it with new commands)."""
    from behavsim.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices
    covered = {c[1][0] for c in CASES} | {"scores"}  # `scores` takes no input
    missing = sorted(set(sub) - covered)
    assert not missing, f"no bad-input case for: {missing}"

