"""behavsim's end-to-end model at answer time: a dialogue history in, an act and a prompt out.

:class:`E2EModel` loads a checkpoint folder (Hugging Face's format: ``config.json``,
``model.safetensors``, the tokenizer files, and ``behavsim-e2e.json`` naming the domain) and answers
histories greedily, in batches:

1. the history's text, delexicalised (:func:`~._format.history_text`; acts and beliefs are never
   read) and ``<|belief|>``; the model writes the belief span until ``<|db|>``;
2. behavsim queries the domain's database with the constraints it wrote
   (:func:`~._format.db_query`) and appends the result and ``<|act|>``;
3. the model writes the act and, after ``<|response|>``, the response until ``<|endoftext|>``
   (a placeholder the dialogue does not hold, e.g. ``[name_3]`` with two venues in it, is never
   written: it points nowhere);
4. ``[v]`` in the act is filled from the database (the venue the act names), the response's
   placeholders from the act (:func:`~._format.lex_act`, :func:`~._format.lex_prompt`).

Generation is greedy (argmax; ties to the lowest token id), so an answer is a function of the
history's text. A context whose words do not make an act fails with a message saying so.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from behavsim import ConfigError, Response

from ._format import (
    SPECIAL,
    E2EFormatError,
    Lexicon,
    clean,
    db_query,
    db_text,
    history_text,
    lex_act,
    lex_prompt,
    parse_belief,
)

__all__ = ["E2EModel", "MODEL_FILE", "MODEL_FORMAT", "MODEL_VERSION", "LIMITS", "encode_history", "special_ids"]

#: The file in a checkpoint folder that makes it behavsim's: format, domain, teacher, training.
MODEL_FILE = "behavsim-e2e.json"
MODEL_FORMAT = "behavsim-e2e"
MODEL_VERSION = 1
#: Token budgets of a sequence's parts (the history is cut from the left, at a turn, to fit).
LIMITS = {"belief": 24, "db": 32, "act": 48, "response": 96}


def special_ids(tokenizer: Any) -> dict[str, int]:
    return {k: int(tokenizer.convert_tokens_to_ids(v)) for k, v in SPECIAL.items()}


def _encode(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of texts without special tokens (one call for all)."""
    return [e.ids for e in tokenizer.backend_tokenizer.encode_batch(list(texts), add_special_tokens=False)]


def history_budget(n_positions: int) -> int:
    return n_positions - sum(LIMITS.values()) - 4


def cut_history(ids: list[int], budget: int, turn_ids: set[int]) -> list[int]:
    """The last ``budget`` tokens of a history, starting at a turn."""
    if len(ids) <= budget:
        return ids
    ids = ids[-budget:]
    k = next((i for i, t in enumerate(ids) if t in turn_ids), len(ids))
    return ids[k:]


def encode_history(tokenizer: Any, texts: Sequence[str], n_positions: int) -> list[list[int]]:
    """``<|endoftext|>`` + each history text's ids (cut to fit) + ``<|belief|>``."""
    sp = special_ids(tokenizer)
    turn = {sp["user"], sp["system"]}
    budget = history_budget(n_positions)
    out = []
    for ids in _encode(tokenizer, texts):
        out.append([sp["eos"], *cut_history(ids, budget, turn), sp["belief"]])
    return out


class E2EModel:
    """A trained end-to-end model (see the module doc); ``answer(histories)`` answers many.

    ``threads``: PyTorch threads while answering (restored afterwards; ``None``: as they are).
    One thread is the default: on a machine shared with other jobs more threads mostly wait.
    """

    reads = ("history",)

    def __init__(self, path: str | os.PathLike, *, batch_size: int = 32, threads: int | None = 1) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ...domain import resolve_domain

        self.path = Path(path)
        info_path = self.path / MODEL_FILE
        if not (self.path / "config.json").is_file() or not info_path.is_file():
            raise ConfigError(
                f"e2e model: {str(self.path)!r} is not a behavsim end-to-end checkpoint folder (it needs "
                f"config.json, model.safetensors, the tokenizer and {MODEL_FILE}; train one with "
                "`behavsim train --policy e2e --teacher handcrafted -o DIR`)"
            )
        try:
            self.info = json.loads(info_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"e2e model: {info_path}: unreadable ({exc})") from None
        if self.info.get("format") != MODEL_FORMAT or self.info.get("version") != MODEL_VERSION:
            raise ConfigError(
                f"e2e model: {info_path}: format {self.info.get('format')!r} version {self.info.get('version')!r} "
                f"is not {MODEL_FORMAT!r} version {MODEL_VERSION}"
            )
        self.domain = resolve_domain(self.info.get("domain_spec") or None)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModelForCausalLM.from_pretrained(self.path, attn_implementation="eager")
        self.model.eval()
        self.n_positions = int(self.model.config.n_positions)
        self.sp = special_ids(self.tokenizer)
        self.batch_size = int(batch_size)
        self.threads = threads
        self._torch = torch
        self._cache: dict[str, Response | Exception] = {}
        self._placeholder_ids = {
            tok: int(i) for tok, i in self.tokenizer.get_vocab().items() if re.fullmatch(r" ?\[[a-z]+_\d+\]", tok)
        }

    @property
    def name(self) -> str:
        return str(self.info.get("name") or "e2e")

    # ------------------------------------------------------------------ answering
    def act(self, history: Sequence[dict]) -> Response:
        """One history's answer (the :class:`behavsim.Policy` protocol of a model reading histories)."""
        out = self.answer([history])[0]
        if isinstance(out, Exception):
            raise out
        return out

    def answer(self, histories: Sequence[Sequence[dict]]) -> list[Response | Exception]:
        """Greedy answers to many histories, in batches of ``batch_size``; a history whose words
        make no act gives its exception in its place. Answers are cached by the history's text."""
        keys = [json.dumps([[t["speaker"], t["text"]] for t in h], ensure_ascii=False) for h in histories]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        todo = [k for k in first if k not in self._cache]
        if len(self._cache) + len(todo) > 200_000:
            self._cache.clear()
        torch = self._torch
        before = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            for b in range(0, len(todo), self.batch_size):
                chunk = todo[b : b + self.batch_size]
                for k, out in zip(chunk, self._answer_batch([histories[first[k]] for k in chunk])):
                    self._cache[k] = out
        finally:
            torch.set_num_threads(before)
        return [self._cache[k] for k in keys]

    def _answer_batch(self, histories: Sequence[Sequence[dict]]) -> list[Response | Exception]:
        lexicons = [Lexicon(self.domain) for _ in histories]
        texts = [history_text(h, lex) for h, lex in zip(histories, lexicons)]
        prompts = encode_history(self.tokenizer, texts, self.n_positions)
        beliefs = self._generate(prompts, self.sp["db"], LIMITS["belief"], [self._banned(lex) for lex in lexicons])
        seconds = []
        for p, b, lex in zip(prompts, beliefs, lexicons):
            span = b[:-1] if b and b[-1] == self.sp["db"] else b
            cons = parse_belief(self.tokenizer.decode(span, skip_special_tokens=True), self.domain, lex)
            db_ids = _encode(self.tokenizer, [db_text(db_query(self.domain, cons), lex)])[0][: LIMITS["db"]]
            seconds.append([*p, *span, self.sp["db"], *db_ids, self.sp["act"]])
        banned = [self._banned(lex) for lex in lexicons]
        rest = self._generate(seconds, self.sp["eos"], LIMITS["act"] + LIMITS["response"], banned)
        out: list[Response | Exception] = []
        for r, lex in zip(rest, lexicons):
            text = self.tokenizer.decode(r, skip_special_tokens=False).split(SPECIAL["eos"])[0]
            act_text, sep, resp = text.partition(SPECIAL["response"])
            try:
                act = lex_act(act_text, self.domain, lex)
                prompt = clean(lex_prompt(resp, act)) if sep else None
                out.append(Response(act=act, prompt=prompt))
            except E2EFormatError as exc:
                out.append(exc)
        return out

    def _banned(self, lexicon: Lexicon) -> list[int]:
        """The placeholder tokens this dialogue does not hold (never written: a placeholder points
        into the dialogue, as a pointer network points into its input)."""
        held = set(lexicon.placeholders())
        return [i for tok, i in self._placeholder_ids.items() if tok.strip() not in held]

    def _generate(
        self, prompts: list[list[int]], stop: int, max_new: int, banned: Sequence[Sequence[int]] | None = None
    ) -> list[list[int]]:
        """Greedy continuations (left-padded batch, cached keys and values) up to ``stop``;
        ``banned[i]``: token ids row ``i`` never writes."""
        torch = self._torch
        n = len(prompts)
        width = max(len(p) for p in prompts)
        pad = self.sp["pad"]
        ids = torch.full((n, width), pad, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            mask[i, width - len(p) :] = 1
        pos = (mask.cumsum(1) - 1).clamp(min=0)
        out: list[list[int]] = [[] for _ in range(n)]
        done = [False] * n
        ban = None
        if banned is not None and any(banned):
            ban = torch.zeros((n, self.model.config.vocab_size), dtype=torch.bool)
            for i, ids_i in enumerate(banned):
                ban[i, list(ids_i)] = True
        past = None
        step_ids, step_pos = ids, pos
        limit = self.n_positions
        with torch.inference_mode():
            for _ in range(max_new):
                res = self.model(
                    input_ids=step_ids,
                    attention_mask=_additive_mask(torch, mask, step_ids.shape[1]),
                    position_ids=step_pos,
                    past_key_values=past,
                    use_cache=True,
                )
                past = res.past_key_values
                logits = res.logits[:, -1, :]
                if ban is not None:
                    logits = logits.masked_fill(ban, float("-inf"))
                nxt = logits.argmax(-1)
                for i in range(n):
                    if not done[i]:
                        t = int(nxt[i])
                        out[i].append(t)
                        if t == stop:
                            done[i] = True
                if all(done) or int(step_pos.max()) + 2 >= limit:
                    break
                step_ids = nxt.unsqueeze(1)
                step_pos = step_pos[:, -1:] + 1
                mask = torch.cat([mask, torch.ones((n, 1), dtype=torch.long)], dim=1)
        return out


def _additive_mask(torch: Any, mask: Any, q_len: int) -> Any:
    """The (batch, 1, q_len, kv_len) additive mask of the last ``q_len`` positions: causal, and
    blind to left padding (built here: ``transformers`` would rebuild it at every step)."""
    kv = mask.shape[1]
    q_pos = torch.arange(kv - q_len, kv)
    allow = (torch.arange(kv)[None, :] <= q_pos[:, None])[None] & mask[:, None, :].bool()
    allow |= (torch.arange(kv)[None, :] == q_pos[:, None])[None]  # a padding position sees itself
    return torch.where(allow, 0.0, torch.finfo(torch.float32).min)[:, None]
