"""Every text score against people (``behavsim scores validate``): Pearson's r and Spearman's ρ
between each text score and the human labels of STS-B's test split (1,379 pairs), as Herbold's
Table 1 measures BLEU, BERTScore, S-BERT and STSScore, and the label-vs-score plots of its Figure 1.

The scores are behavsim's own, with their text-score rules (an identical pair scores 1.0): USE
cosine and angular, BLEU-4, BERTScore with its default model (all-MiniLM-L6-v2, layer 5) and with
the paper's (roberta-large, layer 17) when it is on the machine, STSScore, and every text score
that another package registers. A score whose model is not on the machine is skipped with a note.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import ModelNotAvailable
from ._stsb import STSBSplit, load_stsb
from .scores import Score, get_score, list_scores, score_info

__all__ = ["Validated", "Validation", "text_score_variants", "validate_text_scores", "correlations", "plot_validation"]

#: The paper's BERTScore model (Ultes & Maier used bert-score's default for English).
PAPER_BERT = {"model": "hf", "model_path": "roberta-large", "num_layers": 17}


@dataclass
class Validated:
    """One text score on the split: its row label, Pearson's r, Spearman's ρ, the pairs with a
    value (``n``), its signature and values."""

    score: str
    pearson: float
    spearman: float
    n: int
    signature: str
    values: np.ndarray = field(repr=False)


@dataclass
class Validation:
    """The rows, the scores skipped (label -> why) and the split."""

    split: STSBSplit
    rows: list[Validated]
    skipped: dict[str, str]


def correlations(values: np.ndarray, labels: np.ndarray) -> tuple[float, float, int]:
    """Pearson's r and Spearman's ρ (ties by average rank) over the pairs with a value, and their number."""
    from scipy.stats import pearsonr, spearmanr

    ok = ~np.isnan(values)
    n = int(ok.sum())
    if n < 3 or np.ptp(values[ok]) == 0:
        return math.nan, math.nan, n
    return float(pearsonr(values[ok], labels[ok])[0]), float(spearmanr(values[ok], labels[ok])[0]), n


def text_score_variants(
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[tuple[str, str, dict[str, Any]]]:
    """``(row label, score name, options)`` of every text score to validate: each registered text
    score with ``options`` (the command's model options), and BERTScore once more with the
    paper's model (unless the options choose a model of their own)."""
    options = options or {}
    out: list[tuple[str, str, dict[str, Any]]] = []
    for name in list_scores():
        if score_info(name).level != "text":
            continue
        out.append((name, name, dict(options.get(name, {}))))
        if name == "BERTScore" and "model_path" not in options.get(name, {}):
            cache = {k: v for k, v in options.get(name, {}).items() if k == "cache"}
            out.append(("BERTScore/roberta-large", name, {**PAPER_BERT, **cache}))
    return out


def validate_text_scores(
    variants: Sequence[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    split: str = "test",
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> Validation:
    """Each variant (:func:`text_score_variants` by default) on every pair of the split, against
    its labels; a variant whose model is not on the machine is skipped (its reason kept)."""
    data = load_stsb(split)
    rows: list[Validated] = []
    skipped: dict[str, str] = {}
    for label, name, opts in variants if variants is not None else text_score_variants():
        try:
            score: Score = get_score(name, **opts)
            if hasattr(getattr(score, "encoder", None), "progress"):
                score.encoder.progress = progress  # type: ignore[attr-defined]
            values = np.asarray(score.pairwise(data.first, data.second), dtype=np.float64)
        except ModelNotAvailable as exc:
            skipped[label] = str(exc)
            if say is not None:
                say(f"note: {label} skipped: {exc}")
            continue
        r, rho, n = correlations(values, data.labels)
        rows.append(Validated(label, r, rho, n, score.signature, values))
        if say is not None:
            say(f"{label}: r = {r:.3f}, rho = {rho:.3f} (n = {n})")
    return Validation(data, rows, skipped)


def plot_validation(result: Validation, path: str | os.PathLike) -> tuple[Path, Path]:
    """Herbold's Figure 1 for these scores: per score the human label (x) against the score (y),
    one panel each, with the line score = label / 5 that a score agreeing with people follows."""
    from .plots import WIDTH, new_figure, save_figure

    rows = result.rows
    cols = min(3, max(1, len(rows)))
    n_rows = max(1, math.ceil(len(rows) / cols))
    fig = new_figure(WIDTH, 2.1 * n_rows + 0.3)
    axes = fig.subplots(n_rows, cols, squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        if k >= len(rows):
            ax.set_visible(False)
            continue
        row = rows[k]
        ax.scatter(result.split.labels, row.values, s=2, alpha=0.25, linewidths=0, rasterized=True)
        ax.plot([0, 5], [0, 1], color="black", linewidth=0.8)
        ax.set_title(f"{row.score}\nr = {row.pearson:.2f}, ρ = {row.spearman:.2f}", fontsize=8)
        ax.set_xlim(-0.1, 5.1)
        if k % cols == 0:
            ax.set_ylabel("score")
        if k + cols >= len(rows):  # the lowest panel of its column
            ax.set_xlabel(f"human label (STS-B {result.split.name})")
        else:
            ax.tick_params(labelbottom=False)
    return save_figure(fig, path)
