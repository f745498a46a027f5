"""STSScore: the similarity of two prompts as a model trained on human judgements predicts it.

Herbold ("Semantic similarity prediction is better than other semantic similarity measures")
scores a text pair with a cross-encoder fine-tuned on STS-B, whose labels are human ratings from
0 (unrelated) to 5 (same meaning): score = prediction / 5. Here the model is a local Hugging Face
model: by default the one ``behavsim scores train-sts`` fine-tunes from the offline
all-MiniLM-L6-v2 weights into the cache, or any other one given as a folder or a name in the local
Hugging Face cache (``model_path``, ``--sts-model``), such as the paper's
``WillHeld/roberta-base-stsb`` if it is on the machine. Nothing is downloaded. Two kinds are read:

- **A bi-encoder** (``train-sts``'s default; any folder in sentence-transformers' format, told by
  its ``modules.json``, with mean or [CLS] pooling): each prompt p gets one embedding e(p), its
  pooled last hidden states, and the value of (p, p') is ``clip(cos(e(p), e(p')), 0, 1)``. Trained
  so that the cosine is the label / 5, the cosine *is* the prediction / 5. **Symmetric by
  construction** (the dot product of two unit vectors adds the same products in the same order
  either way). Cost: one forward pass per distinct prompt, not per pair.
- **A cross-encoder** (a sequence-pair regression model with one output, ``train-sts
  --architecture cross``): ``(σ(f(p, p')) + σ(f(p', p))) / 2`` with f the model's output for
  ``[CLS] p [SEP] p' [SEP]`` and σ the sigmoid, for a model that learnt the label / 5 as a
  probability (``train-sts --architecture cross``'s default loss, or any model whose ``config.json``
  names the sigmoid as its activation, as sentence-transformers' cross-encoders do:
  ``sbert_ce_default_activation_function`` or ``sentence_transformers.activation_fn``), and
  ``clip((f(p, p') + f(p', p)) / 2 / 5, 0, 1)`` for a model that predicts the 0-5 label itself
  (``--loss mse``; the paper's ``WillHeld/roberta-base-stsb``). It reads its two texts in order, so
  the score is made symmetric by averaging both orders (exactly: the two values are added in either
  order to the same float). Cost: two forward passes per distinct prompt pair.

The text scores' rules hold (missing -> NaN, identical -> 1.0, empty against non-empty -> 0.0).
Predictions (a bi-encoder's embeddings, a cross-encoder's pair outputs) are memoised in memory and
on disk (the embedding cache, under the model's signature). Determinism: as for the token encoders,
the sequences are run in batches of one fixed shape (``batch_size`` sequences of one token length,
the batch filled up by repeating its first) on one thread, so a value never depends on which
other prompts are scored with it, nor on the process.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._cache import default_cache_dir
from .._encoders import ENCODER_THREADS, Memo, local_hf_model, model_digest
from .._errors import ConfigError, ModelNotAvailable
from .._util import package_version
from ._base import ScoreInfo, TextScore

__all__ = [
    "STSScore",
    "BiEncoder",
    "CrossEncoder",
    "sts_model_dir",
    "STS_MODEL_NAME",
    "TRAIN_COMMAND",
    "TRAINING_RECORD",
]

#: The folder name of the model ``behavsim scores train-sts`` makes in the cache.
STS_MODEL_NAME = "stsscore-minilm-l6"

#: The command that makes the default model.
TRAIN_COMMAND = "behavsim scores train-sts"

#: The file in which ``behavsim scores train-sts`` records how a model was trained (left out of
#: the model's digest: it holds the training's times, and the same weights score the same).
TRAINING_RECORD = "behavsim-sts.json"

#: STS-B's labels run from 0 to 5.
LABEL_MAX = 5.0


def sts_model_dir() -> Path:
    """Where ``behavsim scores train-sts`` puts its model by default and STSScore looks for it:
    ``<cache>/models/stsscore-minilm-l6`` (the cache: ``$BEHAVSIM_CACHE_DIR`` or ``~/.cache/behavsim``)."""
    return default_cache_dir() / "models" / STS_MODEL_NAME


def _resolve(model_path: str | os.PathLike | None) -> tuple[str, str]:
    """``(local folder, label)`` of the model STSScore would use; ModelNotAvailable in one line."""
    if model_path is None:
        folder = sts_model_dir()
        if not (folder / "config.json").is_file():
            raise ModelNotAvailable(
                f"STSScore needs a model trained on STS-B and there is none at {folder}: `{TRAIN_COMMAND}` "
                "makes one there (offline, on CPU), or give one with --sts-model DIR (model_path=DIR)"
            )
        return str(folder), STS_MODEL_NAME
    local = local_hf_model(str(model_path))
    return local, os.path.basename(os.path.normpath(str(model_path)))


def _sigmoid_output(folder: Path) -> bool:
    """Whether the model's ``config.json`` names the sigmoid as its output's activation
    (sentence-transformers' keys for its cross-encoders; ``train-sts``'s default model)."""
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # loading the model names the problem
    st = cfg.get("sentence_transformers")
    named = cfg.get("sbert_ce_default_activation_function") or (
        st.get("activation_fn") if isinstance(st, dict) else None
    )
    return isinstance(named, str) and named.endswith("Sigmoid")


class _LocalModel:
    """What STSScore's two kinds of model share: a local folder, a label, batches of one fixed shape
    on one thread, a memo in memory and on disk under :attr:`signature`, loaded on first use."""

    #: The class of ``transformers`` that loads the model, and what the model is called in errors.
    auto_class = "AutoModel"
    what = "model"

    def __init__(
        self,
        model_path: str,
        label: str,
        cache: bool | str | os.PathLike = True,
        batch_size: int = 16,
        max_length: int = 128,
        device: str | None = None,
    ):
        self.model_path = model_path
        self.label = label
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"STSScore batch_size must be a positive integer, got {batch_size!r}")
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 8:
            raise ConfigError(f"STSScore max_length must be an integer >= 8, got {max_length!r}")
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device or "cpu"
        self.progress = False
        self._memo = Memo(cache)
        self._digest: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None

    def _kind(self) -> str:
        """The part of the signature that names how the model is read ("" for a cross-encoder)."""
        return ""

    @property
    def signature(self) -> str:
        """Names the model's content (a digest of its files), how it is read, the batch shape and
        the libraries."""
        if self._digest is None:
            self._digest = model_digest(Path(self.model_path), whole=1 << 30, exclude=(TRAINING_RECORD,))
        return (
            f"{self.label}@{self._digest}{self._kind()}|batch:{self.batch_size}|max_len:{self.max_length}"
            f"|transformers-{package_version('transformers')}|torch-{package_version('torch')}"
        )

    def _load(self) -> None:
        if self._model is not None:
            return
        # optional dependency, and seconds to import: only when a text is scored
        import transformers

        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_path)
            model = getattr(transformers, self.auto_class).from_pretrained(self.model_path)
        except (OSError, ValueError) as exc:
            raise ModelNotAvailable(
                f"STSScore: no {self.what} could be loaded from {self.model_path}: {' '.join(str(exc).split())}"
            ) from exc
        self._check(model)
        model.eval()
        model.to(self.device)
        self._model = model

    def _check(self, model: Any) -> None:
        """Raise ConfigError if ``model`` is not one this class can read."""

    def _run(self, ids: Sequence[Sequence[int]], types: Sequence[Sequence[int]] | None, desc: str, head) -> list:
        """``head(output, n_rows)`` of each fixed-shape batch of ``ids``, per sequence, in order of ``ids``."""
        import torch

        self._load()
        out: list = [None] * len(ids)
        batches = _fixed_shape_batches(ids, self.batch_size)
        it: Any = batches
        if self.progress and len(batches) > 10:
            from tqdm.auto import tqdm

            it = tqdm(batches, desc=desc, unit="batch")
        threads = torch.get_num_threads()
        torch.set_num_threads(ENCODER_THREADS)  # as the token encoders: the values must not depend on the process
        try:
            with torch.no_grad():
                for chunk in it:
                    rows = chunk + [chunk[0]] * (self.batch_size - len(chunk))
                    inputs = {"input_ids": torch.tensor([ids[k] for k in rows], dtype=torch.long, device=self.device)}
                    inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
                    if types is not None:
                        inputs["token_type_ids"] = torch.tensor(
                            [types[k] for k in rows], dtype=torch.long, device=self.device
                        )
                    values = head(self._model(**inputs))
                    for row, k in enumerate(chunk):
                        out[k] = values[row]
        finally:
            torch.set_num_threads(threads)
        return out


class CrossEncoder(_LocalModel):
    """A local sequence-pair regression model (Hugging Face format, one output), run as STSScore
    runs it: :meth:`predict` gives both orders' predictions of each pair, memoised in memory and,
    unless ``cache=False``, on disk under :attr:`signature`."""

    auto_class = "AutoModelForSequenceClassification"
    what = "sequence-pair model"

    @functools.cached_property
    def sigmoid(self) -> bool:
        """Whether the output is read through the sigmoid (the model's ``config.json`` says so)."""
        return _sigmoid_output(Path(self.model_path))

    def _check(self, model: Any) -> None:
        if model.config.num_labels != 1:
            raise ConfigError(
                f"STSScore needs a regression model with one output (STS-B's 0-5 label); {self.model_path} has "
                f"{model.config.num_labels} labels"
            )

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """``(n, 2)`` float32: the model's prediction for ``(a, b)`` and for ``(b, a)`` of each pair."""
        keys = [json.dumps([a, b], ensure_ascii=False) for a, b in pairs]
        if not keys:
            return np.zeros((0, 2), dtype=np.float32)
        return np.stack(self._memo.lookup(self.signature, keys, self._compute))

    def _compute(self, keys: list[str]) -> list[np.ndarray]:
        self._load()
        pairs = [json.loads(k) for k in keys]
        seqs = [(a, b) for a, b in pairs] + [(b, a) for a, b in pairs]
        enc = self._tokenizer([s[0] for s in seqs], [s[1] for s in seqs], truncation=True, max_length=self.max_length)
        out = self._run(
            enc["input_ids"],
            enc.get("token_type_ids"),
            "STSScore pairs",
            lambda output: output.logits[:, 0].float().cpu().numpy(),
        )
        n = len(pairs)
        return [np.array([out[k], out[n + k]], dtype=np.float32) for k in range(n)]


def _bi_encoder_pooling(folder: Path) -> str | None:
    """``"mean"`` or ``"cls"`` for a folder in sentence-transformers' format (``modules.json`` with a
    Pooling module), None for any other folder (a cross-encoder); ConfigError for a pooling STSScore
    does not compute."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    except OSError:
        return None
    except ValueError as exc:
        raise ConfigError(f"STSScore: {folder}/modules.json is not JSON ({exc})") from None
    pools = [m for m in modules if isinstance(m, dict) and str(m.get("type", "")).endswith(".Pooling")]
    if not pools:
        return None
    try:
        cfg = json.loads((folder / str(pools[0].get("path", "")) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"STSScore: the pooling of the bi-encoder {folder} cannot be read ({exc})") from None
    modes = sorted(k[len("pooling_mode_") :] for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True)
    if modes == ["mean_tokens"]:
        return "mean"
    if modes == ["cls_token"]:
        return "cls"
    raise ConfigError(f"STSScore computes mean or [CLS] pooling; the bi-encoder {folder} pools by {modes}")


class BiEncoder(_LocalModel):
    """A local model in sentence-transformers' format, run as STSScore runs it: :meth:`embed` gives
    each text's unit-length pooled embedding, memoised in memory and, unless ``cache=False``, on
    disk under :attr:`signature`."""

    what = "bi-encoder"

    def __init__(
        self,
        model_path: str,
        label: str,
        pooling: str,
        cache: bool | str | os.PathLike = True,
        batch_size: int = 16,
        device: str | None = None,
    ):
        super().__init__(model_path, label, cache, batch_size, _max_seq_length(Path(model_path)), device)
        self.pooling = pooling

    def _kind(self) -> str:
        return f"|bi:{self.pooling}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(n, d)`` float32 unit-length embeddings of ``texts``."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(self._memo.lookup(self.signature, list(texts), self._compute))

    def _compute(self, texts: list[str]) -> list[np.ndarray]:
        import torch

        self._load()
        ids = self._tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]

        def pooled(output: Any) -> np.ndarray:
            hidden = output.last_hidden_state
            # one length per batch, no padding: the mean over the tokens is sentence-transformers' mean pooling
            emb = hidden.mean(dim=1) if self.pooling == "mean" else hidden[:, 0]
            return torch.nn.functional.normalize(emb.float(), dim=-1).cpu().numpy()

        return [np.array(v, dtype=np.float32) for v in self._run(ids, None, "STSScore prompts", pooled)]


def _max_seq_length(folder: Path) -> int:
    """``max_seq_length`` of ``sentence_bert_config.json`` (default 128)."""
    try:
        value = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return 128
    return int(value) if isinstance(value, int) and value >= 8 else 128


def _fixed_shape_batches(ids: Sequence[Sequence[int]], batch_size: int) -> list[list[int]]:
    """Indices of ``ids`` in batches of one token length each, shortest first."""
    by_len: dict[int, list[int]] = {}
    for k, x in enumerate(ids):
        by_len.setdefault(len(x), []).append(k)
    return [
        members[s : s + batch_size]
        for length in sorted(by_len)
        for members in [by_len[length]]
        for s in range(0, len(members), batch_size)
    ]


class STSScore(TextScore):
    """STS-B similarity predicted by a model trained on it: the cosine of a bi-encoder's two
    embeddings clipped to [0, 1] (``train-sts``'s default; symmetric by construction), or a
    cross-encoder's mean of both orders (its output through the sigmoid, or / 5 clipped); see the
    module doc.

    ``model_path``: a local Hugging Face model (a folder, or a name in the local Hugging Face cache):
    in sentence-transformers' format a bi-encoder, otherwise a sequence-pair regression model; default: the model ``behavsim scores train-sts`` made in the
    cache (:func:`sts_model_dir`). Without one, :class:`~behavsim.ModelNotAvailable` names the
    command that makes it. ``cache``: the on-disk memo of the pairs' predictions (True: the
    default cache, False: none, or a folder).
    """

    info = ScoreInfo(
        "STSScore",
        "STS-B similarity predicted by a model trained on it: a bi-encoder's cosine, or a cross-encoder's mean of both orders, in [0,1]",
        "text",
        needs_model=True,
        title="STSScore",
    )

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        cache: bool | str | os.PathLike = True,
        batch_size: int = 16,
        device: str | None = None,
    ):
        local, label = _resolve(model_path)
        pooling = _bi_encoder_pooling(Path(local))
        self.model: BiEncoder | CrossEncoder
        if pooling is not None:
            self.model = BiEncoder(local, label, pooling, cache=cache, batch_size=batch_size, device=device)
        else:
            self.model = CrossEncoder(local, label, cache=cache, batch_size=batch_size, device=device)
        self.encoder = self.model  # the engine switches the progress bar of a score's ``encoder``
        self._options = {"model_path": None if model_path is None else str(model_path), "batch_size": batch_size}

    @classmethod
    def model_summary(cls, **options: Any) -> str:
        path = options.get("model_path")
        folder = sts_model_dir()
        if path is not None or (folder / "config.json").is_file():
            where = Path(str(path)) if path is not None else folder
            try:
                kind = "cross-encoder" if _bi_encoder_pooling(where) is None else "bi-encoder"
            except ConfigError:
                kind = "bi-encoder (of a pooling STSScore does not compute)"
            return f"{kind} {where if path is None else path}"
        return f"none yet: `{TRAIN_COMMAND}` trains one into {folder}"

    def options(self) -> dict[str, Any]:
        return dict(self._options)

    def _signature_parts(self) -> list[str]:
        if isinstance(self.model, BiEncoder):
            return [f"model:{self.model.signature}", "input:[CLS]p[SEP]", "sym:cosine", "scale:clip:0-1"]
        scale = "scale:sigmoid" if self.model.sigmoid else "scale:/5,clip:0-1"
        return [f"model:{self.model.signature}", "input:[CLS]a[SEP]b[SEP]", "sym:mean-of-orders", scale]

    def _text_pairs(self, a: list[str], b: list[str]) -> np.ndarray:
        pairs, where = self._distinct_pairs(a, b)
        if isinstance(self.model, BiEncoder):
            texts = sorted({t for pair in pairs for t in pair})
            if not texts:
                return np.zeros(len(where))
            index = {t: i for i, t in enumerate(texts)}
            emb = self.model.embed(texts).astype(np.float64)
            first = emb[[index[x] for x, _ in pairs]]
            second = emb[[index[y] for _, y in pairs]]
            return np.clip((first * second).sum(axis=1), 0.0, 1.0)[where]
        pred = self.model.predict(pairs).astype(np.float64)
        if self.model.sigmoid:
            unit = 0.5 * (1.0 + np.tanh(pred / 2.0))  # the sigmoid, without overflow
            values = (unit[:, 0] + unit[:, 1]) / 2.0
        else:
            values = np.clip((pred[:, 0] + pred[:, 1]) / 2.0 / LABEL_MAX, 0.0, 1.0)
        return values[where]
