"""BiLSTM with self-attention interaction-quality estimator (after Ultes 2019, SIGdial).

torch is imported only inside this module's functions, so importing :mod:`policies.simulation.iq` (and
using the rule-based default) never loads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from policies.simulation.iq._corpus import LabelledDialogue, read_exchange_csv
from policies.simulation.iq._errors import IQDataError, IQModelError
from policies.simulation.iq._features import FEATURE_NAMES, exchange_features

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["BiLSTMIQEstimator"]

_FORMAT = "behavsim-iq-bilstm"
_FORMAT_VERSION = 1
_CONFIG_FILE = "config.json"
_WEIGHTS_FILE = "weights.pt"
_N_CLASSES = 5


def _torch():
    try:
        import torch  # optional heavy dependency, loaded on first use
    except ImportError as err:  # pragma: no cover - torch is a declared dependency
        raise IQModelError("the 'bilstm' IQ estimator needs PyTorch: pip install torch (CPU build is enough)") from err
    return torch


_NET_CLASS: Any = None


def _net_class():
    """The torch module, defined on first use so that torch stays a lazy import."""
    global _NET_CLASS
    if _NET_CLASS is not None:
        return _NET_CLASS
    torch = _torch()
    nn = torch.nn

    class _IQNet(nn.Module):
        """Exchange features -> BiLSTM -> additive self-attention pooling -> 5 logits."""

        def __init__(self, n_features: int, hidden: int, attention: int) -> None:
            super().__init__()
            self.lstm = nn.LSTM(n_features, hidden, batch_first=True, bidirectional=True)
            self.att_proj = nn.Linear(2 * hidden, attention)
            self.att_score = nn.Linear(attention, 1, bias=False)
            self.out = nn.Linear(2 * hidden, _N_CLASSES)

        def forward(self, x: Any, lengths: Any) -> Any:
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            h, _ = self.lstm(packed)
            h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=x.shape[1])
            e = self.att_score(torch.tanh(self.att_proj(h))).squeeze(-1)  # (B, L)
            mask = torch.arange(x.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
            e = e.masked_fill(~mask, float("-inf"))
            alpha = torch.softmax(e, dim=1)  # attention weights over exchanges 1..t
            context = torch.bmm(alpha.unsqueeze(1), h).squeeze(1)  # (B, 2H)
            return self.out(context)

    _NET_CLASS = _IQNet
    return _IQNet


@contextlib.contextmanager
def _single_thread() -> Iterator[None]:
    """Run torch on one intra-op thread, then restore the caller's setting.

    The float results of the LSTM kernels depend on the number of threads (measured: 1 and 2
    threads give different weights after training), and for a model this small one thread is
    also the fastest, above all on a busy machine.  One thread makes results the same on
    every machine.
    """
    torch = _torch()
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def _deterministic(seed: int) -> Iterator[None]:
    """Seeded, deterministic, single-threaded torch section; restores the caller's global state."""
    torch = _torch()
    was = torch.are_deterministic_algorithms_enabled()
    with torch.random.fork_rng(devices=[]), _single_thread():
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was)


def _prefix_samples(dialogues: list[LabelledDialogue]) -> tuple[list[np.ndarray], np.ndarray]:
    """Every prefix of every dialogue with the label of its last exchange."""
    seqs: list[np.ndarray] = []
    labels: list[int] = []
    for d in dialogues:
        feats = exchange_features(list(d.exchanges))
        for t in range(1, len(d.exchanges) + 1):
            seqs.append(feats[:t])
            labels.append(d.labels[t - 1] - 1)
    return seqs, np.asarray(labels, dtype=np.int64)


def _select(dialogues: list[LabelledDialogue], ids: Collection[str] | None, path: Path) -> list[LabelledDialogue]:
    if ids is None:
        return dialogues
    ids = set(ids)
    unknown = ids - {d.dialogue_id for d in dialogues}
    if unknown:
        raise IQDataError(f"{path}: dialogue id(s) not in the file: {', '.join(sorted(unknown)[:5])}")
    return [d for d in dialogues if d.dialogue_id in ids]


class BiLSTMIQEstimator:
    """Interaction quality 1..5 from a BiLSTM with self-attention over exchange parameters.

    After Ultes (2019), "Improving interaction quality estimation with BiLSTMs and the impact
    on dialogue policy learning", SIGdial: the parameters of exchanges ``1..t``
    (:func:`~policies.simulation.iq.exchange_features`, standardised with the training set's mean and
    standard deviation) are read by a bidirectional LSTM; additive self-attention
    (``alpha = softmax(v . tanh(W h_i + b))``) pools its outputs into one vector, and a linear
    layer with softmax gives the distribution over IQ 1..5; the estimate is its arg-max.
    Trained with cross-entropy on every prefix of every dialogue of an exchange-level CSV
    corpus (format: :mod:`policies.simulation.iq._corpus`), Adam, full-size mini-batches shuffled by a
    seeded local generator.  CPU only, one intra-op thread (results do not depend on the
    machine's core count), deterministic for a given seed.

    Differences from Ultes (2019), stated so that nobody mistakes one for the other: no LEGO
    data (the project ships only a synthetic corpus, see ``policies/simulation/data/iq/``); the feature
    set is :data:`~policies.simulation.iq.FEATURE_NAMES`, not the full LEGO parameter set; sizes are small.
    """

    name: ClassVar[str] = "bilstm"
    bounds: ClassVar[tuple[int, int]] = (1, 5)
    higher_is_better: ClassVar[bool] = True
    needs_model: ClassVar[bool] = True

    def __init__(self, *, hidden: int = 16, attention: int = 16, lr: float = 0.01, batch_size: int = 64) -> None:
        for pname, value in (("hidden", hidden), ("attention", attention), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{pname}: expected a positive integer, got {value!r}")
        if not isinstance(lr, (int, float)) or not lr > 0:
            raise ValueError(f"lr: expected a positive number, got {lr!r}")
        self.config: dict[str, Any] = {
            "format": _FORMAT,
            "format_version": _FORMAT_VERSION,
            "feature_names": list(FEATURE_NAMES),
            "hidden": hidden,
            "attention": attention,
            "lr": float(lr),
            "batch_size": batch_size,
            "mean": None,
            "std": None,
            "trained": None,  # filled by fit: file, sha256, dialogues, epochs, seed
        }
        self._net: Any = None

    # -- metadata ---------------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        return self._net is not None

    @property
    def signature(self) -> str:
        """Everything that changes the value, down to a hash of the weights."""
        self._require_fitted()
        c = self.config
        t = c["trained"] or {}
        return (
            f"iq:bilstm|v:{c['format_version']}|hidden:{c['hidden']}|att:{c['attention']}"
            f"|feats:{len(c['feature_names'])}|data:{str(t.get('sha256', 'none'))[:12]}"
            f"|epochs:{t.get('epochs')}|seed:{t.get('seed')}|weights:{self._weights_digest()[:12]}"
        )

    def _weights_digest(self) -> str:
        h = hashlib.sha256()
        for key, tensor in sorted(self._net.state_dict().items()):
            h.update(key.encode())
            h.update(tensor.detach().contiguous().numpy().tobytes())
        return h.hexdigest()

    def _require_fitted(self) -> None:
        if self._net is None:
            raise IQModelError("this BiLSTMIQEstimator is not trained: call fit(csv_path, ...) or load(path)")

    def _build(self) -> None:
        c = self.config
        self._net = _net_class()(len(c["feature_names"]), c["hidden"], c["attention"])

    # -- training ---------------------------------------------------------------------------
    def fit(
        self,
        csv_path: str | Path,
        epochs: int = 40,
        seed: int = 0,
        *,
        dialogues: Collection[str] | None = None,
    ) -> "BiLSTMIQEstimator":
        """Train on an exchange-level CSV corpus; ``dialogues`` restricts it to those ids.

        Deterministic: the same file, arguments and seed give bit-identical weights on the
        same machine and torch version.  The global torch random state is left untouched.
        """
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs: expected a positive integer, got {epochs!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed: expected an integer, got {seed!r}")
        torch = _torch()
        path = Path(csv_path)
        data = _select(read_exchange_csv(path), dialogues, path)
        if not data:
            raise IQDataError(f"{path}: no dialogues to train on (dialogues= selected none)")
        seqs, labels = _prefix_samples(data)
        stacked = np.concatenate([s[-1:] for s in seqs])  # each exchange's row, once
        mean = stacked.mean(axis=0)
        std = stacked.std(axis=0)
        std[std < 1e-6] = 1.0
        self.config["mean"] = [float(v) for v in mean]
        self.config["std"] = [float(v) for v in std]
        x, lengths = self._batch(seqs)
        y = torch.from_numpy(labels)
        c = self.config
        with _deterministic(seed):
            self._build()
            net = self._net
            gen = torch.Generator().manual_seed(seed)
            opt = torch.optim.Adam(net.parameters(), lr=c["lr"])
            loss_fn = torch.nn.CrossEntropyLoss()
            net.train()
            for _ in range(epochs):
                order = torch.randperm(len(y), generator=gen)
                for start in range(0, len(y), c["batch_size"]):
                    idx = order[start : start + c["batch_size"]]
                    opt.zero_grad()
                    loss = loss_fn(net(x[idx], lengths[idx]), y[idx])
                    loss.backward()
                    opt.step()
            net.eval()
        self.config["trained"] = {
            "file": path.name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "dialogues": len(data),
            "exchanges": int(len(y)),
            "epochs": epochs,
            "seed": seed,
        }
        return self

    def _batch(self, seqs: list[np.ndarray]) -> tuple["torch.Tensor", "torch.Tensor"]:
        torch = _torch()
        mean = np.asarray(self.config["mean"], dtype=np.float64)
        std = np.asarray(self.config["std"], dtype=np.float64)
        max_len = max(len(s) for s in seqs)
        x = np.zeros((len(seqs), max_len, len(mean)), dtype=np.float32)
        for i, s in enumerate(seqs):
            x[i, : len(s)] = (s - mean) / std
        return torch.from_numpy(x), torch.tensor([len(s) for s in seqs], dtype=torch.int64)

    # -- inference --------------------------------------------------------------------------
    def predict_proba(self, exchanges: list[dict]) -> np.ndarray:
        """Probabilities of IQ 1..5 after the last exchange (length-5 float array)."""
        self._require_fitted()
        torch = _torch()
        x, lengths = self._batch([exchange_features(exchanges)])
        with torch.no_grad(), _single_thread():
            return torch.softmax(self._net(x, lengths), dim=-1)[0].numpy().astype(np.float64)

    def estimate(self, exchanges: list[dict]) -> int:
        """IQ in 1..5 after the last of ``exchanges`` (the full history, turns 1..T)."""
        return int(np.argmax(self.predict_proba(exchanges))) + 1

    def estimate_all(self, exchanges: list[dict]) -> list[int]:
        """IQ after every exchange 1..T of one dialogue, in one batch."""
        self._require_fitted()
        torch = _torch()
        feats = exchange_features(exchanges)
        x, lengths = self._batch([feats[:t] for t in range(1, len(feats) + 1)])
        with torch.no_grad(), _single_thread():
            return [int(v) + 1 for v in self._net(x, lengths).argmax(dim=-1).tolist()]

    def evaluate(self, csv_path: str | Path, *, dialogues: Collection[str] | None = None) -> dict[str, float]:
        """Exchange-level accuracy, unweighted average recall (UAR) and the majority baseline.

        UAR, the mean of the per-class recalls over the classes present, is the measure the
        IQ literature reports (Schmitt and Ultes 2015; Ultes 2019).
        """
        path = Path(csv_path)
        data = _select(read_exchange_csv(path), dialogues, path)
        gold: list[int] = []
        pred: list[int] = []
        for d in data:
            gold.extend(d.labels)
            pred.extend(self.estimate_all(list(d.exchanges)))
        g = np.asarray(gold)
        p = np.asarray(pred)
        classes = np.unique(g)
        uar = float(np.mean([np.mean(p[g == k] == k) for k in classes]))
        majority = float(np.max(np.bincount(g)) / len(g))
        return {"accuracy": float(np.mean(g == p)), "uar": uar, "majority": majority, "n": float(len(g))}

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write ``config.json`` and ``weights.pt`` (a plain state_dict) into directory ``path``."""
        self._require_fitted()
        torch = _torch()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        config = dict(self.config, weights_sha256=self._weights_digest())
        (path / _CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        torch.save({k: v.detach().clone() for k, v in self._net.state_dict().items()}, path / _WEIGHTS_FILE)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "BiLSTMIQEstimator":
        """Load a model written by :meth:`save` (tensors only: ``torch.load(weights_only=True)``)."""
        torch = _torch()
        path = Path(path)
        cfg_file, w_file = path / _CONFIG_FILE, path / _WEIGHTS_FILE
        for f in (cfg_file, w_file):
            if not f.is_file():
                raise IQModelError(f"{path}: not a saved BiLSTM IQ model ({f.name} is missing)")
        try:
            config = json.loads(cfg_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise IQModelError(f"{cfg_file}: unreadable model config ({err})") from None
        if config.get("format") != _FORMAT or config.get("format_version") != _FORMAT_VERSION:
            raise IQModelError(
                f"{cfg_file}: expected format {_FORMAT!r} version {_FORMAT_VERSION}, "
                f"got {config.get('format')!r} version {config.get('format_version')!r}"
            )
        if config.get("feature_names") != list(FEATURE_NAMES):
            raise IQModelError(
                f"{cfg_file}: the model was trained on other exchange features than this code computes "
                "(feature_names differ); retrain it"
            )
        expected_digest = config.pop("weights_sha256", None)
        try:
            est = cls(
                hidden=config["hidden"], attention=config["attention"], lr=config["lr"], batch_size=config["batch_size"]
            )
            if len(config["mean"]) != len(FEATURE_NAMES) or len(config["std"]) != len(FEATURE_NAMES):
                raise ValueError("mean/std do not have one value per feature")
        except (KeyError, TypeError, ValueError) as err:
            raise IQModelError(f"{cfg_file}: incomplete or invalid model config ({err!s})") from None
        est.config = config
        est._build()
        try:
            state = torch.load(w_file, weights_only=True, map_location="cpu")
            est._net.load_state_dict(state)
        except Exception as err:  # torch raises several types for bad files
            raise IQModelError(f"{w_file}: cannot load the weights ({err})") from None
        est._net.eval()
        if expected_digest is not None and est._weights_digest() != expected_digest:
            raise IQModelError(f"{w_file}: weights do not match the digest recorded in {_CONFIG_FILE}")
        return est

    def __repr__(self) -> str:
        state = "trained" if self.is_fitted else "untrained"
        return f"BiLSTMIQEstimator(hidden={self.config['hidden']}, attention={self.config['attention']}, {state})"
