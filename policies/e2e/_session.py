"""A history as the model reads it: one belief span at every system decision point.

The model keeps its own belief across the dialogue, as session-level task-oriented models do
(UBAR's "the whole session" — here its words and its own belief spans): before every system turn
of the history, and at its end, it writes the search constraints it holds at that moment::

    <|endoftext|><|user|> u1<|belief|> B1<|db|><|system|> s1<|user|> u2<|belief|> B2<|db|> ...

Each belief span is the model's own (greedy, from the words before it — never the recorded acts or
beliefs), so the spans of a history are a function of its text; only the last one queries the
database. :func:`plan_history` cuts a history into those decision points and tokenises them;
:class:`Session` runs a batch of such sequences through the model with one cache of keys and
values, feeding text and generating spans row by row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.e2e._format import Lexicon, history_text

__all__ = ["Plan", "Rule", "decision_points", "history_parts", "plan_history", "token_ids", "Session"]


def decision_points(history: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The history cut before every system turn and at its end: the turns each belief span follows
    (the first may be empty, when the history opens with the system)."""
    parts: list[list[Mapping[str, Any]]] = [[]]
    for turn in history:
        if turn["speaker"] == "system":
            parts.append([])
        parts[-1].append(turn)
    return parts


@dataclass
class Plan:
    """A history's decision points: their tokens (text + ``<|belief|>``), the key of the history
    up to each (a cache key for the model's belief span there), and the lexicon after each."""

    segments: list[list[int]]
    keys: list[str]
    lexicons: list[Lexicon]


def history_parts(history: Sequence[Mapping[str, Any]], domain: Any) -> tuple[list[str], list[str], list[Lexicon]]:
    """Per decision point: the text of its turns (delexicalised), the key of the history up to it,
    and the lexicon after it."""
    lex = Lexicon(domain)
    texts, keys, lexicons = [], [], []
    seen: list[list[str]] = []
    for part in decision_points(history):
        texts.append(history_text(part, lex))
        seen += [[t["speaker"], t["text"]] for t in part]
        keys.append(json.dumps(seen, ensure_ascii=False))
        lexicons.append(lex.copy())
    return texts, keys, lexicons


def token_ids(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of texts without special tokens (one call for all)."""
    return [e.ids for e in tokenizer.backend_tokenizer.encode_batch(list(texts), add_special_tokens=False)]


def plan_history(tokenizer: Any, history: Sequence[Mapping[str, Any]], domain: Any, belief_id: int) -> Plan:
    texts, keys, lexicons = history_parts(history, domain)
    segments = [[*ids, belief_id] for ids in token_ids(tokenizer, texts)]
    return Plan(segments, keys, lexicons)


#: What a row may write next, given what it wrote so far (None: anything not banned).
Rule = Callable[[list[int]], "Sequence[int] | None"]


class PositionsExceeded(RuntimeError):
    """A batch's padded cache would outgrow the model's positions (answer fewer rows at once)."""


class Session:
    """A batch of token sequences in the model, with one cache of keys and values.

    :meth:`feed` appends tokens to rows (rows given nothing are padded, and the padding is masked
    out); :meth:`generate` continues chosen rows greedily — each row until its stop token or its
    limit — and feeds what they wrote, so the next call continues where they stopped.
    """

    def __init__(self, torch: Any, model: Any, n: int, pad: int, positions: int | None = None) -> None:
        self.torch, self.model, self.n, self.pad = torch, model, n, pad
        self.positions = positions  # the model's positions: the padded cache may not grow beyond
        self.past = None
        self.mask = torch.zeros((n, 0), dtype=torch.long)
        self.pos = [0] * n
        self.logits: Any = None

    def feed(self, chunks: Sequence[Sequence[int]]) -> None:
        torch = self.torch
        width = max(1, max(len(c) for c in chunks))
        if self.positions is not None and self.mask.shape[1] + width > self.positions:
            raise PositionsExceeded(f"{self.mask.shape[1] + width} cached positions, the model has {self.positions}")
        ids = torch.full((self.n, width), self.pad, dtype=torch.long)
        mask = torch.zeros((self.n, width), dtype=torch.long)
        pos = torch.zeros((self.n, width), dtype=torch.long)
        for i, c in enumerate(chunks):
            if c:
                ids[i, width - len(c) :] = torch.tensor(list(c), dtype=torch.long)
                mask[i, width - len(c) :] = 1
                pos[i, width - len(c) :] = torch.arange(self.pos[i], self.pos[i] + len(c))
                self.pos[i] += len(c)
        self.mask = torch.cat([self.mask, mask], dim=1)
        with torch.inference_mode():
            res = self.model(
                input_ids=ids,
                attention_mask=_additive_mask(torch, self.mask, width),
                position_ids=pos,
                past_key_values=self.past,
                use_cache=True,
            )
        self.past = res.past_key_values
        last = res.logits[:, -1, :]
        if self.logits is None:
            self.logits = last.clone()
        fed = torch.tensor([bool(c) for c in chunks])
        self.logits[fed] = last[fed]

    def generate(
        self,
        stops: Sequence[int | None],
        limits: Sequence[int],
        banned: Sequence[Sequence[int]] | None = None,
        rules: Sequence[Rule | None] | None = None,
    ) -> list[list[int]]:
        """Greedy continuations of the rows whose stop token is not None (argmax; the first of
        equal scores); ``banned[i]``: tokens row ``i`` never writes; ``rules[i]``: given what row
        ``i`` wrote so far, the only tokens it may write next (None: any not banned)."""
        torch = self.torch
        out: list[list[int]] = [[] for _ in range(self.n)]
        live = [s is not None for s in stops]
        ban = None
        if banned is not None and any(banned):
            ban = torch.zeros(self.logits.shape, dtype=torch.bool)
            for i, ids in enumerate(banned):
                ban[i, list(ids)] = True
        while any(live):
            logits = self.logits if ban is None else self.logits.masked_fill(ban, float("-inf"))
            for i, rule in enumerate(rules or ()):
                only = rule(out[i]) if rule is not None and live[i] else None
                if only is not None:
                    keep = torch.full_like(logits[i], float("-inf"))
                    keep[list(only)] = logits[i, list(only)]
                    logits = logits.clone() if logits is self.logits else logits
                    logits[i] = keep
            nxt = logits.argmax(-1).tolist()
            chunks: list[list[int]] = [[] for _ in range(self.n)]
            for i in range(self.n):
                if live[i]:
                    out[i].append(nxt[i])
                    chunks[i] = [nxt[i]]
                    if nxt[i] == stops[i] or len(out[i]) >= limits[i]:
                        live[i] = False
            self.feed(chunks)
        return out


def _additive_mask(torch: Any, mask: Any, q_len: int) -> Any:
    """The (batch, 1, q_len, kv_len) additive mask of the last ``q_len`` positions: causal, and
    blind to padding (built here: ``transformers`` would rebuild it at every step)."""
    kv = mask.shape[1]
    q_pos = torch.arange(kv - q_len, kv)
    allow = (torch.arange(kv)[None, :] <= q_pos[:, None])[None] & mask[:, None, :].bool()
    allow |= (torch.arange(kv)[None, :] == q_pos[:, None])[None]  # a padding position sees itself
    return torch.where(allow, 0.0, torch.finfo(torch.float32).min)[:, None]
