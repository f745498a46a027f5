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
        self.past: Any = None
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
        stops: Sequence["int | Sequence[int] | None"],
        limits: Sequence[int],
        banned: Sequence[Sequence[int]] | None = None,
        rules: Sequence[Rule | None] | None = None,
    ) -> list[list[int]]:
        """Greedy continuations of the rows whose stop token (or tokens) is not None (argmax; the
        first of equal scores); ``banned[i]``: tokens row ``i`` never writes; ``rules[i]``: given what row
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
                    if _stops(nxt[i], stops[i]) or len(out[i]) >= limits[i]:
                        live[i] = False
            self.feed(chunks)
        return out

    def beam(
        self,
        rows: Sequence[bool],
        width: int,
        stop: int,
        limit: int,
        banned: Sequence[Sequence[int]],
        length_penalty: float = 1.0,
    ) -> list[list[int]]:
        """Beam-search continuations of the chosen rows until ``stop`` (or ``limit`` tokens): the
        continuation with the highest sum of log-probabilities divided by its length (stop token
        included) to the power ``length_penalty``, among the first ``width`` to stop (or, at the
        limit, among those and the beams). Every row's cache is copied ``width`` times; the session
        holds the copies afterwards (it is done with). Candidates are ranked by score with ties to
        the lower beam, then the lower token id, so the result is a function of the scores alone. The stop token is not the
        first token: a continuation has at least one word."""
        torch = self.torch
        k, n, vocab = width, self.n, self.logits.shape[1]
        self._expand(k)
        ban = torch.zeros((n, vocab), dtype=torch.bool)
        for i, ids in enumerate(banned):
            ban[i, list(ids)] = True
        ban = ban.repeat_interleave(k, dim=0)
        beams: list[list[list[int]]] = [[[] for _ in range(k)] for _ in range(n)]
        score = torch.full((n, k), float("-inf"))
        score[:, 0] = 0.0  # one beam to start from: its copies would give the same candidates
        done: list[list[tuple[float, list[int]]]] = [[] for _ in range(n)]
        live = list(rows)
        steps = 0
        while any(live):
            logp = torch.log_softmax(self.logits.float(), dim=-1).masked_fill(ban, float("-inf"))
            if steps == 0:  # at least one word before the stop (the part was opened to say something)
                logp[:, stop] = float("-inf")
            logp = logp.view(n, k, vocab)
            total = (score[:, :, None] + logp).view(n, k * vocab)
            order = torch.sort(total, dim=1, descending=True, stable=True).indices[:, : 2 * k].tolist()
            steps += 1
            source = list(range(n * k))
            chunks: list[list[int]] = [[] for _ in range(n * k)]
            for i in range(n):
                if not live[i]:
                    continue
                kept: list[tuple[int, int, float]] = []
                for rank, c in enumerate(order[i]):
                    b, tok = divmod(c, vocab)
                    s = float(total[i, c])
                    if s == float("-inf"):
                        break
                    if tok == stop:
                        if rank < k:
                            done[i].append((s / steps**length_penalty, [*beams[i][b], tok]))
                    else:
                        kept.append((b, tok, s))
                    if len(kept) == k:
                        break
                if len(done[i]) >= k or steps >= limit or not kept:
                    pool = list(done[i])
                    if len(done[i]) < k:  # at the limit: the beams compete with what stopped
                        pool += [(s / steps**length_penalty, [*beams[i][b], t]) for b, t, s in kept]
                    best = max(range(len(pool)), key=lambda j: (pool[j][0], -j)) if pool else None
                    beams[i] = [pool[best][1] if best is not None else []]
                    live[i] = False
                    continue
                kept += [(kept[0][0], kept[0][1], float("-inf"))] * (k - len(kept))  # dead copies
                beams[i] = [[*beams[i][b], t] for b, t, _ in kept]
                score[i] = torch.tensor([s for _, _, s in kept])
                for j, (b, t, _) in enumerate(kept):
                    source[i * k + j] = i * k + b
                    chunks[i * k + j] = [t]
            if any(chunks):
                self._select(source)
                self.feed(chunks)
        return [beams[i][0] if rows[i] else [] for i in range(n)]

    def _expand(self, k: int) -> None:
        """Every row ``k`` times (rows ``i * k`` to ``i * k + k - 1`` are copies of row ``i``)."""
        self._select([i for i in range(self.n) for _ in range(k)])

    def _select(self, source: Sequence[int]) -> None:
        """The rows of the session become ``source``'s rows, in that order (copies allowed)."""
        torch = self.torch
        idx = torch.tensor(list(source), dtype=torch.long)
        if hasattr(self.past, "reorder_cache"):
            self.past.reorder_cache(idx)
        else:  # legacy tuples of (keys, values)
            self.past = tuple(tuple(t.index_select(0, idx) for t in layer) for layer in self.past)
        self.mask = self.mask.index_select(0, idx)
        self.logits = self.logits.index_select(0, idx)
        self.pos = [self.pos[s] for s in source]
        self.n = len(source)


def _stops(token: int, stop: "int | Sequence[int] | None") -> bool:
    return token == stop if stop is None or isinstance(stop, int) else token in stop


def _additive_mask(torch: Any, mask: Any, q_len: int) -> Any:
    """The (batch, 1, q_len, kv_len) additive mask of the last ``q_len`` positions: causal, and
    blind to padding (built here: ``transformers`` would rebuild it at every step)."""
    kv = mask.shape[1]
    q_pos = torch.arange(kv - q_len, kv)
    allow = (torch.arange(kv)[None, :] <= q_pos[:, None])[None] & mask[:, None, :].bool()
    allow |= (torch.arange(kv)[None, :] == q_pos[:, None])[None]  # a padding position sees itself
    return torch.where(allow, 0.0, torch.finfo(torch.float32).min)[:, None]
