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
``make_grid`` and ``run_dir`` (a tiny GP-SARSA run).
"""

import itertools
import os
import tempfile
from pathlib import Path

import pytest

# Keep the on-disk embedding cache of test runs out of the user's home.
os.environ.setdefault("BEHAVSIM_CACHE_DIR", tempfile.mkdtemp(prefix="behavsim-test-cache-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

NETBLOCK = Path(__file__).parent / "docs" / "netblock"
LOCAL_HOSTS = ["127.0.0.1", "::1"]
os.environ["BEHAVSIM_NETBLOCK"] = ",".join(LOCAL_HOSTS)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(NETBLOCK)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(NETBLOCK)])


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
            why = (f"{probe} not found (the shared folder is ../shared beside the repository, or ${SHARED_ENV})")
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
    beliefs = [make_belief(d, {"area": {"centre": a}, "pricerange": {"cheap": p}, "food": {"italian": f}},
                           method={"byconstraints": m})
               for a, p, f, m in itertools.product(levels, repeat=4)]
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
    from policies.learners.train import TrainConfig, run_training

    out = tmp_path_factory.mktemp("run")
    run_training(TrainConfig(rewards=("ts",), seeds=(0, 1), dialogues=20, checkpoint_every=10, eval_dialogues=2),
                 out, workers=1, progress=False)
    return out
