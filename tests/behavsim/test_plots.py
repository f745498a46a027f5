import numpy as np
import pandas as pd
import pytest

from behavsim import ConfigError, plots
from behavsim.analysis import score_agreement


def _pairs():
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "checkpoint": np.tile(np.arange(1, 5) * 1000, 3),
            "trial": np.repeat(["0", "1", "2"], 4),
            "pair": np.repeat([0, 1, 2], 4),
            "a": np.repeat(["t0", "t0", "t1"], 4),
            "b": np.repeat(["t1", "t2", "t2"], 4),
            "group": np.repeat(["TS vs IQ", "TS seeds", "IQ seeds"], 4),
        }
    )
    for s in ("TMR", "DMR", "CER", "CMR", "BLEU4"):
        df[s] = rng.random(len(df))
    df["TMR_lo"], df["TMR_hi"] = df.TMR - 0.05, df.TMR + 0.05
    return df


def _per_turn():
    return pd.DataFrame(
        {
            "pair": np.repeat([0, 1], 3),
            "a": "x",
            "b": np.repeat(["y", "z"], 3),
            "turn": np.tile([0, 1, 2], 2),
            "n": 4,
            "TMR": [1, 0.5, 0.2, 0, 0.5, 0.7],
            "DMR": [1, 1, 0.5, 1, 0.7, 0.8],
        }
    )


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


# ------------------------------------------------------------------- layout: no text overlaps
def _quick_per_turn():
    """Per-turn rows shaped like the quick study's (three seed pairs of long checkpoint ids, 16 turns)."""
    rng = np.random.default_rng(3)
    rows = []
    for _k, (i, j) in enumerate([(0, 1), (0, 2), (1, 2)]):
        for t in range(1, 17):
            rows.append(
                {
                    "pair": f"{i} vs {j}",
                    "a": f"iq-seed{i}-006000",
                    "b": f"iq-seed{j}-006000",
                    "turn": t,
                    "n": 5,
                    "TMR": rng.random(),
                    "DMR": rng.random(),
                }
            )
    return pd.DataFrame(rows)


def _quick_convergence():
    rng = np.random.default_rng(4)
    rows = []
    for r in ("ts", "iq"):
        for s in range(3):
            for cs in (f"ccol-{r}", "cgen"):
                for ck in range(2000, 7000, 1000):
                    v = rng.uniform(0.5, 1.0)
                    rows.append(
                        {
                            "context_set": cs,
                            "trial": f"{r}-seed{s}",
                            "checkpoint": ck,
                            "TMR": v,
                            "TMR_lo": v - 0.03,
                            "TMR_hi": min(1.0, v + 0.03),
                            "last": ck == 6000,
                        }
                    )
    return pd.DataFrame(rows)


LAYOUT_CASES = {
    "per_turn, a vs b titles": lambda p: plots.per_turn_plot(_quick_per_turn(), p),
    "per_turn, labels": lambda p: plots.per_turn_plot(
        _quick_per_turn().assign(lab=lambda d: "seeds " + d["pair"]),
        p,
        label="lab",
        title="TMR and DMR per system turn: pairs of iq trials at the last checkpoint of a rather long title",
    ),
    "per_turn, six pairs": lambda p: plots.per_turn_plot(
        pd.concat(
            [
                _quick_per_turn(),
                _quick_per_turn().assign(pair=lambda d: "x" + d["pair"], a=lambda d: d["a"].str.replace("iq", "ts")),
            ]
        ),
        p,
    ),
    "convergence, one panel": lambda p: plots.convergence_curves(_quick_convergence(), p, order=["ts-seed0"]),
    "convergence, panels": lambda p: plots.convergence_curves(
        _quick_convergence(),
        p,
        panel="context_set",
        order=["ts-seed0", "ts-seed1", "ts-seed2"],
        title="Convergence: TMR of checkpoint k vs k−1 of every trial, on each context set of the study",
    ),
}


@pytest.mark.parametrize("name", sorted(LAYOUT_CASES))
def test_no_text_overlaps_or_is_cut(tmp_path, figure_text, name):
    """Every text the per-turn and convergence figures draw (titles, panel titles, axis and tick
    labels, legend) has its own place inside the figure: matplotlib's text extents, drawn."""
    with figure_text.capture_figures() as figs:
        LAYOUT_CASES[name](tmp_path / "f")
    texts = figure_text.drawn_texts(figs[0], plots.RC)
    assert len(texts) > 10
    assert figure_text.overlapping(texts) == []
    assert figure_text.cut(figs[0], texts) == []
    if "per_turn" in name:  # the long ids of the issue ("…iq-seed1-006000iq-seed0-…") are whole, on their own lines
        heads = [t for t, _ in texts if "vs" in t]
        assert heads and all(len(line) <= 40 for h in heads for line in h.split("\n"))


def test_layout_check_finds_overlaps(figure_text, tmp_path):
    """The check itself: two titles drawn on top of each other and one beyond the edge are found."""
    fig = plots.new_figure(3, 2)
    ax = fig.add_subplot()
    ax.set_title("a title of some length")
    ax.text(0.5, 1.04, "another title here", transform=ax.transAxes, ha="center")
    fig.text(0.98, 0.5, "beyond the edge")
    with figure_text.capture_figures() as figs:
        plots.save_figure(fig, tmp_path / "x")
    texts = figure_text.drawn_texts(figs[0], plots.RC)
    assert [set(p) for p in figure_text.overlapping(texts)] == [{"a title of some length", "another title here"}]
    assert figure_text.cut(figs[0], texts) == ["beyond the edge"]


def test_order_puts_the_papers_rewards_first():
    assert plots.ordered(["iq", "ts", "b", 2, 10], ["ts", "iq"]) == ["ts", "iq", 2, 10, "b"]
    assert plots.ordered(["iq-seed1", "ts-seed0", "iq-seed0"]) == ["iq-seed0", "iq-seed1", "ts-seed0"]
    assert plots.wrap_title("ts-seed0-006000 vs ts-seed1-006000", 1.6, 8) == "ts-seed0-006000 vs\nts-seed1-006000"
