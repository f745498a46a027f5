"""Test-wide settings: a private embedding cache, and no network.

The whole suite runs with outbound network blocked, so any attempt to reach a model hub (or
anything else) fails the test that made it:

* in this process, through pytest-socket: ``connect`` is allowed to 127.0.0.1 / ::1 and Unix
  sockets only (``SocketConnectBlockedError`` otherwise);
* in every subprocess a test starts (the ``behavsim`` CLI, worker processes started by exec),
  through ``tests/docs/netblock/sitecustomize.py``, put first on ``PYTHONPATH`` here.

``--force-enable-socket`` lifts the in-process block for a local experiment.
"""

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
