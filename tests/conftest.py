"""Test-wide settings: a private embedding cache, and no network.

The whole suite runs with outbound network blocked, so any attempt to reach a model hub (or
anything else) fails the test that made it:

* in this process, through pytest-socket: ``connect`` is allowed to 127.0.0.1 / ::1 and Unix
  sockets only (``SocketConnectBlockedError`` otherwise);
* in every subprocess a test starts (the ``behavsim`` CLI, worker processes started by exec),
  through ``tests/docs/netblock/sitecustomize.py``, put first on ``PYTHONPATH`` here.

``--force-enable-socket`` lifts the in-process block for a local experiment.

The shared folder (PyDial3, PyDial's ontology) is ``../shared`` beside the repository or the folder
``$BEHAVSIM_SHARED`` names; a test that needs it skips, saying where it looked — and fails instead
when ``CI=true``, where the folder must be there. Fixtures shared across the suite live here:
``shared``, ``pydial_root``, ``pydial_ontology``, ``contexts`` (a 3^4 grid on CamRestaurants),
``make_grid``, ``run_dir`` (a tiny GP-SARSA run), ``e2e_run`` (a tiny end-to-end training run) and
``contexts_with_histories`` (collected contexts with their dialogue histories).
"""

import atexit
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

# Keep the on-disk embedding cache of test runs out of the user's home, and remove it afterwards
# (made once per session: the workers of a parallel run inherit it).
if "BEHAVSIM_CACHE_DIR" not in os.environ:
    os.environ["BEHAVSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="behavsim-test-cache-")
    atexit.register(shutil.rmtree, os.environ["BEHAVSIM_CACHE_DIR"], True)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

NETBLOCK = Path(__file__).parent / "docs" / "netblock"
LOCAL_HOSTS = ["127.0.0.1", "::1"]
os.environ["BEHAVSIM_NETBLOCK"] = ",".join(LOCAL_HOSTS)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(NETBLOCK)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(NETBLOCK)]
)


#: ``bash run.sh test-stress`` sets it: how many times the interrupt, kill and Ray tests repeat.
STRESS = int(os.environ.get("BEHAVSIM_STRESS", "0") or 0)


def pytest_generate_tests(metafunc):
    """Tests marked ``repeat_in_stress`` run ``BEHAVSIM_STRESS`` times in the stress run."""
    if STRESS and metafunc.definition.get_closest_marker("repeat_in_stress"):
        metafunc.fixturenames.append("stress_repeat")
        metafunc.parametrize("stress_repeat", range(1, STRESS + 1), ids=lambda k: f"repeat{k}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # Read by pytest-socket's own pytest_configure, which runs after this one.
    if not config.getoption("--force-enable-socket"):
        config.option.disable_socket = True
        config.option.allow_unix_socket = True
        config.option.allow_hosts = list(LOCAL_HOSTS)


# ----------------------------------------------------------------------------- the shared folder
REPO = Path(__file__).resolve().parents[1]
SHARED_ENV = "BEHAVSIM_SHARED"


def _on_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def shared():
    """``shared(*parts, need=FILE)``: the path of ``parts`` in the shared folder, checked to hold
    ``need``; a test skips without it (saying where it looked), or fails with ``CI=true``."""
    root = Path(os.environ.get(SHARED_ENV) or REPO.parent / "shared")

    def get(*parts: str, need: str | None = None) -> Path:
        path = root.joinpath(*parts)
        probe = path / need if need else path
        if not probe.exists():
            why = f"{probe} not found (the shared folder is ../shared beside the repository, or ${SHARED_ENV})"
            if _on_ci():
                pytest.fail(f"CI: {why}")
            pytest.skip(why)
        return path

    return get


@pytest.fixture(scope="session")
def pydial_root(shared) -> Path:
    """The runnable PyDial3 snapshot with Environment 1's configs."""
    shared("pydial3", need="policy/GPPolicy.py")
    return shared("pydial3", need="env1-configs/env1-gp-CR.cfg")


@pytest.fixture(scope="session")
def pydial_ontology(shared) -> Path:
    """PyDial's CamRestaurants rules and database."""
    return shared("pydial-ontology", need="CamRestaurants-rules.json")


# ----------------------------------------------------------------------------- small shared inputs
def _grid(levels=(0.0, 0.5, 1.0)):
    from behavsim import ContextSet
    from policies.simulation.domain import resolve_domain
    from policies.simulation.tracker import make_belief

    d = resolve_domain(None)
    beliefs = [
        make_belief(
            d, {"area": {"centre": a}, "pricerange": {"cheap": p}, "food": {"italian": f}}, method={"byconstraints": m}
        )
        for a, p, f, m in itertools.product(levels, repeat=4)
    ]
    return ContextSet(beliefs, meta={"builder": "test-grid", "levels": list(levels)})


@pytest.fixture(scope="session")
def make_grid():
    """``make_grid(levels)``: the grid over area/pricerange/food/method beliefs of the default domain
    (CamRestaurants) at these levels; ``(0, 0.5, 1)`` gives 3^4 = 81 contexts."""
    return _grid


@pytest.fixture(scope="module")
def contexts():
    """The 3^4 grid (81 contexts)."""
    return _grid()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Two GP trials of 20 dialogues, a checkpoint every 10."""
    from policies.training.train import TrainConfig, run_training

    out = tmp_path_factory.mktemp("run")
    run_training(
        TrainConfig(rewards=("ts",), seeds=(0, 1), dialogues=20, checkpoint_every=10, eval_dialogues=2),
        out,
        workers=1,
        progress=False,
    )
    return out


@pytest.fixture(scope="session")
def e2e_run(tmp_path_factory):
    """``(config, folder, last checkpoint)`` of a small end-to-end training run (a few seconds on
    one core; its teacher and settings: ``_e2e_teacher.py`` beside this file)."""
    from _e2e_teacher import SMALL

    from policies.e2e import E2EConfig, train_e2e

    out = tmp_path_factory.mktemp("e2e") / "run"
    ckpts = train_e2e(E2EConfig(**SMALL), out)
    return E2EConfig(**SMALL), out, ckpts[-1][1]


@pytest.fixture(scope="module")
def contexts_with_histories():
    """Contexts the handcrafted policy met in 8 dialogues (seed 5), with their histories."""
    from contexts import collect

    return collect(["handcrafted"], dialogues=8, seed=5)


# ----------------------------------------------------------------------------- processes
# Every process a test starts is stopped when the test ends, whatever happens: tests start them
# with the ``spawn`` fixture (a session of their own, the whole process group killed at
# teardown), and a safety net checks after every test that no process it started is still
# running below this one (those left are killed, and the test errors naming them).
#: Processes that outlive a test by design (multiprocessing's helpers, started once per session).
_LONG_LIVED = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def _process_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, state) of every process (Linux's /proc)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2 :].split()
        table[int(entry.name)] = (int(rest[1]), int(rest[2]), rest[0])
    return table


def descendants(root: int | None = None) -> dict[int, tuple[int, str]]:
    """The live processes below ``root`` (default: this one): pid -> (process group, state)."""
    root = os.getpid() if root is None else root
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = {}, [root]
    while stack:
        for pid in children.get(stack.pop(), []):
            if table[pid][2] not in "ZX":  # zombies are gone, only not yet reaped
                out[pid] = (table[pid][1], table[pid][2])
            stack.append(pid)
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover (a foreign process took the id)
        return True


def stop_process(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and, when it leads a process group (``start_new_session``), the whole group."""
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover (uninterruptible sleep)
        pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


@pytest.fixture
def spawn():
    """``spawn(args, **popen_kwargs)``: ``subprocess.Popen`` in a session of its own (unless
    told otherwise); every process group started so is killed when the test ends."""
    started: list[subprocess.Popen] = []

    def start(args, **kw):
        kw.setdefault("start_new_session", True)
        proc = subprocess.Popen(args, **kw)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        stop_process(proc)


#: Process groups a wider-scoped fixture started on purpose (a server for the session): not "left".
_OUTLIVING_GROUPS: set[int] = set()


@pytest.fixture(scope="session")
def outlives_tests():
    """``outlives_tests(pid)``: the process group led by ``pid`` (``start_new_session``), started by
    a session- or module-scoped fixture that stops it itself, is not reported as left behind."""
    return _OUTLIVING_GROUPS.add


@pytest.fixture(autouse=True)
def _no_process_left_behind(request):
    if not sys.platform.startswith("linux"):
        yield
        return
    before = set(descendants())
    yield
    deadline = time.monotonic() + 5
    while True:
        left = {pid: v for pid, v in descendants().items() if pid not in before}
        left = {
            pid: v
            for pid, v in left.items()
            if v[0] not in _OUTLIVING_GROUPS and not any(s in _cmdline(pid) for s in _LONG_LIVED)
        }
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if left:
        names = [f"{pid} {_cmdline(pid)[:120]}" for pid in sorted(left)]
        for pid, (pgid, _) in left.items():
            try:
                os.killpg(pgid, signal.SIGKILL) if pgid == pid else os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in left:  # reap those that were this process's own children
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        pytest.fail(f"the test left {len(left)} process(es) running (now killed): " + "; ".join(names), pytrace=False)


# ----------------------------------------------------------------------------- figure texts
# The text a matplotlib figure really draws, and where: for tests that no two labels overlap and
# none is cut at the figure's edge. ``drawn_texts`` draws the figure once while recording every
# Text whose ``draw`` runs and that has visible, non-blank text (tick labels outside the view are
# not drawn and so not recorded; legend entries and titles are), then asks each for its window
# extent in pixels. ``capture_figures`` keeps the figures the plotting functions save.
def drawn_texts(fig, rc: dict | None = None) -> list:
    """(text, extent in pixels) of every text the figure draws (under the settings ``rc``)."""
    import matplotlib
    from matplotlib.text import Text

    seen: list = []
    original = Text.draw

    def draw(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            seen.append(self)

    with matplotlib.rc_context(rc or {}):
        Text.draw = draw
        try:
            fig.canvas.draw()
        finally:
            Text.draw = original
        renderer = fig.canvas.get_renderer()
        return [(t.get_text(), t.get_window_extent(renderer)) for t in seen]


def overlapping(texts: list, slack: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes (each shrunk by ``slack`` pixels) intersect."""
    out = []
    for (ta, a), (tb, b) in itertools.combinations(texts, 2):
        if min(a.x1, b.x1) - max(a.x0, b.x0) > 2 * slack and min(a.y1, b.y1) - max(a.y0, b.y0) > 2 * slack:
            out.append((ta, tb))
    return out


def cut(fig, texts: list, slack: float = 0.5) -> list[str]:
    """Texts reaching beyond the figure's edges."""
    w, h = fig.bbox.width, fig.bbox.height
    return [t for t, b in texts if b.x0 < -slack or b.y0 < -slack or b.x1 > w + slack or b.y1 > h + slack]


@contextlib.contextmanager
def _capture_figures(monkeypatch):
    """Every Figure saved (``Figure.savefig``) inside the block, in order."""
    from matplotlib.figure import Figure

    figs: list = []
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        if not figs or figs[-1] is not self:
            figs.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    try:
        yield figs
    finally:
        monkeypatch.setattr(Figure, "savefig", original)


@pytest.fixture
def figure_text(monkeypatch):
    """``figure_text.drawn_texts(fig, rc)``, ``.overlapping(texts)``, ``.cut(fig, texts)`` and
    ``with figure_text.capture_figures() as figs:`` (every Figure saved inside the block)."""
    import types

    return types.SimpleNamespace(
        drawn_texts=drawn_texts,
        overlapping=overlapping,
        cut=cut,
        capture_figures=lambda: _capture_figures(monkeypatch),
    )
