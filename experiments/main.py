"""The main job: ``behavsim reproduce --config quick`` (the README's first command).

Trains the quick study's GP-SARSA trials (2 rewards x 3 seeds), builds C_gen and C_col, responds
every checkpoint, compares (convergence, seeds, rewards), analyses, plots and writes the HTML
report to ``runs/quick/report.html``. Extra arguments are passed to ``behavsim reproduce``.
"""

from __future__ import annotations

import sys

from behavsim.cli import console_main
from behavsim.cli import main as cli_main


def _args(argv: list[str] | None) -> list[str]:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--config" not in args:
        args = ["--config", "quick", *args]
    return ["reproduce", *args]


def main(argv: list[str] | None = None) -> int:
    return cli_main(_args(argv))


if __name__ == "__main__":
    console_main(_args(None))
