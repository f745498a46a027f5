"""The CLI's error boundary, table-driven: bad input a user can give, over every sub-command, ends
in one line naming the file or option and exit status 2 — never a traceback, never exit 1 (which
is kept for behavsim's own bugs). Grown as users find new ways in."""

import json
import shutil

import pytest

from behavsim.cli import main


@pytest.fixture(scope="module")
def ws(tmp_path_factory, tiny_run):
    """A workspace: a grid, two response tables, a trained run, damaged and odd files."""
    d = tmp_path_factory.mktemp("bad")
    assert main(["contexts", "generate", "--step", "0.5", "-o", str(d / "g.jsonl")]) == 0
    for pid in ("a", "b"):
        assert (
            main(
                [
                    "respond",
                    "--policy",
                    "handcrafted",
                    "--id",
                    pid,
                    "--contexts",
                    str(d / "g.jsonl"),
                    "-o",
                    str(d / f"{pid}.jsonl"),
                    "--no-progress",
                ]
            )
            == 0
        )
    assert (
        main(
            [
                "train",
                "--rewards",
                "ts",
                "--seeds",
                "0",
                "--dialogues",
                "20",
                "--checkpoint-every",
                "10",
                "--eval-dialogues",
                "2",
                "--no-progress",
                "-o",
                str(d / "run"),
            ]
        )
        == 0
    )
    (d / "afile").write_text("a file, not a folder\n")
    (d / "deep.json").write_text("[" * 100_000 + "\n")
    lines = (d / "a.jsonl").read_text().splitlines()
    (d / "deep.jsonl").write_text("\n".join([lines[0], '{"i":0,"act":' + "[" * 100_000 + "}", *lines[2:]]) + "\n")
    surrogate = lines[:]
    surrogate[3] = surrogate[3].replace('"prompt":"', '"prompt":"\\udc81', 1)
    (d / "surrogate.jsonl").write_text("\n".join(surrogate) + "\n")
    (d / "list.json").write_text("[1, 2]\n")
    (d / "e2e-odd.toml").write_text(
        'rewards = ["ts"]\nseeds = [0]\ne2e_teachers = ["handcrafted"]\ne2e_dialogues = 7\n'
    )
    ck = sorted((d / "run" / "ts-seed0").glob("ckpt-*.npz"))[-1]
    (d / "ckpt.txt").write_text(str(ck))
    raw = bytearray(ck.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte in the middle of the zip
    (d / "flipped.npz").write_bytes(bytes(raw))
    (d / "short.npz").write_bytes(ck.read_bytes()[: len(raw) // 3])
    # context sets a user made by hand (no checksum): beliefs not in the documented layout
    grid = [json.loads(line) for line in (d / "g.jsonl").read_text().splitlines()]
    header = {k: v for k, v in grid[0].items() if k != "checksum"}
    lists = [
        dict(
            r,
            belief=dict(r["belief"], beliefs=dict(r["belief"]["beliefs"], area=sorted(r["belief"]["beliefs"]["area"]))),
        )
        if r["i"] >= 15
        else r
        for r in grid[1:]
    ]
    (d / "cgen-lists.jsonl").write_text("\n".join(json.dumps(r) for r in [header, *lists]) + "\n")
    high = [
        dict(r, belief=dict(r["belief"], beliefs=dict(r["belief"]["beliefs"], food={"indian": 1.5})))
        if r["i"] == 4
        else r
        for r in grid[1:]
    ]
    (d / "cgen-high.jsonl").write_text("\n".join(json.dumps(r) for r in [header, *high]) + "\n")
    pd = d / "pydial" / "_bspolicies"  # PyDial's root and its policy folder (the names are what counts)
    pd.mkdir(parents=True)
    for batch in (1, 2):
        for ext in ("dct", "prm"):
            (pd / f"env1-gp-CR-seed1-00.{batch}.{ext}").write_text("")
    for module in (
        "utils/Settings.py",
        "utils/DiaAct.py",
        "ontology/Ontology.py",
        "policy/GPPolicy.py",
        "policy/HDCPolicy.py",
        "semo/SemOManager.py",
    ):  # what behavsim checks a PyDial root by
        (d / "pydial" / module).parent.mkdir(exist_ok=True)
        (d / "pydial" / module).write_text("")
    (d / "pydial" / "adapter-gp.cfg").write_text(  # a pydial: adapter's config (as env1-configs/adapter-gp.cfg)
        "[GENERAL]\ndomains = CamRestaurants\nsingledomain = True\n\n[policy]\nbelieftype = focus\nlearning = False\n"
        "policytype = gp\ninpolicyfile = _bspolicies/env1-gp-CR-seed1-00.2\n\n[gpsarsa]\nscale = -1\n"
    )
    (d / "log.jsonl").write_text('{"beliefs": {"area": {"north": 1.0}}}\n{"beliefs": {"area": "north"}}\n')
    # copies of a study's run folder with a results CSV truncated, one deleted, a figure damaged
    for name, damage in (
        ("truncated", lambda r: (r / "results" / "seeds.csv").write_text("context_set,reward\n")),
        ("deleted", lambda r: (r / "results" / "table1.csv").unlink()),
        ("figure", lambda r: (r / "figures" / "per_turn_ts.svg").write_text("<sv")),
    ):
        damage(shutil.copytree(tiny_run, d / f"study-{name}"))
    return d


CASES = [
    # ----------------------------------------------------------------------- outputs that cannot be written
    ("compare -o below a file", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "-o", "{d}/afile/x.csv"], r"afile"),
    ("compare --matrix below a file", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--matrix", "{d}/afile/m"], r"afile"),
    (
        "contexts generate -o below a file",
        ["contexts", "generate", "--step", "0.5", "-o", "{d}/afile/g.jsonl"],
        r"afile",
    ),
    (
        "respond -o below a file",
        ["respond", "--policy", "handcrafted", "--contexts", "{d}/g.jsonl", "-o", "{d}/afile/r.jsonl", "--no-progress"],
        r"afile",
    ),
    (
        "train -o below a file",
        [
            "train",
            "--rewards",
            "ts",
            "--seeds",
            "0",
            "--dialogues",
            "10",
            "--checkpoint-every",
            "10",
            "--no-progress",
            "-o",
            "{d}/afile/run",
        ],
        r"afile",
    ),
    (
        "map -o below a file",
        ["map", "{d}/a.jsonl", "{d}/b.jsonl", "{d}/a.jsonl", "-o", "{d}/afile/map"],
        r"afile|unique|three",
    ),
    (
        "contexts perturb -o below a file",
        ["contexts", "perturb", "{d}/g.jsonl", "--noise", "0.1", "-o", "{d}/afile/p.jsonl"],
        r"afile",
    ),
    # ----------------------------------------------------------------------- damaged or odd input files
    ("context set nested too deeply", ["contexts", "info", "{d}/deep.json"], r"deep\.json:1: JSON nested too deeply"),
    (
        "table nested too deeply",
        ["compare", "{d}/deep.jsonl", "{d}/b.jsonl", "-o", "{d}/x.csv"],
        r"deep\.jsonl:2: JSON nested too deeply",
    ),
    (
        "lone surrogate in a table",
        ["compare", "{d}/surrogate.jsonl", "{d}/b.jsonl", "-o", "{d}/x.csv"],
        r"surrogate\.jsonl:4: .*lone surrogate",
    ),
    ("a table that is no table", ["compare", "{d}/list.json", "{d}/b.jsonl", "-o", "{d}/x.csv"], r"list\.json"),
    ("missing table", ["compare", "{d}/nope.jsonl", "{d}/b.jsonl", "-o", "{d}/x.csv"], r"nope\.jsonl"),
    (
        "checkpoint with a flipped byte",
        ["respond", "--policy", "{d}/flipped.npz", "--contexts", "{d}/g.jsonl", "-o", "{d}/r.jsonl", "--no-progress"],
        r"flipped\.npz",
    ),
    (
        "truncated checkpoint",
        ["respond", "--policy", "{d}/short.npz", "--contexts", "{d}/g.jsonl", "-o", "{d}/r.jsonl", "--no-progress"],
        r"short\.npz",
    ),
    ("study config that is a JSON list", ["reproduce", "--config", "{d}/list.json", "-o", "{d}/study"], r"list\.json"),
    # ----------------------------------------------------------------------- options and values
    ("--scores with no name", ["pair", "request(food)", "request(area)", "--scores", ","], r"--scores names no score"),
    (
        "--use-model without tfhub",
        ["pair", "request(food)", "request(area)", "--prompts", "a b", "a c", "--use-model", "{d}"],
        r"--use-model .*--use-encoder tfhub",
    ),
    (
        "--bert-layer out of range",
        [
            "pair",
            "request(food)",
            "request(area)",
            "--prompts",
            "a b",
            "a c",
            "--scores",
            "BERTScore",
            "--bert-layer",
            "99",
        ],
        r"num_layers=99",
    ),
    (
        "dialogues off the checkpoint grid",
        ["train", "--dialogues", "150", "--checkpoint-every", "100", "--no-progress", "-o", "{d}/run150"],
        r"not a multiple of checkpoint_every",
    ),
    (
        "negative N-best",
        [
            "contexts",
            "collect",
            "--policy",
            "handcrafted",
            "--dialogues",
            "2",
            "--error-rate",
            "0.1",
            "--nbest",
            "-3",
            "-o",
            "{d}/c.jsonl",
        ],
        r"nbest",
    ),
    (
        "error rate above 1",
        [
            "contexts",
            "collect",
            "--policy",
            "handcrafted",
            "--dialogues",
            "2",
            "--error-rate",
            "1.5",
            "-o",
            "{d}/c.jsonl",
        ],
        r"--error-rate: expected a number in \[0, 1\], got 1.5",
    ),
    (
        "negative N-best without an error rate",
        ["contexts", "collect", "--policy", "handcrafted", "--dialogues", "2", "--nbest", "-3", "-o", "{d}/c.jsonl"],
        r"--nbest: expected a positive integer, got -3",
    ),
    (
        "N-best 0",
        ["contexts", "collect", "--policy", "handcrafted", "--nbest", "0", "-o", "{d}/c.jsonl"],
        r"--nbest: expected a positive integer, got 0",
    ),
    (
        "collect 0 dialogues",
        ["contexts", "collect", "--policy", "handcrafted", "--dialogues", "0", "-o", "{d}/c.jsonl"],
        r"--dialogues: expected a positive integer, got 0",
    ),
    (
        "collect with a negative seed",
        ["contexts", "collect", "--policy", "handcrafted", "--seed", "-1", "-o", "{d}/c.jsonl"],
        r"--seed: expected a non-negative integer, got -1",
    ),
    (
        "collect with 0 turns",
        ["contexts", "collect", "--policy", "handcrafted", "--max-turns", "0", "-o", "{d}/c.jsonl"],
        r"--max-turns: expected a positive integer, got 0",
    ),
    (
        "negative error rate",
        ["contexts", "collect", "--policy", "handcrafted", "--error-rate", "-0.1", "-o", "{d}/c.jsonl"],
        r"--error-rate: expected a number in \[0, 1\], got -0.1",
    ),
    (
        "collect-pydial of 0 dialogues",
        ["contexts", "collect-pydial", "--config", "{d}/x.cfg", "--dialogues", "0", "-o", "{d}/c.jsonl"],
        r"--dialogues: expected a positive integer, got 0",
    ),
    (
        "collect-pydial error rate above 1",
        ["contexts", "collect-pydial", "--config", "{d}/x.cfg", "--error-rate", "2", "-o", "{d}/c.jsonl"],
        r"--error-rate: expected a number in \[0, 1\]",
    ),
    (
        "perturb with a negative seed",
        ["contexts", "perturb", "{d}/g.jsonl", "--noise", "0.1", "--seed", "-1", "-o", "{d}/p.jsonl"],
        r"--seed: expected a non-negative integer, got -1",
    ),
    (
        "perturb with N-best 1",
        ["contexts", "perturb", "{d}/g.jsonl", "--noise", "0.1", "--nbest", "1", "-o", "{d}/p.jsonl"],
        r"nbest: expected an integer >= 2, got 1",
    ),
    (
        "info --show -3",
        ["contexts", "info", "{d}/g.jsonl", "--show", "-3"],
        r"--show: expected a non-negative integer, got -3",
    ),
    (
        "train 0 dialogues",
        ["train", "--dialogues", "0", "--no-progress", "-o", "{d}/t0"],
        r"dialogues: expected a positive integer, got 0",
    ),
    (
        "train 0 evaluation dialogues",
        [
            "train",
            "--dialogues",
            "10",
            "--checkpoint-every",
            "10",
            "--eval-dialogues",
            "0",
            "--no-progress",
            "-o",
            "{d}/t0",
        ],
        r"eval_dialogues: expected a positive integer, got 0",
    ),
    (
        "train 0 workers",
        ["train", "--dialogues", "10", "--checkpoint-every", "10", "--workers", "0", "--no-progress", "-o", "{d}/t0"],
        r"workers: expected a positive integer, got 0",
    ),
    (
        "train gamma above 1",
        ["train", "--dialogues", "10", "--checkpoint-every", "10", "--gamma", "1.5", "--no-progress", "-o", "{d}/t0"],
        r"gamma: expected a number in \[0, 1\], got 1.5",
    ),
    (
        "train a negative seed",
        ["train", "--dialogues", "10", "--checkpoint-every", "10", "--seeds", "-1", "--no-progress", "-o", "{d}/t0"],
        r"seeds: expected non-negative integers, got -1",
    ),
    (
        "train --monitor of a garbled set",
        [
            "train",
            "--dialogues",
            "10",
            "--checkpoint-every",
            "10",
            "--eval-dialogues",
            "1",
            "--no-progress",
            "--monitor",
            "{d}/cgen-lists.jsonl",
            "-o",
            "{d}/t0",
        ],
        r"cgen-lists\.jsonl:17: beliefs\.area: expected \{value: probability\}, got a list",
    ),
    (
        "train --monitor-scores unknown",
        [
            "train",
            "--dialogues",
            "10",
            "--checkpoint-every",
            "10",
            "--no-progress",
            "--monitor",
            "{d}/g.jsonl",
            "--monitor-scores",
            "TMR,TMX",
            "-o",
            "{d}/t0",
        ],
        r"--monitor-scores: unknown score 'TMX'",
    ),
    (
        "train --monitor-reference unknown",
        [
            "train",
            "--dialogues",
            "10",
            "--checkpoint-every",
            "10",
            "--no-progress",
            "--monitor",
            "{d}/g.jsonl",
            "--monitor-reference",
            "handcraftd",
            "-o",
            "{d}/t0",
        ],
        r"--monitor-reference: unknown policy kind 'handcraftd'",
    ),
    (
        "monitor --lag 0",
        ["monitor", "{d}/run", "--contexts", "{d}/g.jsonl", "--lag", "0", "-o", "{d}/mon"],
        r"--lag: expected a positive number",
    ),
    (
        "monitor --every 0",
        ["monitor", "{d}/run", "--contexts", "{d}/g.jsonl", "--every", "0", "-o", "{d}/mon"],
        r"--every: expected a positive integer",
    ),
    (
        "reproduce with a negative seed",
        ["reproduce", "--config", "tiny", "--seeds", "-1", "-o", "{d}/study0"],
        r"seeds: expected non-negative integers, got -1",
    ),
    (
        "reproduce of 0 dialogues",
        ["reproduce", "--config", "tiny", "--dialogues", "0", "-o", "{d}/study0"],
        r"'dialogues': expected a positive integer, got 0",
    ),
    (
        "reproduce with e2e trials of an odd number of dialogues",
        ["reproduce", "--config", "{d}/e2e-odd.toml", "-o", "{d}/study0"],
        r"study config: end-to-end trials: e2e training: dialogues \(7\) and checkpoint_every \(7\) must be multiples "
        r"of batch_dialogues \(2\)",
    ),
    ("noise above 1", ["contexts", "perturb", "{d}/g.jsonl", "--noise", "2", "-o", "{d}/p.jsonl"], r"noise"),
    ("grid step 0", ["contexts", "generate", "--step", "0", "-o", "{d}/x.jsonl"], r"step"),
    (
        "negative workers",
        ["respond", "--policy", "handcrafted", "--contexts", "{d}/g.jsonl", "--workers", "-2", "-o", "{d}/w.jsonl"],
        r"workers",
    ),
    (
        "robustness at noise 2",
        ["robustness", "handcrafted", "--contexts", "{d}/g.jsonl", "--levels", "0", "2", "-o", "{d}/rob"],
        r"noise|level",
    ),
    (
        "robustness of a missing checkpoint",
        ["robustness", "{d}/nope.npz", "--contexts", "{d}/g.jsonl", "--levels", "0", "-o", "{d}/rob2"],
        r"nope\.npz",
    ),
    ("map of two policies", ["map", "{d}/a.jsonl", "{d}/b.jsonl", "-o", "{d}/map2"], r"three"),
    ("--per-context without -o", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--per-context", "csv"], r"needs -o"),
    (
        "--slice with --matrix only",
        ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--matrix", "--slice", "acttype", "-o", "{d}/s/out.csv"],
        r"--slice needs the per-context rows",
    ),
    (
        "--chunk-contexts 0",
        ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--matrix", "{d}/m0", "--chunk-contexts", "0"],
        r"chunk_contexts",
    ),
    ("unknown score", ["compare", "{d}/a.jsonl", "{d}/b.jsonl", "--scores", "TMX", "-o", "{d}/x.csv"], r"TMX"),
    ("report of a folder that is no run", ["report", "{d}", "-o", "{d}/r.html"], r"is not a run directory"),
    (
        "report of a run with a truncated CSV",
        ["report", "{d}/study-truncated", "-o", "{d}/r.html"],
        r"study-truncated: no report .*: results/seeds\.csv was changed since the study wrote it",
    ),
    (
        "report of a run with a deleted CSV",
        ["report", "{d}/study-deleted", "-o", "{d}/r.html"],
        r"study-deleted: no report .*: results/table1\.csv is missing",
    ),
    (
        "report of a run with a damaged figure",
        ["report", "{d}/study-figure", "-o", "{d}/r.html"],
        r"study-figure: no report .*: figures/per_turn_ts\.svg was changed since the study wrote it",
    ),
    # ----------------------------------------------------------------------- context sets not in the belief layout
    (
        "respond on beliefs that are lists",
        [
            "respond",
            "--policy",
            "handcrafted",
            "--contexts",
            "{d}/cgen-lists.jsonl",
            "-o",
            "{d}/r.jsonl",
            "--no-progress",
        ],
        r"cgen-lists\.jsonl:17: beliefs\.area: expected \{value: probability\}, got a list",
    ),
    (
        "monitor on a probability above 1",
        ["monitor", "{d}/run", "--contexts", "{d}/cgen-high.jsonl", "-o", "{d}/mon"],
        r"cgen-high\.jsonl:6: beliefs\.food\.indian: expected a probability in \[0, 1\], got 1\.5",
    ),
    (
        "contexts info of beliefs that are lists",
        ["contexts", "info", "{d}/cgen-lists.jsonl"],
        r"cgen-lists\.jsonl:17: beliefs\.area",
    ),
    (
        "contexts import of a bad log",
        ["contexts", "import", "{d}/log.jsonl", "-o", "{d}/imported.jsonl"],
        r"log\.jsonl:2: beliefs\.area: expected \{value: probability\}, got a string",
    ),
    (
        "monitor of a PyDial policy folder",
        ["monitor", "{d}/pydial/_bspolicies", "--contexts", "{d}/g.jsonl", "-o", "{d}/mon"],
        r"_bspolicies: a PyDial policy folder \(2 policies .*env1-gp-CR-seed1-00\.1\), no ckpt-NNNNNN\.npz: follow it "
        r"with --pydial-config CFG",
    ),
    (
        "monitor --follow of a PyDial policy folder",
        [
            "monitor",
            "{d}/pydial/_bspolicies",
            "--contexts",
            "{d}/g.jsonl",
            "--follow",
            "--interval",
            "0.1",
            "--stop-after",
            "10",
            "-o",
            "{d}/mon",
        ],
        r"a PyDial policy folder .*--pydial-config CFG",
    ),
    (
        "monitor of PyDial's root",
        ["monitor", "{d}/pydial", "--contexts", "{d}/g.jsonl", "--follow", "-o", "{d}/mon"],
        r"pydial: PyDial's root, its policies in .*_bspolicies .*--pydial-config CFG .*and DIR .*_bspolicies",
    ),
    (
        "monitor --pydial-config of an adapter config",
        [
            "monitor",
            "{d}/pydial/_bspolicies",
            "--pydial-config",
            "adapter-gp.cfg",
            "--pydial-root",
            "{d}/pydial",
            "--contexts",
            "{d}/g.jsonl",
            "--follow",
            "--stop-after",
            "10",
            "-o",
            "{d}/mon",
        ],
        r"--pydial-config .*adapter-gp\.cfg: not a training config \(no \[exec_config\] section, learning off: an "
        r"adapter config\?\); expected the config pydial\.py train was run with",
    ),
    (
        "monitor of a missing folder",
        ["monitor", "{d}/no-such-run", "--contexts", "{d}/g.jsonl", "-o", "{d}/mon"],
        r"no-such-run",
    ),
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


def test_bad_input_writes_nothing(ws):
    """Refused up front: no training (no run folder) when --monitor's set is bad, no study folder
    for a bad seed, no report of a damaged run, no file from a bad import."""
    for name in ("t0", "study0", "r.html", "imported.jsonl", "c.jsonl", "p.jsonl", "r.jsonl"):
        assert not (ws / name).exists(), name


def test_lenient_import_skips_and_reports_bad_lines(ws, capsys):
    out = ws / "lenient.jsonl"
    assert main(["contexts", "import", str(ws / "log.jsonl"), "--lenient", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"skipped {ws / 'log.jsonl'}:2: beliefs.area: expected {{value: probability}}, got a string" in err
    assert "skipped 1 bad lines of" in err and "kept 1" in err
    from behavsim import ContextSet

    cs = ContextSet.load(out)
    assert len(cs) == 1 and cs.meta["skipped"][0]["line"] == 2


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


# ----------------------------------------------------------------------------- usage errors (argparse)
def _usage_error(capsys, argv) -> str:
    """The one line a usage error prints (exit status 2, nothing on stdout)."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and not out, (exc.value.code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


USAGE_CASES = [
    (["compare", "a.jsonl", "b.jsonl", "--pairs", "everything"],
     "behavsim compare: error: argument --pairs: invalid choice: 'everything' (choose from 'all', 'consecutive', "
     "'cross') — see behavsim compare --help"),
    (["frobnicate"], "behavsim: error: argument COMMAND: invalid choice: 'frobnicate' (choose from 'pair', "),
    ([], "behavsim: error: COMMAND missing (choose from pair, compare, scores, map, contexts, "),
    (["contexts"], "behavsim contexts: error: ACTION missing (choose from collect, collect-pydial, generate, import, "
                   "perturb, select, union, wizard, info) — see behavsim contexts --help"),
    (["contexts", "generate", "--step", "0.5", "-o", "g.jsonl", "--bogus", "1"],
     "behavsim contexts generate: error: unrecognized arguments: --bogus 1 — see behavsim contexts generate --help"),
    (["monitor", "run"], "behavsim monitor: error: the following arguments are required: --contexts — see behavsim "
                         "monitor --help"),
    (["reproduce", "--seeds", "x"], "behavsim reproduce: error: argument --seeds: invalid int value: 'x' — see "
                                    "behavsim reproduce --help"),
]  # fmt: skip


@pytest.mark.parametrize("argv, line", USAGE_CASES, ids=[" ".join(c[0]) or "(nothing)" for c in USAGE_CASES])
def test_usage_errors_are_one_line_with_a_hint(capsys, argv, line):
    got = _usage_error(capsys, argv)
    assert got.startswith(line), got
    assert got.endswith(" --help"), got


def _commands(parser, path=()):
    """(path, parser) of every command and sub-command below ``parser``."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _commands(sub, (*path, name))


def test_every_command_reports_usage_errors_in_one_line(capsys):
    """An option no command has, given to each command and sub-command: one line naming that
    command (the deepest one given) with a hint to its --help, exit status 2."""
    from behavsim.cli import build_parser

    commands = list(_commands(build_parser()))
    assert len(commands) >= 17  # 11 commands, 7 actions of `contexts`
    for path, _ in commands:
        cmd = "behavsim " + " ".join(path)
        line = _usage_error(capsys, [*path, "--no-such-option"])
        assert line.startswith(f"{cmd}: error: "), line
        assert line.endswith(f" — see {cmd} --help"), line


def test_stand_alone_entries_report_usage_errors_in_one_line(capsys):
    from policies.commands import monitor, train

    for entry, argv, cmd in ((monitor.main, ["run"], "monitor"), (train.main, ["train", "--bogus"], "train")):
        with pytest.raises(SystemExit) as exc:
            entry(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith(f"behavsim {cmd}: error: ") and err.rstrip().endswith(f"see behavsim {cmd} --help"), err
