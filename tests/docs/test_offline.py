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


#: The environment variables behavsim once set in every process that imported it.
HUB_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY")

#: Python code recording every connect and name lookup (refused) in ``seen``.
RECORD_NETWORK = """
import socket
seen = []
def connect(self, address):
    seen.append(("connect", address)); raise OSError("refused by the test")
def lookup(host, *args, **kwargs):
    seen.append(("getaddrinfo", host)); raise OSError("refused by the test")
socket.socket.connect = connect
socket.socket.connect_ex = connect
socket.getaddrinfo = lookup
"""


def _without_hub_variables(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in HUB_VARIABLES}
    env["HF_HUB_CACHE"] = str(tmp_path / "hf-empty")
    return env


def _python(code: str, env: dict) -> list[str]:
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_importing_the_packages_leaves_the_environment_alone(tmp_path):
    code = (
        "import os, behavsim, behavsim.cli, policies, contexts, experiments; "
        f"print([os.environ.get(k) for k in {HUB_VARIABLES!r}])"
    )
    assert _python(code, _without_hub_variables(tmp_path)) == ["[None, None, None, None]"]


def test_the_program_switches_the_hub_off_in_its_own_process(tmp_path):
    """``behavsim`` (the console script) sets the variables before any model library is imported,
    so the libraries read them: ``huggingface_hub`` is not yet imported when the command starts."""
    code = (
        "import atexit, os, sys\n"
        "from behavsim.cli import console_main\n"
        "assert 'huggingface_hub' not in sys.modules and 'transformers' not in sys.modules\n"
        "def report():\n"
        "    import huggingface_hub.constants as c\n"
        f"    print(c.HF_HUB_OFFLINE, [os.environ.get(k) for k in {HUB_VARIABLES!r}])\n"
        "atexit.register(report)\n"
        "console_main(['scores'])\n"
    )
    out = _python(code, _without_hub_variables(tmp_path))
    assert out[-1] == "True ['1', '1', '1', '1']"


def test_a_model_load_reads_the_disk_only(tmp_path):
    """With the hub variables unset (a notebook that imported behavsim), BERTScore's default model
    loads from its local folder without a single connect or name lookup, and a model name that is
    not on the machine fails in one line, also without one."""
    code = RECORD_NETWORK + (
        "from behavsim import ModelNotAvailable\n"
        "from behavsim.scores import get_score\n"
        "value = get_score('BERTScore', cache=False).score('what food would you like', 'which area')\n"
        "print(round(value, 4), seen)\n"
        "try:\n"
        "    get_score('BERTScore', model='hf', model_path='roberta-large', num_layers=17, cache=False)"
        ".score('a', 'b')\n"
        "except ModelNotAvailable as exc:\n"
        "    print(len(str(exc).splitlines()), 'huggingface-cli download roberta-large' in str(exc), seen)\n"
    )
    value, failure = _python(code, _without_hub_variables(tmp_path))
    assert value.endswith(" []") and 0 < float(value.split()[0]) < 1
    assert failure == "1 True []"


def _fails_fast(make, match):
    import bert_score.utils  # noqa: F401  (library import time is not what is measured)

    start = time.perf_counter()
    with pytest.raises(ModelNotAvailable, match=match):
        make()
    return time.perf_counter() - start


def test_bertscore_with_a_model_not_on_the_machine_fails_at_once(connections):
    score = get_score("BERTScore", model="hf", model_path="roberta-large", num_layers=17, cache=False)
    took = _fails_fast(
        lambda: score.score("what food", "which food"),
        r"'roberta-large' is not on this machine.*huggingface-cli download roberta-large",
    )
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
    run = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "behavsim"),
            "pair",
            "request(food)",
            "request(area)",
            "--prompts",
            "a b",
            "c d",
            "--scores",
            "BERTScore",
            "--bert-model",
            "roberta-large",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, HF_HUB_CACHE="/nonexistent-hf-cache"),
    )
    assert run.returncode == 2 and time.perf_counter() - start < 5
    assert "Traceback" not in run.stderr
    assert "huggingface-cli download roberta-large" in run.stderr
