"""experiments.plots: the study's learning curves (drawn like every behavsim figure)."""

import numpy as np
import pandas as pd
import pytest

from behavsim import ConfigError
from experiments.plots import learning_curves


def _metrics():
    rng = np.random.default_rng(2)
    return pd.DataFrame(
        {
            "policy": "gp",
            "reward": np.repeat(["TS", "IQ"], 12),
            "seed": np.tile(np.repeat([0, 1, 2], 4), 2),
            "dialogues": np.tile(np.arange(1, 5) * 1000, 6),
            "tsr": rng.random(24),
            "aiq": 1 + 4 * rng.random(24),
            "adl": 3 + 3 * rng.random(24),
        }
    )


def test_learning_curves_write_png_and_deterministic_svg(tmp_path):
    png, svg = learning_curves(_metrics(), tmp_path / "one" / "learning")
    assert png == tmp_path / "one" / "learning.png" and svg == tmp_path / "one" / "learning.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "<dc:date>" not in text
    _, svg2 = learning_curves(_metrics(), tmp_path / "two" / "learning.svg")  # a suffix is replaced
    assert svg2.read_bytes() == svg.read_bytes()


def test_learning_curves_name_the_missing_metrics(tmp_path):
    with pytest.raises(ConfigError, match="none of the metrics"):
        learning_curves(_metrics()[["reward", "dialogues"]], tmp_path / "x")
