import numpy as np
import pandas as pd
import pytest

from behavsim import ConfigError
from behavsim import plots
from behavsim.analysis import score_agreement


def _pairs():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"checkpoint": np.tile(np.arange(1, 5) * 1000, 3), "trial": np.repeat(["0", "1", "2"], 4),
                       "pair": np.repeat([0, 1, 2], 4), "a": np.repeat(["t0", "t0", "t1"], 4),
                       "b": np.repeat(["t1", "t2", "t2"], 4),
                       "group": np.repeat(["TS vs IQ", "TS seeds", "IQ seeds"], 4)})
    for s in ("TMR", "DMR", "CER", "CMR", "BLEU4"):
        df[s] = rng.random(len(df))
    df["TMR_lo"], df["TMR_hi"] = df.TMR - 0.05, df.TMR + 0.05
    return df


def _per_turn():
    return pd.DataFrame({"pair": np.repeat([0, 1], 3), "a": "x", "b": np.repeat(["y", "z"], 3),
                         "turn": np.tile([0, 1, 2], 2), "n": 4, "TMR": [1, .5, .2, 0, .5, .7],
                         "DMR": [1, 1, .5, 1, .7, .8]})


def _corr():
    return score_agreement(_pairs()[["pair", "TMR", "DMR", "CER", "CMR"]].assign(context=0))[0]


CASES = {
    "convergence": lambda p: plots.convergence_curves(_pairs(), p, score="TMR"),
    "pair_curves": lambda p: plots.pair_curves(_pairs(), p),
    "pair_bars": lambda p: plots.pair_bars(_pairs(), p, score=("TMR", "DMR")),
    "per_turn": lambda p: plots.per_turn_plot(_per_turn(), p),
    "heatmap": lambda p: plots.heatmap(_corr(), p, "Pearson correlation", vmin=-1, vmax=1),
}


def test_every_plot_function_is_covered():
    assert {"convergence_curves", "pair_curves", "pair_bars", "per_turn_plot", "heatmap"} <= set(plots.__all__)
    assert len(CASES) == 5


def test_score_axes_are_labelled_with_the_registered_titles():
    import behavsim

    for name in behavsim.list_scores():
        assert plots.axis_label(name) == behavsim.score_info(name).title
    assert plots.axis_label("turn") == "system turn" and plots.axis_label("other") == "other"
    assert plots.axis_label("turn", {"turn": "mine"}) == "mine"


@pytest.mark.parametrize("name", sorted(CASES))
def test_plot_writes_png_and_deterministic_svg(tmp_path, name):
    png, svg = CASES[name](tmp_path / "one" / name)
    assert png == tmp_path / "one" / f"{name}.png" and svg == tmp_path / "one" / f"{name}.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "<dc:date>" not in text
    _, svg2 = CASES[name](tmp_path / "two" / f"{name}.svg")  # a suffix is replaced
    assert svg2.read_bytes() == svg.read_bytes()


def test_plot_errors_name_the_missing_columns(tmp_path):
    with pytest.raises(ConfigError, match="trial"):
        plots.convergence_curves(_pairs().drop(columns="trial"), tmp_path / "x")
    with pytest.raises(ConfigError, match="USE_cos"):
        plots.pair_curves(_pairs(), tmp_path / "x", scores=["USE_cos"])
    with pytest.raises(ConfigError, match="empty"):
        plots.pair_bars(_pairs().iloc[:0], tmp_path / "x")
