"""The tiny study on a real two-node Ray cluster gives the local run's results, byte for byte; a
node killed while it runs a task is survived (the task retried) or ends in one clear line, and
the rerun completes with the same results.

The cluster — a head and a second node joined to it on 127.0.0.1, one CPU each — and the driver
run inside private namespaces made for the test: a network namespace (only the loopback exists,
so Ray listens and connects on 127.0.0.1 alone) and a PID namespace (``ray stop`` sees only this
cluster, and the kernel ends every process of it when the scenario ends, even on failure).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("ray", reason="Ray is not installed (pip install 'behavsim[ray]')")

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = ["unshare", "--net", "--pid", "--fork", "--mount-proc"]
PORT = 26379
#: metrics.csv columns that hold wall-clock times (documented in policies/learners/train.py)
TIMING_COLUMNS = ("train_seconds", "wall_seconds")


def _namespace_problem() -> str | None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip is not installed"
    try:
        r = subprocess.run([*NAMESPACE, "sh", "-c", "ip link set lo up"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run unshare: {exc}"
    if r.returncode != 0:
        return f"private network and PID namespaces are not permitted here ({r.stderr.strip()[:120]})"
    return None


def _results(run: Path) -> dict[str, object]:
    """Every results file (metrics.csv without its timing columns) and every checkpoint."""
    out: dict[str, object] = {}
    for p in sorted((run / "results").rglob("*")):
        if not p.is_file():
            continue
        key = str(p.relative_to(run))
        if p.name == "metrics.csv":
            df = pd.read_csv(p)
            out[key] = df.drop(columns=[c for c in TIMING_COLUMNS if c in df]).to_csv(index=False)
        else:
            out[key] = p.read_bytes()
    for p in sorted((run / "train").rglob("*.npz")):
        out[str(p.relative_to(run))] = p.read_bytes()
    return out


SCENARIO = r"""
set -u
ip link set lo up
export RAY_TMPDIR="$RAYTMP"
trap 'ray stop --force >/dev/null 2>&1' EXIT
ray start --head --port=$PORT --num-cpus=1 --include-dashboard=false --disable-usage-stats >"$OUT/head.log" 2>&1 || exit 11
before=$(pgrep -x raylet | sort)
ray start --address=127.0.0.1:$PORT --num-cpus=1 --disable-usage-stats >"$OUT/node.log" 2>&1 || exit 12
node=$(comm -13 <(echo "$before") <(pgrep -x raylet | sort) | head -1)
[ -n "$node" ] || exit 13
reproduce() { "$PY" -m behavsim.cli reproduce --config tiny --executor ray:127.0.0.1:$PORT --no-report -o "$1"; }

# 1. the study on the two-node cluster
BEHAVSIM_CACHE_DIR="$OUT/cache-ray" reproduce "$OUT/ray" >"$OUT/ray.log" 2>&1; echo $? >"$OUT/rc-ray"

# 2. again in a new folder; the second node's raylet is killed while the trials train
BEHAVSIM_CACHE_DIR="$OUT/cache-kill" reproduce "$OUT/kill" >"$OUT/kill.log" 2>&1 &
driver=$!
# wait until a worker of the second node runs a task (Ray titles it ray::_call), then kill its raylet
for i in $(seq 1 600); do
  pgrep -f '^ray::_call' -P "$(pgrep -P "$node" -d, || echo 0),$node" >/dev/null && { echo busy >"$OUT/node-busy"; break; }
  kill -0 $driver 2>/dev/null || break
  sleep 0.1
done
kill -0 $driver 2>/dev/null && kill -9 "$node" && echo killed >"$OUT/node-killed"
wait $driver; echo $? >"$OUT/rc-kill"

# 3. the rerun on what is left of the cluster (the head) completes the run
BEHAVSIM_CACHE_DIR="$OUT/cache-kill" reproduce "$OUT/kill" >"$OUT/rerun.log" 2>&1; echo $? >"$OUT/rc-rerun"
"""


def _rc(out: Path, name: str) -> int | None:
    p = out / f"rc-{name}"
    return int(p.read_text()) if p.exists() else None


def test_two_node_cluster_gives_the_local_results_and_survives_a_killed_node(tmp_path):
    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)
    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():
        pytest.skip(f"no ray command beside {sys.executable}")
    out = tmp_path
    local = subprocess.run(
        [sys.executable, "-m", "behavsim.cli", "reproduce", "--config", "tiny", "--no-report", "-o", str(out / "local")],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "BEHAVSIM_CACHE_DIR": str(out / "cache-local")},
    )
    assert local.returncode == 0, local.stderr[-2000:]
    raytmp = tempfile.mkdtemp(prefix="bsray", dir="/tmp")  # short: Ray's socket paths live under it
    env = {
        **os.environ,
        "PATH": f"{ray_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PY": sys.executable,
        "OUT": str(out),
        "RAYTMP": raytmp,
        "PORT": str(PORT),
        "RAY_USAGE_STATS_ENABLED": "0",
        # no token authentication: loopback only, and nothing written to ~/.ray (Ray 2.60 turns it
        # on for a head when ~/.ray/auth_token exists but not for the nodes joining it)
        "RAY_AUTH_MODE": "disabled",
    }
    try:
        proc = subprocess.run([*NAMESPACE, "bash", "-c", SCENARIO], env=env, cwd=REPO, timeout=1200,
                              capture_output=True, text=True)
    finally:
        shutil.rmtree(raytmp, ignore_errors=True)

    def log(name: str) -> str:
        p = out / f"{name}.log"
        return p.read_text()[-3000:] if p.exists() else "(no log)"

    assert proc.returncode == 0, f"scenario exit {proc.returncode}\nhead: {log('head')}\nnode: {log('node')}"
    want = _results(out / "local")
    assert want and any(k.endswith(".csv") for k in want)

    assert _rc(out, "ray") == 0, log("ray")
    got = _results(out / "ray")
    assert sorted(got) == sorted(want)
    assert [k for k in want if got[k] != want[k]] == []

    assert (out / "node-killed").exists(), "the second node was not killed while the run was going on"
    assert (out / "node-busy").exists(), "no task ran on the second node before it was killed"
    rc_kill = _rc(out, "kill")
    if rc_kill != 0:  # not survived: one clear line, exit 2
        assert rc_kill == 2, log("kill")
        errors = [ln for ln in log("kill").splitlines() if ln.startswith("behavsim reproduce: error:")]
        assert len(errors) == 1, log("kill")
    assert _rc(out, "rerun") == 0, log("rerun")
    got = _results(out / "kill")
    assert [k for k in want if got.get(k) != want[k]] == []


API_SCRIPT = r"""
import sys
from pathlib import Path

from behavsim import compare, get_executor, respond_many
from contexts import generate_grid
from policies.learners.train import TrainConfig, run_training

tmp = Path(sys.argv[1])
# the local runs first: a process that has started Ray does not fork well
cfg = TrainConfig(seeds=(0, 1), dialogues=40, checkpoint_every=20, eval_dialogues=2)
run_training(cfg, tmp / "local", progress=False)
run_training(TrainConfig(seeds=(0, 1), dialogues=20, checkpoint_every=20, eval_dialogues=2), tmp / "mixed",
             progress=False)  # half of it here, the rest on Ray below
files = sorted(p.relative_to(tmp / "local") for p in (tmp / "local").rglob("*.npz"))
cs = generate_grid(step=0.5)
specs = [f"checkpoint:{tmp / 'local' / f}" for f in files]
local = respond_many(specs, cs)
a = compare(local, "all", per_context=False)
m = compare(local, None, scores=["TMR", "USE_cos", "BERTScore"], matrix=True)

ex = get_executor("ray")  # a Ray started here, inside the namespace
seen = []
assert ex.map(abs, [-3, 1, -2], on_result=lambda i, r: seen.append(i)) == [3, 1, 2] and sorted(seen) == [0, 1, 2]
assert ex.map(pow, [2, 3], shared=10) == [100, 1000]  # pow(shared, item), the shared value put once
assert ex.map(abs, []) == []
run_training(cfg, tmp / "ray", progress=False, executor=ex)
assert files and all((tmp / "local" / f).read_bytes() == (tmp / "ray" / f).read_bytes() for f in files)
run_training(cfg, tmp / "mixed", progress=False, executor=ex)  # resumed on another executor
assert all((tmp / "local" / f).read_bytes() == (tmp / "mixed" / f).read_bytes() for f in files)
remote = respond_many(specs, cs, executor=ex)
assert [(t.header(), t.rows()) for t in local] == [(t.header(), t.rows()) for t in remote]
b = compare(local, "all", per_context=False, executor=ex)
assert a.means.equals(b.means), (a.means, b.means)
mr = compare(local, None, scores=["TMR", "USE_cos", "BERTScore"], matrix=True, executor=ex)
assert all(m.matrices[n].equals(mr.matrices[n]) for n in m.matrices)
print("OK", len(files), "checkpoints,", len(a.means), "pairs")
"""


def test_api_on_a_local_ray_gives_the_local_results(tmp_path):
    """run_training, respond_many and compare with executor=ray (a Ray started by the
    driver inside a network namespace) give the local executor's files, tables and values."""
    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)
    raytmp = tempfile.mkdtemp(prefix="bsray", dir="/tmp")
    script = tmp_path / "api.py"
    script.write_text(API_SCRIPT)
    env = {**os.environ, "RAY_TMPDIR": raytmp, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "PYTHONPATH": os.pathsep.join(
        p for p in [str(REPO), os.environ.get("PYTHONPATH", "")] if p)}
    try:
        r = subprocess.run([*NAMESPACE, "bash", "-c", f'ip link set lo up; "{sys.executable}" "{script}" "{tmp_path}"; exit $?'],
                           env=env, capture_output=True, text=True, timeout=900)
    finally:
        shutil.rmtree(raytmp, ignore_errors=True)
    assert r.returncode == 0 and r.stdout.startswith("OK"), (r.stdout[-2000:], r.stderr[-3000:])
