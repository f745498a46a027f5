"""The PyDial adapter against the real PyDial3 snapshot (``../shared/pydial3``), through the CLI.

Each run is a fresh ``behavsim`` process on a copy of the snapshot (PyDial writes into its root).
PyDial is looked for in ``../shared/pydial3`` beside the repository root (or
``$BEHAVSIM_PYDIAL_ROOT``); the module is skipped, saying so, only when that folder is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYDIAL = Path(os.environ.get("BEHAVSIM_PYDIAL_ROOT") or REPO.parent / "shared" / "pydial3")
CONFIGS = "env1-configs"

pytestmark = pytest.mark.skipif(
    not (PYDIAL / "policy" / "GPPolicy.py").is_file(),
    reason=f"PyDial3 not found at {PYDIAL} (CI clones the repository with shared/pydial3 beside it; "
    f"set BEHAVSIM_PYDIAL_ROOT to another PyDial3 root)",
)


def behavsim(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYDIAL_ROOT", None)
    code = "import sys; from behavsim.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pydial-real")
    shutil.copytree(PYDIAL, d / "root", ignore=shutil.ignore_patterns(".git", "_bslogs"))
    for name, extra in (
        ("grid-cr.jsonl", ["--domain", "camrestaurants", "--step", "0.2"]),
        ("grid-cr-05.jsonl", ["--domain", "camrestaurants", "--step", "0.5"]),
        ("grid-default.jsonl", ["--step", "0.2"]),
    ):
        r = behavsim("contexts", "generate", *extra, "-o", name, cwd=d)
        assert r.returncode == 0, r.stderr
    return d


def rows(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines[1:]]


def cfg(work: Path, name: str) -> str:
    return str(work / "root" / CONFIGS / name)


def test_other_domain_refused_before_any_context(work):
    r = behavsim(
        "respond", "--policy", f"pydial:{cfg(work, 'adapter-gp.cfg')}", "--pydial-root", str(work / "root"),
        "--contexts", "grid-default.jsonl", "-o", "refused.jsonl", "--no-progress", cwd=work,
    )  # fmt: skip
    assert r.returncode != 0
    assert "contexts are built on domain restaurant (behavsim-restaurants-rules.json)" in r.stderr
    assert "loads CamRestaurants" in r.stderr and "adapter-gp.cfg" in r.stderr
    assert not (work / "refused.jsonl").exists()


def test_camrestaurants_grid_answered(work):
    r = behavsim(
        "respond", "--policy", f"pydial:{cfg(work, 'adapter-gp.cfg')}:nlg=off", "--pydial-root", str(work / "root"),
        "--contexts", "grid-cr.jsonl", "-o", "gp.jsonl", "--no-progress", cwd=work,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    table = rows(work / "gp.jsonl")
    assert len(table) == 1296
    assert all(row.get("error") is None and row.get("act") for row in table)


def python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYDIAL_ROOT", None)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


_CACHE_CHECK = """
from behavsim import ContextSet, respond
from policies.adapters import PyDialAdapter

class Uncached(PyDialAdapter):
    def respond_one(self, belief, **kw):
        self._prompts.clear()
        return super().respond_one(belief, **kw)

cs = ContextSet.load("grid-cr-05.jsonl")
cfg = "root/env1-configs/adapter-gp.cfg"
cached, uncached = respond(PyDialAdapter(cfg, root="root"), cs), respond(Uncached(cfg, root="root"), cs)
assert cached.n_errors == 0 and all(cached.prompts), cached.errors[:3]
assert (cached.acts, cached.prompts) == (uncached.acts, uncached.prompts)
print("prompts", len(set(cached.prompts)))
"""


def test_prompts_cached_per_act_equal_uncached(work):
    r = python(_CACHE_CHECK, cwd=work)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("prompts ")
