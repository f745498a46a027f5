"""Contexts collected from PyDial's own dialogues, and the monitor following a real PyDial training.

Against the real PyDial3 snapshot (``../shared/pydial3`` beside the repository root, or
``$BEHAVSIM_SHARED/pydial3``), on a temporary copy (PyDial writes into its root), through the CLI:

* ``behavsim contexts collect-pydial``: same seed, same fingerprint; the ``pydial:`` adapter with
  the same config answers every context with the act PyDial's policy took in the dialogue (GP and
  handcrafted); behavsim's own handcrafted policy answers the set; a missing root or config is a
  one-line error;
* ``behavsim monitor POLICYDIR --pydial-config CFG --follow`` while ``pydial.py``'s
  ``train_command`` trains 3 batches of 3 dialogues (a config derived from
  ``env1-configs/env1-gp-CR.cfg``): one comparison per batch after the first, TMR in [0, 1], a
  PNG; PyDial's ``<name>.train.cfg`` is refused by the adapter with a clear error.

``pydial.py`` imports ``scriptine`` (its command-line dispatcher), which behavsim's environment
does not have: the training runs ``pydial.train_command`` directly with a stand-in ``scriptine``
written below (``path`` with ``isfile``/``isdir``/``mkdir``, no-op ``run``/``log``/``command``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


_CLI = "import sys; from behavsim.cli import main; sys.exit(main())"
N_DIALOGUES = 4


def _env() -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYDIAL_ROOT", None)
    return env


def behavsim(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _CLI, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout
    )


def header(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return json.loads(f.readline())


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


@pytest.fixture(scope="module")
def work(tmp_path_factory, pydial_root) -> Path:
    d = tmp_path_factory.mktemp("pydial-col")
    shutil.copytree(pydial_root, d / "root", ignore=shutil.ignore_patterns(".git", "_bslogs", "_bsconfigs"))
    for p in (d / "root").rglob("*"):  # the snapshot may be read-only
        p.chmod(p.stat().st_mode | 0o200)
    return d


def collect_args(cfg: str, out: str, dialogues: int, seed: int) -> list[str]:
    return [
        "contexts", "collect-pydial", "--config", f"env1-configs/{cfg}", "--root", "root",
        "--dialogues", str(dialogues), "--seed", str(seed), "-o", out,
    ]  # fmt: skip


def collect(work: Path, cfg: str, out: str, dialogues: int, seed: int) -> subprocess.CompletedProcess:
    return behavsim(*collect_args(cfg, out, dialogues, seed), cwd=work)


@pytest.fixture(scope="module")
def ccol(work) -> Path:
    r = collect(work, "adapter-gp.cfg", "ccol-gp.jsonl", N_DIALOGUES, 3)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("wrote ")
    return work / "ccol-gp.jsonl"


def test_same_seed_same_fingerprint(work, ccol):
    runs = [  # two processes at once
        subprocess.Popen([sys.executable, "-c", _CLI, *collect_args("adapter-gp.cfg", out, N_DIALOGUES, seed)],
                         cwd=work, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for out, seed in (("ccol-gp-again.jsonl", 3), ("ccol-gp-seed4.jsonl", 4))
    ]  # fmt: skip
    for run in runs:
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
    h = header(ccol)
    assert h["fingerprint"] == header(work / "ccol-gp-again.jsonl")["fingerprint"]
    assert h["fingerprint"] != header(work / "ccol-gp-seed4.jsonl")["fingerprint"]
    assert h["meta"]["builder"] == "collected-pydial" and h["meta"]["domain_rules"] == "CamRestaurants-rules.json"
    metas = [r["meta"] for r in rows(ccol)]
    assert sorted({m["dialogue"] for m in metas}) == list(range(N_DIALOGUES))
    assert all(m["origin"] == "collected" and m["seed"] == 3 and m["act"] for m in metas)
    assert sum(m["closing_turn"] for m in metas) == N_DIALOGUES  # the simulated user ends every dialogue here
    assert all(
        set(r["belief"]) == {"beliefs", "features"} and "dbMatches" in r["belief"]["features"] for r in rows(ccol)
    )


def test_collected_pydial_contexts_carry_histories(work, ccol):
    """Each context's history is its dialogue so far: PyDial's system acts in PyDial's own words
    (SemO templates), the simulated user's acts in behavsim's user-side words; the beliefs are the
    same as without histories."""
    from behavsim import ContextSet, canonical_act
    from contexts.pydial import collect_pydial

    cs = ContextSet.load(ccol)
    assert cs.n_histories == len(cs) and cs.meta["histories"]["system_nlg"].startswith("pydial:BasicSemO(")
    for i in range(len(cs)):
        h, m = cs.history(i), cs.metas[i]
        assert [t["speaker"] for t in h] == ["system", "user"] * (len(h) // 2) and len(h) == 2 * m["turn"]
        assert all(t["text"] for t in h)
        if m["turn"] == 1:  # PyDial's policy says hello() without being asked; its first decision follows
            assert h[0]["act"] == "hello()"
            assert h[0]["text"].startswith("Welcome to the Cambridge restaurant dialogue system")
        else:
            assert cs.metas[i - 1]["dialogue"] == m["dialogue"]
            assert cs.history(i - 1) == h[:-2] and h[-2]["act"] == cs.metas[i - 1]["act"]
            assert h[-2]["act"] == canonical_act(m["last_system_act"])
    plain = collect_pydial(
        "env1-configs/adapter-gp.cfg", root=work / "root", dialogues=N_DIALOGUES, seed=3, histories=False
    )
    assert plain.histories is None and plain.beliefs == cs.beliefs and plain.metas == cs.metas


@pytest.mark.parametrize("cfg", ["adapter-gp.cfg", "adapter-hdc.cfg"])
def test_pydial_adapter_answers_with_the_acts_taken_in_the_dialogues(work, ccol, cfg):
    contexts = ccol
    if cfg != "adapter-gp.cfg":
        r = collect(work, cfg, "ccol-hdc.jsonl", 3, 1)
        assert r.returncode == 0, r.stderr
        contexts = work / "ccol-hdc.jsonl"
    out = f"answers-{cfg}.jsonl"
    r = behavsim(
        "respond", "--policy", f"pydial:root/env1-configs/{cfg}:nlg=off", "--pydial-root", "root",
        "--contexts", contexts.name, "-o", out, "--no-progress", cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    taken = [c["meta"]["act"] for c in rows(contexts)]
    answered = [a["act"] for a in rows(work / out)]
    assert len(answered) == len(taken) > 5
    differ = [(i, a, t) for i, (a, t) in enumerate(zip(answered, taken)) if a != t]
    assert not differ, differ[:5]


@pytest.mark.parametrize(
    "collect_cfg, extra, policy, counts",
    [
        ("config/pydial_benchmarks/env1-hdc-CR.cfg", [], "config/pydial_benchmarks/env1-hdc-CR.cfg", (56, 53)),
        ("env1-configs/env1-gp-CR.cfg", ["--policy-file", "_bspolicies/env1-gp-CR-seed1-00.4"],
         "env1-configs/adapter-gp.cfg", (70, 68)),
    ],
    ids=["hdc", "gp"],
)  # fmt: skip
def test_docs_steps_collecting_policy_answers_as_measured(work, collect_cfg, extra, policy, counts):
    """docs/adapters.md, "For PyDial users" step 2 (10 dialogues, --seed 0): how many contexts the
    collecting policy, asked through the adapter, answers with the act it took; every difference
    is an inform of a venue by name while no slot is requested (PyDial draws the slot)."""
    out = f"ccol-docs-{Path(policy).stem}.jsonl"
    r = behavsim(
        "contexts", "collect-pydial", "--config", collect_cfg, "--root", "root", *extra, "--dialogues", "10",
        "--seed", "0", "-o", out, cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = behavsim(
        "respond", "--policy", f"pydial:{policy}:nlg=off", "--pydial-root", "root", "--contexts", out,
        "-o", f"answers-{out}", "--no-progress", cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    contexts = rows(work / out)
    answered = [a["act"] for a in rows(work / f"answers-{out}")]
    differ = [(c, a) for c, a in zip(contexts, answered) if a != c["meta"]["act"]]
    assert (len(contexts), len(contexts) - len(differ)) == counts, [(c["meta"]["act"], a) for c, a in differ]
    for c, a in differ:
        taken = c["meta"]["act"]
        assert taken.startswith("inform(") and a.startswith("inform(") and "name=" in taken, (taken, a)
        assert taken.split("name=")[1].split(",")[0].rstrip(")") == a.split("name=")[1].split(",")[0].rstrip(")")
        assert not any(p > 0 for p in c["belief"]["beliefs"]["requested"].values()), c["belief"]["beliefs"]


def test_training_config_with_policy_file(work):
    """The training config (Environment 1's user, inpolicyfile = auto) with --policy-file; the
    adapter config of the same policy answers with the acts taken."""
    r = behavsim(
        *collect_args("env1-gp-CR.cfg", "ccol-env1.jsonl", 2, 0), "--policy-file", "_bspolicies/env1-gp-CR-seed1-00.4",
        cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert header(work / "ccol-env1.jsonl")["meta"]["sources"][0]["policy_file"] == "_bspolicies/env1-gp-CR-seed1-00.4"
    r = behavsim(
        "respond", "--policy", "pydial:root/env1-configs/adapter-gp.cfg:nlg=off", "--pydial-root", "root",
        "--contexts", "ccol-env1.jsonl", "-o", "answers-env1.jsonl", "--no-progress", cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    taken = [c["meta"]["act"] for c in rows(work / "ccol-env1.jsonl")]
    assert [a["act"] for a in rows(work / "answers-env1.jsonl")] == taken
    r = behavsim(*collect_args("env1-gp-CR.cfg", "never.jsonl", 1, 0), cwd=work)
    assert r.returncode == 2 and "auto.dct" in r.stderr and "--policy-file" in r.stderr, r.stderr


def test_behavsims_own_policy_answers_the_set(work, ccol):
    r = behavsim(
        "respond", "--policy", "handcrafted", "--domain", "camrestaurants", "--contexts", ccol.name,
        "-o", "hdc-own.jsonl", "--no-progress", cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    table = rows(work / "hdc-own.jsonl")
    assert len(table) == len(rows(ccol)) and all(t["act"] and not t.get("error") for t in table)


def test_missing_root_or_config_is_a_one_line_error(work):
    for args, says in (
        (["--config", "env1-configs/adapter-gp.cfg", "--root", "no-such-root"], "PyDial root 'no-such-root' is not a folder"),
        (["--config", "no-such.cfg", "--root", "root"], "PyDial config 'no-such.cfg' not found"),
    ):  # fmt: skip
        r = behavsim("contexts", "collect-pydial", *args, "--dialogues", "1", "-o", "never.jsonl", cwd=work)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], r.stderr
    assert not (work / "never.jsonl").exists()


def test_monitor_wants_the_training_config(work, ccol):
    """The trained policies of the snapshot (batch 4 of env1-gp-CR.cfg, seeds 1 and 2) with the
    training config: one snapshot per seed at 4 x 100 dialogues, no comparison, and a summary
    that names no convergence.csv; the adapter config of the same policy is refused in one line."""
    r = behavsim(
        "monitor", "root/_bspolicies", "--pydial-config", "env1-configs/env1-gp-CR.cfg", "--pydial-root", "root",
        "--contexts", ccol.name, "-o", "mon-trained", cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    for seed in (1, 2):
        trial = f"env1-gp-CR-seed{seed}-00"
        assert f"{trial}  batch 4: 400: first snapshot ({len(rows(ccol))} contexts)" in r.stdout, r.stdout
        assert f"{trial}: no comparison yet: one snapshot, at 400 dialogues" in r.stdout, r.stdout
        assert (work / "mon-trained" / trial / "snapshots" / "responses-000400.jsonl").is_file()
    assert "convergence.csv" not in r.stdout and not list((work / "mon-trained").rglob("convergence.csv"))
    r = behavsim(
        "monitor", "root/_bspolicies", "--pydial-config", "env1-configs/adapter-gp.cfg", "--pydial-root", "root",
        "--contexts", ccol.name, "--follow", "--stop-after", "30", "-o", "mon-adapter", cwd=work,
    )  # fmt: skip
    assert r.returncode == 2 and not r.stdout, (r.stdout, r.stderr)
    assert r.stderr.startswith("behavsim monitor: error: --pydial-config ") and len(r.stderr.splitlines()) == 1
    assert "adapter-gp.cfg: not a training config" in r.stderr and not (work / "mon-adapter").exists()


# ----------------------------------------------------------------------------- training
_SCRIPTINE = '''\
"""A stand-in for scriptine, enough for pydial.py's train_command (written for behavsim's tests)."""
import os


class path(str):
    def isfile(self):
        return os.path.isfile(self)

    def isdir(self):
        return os.path.isdir(self)

    def mkdir(self):
        os.makedirs(self, exist_ok=True)


class _Quiet:
    def __getattr__(self, name):
        return lambda *a, **k: (lambda f: f)


log = command = _Quiet()


def run():
    pass
'''

_TRAIN = """
import sys
sys.argv = ["pydial.py"]
import pydial
pydial.train_command("env1-configs/short-gp.cfg", seed="1")
"""
BATCHES, PER_BATCH = 3, 3


@pytest.fixture(scope="module")
def training(work, ccol):
    """PyDial trains 3 x 3 dialogues while `behavsim monitor --follow` follows its policy folder."""
    root = work / "root"
    text = (root / "env1-configs" / "env1-gp-CR.cfg").read_text()
    text = re.sub(r"(?m)^numtrainbatches\s*=.*$", f"numtrainbatches = {BATCHES}", text)
    text = re.sub(r"(?m)^traindialogsperbatch\s*=.*$", f"traindialogsperbatch = {PER_BATCH}", text)
    (root / "env1-configs" / "short-gp.cfg").write_text(text)
    (work / "stub" / "scriptine").mkdir(parents=True)
    (work / "stub" / "scriptine" / "__init__.py").write_text(_SCRIPTINE)
    env = {**os.environ, "PYTHONPATH": f"{work / 'stub'}{os.pathsep}{root}", "MPLBACKEND": "Agg"}
    start = time.monotonic()
    trainer = subprocess.Popen(
        [sys.executable, "-c", _TRAIN], cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        mon = behavsim(
            "monitor", "root/_bspolicies", "--pydial-config", "env1-configs/short-gp.cfg", "--pydial-root", "root",
            "--contexts", ccol.name, "--follow", "--interval", "1", "--stop-after", "240", "-o", "mon", cwd=work,
            timeout=400,
        )  # fmt: skip
        _, err = trainer.communicate(timeout=400)
    finally:
        if trainer.poll() is None:
            trainer.kill()
    assert trainer.returncode == 0, err[-2000:]
    return mon, time.monotonic() - start


def test_monitor_follows_pydial_training(work, training):
    mon, seconds = training
    assert mon.returncode == 0, mon.stderr
    trial = "short-gp-seed1-00"
    policies = sorted(p.name for p in (work / "root" / "_bspolicies").glob(f"{trial}.*.dct"))
    assert policies == [f"{trial}.{b}.dct" for b in range(1, BATCHES + 1)]
    out = work / "mon" / trial
    lines = (out / "convergence.csv").read_text().splitlines()
    assert lines[0].startswith("dialogues,prev_dialogues,TMR")
    got = [line.split(",") for line in lines[1:]]
    assert [(int(r[0]), int(r[1])) for r in got] == [
        (b * PER_BATCH, (b - 1) * PER_BATCH) for b in range(2, BATCHES + 1)
    ]
    assert all(0.0 <= float(r[2]) <= 1.0 for r in got)
    assert (out / "convergence.png").stat().st_size > 0
    assert len(list((out / "snapshots").glob("responses-*.jsonl"))) == BATCHES
    assert "env1-gp-CR-seed1-00" not in mon.stdout  # policies of another config in the folder are left alone
    assert "every trial reached the run's last checkpoint; stopping" in mon.stdout, mon.stdout
    print(f"training + monitor: {seconds:.1f} s")


def test_train_cfg_written_by_pydial_is_refused(work, training):
    cfg = work / "root" / "_bsconfigs" / "short-gp-seed1-00.2.train.cfg"
    assert "inpolicyfile = _bspolicies/short-gp-seed1-00.1" in cfg.read_text()
    r = behavsim(
        "respond", "--policy", f"pydial:{cfg}", "--pydial-root", "root", "--contexts", "ccol-gp.jsonl",
        "-o", "never.jsonl", "--no-progress", cwd=work,
    )  # fmt: skip
    assert r.returncode == 2
    assert "PyDial wrote this config while training the batch that produced policy 'short-gp-seed1-00.2'" in r.stderr
    assert "policyfile=" in r.stderr
    r = behavsim(
        "respond", "--policy", f"pydial:{cfg}:nlg=off:policyfile=_bspolicies/short-gp-seed1-00.2", "--pydial-root",
        "root", "--contexts", "ccol-gp.jsonl", "-o", "batch2.jsonl", "--no-progress", cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    snapshot = work / "mon" / "short-gp-seed1-00" / "snapshots" / f"responses-{2 * PER_BATCH:06d}.jsonl"
    assert [a["act"] for a in rows(work / "batch2.jsonl")] == [a["act"] for a in rows(snapshot)]
