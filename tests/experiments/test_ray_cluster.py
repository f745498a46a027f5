"""The tiny study on a real two-node Ray cluster gives the local run's results, byte for byte; a
node killed while it runs a task is survived (the task retried) or ends in one clear line, and
the rerun completes with the same results.

The cluster — a head and a second node joined to it on 127.0.0.1, one CPU each — and the driver
run inside private namespaces made for the test: a network namespace (only the loopback exists,
so Ray listens and connects on 127.0.0.1 alone) and a PID namespace (``ray stop`` sees only this
cluster, and the kernel ends every process of it when the scenario ends, even on failure: the
namespace's first process dies with ``unshare``, which the test's ``spawn`` fixture kills with
its whole process group whatever happens). A failure shows the tails of Ray's own logs.

With ``BEHAVSIM_STRESS=N`` (``bash run.sh test-stress``) the API test starts and uses a new local
Ray N times and the interrupt test interrupts N commands, each with a Ray of its own
(``BEHAVSIM_STRESS_RAY`` overrides N for these); the two-node scenario runs
``BEHAVSIM_STRESS_RAY_CLUSTER`` times (default 1: it takes minutes).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from _tiny import STRESS

#: Repeats of the Ray tests in the stress run: BEHAVSIM_STRESS_RAY (default: BEHAVSIM_STRESS) for the
#: API and interrupt tests, BEHAVSIM_STRESS_RAY_CLUSTER (default 1) for the two-node scenario.
RAY_REPEATS = max(1, int(os.environ.get("BEHAVSIM_STRESS_RAY", "") or STRESS)) if STRESS else 1
CLUSTER_REPEATS = max(1, int(os.environ.get("BEHAVSIM_STRESS_RAY_CLUSTER", "1") or 1)) if STRESS else 1

pytest.importorskip("ray", reason="Ray is not installed (pip install 'behavsim[ray]')")

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
PORT = 26379
#: metrics.csv columns that hold wall-clock times (documented in policies/training/train.py)
TIMING_COLUMNS = ("train_seconds", "wall_seconds")


def _namespace_problem() -> str | None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip is not installed"
    try:
        r = subprocess.run([*NAMESPACE, "sh", "-c", "ip link set lo up"], capture_output=True, text=True, timeout=60)
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


def _ray_logs(raytmp: str, limit: int = 1500) -> str:
    """The tails of Ray's raylet, GCS and worker error logs under ``raytmp`` (what a failure shows)."""
    out = []
    for pattern in ("raylet*.out", "raylet*.err", "gcs_server*.out", "gcs_server*.err", "python-core-driver*.log"):
        for p in sorted(Path(raytmp).glob(f"**/session_[0-9]*/logs/{pattern}")):  # RAY_TMPDIR/ray/session_…
            text = p.read_text(errors="replace").strip()
            if text:
                out.append(f"--- {p.name}\n{text[-limit:]}")
    return "\n".join(out)[-8000:] or "(no Ray logs)"


def _run(spawn, args, timeout, **kw) -> subprocess.CompletedProcess:
    proc = spawn(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


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


@pytest.mark.timeout(600 + 1500 * CLUSTER_REPEATS)
def test_two_node_cluster_gives_the_local_results_and_survives_a_killed_node(tmp_path, spawn):
    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)
    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():
        pytest.skip(f"no ray command beside {sys.executable}")
    local = _run(
        spawn,
        [
            sys.executable,
            "-m",
            "behavsim.cli",
            "reproduce",
            "--config",
            "tiny",
            "--no-report",
            "-o",
            str(tmp_path / "local"),
        ],
        timeout=900,
        env={**os.environ, "BEHAVSIM_CACHE_DIR": str(tmp_path / "cache-local")},
    )
    assert local.returncode == 0, local.stderr[-2000:]
    want = _results(tmp_path / "local")
    assert want and any(k.endswith(".csv") for k in want)
    for k in range(CLUSTER_REPEATS):
        out = tmp_path / f"scenario-{k}"
        out.mkdir()
        try:
            _cluster_scenario(spawn, out, ray_bin, want)
        except AssertionError as exc:
            raise AssertionError(f"scenario {k + 1} of {CLUSTER_REPEATS}: {exc}") from None


def _cluster_scenario(spawn, out: Path, ray_bin: Path, want: dict) -> None:
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
        proc = _run(spawn, [*NAMESPACE, "bash", "-c", SCENARIO], env=env, cwd=REPO, timeout=1200)
        ray_logs = _ray_logs(raytmp)
    finally:
        shutil.rmtree(raytmp, ignore_errors=True)

    def log(name: str) -> str:
        p = out / f"{name}.log"
        return (p.read_text()[-3000:] if p.exists() else "(no log)") + f"\nRay's logs:\n{ray_logs}"

    assert proc.returncode == 0, f"scenario exit {proc.returncode}\nhead: {log('head')}\nnode: {log('node')}"

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


def _run_driver(spawn, script: Path, source: str, args: list, timeout: int) -> tuple[subprocess.CompletedProcess, str]:
    """Run ``source`` as a driver script with ``args`` inside the private namespaces (a Ray it
    starts listens on 127.0.0.1 alone), from the repository; its result, and the tails of Ray's logs."""
    raytmp = tempfile.mkdtemp(prefix="bsray", dir="/tmp")
    script.write_text(source)
    env = {
        **_ray_env(raytmp),
        "PYTHONPATH": os.pathsep.join(p for p in [str(REPO), os.environ.get("PYTHONPATH", "")] if p),
    }
    quoted = " ".join(f'"{a}"' for a in [sys.executable, script, *args])
    try:
        args = [*NAMESPACE, "bash", "-c", f"ip link set lo up; {quoted}; exit $?"]
        r = _run(spawn, args, env=env, cwd=REPO, timeout=timeout)
        return r, _ray_logs(raytmp)
    finally:
        shutil.rmtree(raytmp, ignore_errors=True)


API_SCRIPT = r"""
import sys
from pathlib import Path

import ray

from behavsim import compare, get_executor, respond_many
from contexts import generate_grid
from policies.training.train import TrainConfig, run_training

tmp, repeats = Path(sys.argv[1]), int(sys.argv[2])
# the local runs first: a process that has started Ray does not fork well
cfg = TrainConfig(seeds=(0, 1), dialogues=40, checkpoint_every=20, eval_dialogues=2)
run_training(cfg, tmp / "local", progress=False)
files = sorted(p.relative_to(tmp / "local") for p in (tmp / "local").rglob("*.npz"))
cs = generate_grid(step=0.5)
specs = [f"checkpoint:{tmp / 'local' / f}" for f in files]
local = respond_many(specs, cs)
a = compare(local, "all", per_context=False)
m = compare(local, None, scores=["TMR", "USE_cos", "BERTScore"], matrix=True)
for k in range(repeats):
    half = TrainConfig(seeds=(0, 1), dialogues=20, checkpoint_every=20, eval_dialogues=2)
    run_training(half, tmp / f"mixed{k}", progress=False, executor="local:1")  # half here, the rest on Ray

    ex = get_executor("ray")  # a Ray started here, inside the namespace
    seen = []
    assert ex.map(abs, [-3, 1, -2], on_result=lambda i, r: seen.append(i)) == [3, 1, 2] and sorted(seen) == [0, 1, 2]
    assert ex.map(pow, [2, 3], shared=10) == [100, 1000]  # pow(shared, item), the shared value put once
    assert ex.map(abs, []) == []
    run_training(cfg, tmp / f"ray{k}", progress=False, executor=ex)
    assert files and all((tmp / "local" / f).read_bytes() == (tmp / f"ray{k}" / f).read_bytes() for f in files)
    run_training(cfg, tmp / f"mixed{k}", progress=False, executor=ex)  # resumed on another executor
    assert all((tmp / "local" / f).read_bytes() == (tmp / f"mixed{k}" / f).read_bytes() for f in files)
    remote = respond_many(specs, cs, executor=ex)
    assert [(t.header(), t.rows()) for t in local] == [(t.header(), t.rows()) for t in remote]
    b = compare(local, "all", per_context=False, executor=ex)
    assert a.means.equals(b.means), (a.means, b.means)
    mr = compare(local, None, scores=["TMR", "USE_cos", "BERTScore"], matrix=True, executor=ex)
    assert all(m.matrices[n].equals(mr.matrices[n]) for n in m.matrices)
    ray.shutdown()  # the next repeat starts a new one
    print(f"repeat {k + 1} of {repeats}: OK", flush=True)
print("OK", len(files), "checkpoints,", len(a.means), "pairs")
"""


@pytest.mark.timeout(600 + 300 * RAY_REPEATS)
def test_api_on_a_local_ray_gives_the_local_results(tmp_path, spawn):
    """run_training, respond_many and compare with executor=ray (a Ray started by the
    driver inside a network namespace) give the local executor's files, tables and values."""
    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)
    r, ray_logs = _run_driver(spawn, tmp_path / "api.py", API_SCRIPT, [tmp_path, RAY_REPEATS], 300 + 300 * RAY_REPEATS)
    assert r.returncode == 0 and r.stdout.splitlines()[-1:][0].startswith("OK"), (
        r.stdout[-2000:],
        r.stderr[-3000:],
        ray_logs,
    )


CANCEL_SCRIPT = r"""
import os, random, sys, time

from behavsim import get_executor


def task(item):
    k, seconds, fail, done = item
    time.sleep(seconds)
    if fail:
        raise ValueError(f"task {k} failed")
    open(os.path.join(done, str(k)), "w").close()  # the task ran to its end
    return k


rounds, tmp = int(sys.argv[1]), sys.argv[2]
rng = random.Random(0)
ex = get_executor("ray")  # a Ray started here, inside the namespace
for r in range(rounds):
    done = os.path.join(tmp, f"done{r}")
    os.makedirs(done)
    bad = rng.randrange(100, 200)
    items = [(k, rng.uniform(0.0, 0.02), k == bad, done) for k in range(2000)]
    try:
        ex.map(task, items)
    except ValueError as exc:  # the failed task's own error
        assert str(exc) == f"task {bad} failed", exc
    else:
        raise AssertionError("the map did not fail")
    ran = len(os.listdir(done))
    time.sleep(1.0)
    assert len(os.listdir(done)) == ran, f"round {r + 1}: tasks still ran after the map returned"
    # uncancelled, all 1,999 others run (about 5 s); cancelled, those pending after the helper started never do
    assert ran < 1500, f"round {r + 1}: {ran} of 2000 tasks ran: the pending ones were not cancelled"
    print(f"round {r + 1} of {rounds}: OK ({ran} tasks ran)", flush=True)
assert ex.map(abs, [-3, 1, -2]) == [3, 1, 2]  # the executor still works
print("OK")
"""


@pytest.mark.timeout(600 + 300 * RAY_REPEATS)
def test_a_failed_task_cancels_the_others_while_they_finish(tmp_path, spawn):
    """A map on a local Ray whose task fails while the other short tasks keep finishing: the
    task's own error each time, no task runs after the map returns and most never run (they are
    cancelled), and the driver survives cancelling them as others finish. (Cancelled from the
    driver's own thread, a cancellation could fall between a task's reply and its completion,
    and Ray's core worker aborted the driver: "Tried to complete task that was not pending".
    That race is rare here; a loop that cancels 300 short tasks at random moments hit it about
    once in 50 rounds.)"""
    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)
    rounds = 20 * RAY_REPEATS
    r, ray_logs = _run_driver(spawn, tmp_path / "cancel.py", CANCEL_SCRIPT, [rounds, tmp_path], 300 + 300 * RAY_REPEATS)
    assert r.returncode == 0 and r.stdout.splitlines()[-1:] == ["OK"], (r.stdout[-2000:], r.stderr[-3000:], ray_logs)


def _ray_env(raytmp: str) -> dict[str, str]:
    return {**os.environ, "RAY_TMPDIR": raytmp, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


INTERRUPT_SCRIPT = r"""
import json, os, re, signal, subprocess, sys, time

sig, out, repeats = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ray_names = ("raylet", "gcs_server", "ray::", "default_worker", "dashboard", "log_monitor", "runtime_env")

def ray_processes():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
                state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state not in "ZX" and any(n in cmd for n in ray_names):
                found.append(cmd[:100])
    return found

def once(run):
    proc = subprocess.Popen([sys.executable, "-m", "behavsim.cli", "reproduce", "--config", "tiny", "--executor", "ray",
                             "--no-report", "-o", run], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stdout:  # the trials train as Ray tasks
        if re.match(r"\[1/\d+\] training", line):
            break
    deadline = time.monotonic() + 300
    while not any(p.startswith("ray::_call") for p in ray_processes()):
        assert time.monotonic() < deadline and proc.poll() is None, "no Ray task started"
        time.sleep(0.1)
    before = ray_processes()
    os.kill(proc.pid, sig)
    out_rest, err = proc.communicate(timeout=300)
    left = ray_processes()
    for _ in range(100):  # a process that is exiting is given 10 s
        if not left:
            break
        time.sleep(0.1)
        left = ray_processes()
    return {"rc": proc.returncode, "err": err[-3000:], "before": before, "left": left}

for k in range(repeats):
    got = once(f"{out}-{k}")
    print(json.dumps(got), flush=True)
    if got["rc"] != 130 or got["left"]:
        break
"""


@pytest.mark.timeout(600 + 120 * RAY_REPEATS)
@pytest.mark.parametrize("sig", [2, 15], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_command_shuts_down_the_ray_it_started(tmp_path, spawn, sig):
    """``reproduce --executor ray`` (a Ray started by the command) interrupted while its trials run
    as Ray tasks: exit 130, "interrupted", and no Ray process left (raylet, GCS, workers)."""
    import json

    problem = _namespace_problem()
    if problem:
        pytest.skip(problem)
    run = tmp_path / "run"
    r, ray_logs = _run_driver(
        spawn, tmp_path / "interrupt.py", INTERRUPT_SCRIPT, [sig, run, RAY_REPEATS], 500 + 120 * RAY_REPEATS
    )
    assert r.returncode == 0 and r.stdout.strip(), (r.stdout[-2000:], r.stderr[-3000:], ray_logs)
    runs = [json.loads(line) for line in r.stdout.strip().splitlines() if line.startswith("{")]
    assert runs, (r.stdout[-2000:], r.stderr[-3000:], ray_logs)
    for k, got in enumerate(runs):
        where = f"interrupt {k + 1} of {RAY_REPEATS}"
        assert got["before"], f"{where}: no Ray process was running when the signal was sent"
        if got["rc"] != 130 or got["err"].splitlines()[-1:] != ["interrupted"]:
            print(f"{where}: exit status {got['rc']}; the command's stderr:\n{got['err']}\nRay's logs:\n{ray_logs}")
        assert got["rc"] == 130 and got["err"].splitlines()[-1:] == ["interrupted"], (where, got["rc"], got["err"])
        assert "Traceback" not in got["err"], (where, got["err"])
        assert got["left"] == [], f"{where}: Ray processes left: {got['left']}"
    assert len(runs) == RAY_REPEATS, (r.stdout[-2000:], r.stderr[-3000:], ray_logs)
