"""A score of another package: a tiny distribution declaring the entry point ``behavsim.scores``
(``WordJaccard``, the Jaccard index of two prompts' word sets), installed with pip into a folder
of its own, which a subprocess finds on its ``PYTHONPATH``. behavsim is not changed for it."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

MODULE = '''
"""WordJaccard: |words(p) & words(p')| / |words(p) | words(p')|, lower-cased whitespace tokens."""
import numpy as np

from behavsim.scores import ScoreInfo, TextScore


class WordJaccard(TextScore):
    info = ScoreInfo("WordJaccard", "Jaccard index of the prompts' word sets", "text", title="word Jaccard")

    def _signature_parts(self):
        return ["tok:whitespace", "case:lower", "demo:1"]

    def _text_pairs(self, a, b):
        pairs, where = self._distinct_pairs(a, b)
        values = []
        for x, y in pairs:
            sx, sy = set(x.lower().split()), set(y.lower().split())
            values.append(len(sx & sy) / len(sx | sy))
        return np.array(values)[where]


class NotAScore:
    pass
'''

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "wordjaccard-demo"
version = "1.0"

[project.entry-points."behavsim.scores"]
WordJaccard = "wordjaccard_demo:WordJaccard"
Broken = "wordjaccard_demo_missing:Nothing"
"""


def word_jaccard(x: str, y: str) -> float:
    """The plugin's value, by hand."""
    if x == y:
        return 1.0
    sx, sy = set(x.lower().split()), set(y.lower().split())
    return len(sx & sy) / len(sx | sy)


def install_plugin(root: Path) -> dict[str, str]:
    """Build and install the distribution into ``root/site``; the environment of a subprocess
    that sees it (``PYTHONPATH`` with the folder added)."""
    src = root / "src"
    (src / "wordjaccard_demo").mkdir(parents=True)
    (src / "wordjaccard_demo" / "__init__.py").write_text(textwrap.dedent(MODULE))
    (src / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(src),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*filter(None, env.get("PYTHONPATH", "").split(os.pathsep)), str(site)])
    return env
