"""Training behavsim's end-to-end model by imitation (``behavsim train --policy e2e``).

1. **Teacher dialogues** (:mod:`._data`): the teacher plays ``dialogues`` seeded dialogues in the
   environment; every system turn gives one example — the history, the teacher's belief-span
   label, the database result, the teacher's act and prompt (:mod:`._format`).
2. **Tokenizer** (:mod:`._tokenizer`): a word-level vocabulary of these texts and the ontology.
3. **Model**: a GPT-2 configuration (``transformers.GPT2LMHeadModel``, decoder-only; GELU, no
   dropout) at a small size, initialised from ``seed``.
4. **Training**: next-token cross-entropy on the belief span, the act and the response (not on
   the history or the database result) and, with ``chat`` (the default), on the chat mode's act
   after the turns as said (:mod:`._tokenizer`; one more part of each dialogue's row), AdamW
   (PyTorch's fused kernel), a linear warm-up then a cosine decay of the learning
   rate; an epoch visits the teacher's dialogues in an order drawn from ``SeedSequence([seed, epoch])``,
   ``batch_dialogues`` dialogues (all their contexts) per step.
5. **Checkpoints**: every ``checkpoint_every`` dialogues trained on (repeats across epochs
   counted), a folder ``ckpt-NNNNNN/`` in Hugging Face's format — ``config.json``,
   ``model.safetensors``, the tokenizer with its chat template — plus ``behavsim-e2e.json`` (what
   behavsim needs to answer with it), with ``chat`` the prompt template of the chat mode
   (``behavsim-prompt.toml``: ``hf:DIR`` and ``openai:`` use it) and the optimizer's state (``optimizer.safetensors``,
   ``trainer_state.json``), from which a run resumes to the same bytes.

Determinism: the thread count is fixed (``threads``, default 2) and PyTorch's deterministic
algorithms are on while training (both restored afterwards); the same configuration gives
byte-identical checkpoints, and a run resumed from any checkpoint ends with the same bytes as one
that was never interrupted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from behavsim import ConfigError, ContextSet, ResponseTable
from behavsim.io import atomic_path
from behavsim.policy import parse_spec
from policies.corpora import read_unified
from policies.e2e._corpus import CORPUS_DEFAULTS, WIZARD_ID, corpus_data, corpus_dialogues
from policies.e2e._data import play_corrected, play_teacher
from policies.e2e._format import (
    SPECIAL,
)
from policies.e2e._model import LIMITS, MODEL_FILE, MODEL_FORMAT, MODEL_VERSION, E2EModel, special_ids
from policies.e2e._rows import DialogueTexts, TrainRow, all_texts, chat_row, dialogue_texts, encoder, main_row
from policies.e2e._tokenizer import build_tokenizer
from policies.simulation.domain import resolve_domain

__all__ = [
    "E2EConfig",
    "corpus_e2e_config",
    "train_e2e",
    "list_e2e_checkpoints",
    "RUN_FILE",
    "BEST_FILE",
    "NO_ACT_TURNS",
]

#: The chat mode's prompt template (``behavsim-prompt``, see :mod:`policies.llm._prompts`),
#: written into every checkpoint folder of a run with ``chat``: the folder's default template for
#: ``hf:DIR`` and ``openai:DIR@URL``.
CHAT_PROMPT_FILE = "behavsim-prompt.toml"
CHAT_PROMPT = """\
# The chat mode of behavsim's end-to-end model (written by `behavsim train --policy e2e`): the dialogue
# so far as chat turns; the model answers the act, in behavsim's syntax, on one line.
format = "behavsim-prompt"
version = 1
name = "e2e-chat"
description = "The dialogue so far as chat turns; the end-to-end model's chat mode answers the act."
needs_history = true

[answer]
utterance = false

[[messages]]
role = "history"
"""


#: What a configuration written before these settings existed meant by their absence (the corpus
#: settings are left out of a teacher run's configuration: its files are as they were before them).
_CORPUS = {"corpus": None, "split": "train", "validation": "validation", "patience": 2, "no_act_turns": "words"}
_ABSENT = {"dagger_dialogues": 0, "dagger_from": 1, "belief_weight": 1.0, "dropout": 0.0, **_CORPUS}
#: What a corpus run makes of a turn without an act (:attr:`E2EConfig.no_act_turns`).
NO_ACT_TURNS = ("empty", "words")
#: ``dagger_dialogues``' default: a tenth of the teacher's dialogues per round.
AUTO = -1

#: The run folder's record of its configuration (a folder holding another run is refused).
RUN_FILE = "e2e-run.json"
_CKPT_PREFIX = "ckpt-"


@dataclass(frozen=True)
class E2EConfig:
    """Everything that determines a training run (stored in ``e2e-run.json`` and every checkpoint)."""

    teacher: str = "handcrafted"
    seed: int = 0
    dialogues: int = 2000
    epochs: int = 5
    checkpoint_every: int = 0  # 0: once per epoch (every ``dialogues``)
    batch_dialogues: int = 2
    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4
    n_positions: int = 1024
    lr: float = 3e-3
    warmup_steps: int = 50
    final_lr_ratio: float = 0.05
    weight_decay: float = 0.0
    threads: int = 2
    domain: str | None = None
    user: str | None = None
    max_turns: int = 25
    chat: bool = True
    dagger_dialogues: int = AUTO  # AUTO: a tenth of ``dialogues`` (200 of the default 2,000); 0: none
    dagger_from: int = 2
    belief_weight: float = 3.0  # the loss weight of the belief spans' tokens (1: every target alike)
    corpus: str | None = None  # a corpus of people's dialogues to imitate instead of a teacher
    split: str = "train"  # the corpus's split trained on
    validation: str | None = "validation"  # the corpus's split for model selection and early stopping
    patience: int = 2  # stop after this many checkpoints without a better validation loss (0: never)
    dropout: float = 0.0  # GPT-2's embedding and residual dropout while training (0: none, as before it existed)
    # a corpus's turn without an act: "empty" — the model learns that the wizard wrote no act there
    # (it answers such a context with words only); "words" — its words alone are targets (the model
    # writes some act there anyway: the rule of runs before this setting existed)
    no_act_turns: str = "empty"

    def __post_init__(self) -> None:
        if self.corpus is not None:
            if self.dagger_dialogues == AUTO:
                object.__setattr__(self, "dagger_dialogues", 0)
            if self.dagger_dialogues:
                raise ConfigError("e2e training: DAgger needs a teacher to label the model's dialogues, not a corpus")
            if not isinstance(self.split, str) or not self.split:
                raise ConfigError(f"e2e training: split must be a split name, got {self.split!r}")
            if isinstance(self.patience, bool) or not isinstance(self.patience, int) or self.patience < 0:
                raise ConfigError(f"e2e training: patience must be a non-negative integer, got {self.patience!r}")
        if self.checkpoint_every == 0 and isinstance(self.dialogues, int):
            object.__setattr__(self, "checkpoint_every", self.dialogues)
        if self.dagger_dialogues == AUTO and isinstance(self.dialogues, int):
            object.__setattr__(self, "dagger_dialogues", self.dialogues // 10)
        if not isinstance(self.chat, bool):
            raise ConfigError(f"e2e training: chat must be true or false, got {self.chat!r}")
        ints = ("seed", "dialogues", "epochs", "checkpoint_every", "batch_dialogues", "n_layer", "n_embd")
        zero_ok = ("seed", "warmup_steps", "dagger_dialogues")
        for key in (*ints, "n_head", "n_positions", "threads", "max_turns", "dagger_from", *zero_ok[1:]):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if key in zero_ok else 1):
                raise ConfigError(
                    f"e2e training: {key} must be a {'non-negative' if key in zero_ok else 'positive'} integer, got {v!r}"
                )
        if not isinstance(self.teacher, str) or not self.teacher.strip():
            raise ConfigError(f"e2e training: teacher must be a policy spec string, got {self.teacher!r}")
        if self.dialogues % self.batch_dialogues or self.checkpoint_every % self.batch_dialogues:
            raise ConfigError(
                f"e2e training: dialogues ({self.dialogues}) and checkpoint_every ({self.checkpoint_every}) must be "
                f"multiples of batch_dialogues ({self.batch_dialogues})"
            )
        if self.dagger_dialogues:
            if self.dialogues % self.checkpoint_every:
                raise ConfigError(
                    f"e2e training: with dagger_dialogues, every epoch must end at a checkpoint (dialogues "
                    f"{self.dialogues} must be a multiple of checkpoint_every {self.checkpoint_every})"
                )
            if self.dagger_dialogues * self.dagger_rounds >= self.dialogues:
                raise ConfigError(
                    f"e2e training: {self.dagger_rounds} DAgger rounds of {self.dagger_dialogues} dialogues leave no "
                    f"room for the teacher's {self.dialogues} in an epoch; use fewer dagger_dialogues (0: none)"
                )
        if self.n_embd % self.n_head:
            raise ConfigError(f"e2e training: n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        if self.n_positions <= sum(LIMITS.values()) + 16:
            raise ConfigError(
                f"e2e training: n_positions must exceed {sum(LIMITS.values()) + 16}, got {self.n_positions}"
            )
        for key in ("lr", "final_lr_ratio", "weight_decay"):
            v = getattr(self, key)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"e2e training: {key} must be a non-negative number, got {v!r}")
        w = self.belief_weight
        if not isinstance(w, (int, float)) or isinstance(w, bool) or not math.isfinite(w) or w <= 0:
            raise ConfigError(f"e2e training: belief_weight must be a positive number, got {w!r}")
        p = self.dropout
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p < 1:
            raise ConfigError(f"e2e training: dropout must be a number in [0, 1), got {p!r}")
        if self.no_act_turns not in NO_ACT_TURNS:
            raise ConfigError(
                f"e2e training: no_act_turns must be one of {', '.join(NO_ACT_TURNS)}, got {self.no_act_turns!r}"
            )

    @property
    def dagger_rounds(self) -> int:
        """How many DAgger rounds the run plays (one after each epoch from ``dagger_from``, not after the last)."""
        return max(0, self.epochs - self.dagger_from) if self.dagger_dialogues else 0

    @property
    def total(self) -> int:
        """Dialogues trained on in all (the last checkpoint's count)."""
        return self.dialogues * self.epochs

    def schedule(self) -> list[int]:
        """The dialogue counts of the checkpoints."""
        points = list(range(self.checkpoint_every, self.total + 1, self.checkpoint_every))
        return points if points and points[-1] == self.total else [*points, self.total]

    def to_dict(self) -> dict[str, Any]:
        """The settings as the run's files record them: a teacher run leaves out the corpus
        settings, and any run a dropout of 0 (its files are as they were before these existed)."""
        d = dataclasses.asdict(self)
        if not self.dropout:
            del d["dropout"]
        return {k: v for k, v in d.items() if k not in _CORPUS} if self.corpus is None else d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "E2EConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise ConfigError(f"e2e training: unknown setting(s) {bad}; known: {sorted(known)}")
        absent = dict(_ABSENT)
        if d.get("corpus") is None:  # a teacher's run: no turn without an act, the setting's default
            del absent["no_act_turns"]
        return cls(**{**absent, **d})

    def lr_at(self, step: int, total_steps: int) -> float:
        """Linear warm-up to ``lr`` over ``warmup_steps``, then cosine decay to ``lr·final_lr_ratio``."""
        if step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        span = max(1, total_steps - self.warmup_steps)
        progress = min(1.0, (step - self.warmup_steps) / span)
        floor = self.lr * self.final_lr_ratio
        return floor + (self.lr - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def corpus_e2e_config(
    corpus: str | Path,
    split: str = "train",
    *,
    validation: str | None = CORPUS_DEFAULTS["validation"],
    seed: int = 0,
    dialogues: int | None = None,
    epochs: int | None = None,
    batch_dialogues: int | None = None,
    checkpoint_every: int | None = None,
    patience: int | None = None,
    **options: Any,
) -> E2EConfig:
    """The :class:`~policies.e2e.E2EConfig` of a model imitating the people of ``corpus``, as
    ``behavsim train --policy e2e --corpus`` makes it: every dialogue of ``split`` in each epoch
    (the largest multiple of the batch, unless ``dialogues`` says fewer), a checkpoint per epoch,
    :data:`CORPUS_DEFAULTS` for the rest; ``validation`` None or ``"none"``: no validation split.
    ``options``: the model's other settings (``n_layer``, ``threads``, ``chat`` — off unless set —,
    ...). A missing split or a damaged file: one error naming it."""
    batch = batch_dialogues if batch_dialogues is not None else CORPUS_DEFAULTS["batch_dialogues"]
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"--batch-dialogues must be a positive integer, got {batch}")
    available = corpus_dialogues(corpus, split)
    n = dialogues if dialogues is not None else available - available % batch
    if n < 1:
        raise ConfigError(f"{corpus}: split {split!r} has {available} dialogues, fewer than --batch-dialogues {batch}")
    options.setdefault("chat", False)
    return E2EConfig(
        teacher=WIZARD_ID,
        corpus=str(corpus),
        split=split,
        validation=None if validation in (None, "none") else validation,
        patience=patience if patience is not None else CORPUS_DEFAULTS["patience"],
        seed=seed,
        dialogues=n,
        epochs=epochs if epochs is not None else CORPUS_DEFAULTS["epochs"],
        checkpoint_every=checkpoint_every if checkpoint_every is not None else n,
        batch_dialogues=batch,
        dagger_dialogues=0,
        **options,
    )


def checkpoint_dir(out: Path, dialogues: int) -> Path:
    return out / f"{_CKPT_PREFIX}{dialogues:06d}"


def list_e2e_checkpoints(out: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(dialogues, folder)`` of a run's complete checkpoints, in order."""
    out = Path(out)
    found = []
    if out.is_dir():
        for p in out.iterdir():
            if p.is_dir() and p.name.startswith(_CKPT_PREFIX) and p.name[len(_CKPT_PREFIX) :].isdigit():
                if (p / "trainer_state.json").is_file():
                    found.append((int(p.name[len(_CKPT_PREFIX) :]), p))
    return sorted(found)


@contextlib.contextmanager
def _torch_settings(threads: int) -> Iterator[Any]:
    """The thread count and deterministic algorithms for a training run, restored afterwards."""
    import torch  # optional heavy dependency, loaded on first use

    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield torch
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


# ----------------------------------------------------------------------------- the run
def _prepare(config: E2EConfig, out: Path) -> None:
    run = out / RUN_FILE
    if run.is_file():
        try:
            old = json.loads(run.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ConfigError(f"{run}: unreadable ({exc})") from None
        old_config = {**_ABSENT, **(old.get("config") or {})}
        new_config = {**_ABSENT, **config.to_dict()}
        if old_config != new_config:
            diff = sorted(k for k in new_config if old_config.get(k) != new_config[k])
            raise ConfigError(
                f"{out}: holds an end-to-end run with other settings (differs in {', '.join(diff)}); "
                "use another folder, or the same settings to resume"
            )
        return
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out}: exists and is not an end-to-end training run; give a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(run) as tmp:
        tmp.write_text(json.dumps({"format": "behavsim-e2e-run", "config": config.to_dict()}, indent=2) + "\n")


def _env_options(config: E2EConfig) -> dict[str, Any]:
    env_options: dict[str, Any] = {"max_turns": config.max_turns}
    if config.user is not None:
        env_options["user_config"] = config.user
    return env_options


def _load_pair(cpath: Path, tpath: Path, again: str) -> tuple[ContextSet, ResponseTable] | None:
    """A saved context set and response table made on it, or None when either is missing."""
    if not (cpath.is_file() and tpath.is_file()):
        return None
    cs, table = ContextSet.load(cpath), ResponseTable.load(tpath)
    if table.context_fingerprint != cs.fingerprint:
        raise ConfigError(f"{tpath}: made on other contexts than {cpath}; delete both to {again}")
    return cs, table


def _teacher_data(
    config: E2EConfig, out: Path, domain: Any, report: Callable[[str], None]
) -> tuple[ContextSet, ResponseTable]:
    cpath, tpath = out / "teacher-contexts.jsonl", out / "teacher-responses.jsonl"
    saved = _load_pair(cpath, tpath, "play the teacher again")
    if saved is not None:
        return saved
    t0 = time.perf_counter()
    cs, table = play_teacher(
        config.teacher, dialogues=config.dialogues, seed=config.seed, domain=domain, env_options=_env_options(config)
    )
    report(f"teacher {table.id}: {config.dialogues} dialogues, {len(cs)} contexts in {time.perf_counter() - t0:.1f} s")
    cs.save(cpath)
    table.save(tpath)
    return cs, table


def train_e2e(
    config: E2EConfig,
    out: str | os.PathLike,
    *,
    report: Callable[[str], None] | None = None,
    stop_after: int | None = None,
) -> list[tuple[int, Path]]:
    """Train (or resume) the run in folder ``out``; returns its checkpoints ``(dialogues, folder)``.

    ``stop_after``: stop once this many dialogues are trained on (a checkpoint count; for tests of
    resuming). ``report(line)`` receives progress lines.
    """
    out = Path(out)
    say = report or (lambda line: None)
    domain = resolve_domain(config.domain)
    validation: list[list[TrainRow]] = []
    if config.corpus is not None:
        corpus = read_unified(config.corpus)  # bad input: refused before the folder
        cs, table, groups = corpus_data(config.corpus, config.split, domain, corpus)
        if config.dialogues > len(groups):
            raise ConfigError(
                f"e2e training: dialogues {config.dialogues} per epoch, but split {config.split!r} of "
                f"{config.corpus} has {len(groups)}"
            )
        held = corpus_data(config.corpus, config.validation, domain, corpus) if config.validation is not None else None
        _prepare(config, out)
        texts = [dialogue_texts(cs, table, domain, idx, people=True) for idx in groups]
        say(f"{table.policy['corpus']} split {config.split}: {len(groups)} dialogues, {len(cs)} system turns")
    else:
        parse_spec(config.teacher)  # an unknown kind is refused before the folder is made
        _prepare(config, out)
        cs, table = _teacher_data(config, out, domain, say)
        texts = [dialogue_texts(cs, table, domain, idx) for idx in _by_dialogue(cs, config.dialogues)]
    tokenizer = build_tokenizer((x for t in texts for x in all_texts(t)), domain)
    rows, dropped = _rows(config, tokenizer, texts)
    if dropped:
        say(f"{dropped} of {len(cs)} training contexts do not fit {config.n_positions} positions: not trained on")
    if config.corpus is not None and held is not None:
        vcs, vtable, vgroups = held
        validation, _ = _rows(
            config, tokenizer, [dialogue_texts(vcs, vtable, domain, idx, people=True) for idx in vgroups]
        )
        say(f"validation: split {config.validation}, {len(vgroups)} dialogues, {len(vcs)} system turns")
    with _torch_settings(config.threads) as torch:
        _run(torch, config, out, tokenizer, rows, table, domain, say, stop_after, validation)
    return list_e2e_checkpoints(out)


def _by_dialogue(cs: ContextSet, n: int) -> list[list[int]]:
    by_dialogue: list[list[int]] = [[] for _ in range(n)]
    for i, m in enumerate(cs.metas):
        by_dialogue[int(m["dialogue"])].append(i)
    return by_dialogue


def _rows(config: E2EConfig, tokenizer: Any, texts: list[DialogueTexts]) -> tuple[list[list[TrainRow]], int]:
    """Each dialogue's training rows (the main row, and the chat row with ``chat``), and how many
    contexts did not fit the model's positions."""
    encode = encoder(tokenizer, (x for t in texts for x in all_texts(t)))
    empty = config.corpus is not None and config.no_act_turns == "empty"
    built = [main_row(tokenizer, t, config.n_positions, encode, empty_acts=empty) for t in texts]
    rows = [
        [r, chat_row(tokenizer, t, config.n_positions, encode)] if config.chat else [r]
        for (r, _), t in zip(built, texts)
    ]
    return rows, sum(d for _, d in built)


class _Corrections:
    """The DAgger rounds of a run (:func:`~._data.play_corrected`): the round after epoch ``b``
    (``dagger_from ≤ b < epochs``) is played by checkpoint ``b · dialogues`` and saved as
    ``corrected-eB-contexts.jsonl`` / ``-responses.jsonl``; its dialogues join every later epoch."""

    def __init__(self, config: E2EConfig, out: Path, tokenizer: Any, domain: Any, say: Callable[[str], None]) -> None:
        self.config, self.out, self.tokenizer, self.domain, self.say = config, out, tokenizer, domain, say
        self._rows: dict[int, list[list[TrainRow]]] = {}

    def rows_before(self, epoch: int) -> list[list[TrainRow]]:
        """The corrected dialogues' rows an epoch (0-based) trains on: the rounds after epochs ≤ it."""
        c = self.config
        if not c.dagger_dialogues:
            return []
        return [r for b in range(c.dagger_from, min(epoch, c.epochs - 1) + 1) for r in self._round(b)]

    def _round(self, b: int) -> list[list[TrainRow]]:
        if b in self._rows:
            return self._rows[b]
        c = self.config
        cpath, tpath = self.out / f"corrected-e{b}-contexts.jsonl", self.out / f"corrected-e{b}-responses.jsonl"
        saved = _load_pair(cpath, tpath, "play the round again")
        if saved is None:
            t0 = time.perf_counter()
            model = E2EModel(checkpoint_dir(self.out, b * c.dialogues), threads=c.threads)
            cs, table = play_corrected(
                model.answer, c.teacher, dialogues=c.dagger_dialogues, seed=c.seed, epoch=b, domain=self.domain,
                env_options=_env_options(c),
            )  # fmt: skip
            m = cs.meta
            self.say(
                f"DAgger round after epoch {b}: {c.dagger_dialogues} dialogues, {len(cs)} contexts, the model's act "
                f"played at {m['model_turns']} of {m['turns']} turns ({time.perf_counter() - t0:.1f} s)"
            )
            cs.save(cpath)
            table.save(tpath)
        else:
            cs, table = saved
        texts = [dialogue_texts(cs, table, self.domain, idx) for idx in _by_dialogue(cs, c.dagger_dialogues)]
        self._rows[b], dropped = _rows(c, self.tokenizer, texts)
        if dropped:
            self.say(
                f"{dropped} of {len(cs)} contexts of the round after epoch {b} do not fit {c.n_positions} positions: not trained on"
            )
        return self._rows[b]


def _epoch_order(config: E2EConfig, epoch: int, extra: int, pool: int = 0) -> np.ndarray:
    """The dialogues epoch ``epoch`` trains on, in order: indices below ``dialogues`` are the
    teacher's, the others the ``extra`` corrected dialogues (all of them, with teacher dialogues
    filling the epoch). A corpus run draws its ``dialogues`` from all ``pool`` of the split."""
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, epoch]))
    if config.corpus is not None:
        return rng.permutation(pool)[: config.dialogues]
    order = rng.permutation(config.dialogues)
    if not extra:
        return order
    chosen = np.concatenate([order[: config.dialogues - extra], np.arange(config.dialogues, config.dialogues + extra)])
    return chosen[rng.permutation(len(chosen))]


def _new_model(torch: Any, config: E2EConfig, tokenizer: Any) -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel  # optional heavy dependency, loaded on first use

    sp = special_ids(tokenizer)
    cfg = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=config.n_positions,
        n_embd=config.n_embd,
        n_layer=config.n_layer,
        n_head=config.n_head,
        activation_function="gelu",
        resid_pdrop=float(config.dropout),  # the residual stream's and the MLP's
        embd_pdrop=float(config.dropout),
        attn_pdrop=0.0,  # not applied by the training's own attention (_forward)
        bos_token_id=sp["eos"],
        eos_token_id=sp["eos"],
        pad_token_id=sp["pad"],
    )
    torch.manual_seed(config.seed)
    return GPT2LMHeadModel(cfg)


def _optimizer(torch: Any, model: Any, config: E2EConfig) -> Any:
    # fused: one kernel per parameter for the whole update (elementwise, so as deterministic as
    # the loop of small operations it replaces; 2-5 ms less per step)
    return torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True)


def _run(torch, config, out, tokenizer, rows, table, domain, say, stop_after, validation=()) -> None:
    from safetensors.torch import load_file  # comes with transformers: loaded only to read or write weights

    model = _new_model(torch, config, tokenizer)
    opt = _optimizer(torch, model, config)
    done, losses = 0, []
    ckpts = [(n, p) for n, p in list_e2e_checkpoints(out) if n <= config.total]
    if ckpts:
        done, last = ckpts[-1]
        state = load_file(str(last / "model.safetensors"))
        missing, unexpected = model.load_state_dict(state, strict=False)
        if unexpected or any(not k.endswith("lm_head.weight") for k in missing):
            raise ConfigError(f"{last}: model weights do not fit this run ({unexpected or missing})")
        model.tie_weights()
        _load_optimizer(torch, opt, last / "optimizer.safetensors")
        losses = json.loads((last / "trainer_state.json").read_text(encoding="utf-8"))["losses"]
        say(f"resuming from {last.name} ({done} dialogues trained on)")
        if _stopped(losses, config.patience):
            say(f"stopped early at {last.name}: no better validation loss in {config.patience} checkpoints")
            return
    model.train()
    total_steps = config.total // config.batch_dialogues
    schedule = set(config.schedule())
    t0 = time.perf_counter()
    window: list[float] = []
    corrections = _Corrections(config, out, tokenizer, domain, say)
    pool: tuple[int, list[list[TrainRow]], np.ndarray] | None = None
    while done < config.total:
        epoch, offset = divmod(done, config.dialogues)
        if pool is None or pool[0] != epoch:
            extra = corrections.rows_before(epoch)
            pool = (epoch, rows + extra, _epoch_order(config, epoch, len(extra), len(rows)))
        chosen = pool[2][offset : offset + config.batch_dialogues]
        step = done // config.batch_dialogues
        for g in opt.param_groups:
            g["lr"] = config.lr_at(step, total_steps)
        if config.dropout:  # each step's dropout masks from its own seed: a resumed run draws the same
            torch.manual_seed(int(np.random.SeedSequence([config.seed, step]).generate_state(1)[0]))
        loss = _step(torch, model, opt, [r for d in chosen for r in pool[1][int(d)]], config.belief_weight)
        window.append(loss)
        done += config.batch_dialogues
        if done in schedule:
            losses.append({"dialogues": done, "loss": float(np.mean(window)), "epoch": epoch + 1})
            held = ""
            if validation:
                losses[-1]["validation"] = _validation_loss(torch, model, [r for d in validation for r in d])
                held = f", validation {losses[-1]['validation']:.4f}"
            window = []
            path = _save(torch, model, opt, tokenizer, config, out, done, losses, table, domain)
            if validation:
                _write_best(out, losses)
            say(f"{path.name}: loss {losses[-1]['loss']:.4f}{held} ({time.perf_counter() - t0:.1f} s)")
            if stop_after is not None and done >= stop_after:
                return
            if done < config.total and _stopped(losses, config.patience):
                say(f"stopped early: no better validation loss in {config.patience} checkpoints")
                return


#: The run folder's record of its best checkpoint by validation loss (a corpus run with a validation split).
BEST_FILE = "e2e-best.json"


def _stopped(losses: list[dict[str, Any]], patience: int) -> bool:
    """Early stopping: the last ``patience`` checkpoints' validation losses are none better than
    the best before them (never with ``patience`` 0 or without validation losses)."""
    held = [x["validation"] for x in losses if "validation" in x]
    if not patience or len(held) <= patience:
        return False
    return min(held[-patience:]) >= min(held[:-patience])


def _write_best(out: Path, losses: list[dict[str, Any]]) -> None:
    """``e2e-best.json``: the checkpoint with the lowest validation loss so far (the first of equals)."""
    best = min((x for x in losses if "validation" in x), key=lambda x: x["validation"])
    info = {"checkpoint": checkpoint_dir(out, best["dialogues"]).name, **best}
    with atomic_path(out / BEST_FILE) as tmp:
        tmp.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _validation_loss(torch, model, rows: list[TrainRow], batch: int = 16) -> float:
    """The mean cross-entropy of every target of ``rows`` (no weighting), without gradients."""
    total, count = 0.0, 0
    model.eval()  # no dropout
    with torch.no_grad():
        for b in range(0, len(rows), batch):
            logits, targets = _forward(torch, model, rows[b : b + batch])
            total += float(torch.nn.functional.cross_entropy(logits, targets, reduction="sum"))
            count += len(targets)
    model.train()
    return total / max(1, count)


def _step(torch, model, opt, rows: list[TrainRow], belief_weight: float = 1.0) -> float:
    """One optimiser step on ``rows`` (the main rows and the chat rows): one loss over all their
    targets, the mean cross-entropy — weighted, with ``belief_weight`` ≠ 1, by that weight on the
    belief spans' tokens (a main row's targets read from its shared part) and 1 elsewhere."""
    logits, targets = _forward(torch, model, rows)
    if belief_weight == 1:
        loss = torch.nn.functional.cross_entropy(logits, targets)
    else:
        weights = torch.ones(len(targets))
        start = 0
        for r in rows:
            weights[start : start + r.belief_targets] = belief_weight
            start += len(r.targets)
        loss = (torch.nn.functional.cross_entropy(logits, targets, reduction="none") * weights).sum() / weights.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return float(loss.detach())


def _forward(torch, model, rows: list[TrainRow]) -> tuple[Any, Any]:
    """The logits at the rows' target positions, and the targets.

    GPT-2's computation, written with the model's own modules so that attention follows the rows'
    structure (:class:`TrainRow`) instead of a dense mask: the rows' tokens go through as one sequence,
    without padding (embeddings of tokens and positions; per layer, attention and the MLP each after
    its layer norm and added to the residual stream; the final layer norm), and each row attends
    within itself — its shared part causally, its blocks through :func:`_block_mask` — which is
    about half the attention of a padded batch under a dense mask, and no padded token anywhere.
    ``tests/policies/e2e/test_e2e.py`` checks it against ``transformers``' own forward of each
    block as a sequence of its own.
    """
    tf = model.transformer
    ids = torch.tensor([t for r in rows for t in r.ids], dtype=torch.long)
    pos = torch.tensor([p for r in rows for p in r.pos], dtype=torch.long)
    lengths = [len(r.ids) for r in rows]
    shared = [r.block.count(-1) for r in rows]
    masks = [_block_mask(torch, r, s) for r, s in zip(rows, shared)]
    x = tf.drop(tf.wte(ids) + tf.wpe(pos))
    heads, width = model.config.n_head, model.config.n_embd
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for layer in tf.h:
        qkv = layer.attn.c_attn(layer.ln_1(x)).view(-1, 3, heads, width // heads).permute(1, 2, 0, 3)
        out = []
        # split, not sliced: the backward of a split is one concatenation, a slice's a zeroed copy
        for q, k, v, s, mask in zip(*(t.split(lengths, dim=1) for t in qkv), shared, masks):
            qs, qb = q.split([s, q.shape[1] - s], dim=1)
            out.append(sdpa(qs[None], k[None, :, :s], v[None, :, :s], is_causal=True)[0])
            if mask is not None:
                out.append(sdpa(qb[None], k[None], v[None], attn_mask=mask)[0])
        att = torch.cat(out, dim=1).transpose(0, 1).reshape(-1, width)
        x = x + layer.attn.resid_dropout(layer.attn.c_proj(att))
        x = x + layer.mlp(layer.ln_2(x))
    x = tf.ln_f(x)
    starts = np.cumsum([0, *lengths[:-1]])
    src = torch.tensor([int(o) + i for o, r in zip(starts, rows) for i, _ in r.targets], dtype=torch.long)
    tgt = torch.tensor([t for r in rows for _, t in r.targets], dtype=torch.long)
    return model.lm_head(x[src]), tgt


def _block_mask(torch, row: TrainRow, shared: int) -> Any:
    """What a row's blocks see, as an additive mask (block tokens × row tokens): block k the shared
    part's first ``seen[k]`` tokens and itself, causally (see :class:`TrainRow`); None without blocks."""
    n = len(row.ids)
    if n == shared:
        return None
    mask = torch.full((n - shared, n), torch.finfo(torch.float32).min)
    sizes = Counter(row.block)
    start = shared
    for k, seen in enumerate(row.seen):
        end = start + sizes[k]
        mask[start - shared : end - shared, :seen] = 0.0
        own = mask[start - shared : end - shared, start:end]
        own.masked_fill_(torch.ones(own.shape, dtype=torch.bool).tril_(), 0.0)
        start = end
    return mask


def _save_optimizer(torch, opt, path: Path) -> None:
    from safetensors.torch import save_file  # comes with transformers: loaded only to read or write weights

    tensors = {}
    sd = opt.state_dict()
    for pid, st in sd["state"].items():
        for k, v in st.items():
            tensors[f"{pid}.{k}"] = v if torch.is_tensor(v) else torch.tensor(v)
    save_file(tensors, str(path), metadata={"param_groups": json.dumps(sd["param_groups"], sort_keys=True)})


def _load_optimizer(torch, opt, path: Path) -> None:
    from safetensors import safe_open  # comes with transformers: loaded only to read or write weights

    state: dict[int, dict[str, Any]] = {}
    with safe_open(str(path), framework="pt") as f:
        groups = json.loads(f.metadata()["param_groups"])
        for key in f.keys():
            pid, name = key.split(".", 1)
            state.setdefault(int(pid), {})[name] = f.get_tensor(key)
    opt.load_state_dict({"state": state, "param_groups": groups})


def _save(torch, model, opt, tokenizer, config: E2EConfig, out: Path, done: int, losses, table, domain) -> Path:
    final = checkpoint_dir(out, done)
    tmp = out / (final.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    teacher = dict(table.policy)
    info = {
        "format": MODEL_FORMAT,
        "version": MODEL_VERSION,
        "name": f"e2e-{teacher.get('id', 'teacher')}-seed{config.seed}",
        **({"corpus": config.corpus, "split": config.split} if config.corpus is not None else {}),
        "reads": ["history"],
        "domain": domain.name,
        "domain_spec": config.domain,
        "teacher": teacher,
        "seed": config.seed,
        "dialogues": done,
        "teacher_dialogues": config.dialogues,
        "config": config.to_dict(),
    }
    (tmp / MODEL_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if config.chat:
        (tmp / CHAT_PROMPT_FILE).write_text(CHAT_PROMPT, encoding="utf-8")
    _save_optimizer(torch, opt, tmp / "optimizer.safetensors")
    state = {"dialogues": done, "step": done // config.batch_dialogues, "losses": losses, "special": SPECIAL}
    (tmp / "trainer_state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final
