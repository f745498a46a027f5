"""Executors: specs, the local pool's map (input order, progress, shared input), the errors of an
executor that cannot run (Ray missing, a cluster out of reach), and the options of the commands."""

from __future__ import annotations

import os
import sys

import pytest

from behavsim import ConfigError, ContextSet, Executor, ExecutorError, get_executor
from behavsim._executor import LocalExecutor, RayExecutor  # private: the executors get_executor returns
from behavsim.cli import main


def _square_plus(shared, x):
    return x * x + shared["offset"]


def _pid_and_value(x):
    return os.getpid(), x


@pytest.mark.parametrize(
    "spec, kind, detail",
    [
        (None, "local", None),
        ("local", "local", None),
        ("local:3", "local", 3),
        ("ray", "ray", None),
        ("ray:127.0.0.1:6379", "ray", "127.0.0.1:6379"),
        ("ray:auto", "ray", "auto"),
    ],
)
def test_specs(spec, kind, detail):
    ex = get_executor(spec)
    assert isinstance(ex, Executor) and ex.kind == kind
    assert (ex.workers if kind == "local" else ex.address) == detail
    assert get_executor(ex) is ex
    assert get_executor(ex.spec).spec == ex.spec


@pytest.mark.parametrize(
    "spec, message",
    [
        ("lokal", "unknown kind 'lokal' in 'lokal'. Did you mean 'local'?"),
        ("local:0", "'local:N' needs a positive number of workers N, got '0'"),
        ("local:two", "'local:N' needs a positive number of workers N, got 'two'"),
        ("ray:", "'ray:ADDRESS' needs the head's address"),
        ("", "expected 'local', 'local:N', 'ray' or 'ray:ADDRESS'"),
        (3, "expected 'local', 'local:N', 'ray' or 'ray:ADDRESS', got 3"),
    ],
)
def test_bad_specs(spec, message):
    with pytest.raises(ConfigError, match="executor") as info:
        get_executor(spec)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("workers", [1, 2])
def test_local_map_keeps_input_order_and_reports_each_task(workers):
    seen = []
    out = LocalExecutor(workers).map(
        _square_plus, list(range(7)), shared={"offset": 10}, on_result=lambda i, r: seen.append((i, r))
    )
    assert out == [x * x + 10 for x in range(7)]
    assert sorted(seen) == list(enumerate(out))


def test_local_map_runs_in_worker_processes():
    out = LocalExecutor(2).map(_pid_and_value, [1, 2, 3])
    assert [v for _, v in out] == [1, 2, 3]
    assert os.getpid() not in {p for p, _ in out}


def _inverse(x):
    return 1 / x


def test_local_map_passes_a_task_error_on():
    with pytest.raises(ZeroDivisionError):
        LocalExecutor(2).map(_inverse, [1, 0, 2])


def _sleep(x):
    import time

    time.sleep(x)
    return x


def test_a_stopped_pool_leaves_no_thread_running():
    """stop_pool kills the workers and joins the pool's management thread: a thread still running
    when Python exits races the pool's exit hook for its wake-up pipe ("Exception ignored in
    <module 'threading'> ... Bad file descriptor" after a command's last line)."""
    from concurrent.futures import ProcessPoolExecutor

    from behavsim._executor import _mp_context, stop_pool  # private: the pool's start method and shutdown

    pool = ProcessPoolExecutor(max_workers=2, mp_context=_mp_context())
    futures = [pool.submit(_sleep, 30) for _ in range(3)]
    while not any(f.running() for f in futures):
        pass
    thread = pool._executor_manager_thread
    assert thread is not None and thread.is_alive()
    stop_pool(pool)
    assert not thread.is_alive()


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ExecutorError) as info:
        RayExecutor("127.0.0.1:1").map(_pid_and_value, [1])
    assert str(info.value) == "executor 'ray': Ray is not installed; pip install 'behavsim[ray]'"


def test_an_unreachable_cluster_is_one_line():
    pytest.importorskip("ray")
    import ray

    if ray.is_initialized():  # pragma: no cover
        pytest.skip("a Ray connection is already open in this process")
    with pytest.raises(ExecutorError) as info:
        RayExecutor("127.0.0.1:1").connect()
    msg = str(info.value)
    assert msg.startswith("executor 'ray:127.0.0.1:1': cannot connect to the Ray cluster at 127.0.0.1:1")
    assert "\n" not in msg


def test_respond_many_on_any_local_executor_gives_the_same_tables():
    from behavsim import respond_many

    cs = ContextSet([{"beliefs": {"area": {"centre": 0.5 + i / 100}}, "turn": i} for i in range(5)])

    def answer(belief):
        return "request(food)" if belief["beliefs"]["area"]["centre"] > 0.52 else "bye()"

    specs = [answer, _policy]  # a lambda-like local function runs here, a module function in the pool
    want = respond_many(specs, cs, policy_ids=["a", "b"], workers=1)
    for ex in ("local", "local:1", "local:2", LocalExecutor(2)):
        got = respond_many(specs, cs, policy_ids=["a", "b"], executor=ex)
        assert [(t.header(), t.rows()) for t in got] == [(t.header(), t.rows()) for t in want]


def _policy(belief):
    return "hello()"


def test_workers_apply_to_the_local_executor_only():
    from behavsim import respond_many

    cs = ContextSet([{"beliefs": {}}])
    with pytest.raises(ConfigError, match="workers: applies to the local executor only, not to 'ray:h:1'"):
        respond_many([_policy], cs, workers=2, executor="ray:h:1")


def test_study_config_takes_an_executor_outside_its_identity():
    from experiments.study import StudyConfig

    a = StudyConfig(executor="ray:127.0.0.1:6379")
    assert a.executor == "ray:127.0.0.1:6379"
    assert "executor" not in a.to_dict()
    assert a.to_dict() == StudyConfig().to_dict()
    with pytest.raises(ConfigError, match="study config 'executor': executor: unknown kind 'rey'"):
        StudyConfig(executor="rey")


@pytest.mark.parametrize("command", ["reproduce", "respond", "train", "compare"])
def test_cli_bad_executor_is_one_line(command, tmp_path, capsys):
    args = {
        "reproduce": ["reproduce", "--config", "tiny", "-o", str(tmp_path / "run")],
        "respond": ["respond", "--policy", "handcrafted", "--contexts", str(tmp_path / "c.jsonl"), "-o", str(tmp_path)],
        "train": ["train", "-o", str(tmp_path / "train"), "--dialogues", "10", "--checkpoint-every", "10"],
        "compare": ["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "-o", str(tmp_path / "o.csv")],
    }[command]
    assert main([*args, "--executor", "lokal"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "executor: unknown kind 'lokal'" in err[0] and "Did you mean 'local'?" in err[0]


def _polite(belief):
    x = belief["beliefs"]["area"]["centre"]
    return ("request(food)", "what food would you like?") if x < 0.5 else ("inform(area=centre)", "it is central.")


def _curt(belief):
    x = belief["beliefs"]["area"]["centre"]
    return ("request(food)", "food?") if x < 0.3 else ("bye()", "goodbye.")


def test_compare_on_a_pool_gives_the_same_values(tmp_path, capsys, monkeypatch):
    """compare -o and --matrix with --executor local:2 (the distinct combinations scored in worker
    processes, in chunks) write the same rows, means and matrices as the default run here."""
    from behavsim import respond_many

    monkeypatch.setattr("behavsim._scoring_tasks.COMBINATIONS_PER_TASK", 3)  # several chunks per score
    cs = ContextSet([{"beliefs": {"area": {"centre": i / 10}}} for i in range(11)])
    paths = []
    for t in respond_many([_polite, _curt], cs, policy_ids=["polite", "curt"], workers=1):
        paths.append(tmp_path / f"{t.id}.jsonl")
        t.save(paths[-1])
    outs = {}
    monkeypatch.chdir(tmp_path)
    for ex in ("local", "local:2"):
        out = tmp_path / ex.replace(":", "-") / "pairs.csv"
        args = [*map(str, paths), "-o", str(out), "--executor", ex, "--no-cache"]
        assert main(["compare", *args]) == 0
        assert main(["compare", *args, "--matrix", str(out.parent / "matrix"), "--scores", "TMR", "USE_cos"]) == 0
        matrices = [(out.parent / "matrix" / f"{n}.csv").read_bytes() for n in ("TMR", "USE_cos")]
        outs[ex] = (out.read_bytes(), out.with_name("pairs.means.csv").read_bytes(), matrices)
    capsys.readouterr()
    assert outs["local"] == outs["local:2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curt.jsonl", "local", "local-2", "polite.jsonl"]


@pytest.mark.parametrize("command", ["reproduce", "train"])
def test_an_unreachable_cluster_stops_a_command_before_it_writes(command, tmp_path, capsys):
    pytest.importorskip("ray")
    out = tmp_path / "run"
    args = {
        "reproduce": ["reproduce", "--config", "tiny"],
        "train": ["train", "--dialogues", "10", "--checkpoint-every", "10"],
    }[command]
    assert main([*args, "-o", str(out), "--executor", "ray:127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot connect to the Ray cluster at 127.0.0.1:1: Connection refused" in err[0]
    assert not out.exists()
