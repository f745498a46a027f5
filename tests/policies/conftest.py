"""Fixtures of the language-model policy tests: small chat models built on the spot, contexts with
and without dialogue histories, and real ``transformers serve`` servers on 127.0.0.1.

A server runs in its own process group and is always stopped by its fixture's finalizer (SIGTERM
to the group, then SIGKILL), whatever the test did; its log counts the requests it answered (one
``"POST /v1/chat/completions`` line each, uvicorn's access log). The serving packages
(fastapi, uvicorn, openai, accelerate) come with behavsim's ``test`` and ``llm`` extras, pinned.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from behavsim import ContextSet

SERVE_PACKAGES = ("fastapi", "uvicorn", "openai", "accelerate")


@contextlib.contextmanager
def _one_torch_thread():
    """Torch on one thread while building (two threads on a busy 2-core machine are many times slower)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _user_text(belief: dict) -> str:
    """A user turn saying the belief's top values (for contexts with a made-up history)."""
    words = []
    for slot in ("food", "pricerange", "area"):
        dist = belief["beliefs"].get(slot) or {}
        top = max(dist, key=lambda v: (dist[v], v)) if dist else "**NONE**"
        if top not in ("**NONE**", "dontcare") and dist[top] > 0.5:
            words.append(f"{top} {slot}")
    return "i want " + (" and ".join(words) if words else "a restaurant")


def _with_histories(cs: ContextSet) -> ContextSet:
    """The same beliefs, each context with a made-up dialogue history of two turns."""
    histories = [
        [
            {"speaker": "system", "text": "hello, how may i help you?", "act": "hello()"},
            {"speaker": "user", "text": _user_text(b), "act": None},
        ]
        for b in cs.beliefs
    ]
    return ContextSet(
        [dict(b) for b in cs.beliefs],
        [dict(m) for m in cs.metas],
        [f"h{i}" for i in range(len(cs))],
        dict(cs.meta),
        histories=histories,
    )


def _with_and_without_histories(cs: ContextSet) -> ContextSet:
    """The contexts of ``cs`` without histories, then the same with a made-up history each."""
    h = _with_histories(cs)
    return ContextSet(
        cs.beliefs + h.beliefs, cs.metas + h.metas, list(cs.ids) + h.ids, histories=[None] * len(cs) + h.histories
    )


@pytest.fixture(scope="session")
def llm_contexts() -> ContextSet:
    """Belief states of 3 handcrafted dialogues on CamRestaurants (no history)."""
    from contexts import collect

    return collect(["handcrafted"], dialogues=3, seed=777, histories=False)


@pytest.fixture(scope="session")
def llm_models(tmp_path_factory, llm_contexts, make_grid):
    """``{"chat": DIR, "random": DIR, "bye": DIR}``: the trained chat model, the same untrained
    (answers that do not parse) and one trained to answer ``bye()`` to anything."""
    build_chat_model = _llm_model().build_chat_model
    root = tmp_path_factory.mktemp("llm-models")
    both = _with_and_without_histories(llm_contexts)
    with _one_torch_thread():
        chat = build_chat_model(root / "chat", both)
        rand = build_chat_model(root / "random", both, trained=False)
        bye = build_chat_model(
            root / "bye", ContextSet(both.beliefs + make_grid().beliefs[::4]), answer="bye", steps=60
        )
    return {"chat": chat, "random": rand, "bye": bye}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ``transformers serve`` process on 127.0.0.1 (see the module documentation)."""

    def __init__(self, log: Path):
        missing = []
        for name in SERVE_PACKAGES:
            try:
                __import__(name)
            except ImportError:
                missing.append(name)
        if missing:
            pytest.fail(f"transformers serve needs {', '.join(missing)}: pip install -e '.[test]' (pinned there)")
        self.log = log
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        exe = Path(sys.executable).with_name("transformers")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            [str(exe), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--log_level", "info"],
            stdout=open(log, "wb"),
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stopped as a whole
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"transformers serve exited ({self.proc.returncode}): {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        pytest.fail(f"transformers serve did not come up in 180 s: {log.read_text()[-2000:]}")

    def requests(self) -> int:
        """Chat-completion requests the server has received (its access log)."""
        return self.log.read_text(errors="replace").count("POST /v1/chat/completions")

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(10)
        self.signal(signal.SIGKILL)  # anything the server started


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory, outlives_tests):
    """One server for the session (the tests that stop their server start their own)."""
    server = Server(tmp_path_factory.mktemp("serve") / "serve.log")
    outlives_tests(server.proc.pid)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_server(tmp_path):
    """A server of this test's own (stopped, killed or started again by it)."""
    servers: list[Server] = []

    def start() -> Server:
        servers.append(Server(tmp_path / f"serve{len(servers)}.log"))
        return servers[-1]

    try:
        yield start
    finally:
        for s in servers:
            s.stop()


def _llm_model():
    """The builder of the tests' tiny chat models (``_llm_model.py`` beside this file)."""
    spec = importlib.util.spec_from_file_location("_llm_model", Path(__file__).parent / "llm" / "_llm_model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def one_torch_thread():
    """A context manager: torch on one thread inside it."""
    return _one_torch_thread


@pytest.fixture(scope="session")
def with_histories():
    """``with_histories(cs)``: the same beliefs, each context with a made-up two-turn history."""
    return _with_histories


@pytest.fixture(scope="session")
def with_and_without_histories():
    """``with_and_without_histories(cs)``: the contexts without histories, then with them."""
    return _with_and_without_histories


@pytest.fixture(scope="session")
def free_port():
    """``free_port()``: a free TCP port on 127.0.0.1."""
    return _free_port
