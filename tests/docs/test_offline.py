"""Offline by construction: no model hub is ever asked, and the suite itself runs with the
network blocked (tests/conftest.py)."""

import os
import socket
import subprocess
import sys
import time

import pytest

from behavsim import ModelNotAvailable
from behavsim.scores import get_score


@pytest.fixture
def connections(monkeypatch, tmp_path):
    """Records every connect and name lookup; an empty Hugging Face cache."""
    seen = []
    real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo

    def connect(self, address):
        seen.append(("connect", address))
        return real_connect(self, address)

    def lookup(host, *args, **kwargs):
        seen.append(("getaddrinfo", host))
        return real_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-empty"))
    monkeypatch.setenv("TFHUB_CACHE_DIR", str(tmp_path / "tfhub-empty"))
    return seen


def test_network_is_blocked_in_tests():
    with pytest.raises(Exception, match="connect"), pytest.warns(UserWarning, match="192.0.2.1"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)


def test_network_is_blocked_in_subprocesses():
    code = "import socket; socket.create_connection(('192.0.2.1', 80), timeout=1)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "network access blocked in tests" in run.stderr


def test_hub_is_offline_from_import_on():
    code = ("import behavsim, huggingface_hub.constants as c, os; "
            "print(c.HF_HUB_OFFLINE, os.environ['TRANSFORMERS_OFFLINE'])")
    env = dict(os.environ, HF_HUB_OFFLINE="0", TRANSFORMERS_OFFLINE="0")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "1"]


def _fails_fast(make, match):
    import bert_score.utils  # noqa: F401  (library import time is not what is measured)

    start = time.perf_counter()
    with pytest.raises(ModelNotAvailable, match=match):
        make()
    return time.perf_counter() - start


def test_bertscore_with_a_model_not_on_the_machine_fails_at_once(connections):
    score = get_score("BERTScore", model="hf", model_path="roberta-large", num_layers=17, cache=False)
    took = _fails_fast(lambda: score.score("what food", "which food"),
                       r"'roberta-large' is not on this machine.*huggingface-cli download roberta-large")
    assert took < 5
    assert connections == []


def test_bertscore_with_a_missing_directory_fails_at_once(connections, tmp_path):
    score = get_score("BERTScore", model="hf", model_path=str(tmp_path / "no-model"), num_layers=5, cache=False)
    assert _fails_fast(lambda: score.score("a", "b"), "not on this machine") < 5
    assert connections == []


@pytest.mark.parametrize("handle", ["https://tfhub.dev/google/universal-sentence-encoder/4", "/no/such/use-model"])
def test_use_with_a_model_not_on_the_machine_fails_at_once(connections, handle):
    score = get_score("USE_cos", encoder="tfhub", handle=handle, cache=False)
    assert _fails_fast(lambda: score.score("what food", "which food"), "(never downloads|no TF Hub SavedModel)") < 5
    assert connections == []


def test_cli_names_what_to_install():
    """The command fails at once (before any model library loads) and says what to install."""
    start = time.perf_counter()
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "behavsim"), "pair", "request(food)", "request(area)", "--prompts", "a b", "c d",
                          "--scores", "BERTScore", "--bert-model", "roberta-large"],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, HF_HUB_CACHE="/nonexistent-hf-cache"))
    assert run.returncode == 2 and time.perf_counter() - start < 5
    assert "Traceback" not in run.stderr
    assert "huggingface-cli download roberta-large" in run.stderr
