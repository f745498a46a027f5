"""behavsim's end-to-end model at answer time: a dialogue history in, an act and a prompt out.

:class:`E2EModel` loads a checkpoint folder (Hugging Face's format: ``config.json``,
``model.safetensors``, the tokenizer files, and ``behavsim-e2e.json`` naming the domain) and answers
histories greedily, in batches:

1. the history's text, delexicalised (:func:`~._format.history_text`; acts and beliefs are never
   read), with a belief span of the model's own at every system decision point
   (:mod:`._session`): the model writes each span until ``<|db|>``, reading the words and its
   earlier spans (the spans it wrote for a history's prefix are kept and reused);
2. behavsim queries the domain's database with the constraints of the last span
   (:func:`~._format.db_query`) and appends the result and ``<|act|>``;
3. the model writes the act and, after ``<|response|>``, the response until ``<|endoftext|>``
   (a placeholder the dialogue does not hold, e.g. ``[name_3]`` with two venues in it, is never
   written: it points nowhere; nor is a special token that would open another part);
4. ``[v]`` in the act is filled from the database (the venue the act names), the response's
   placeholders from the act (:func:`~._format.lex_act`, :func:`~._format.lex_prompt`).

Generation is greedy (argmax; ties to the lowest token id), but for the words of a model trained
on people, which are searched with :data:`CORPUS_BEAM` beams unless ``beam`` says otherwise; either
way an answer is a function of the history's text. A context whose words do not make an act fails
with a message saying so — but for a model trained on people that writes an empty act (as the
wizard wrote none on greetings, thanks and goodbyes, :mod:`._corpus`): its answer is its words
alone (no act, no error), their placeholders filled from its belief span's constraints and the
venue the database shows first.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from behavsim import ConfigError, DialogueAct, Response, format_act
from policies.e2e._format import (
    MAX_MATCHES,
    PLACEHOLDER,
    SPECIAL,
    E2EFormatError,
    Lexicon,
    clean,
    db_query,
    db_text,
    fill_from_venue,
    lex_act,
    lex_prompt,
    parse_belief,
)
from policies.e2e._session import Plan, PositionsExceeded, Rule, Session, plan_history, token_ids
from policies.simulation.domain import resolve_domain

__all__ = ["CORPUS_BEAM", "E2EModel", "MODEL_FILE", "MODEL_FORMAT", "MODEL_VERSION", "LIMITS", "special_ids"]

#: The file in a checkpoint folder that makes it behavsim's: format, domain, teacher, training.
MODEL_FILE = "behavsim-e2e.json"
MODEL_FORMAT = "behavsim-e2e"
MODEL_VERSION = 1
#: The beams searching the words of a model trained on people (a corpus) unless told otherwise.
CORPUS_BEAM = 4
#: Token budgets of a sequence's parts (a history too long for the model loses its oldest turns).
LIMITS = {"belief": 24, "db": 32, "act": 48, "response": 96}


def special_ids(tokenizer: Any) -> dict[str, int]:
    return {k: int(tokenizer.convert_tokens_to_ids(v)) for k, v in SPECIAL.items()}


class E2EModel:
    """A trained end-to-end model (see the module doc); ``answer(histories)`` answers many.

    ``threads``: PyTorch threads while answering (restored afterwards; ``None``: as they are).
    One thread is the default: on a machine shared with other jobs more threads mostly wait.
    """

    reads = ("history",)

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        batch_size: int = 32,
        threads: int | None = 1,
        beam: int | None = None,
        length_penalty: float = 1.0,
    ) -> None:
        import torch  # optional heavy dependency, loaded on first use
        from transformers import AutoModelForCausalLM, AutoTokenizer  # optional heavy dependency, loaded on first use

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
        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)  # never a hub
        # built on the answering thread count too: in a process forked from one whose thread pool
        # ran, building it on more threads waits forever (the pool's threads were not forked)
        before = torch.get_num_threads()
        if threads:
            torch.set_num_threads(threads)
        try:
            self.model = AutoModelForCausalLM.from_pretrained(
                self.path, attn_implementation="eager", local_files_only=True
            )
        finally:
            torch.set_num_threads(before)
        self.model.eval()
        self.n_positions = int(self.model.config.n_positions)
        self.sp = special_ids(self.tokenizer)
        self.batch_size = int(batch_size)
        self.threads = threads
        self._torch = torch
        # a model trained on people (a corpus) leaves out an act's item it cannot fill (lex_act's
        # lenient) and fills the placeholders its act left open from the named venue's entry:
        # people's acts say less than their words; a teacher's model answers as it did
        self.lenient = bool(self.info.get("corpus"))
        # the words: greedily, or by beam search of ``beam`` beams. A model trained on people
        # searches them with 4 beams unless told otherwise — the decoding CamRest676's validation
        # split chose over seeds (docs/e2e.md: 4 beams raised BLEU-4 in all six runs); a teacher's
        # model, whose words are the teacher's templates, answers greedily as it always did
        self.default_beam = CORPUS_BEAM if self.lenient else 1
        self.beam = int(beam) if beam else self.default_beam
        if self.beam < 1:
            raise ConfigError(f"e2e model: beam must be a positive integer, got {beam!r}")
        self.length_penalty = float(length_penalty)
        self._cache: dict[str, Response | Exception] = {}
        self._beliefs: dict[str, list[int]] = {}  # the belief span the model writes after a history prefix
        self._vocab: dict[str, int] = self.tokenizer.get_vocab()
        self._venue_ids = {self._vocab[f" {v['name']}"] for v in self.domain.venues if f" {v['name']}" in self._vocab}
        self._placeholder_ids = {
            tok: int(i) for tok, i in self._vocab.items() if re.fullmatch(r" ?\[[a-z]+_\d+\]", tok)
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
        """The answers to many histories (their words by ``beam`` beams), in batches of
        ``batch_size``; a history whose words make no act gives its exception in its place.
        Answers are cached by the history's text."""
        keys = [json.dumps([[t["speaker"], t["text"]] for t in h], ensure_ascii=False) for h in histories]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        todo = [k for k in first if k not in self._cache]
        if len(self._cache) + len(todo) > 200_000:
            self._cache.clear()
            self._beliefs.clear()
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
        """The answers of one batch; a batch whose padded cache would outgrow the model's positions
        (histories at very different stages) is answered in halves (one history always fits)."""
        try:
            return self._answer_rows(histories)
        except PositionsExceeded as exc:
            if len(histories) == 1:  # its last turn alone is too long: that context fails
                return [PositionsExceeded(f"the dialogue does not fit the model's positions ({exc})")]
            half = len(histories) // 2
            return self._answer_batch(histories[:half]) + self._answer_batch(histories[half:])

    def _answer_rows(self, histories: Sequence[Sequence[dict]]) -> list[Response | Exception]:
        sp = self.sp
        plans = [self._fit(plan_history(self.tokenizer, h, self.domain, sp["belief"])) for h in histories]
        rows = [_Row(p) for p in plans]
        session = Session(self._torch, self.model, len(rows), sp["pad"], self.n_positions)
        pending: list[list[int]] = [[sp["eos"]] for _ in rows]
        while not all(r.done or r.act_written is not None for r in rows):
            chunks, stops, limits, banned, rules = [], [], [], [], []
            for r, feed in zip(rows, pending):
                chunk, stop, limit, ban = self._next(r, feed)
                chunks.append(chunk)
                stops.append(stop)
                limits.append(limit)
                banned.append(ban)
                rules.append(self._name_rule(r) if r.final and not r.done else None)
            session.feed(chunks)
            written = session.generate(stops, limits, banned, rules)
            pending = [self._took(r, w) for r, w in zip(rows, written)]
        waiting = [r.act_written is not None for r in rows]
        if any(waiting):  # the words of the rows whose act is written, by beam search
            banned = [self._banned(r.lexicon, "eos") if r.lexicon else [] for r in rows]
            words = session.beam(waiting, self.beam, self.sp["eos"], LIMITS["response"], banned, self.length_penalty)
            for r, w in zip(rows, words):
                if r.act_written is not None:
                    act_written, r.act_written = r.act_written, None
                    self._took(r, [*act_written, *w])
        return [r.answer for r in rows]  # type: ignore[misc]

    def _fit(self, plan: Plan) -> Plan:
        """The plan without its first decision points when the whole would not fit the model's
        positions (a long dialogue: its oldest turns are dropped)."""
        room = self.n_positions - 2 - LIMITS["db"] - LIMITS["act"] - LIMITS["response"]
        # a belief span still to write: at most LIMITS["belief"] + 1 tokens, and the database
        # marker read after it when the model did not write it
        sizes = [
            len(seg) + (len(self._beliefs[k]) if k in self._beliefs else LIMITS["belief"] + 2)
            for seg, k in zip(plan.segments, plan.keys)
        ]
        first = 0
        while first < len(sizes) - 1 and sum(sizes[first:]) > room:
            first += 1
        return Plan(plan.segments[first:], plan.keys[first:], plan.lexicons[first:])

    def _next(self, r: "_Row", feed: list[int]) -> tuple[list[int], int | tuple[int, int] | None, int, list[int]]:
        """What row ``r`` reads next and what it writes: a belief span, or the act and response."""
        sp, plan = self.sp, r.plan
        if r.done or r.act_written is not None:
            return feed, None, 0, []
        tokens = list(feed)
        while r.j < len(plan.segments):
            tokens += plan.segments[r.j]
            cached = self._beliefs.get(plan.keys[r.j])
            if cached is None:
                return tokens, sp["db"], LIMITS["belief"] + 1, self._banned(plan.lexicons[r.j], "db")
            tokens += cached
            r.last = cached
            r.j += 1
        lex = plan.lexicons[-1].copy()
        span = r.last[:-1] if r.last and r.last[-1] == sp["db"] else r.last
        cons = parse_belief(self.tokenizer.decode(span, skip_special_tokens=True), self.domain, lex)
        result = db_query(self.domain, cons)
        r.shown = lex.recent(result.names)[:MAX_MATCHES]  # the venues the database text names, in order
        r.constraints = cons
        db_ids = token_ids(self.tokenizer, [db_text(result, lex)])[0][: LIMITS["db"]]
        r.lexicon, r.final = lex, True
        limit = LIMITS["act"] + LIMITS["response"]
        stop: int | tuple[int, int] = sp["eos"] if self.beam == 1 else (sp["response"], sp["eos"])
        return [*tokens, *db_ids, sp["act"]], stop, limit, self._banned(lex, "response", "eos")

    def _took(self, r: "_Row", written: list[int]) -> list[int]:
        """Record what row ``r`` wrote; returns what it must read before its next step."""
        sp = self.sp
        if r.done or r.act_written is not None:  # answered, or waiting for its words
            return []
        if r.final and self.beam > 1 and written and written[-1] == sp["response"]:
            r.act_written = written  # its words come next, by beam search
            return []
        if not r.final:
            span = written if written and written[-1] == sp["db"] else [*written, sp["db"]]
            self._beliefs[r.plan.keys[r.j]] = span
            r.last = span
            r.j += 1
            return [] if written and written[-1] == sp["db"] else [sp["db"]]
        text = self.tokenizer.decode(written, skip_special_tokens=False).split(SPECIAL["eos"])[0]
        act_text, sep, resp = text.partition(SPECIAL["response"])
        if sep and self.lenient and not act_text.strip():  # a model of people that wrote no act: its words alone
            r.answer = Response(act=None, prompt=self._words_alone(r, resp))
            r.done = True
            return []
        try:
            lex = r.lexicon or Lexicon(self.domain)
            act = lex_act(act_text, self.domain, lex, r.shown, r.constraints, lenient=self.lenient)
            prompt = clean(lex_prompt(resp, act)) if sep else None
            if prompt and self.lenient:  # a model of people: what its act left open, from the venue's entry
                prompt = fill_from_venue(prompt, act, self.domain)
            r.answer = Response(act=act, prompt=prompt)
        except E2EFormatError as exc:
            r.answer = exc
        r.done = True
        return []

    def _words_alone(self, r: "_Row", words: str) -> str | None:
        """The words of an answer without an act (a model of people learns them where the wizard
        wrote none: greetings, thanks, goodbyes), their placeholders filled from the constraints
        the database was queried with and the venue its result shows first (a placeholder neither
        has stays as it is)."""
        items = [(s, v) for s, v in r.constraints if v != "dontcare"]
        if r.shown:
            items.append(("name", r.shown[0]))
        act = format_act(DialogueAct.create("inform", items))
        return clean(fill_from_venue(lex_prompt(words, act), act, self.domain)) or None

    def _name_rule(self, r: "_Row") -> Rule:
        """What the act may name as its venue (after `` name =``): ``[v]`` when the database result
        shows a venue, ``none``, a venue placeholder the dialogue holds or a venue's name — the
        model chooses among them; it cannot write a food or an area where a venue goes."""
        sp, vocab = self.sp, self._vocab
        held = [w for w in (r.lexicon.placeholders() if r.lexicon else ()) if w.startswith("[name_")]
        words = ([PLACEHOLDER] if r.shown else []) + ["none", *held]
        only = sorted({vocab[f" {w}"] for w in words if f" {w}" in vocab} | self._venue_ids)
        after = [vocab.get(" name"), vocab.get(" =")]

        def rule(written: list[int]) -> list[int] | None:
            if written[-2:] == after and sp["response"] not in written:
                return only
            return None

        return rule

    def _banned(self, lexicon: Lexicon, *allowed: str) -> list[int]:
        """What the model never writes here: the placeholders this dialogue does not hold (a
        placeholder points into the dialogue, as a pointer network points into its input) and the
        special tokens other than ``allowed`` (a span is not interrupted by another part)."""
        held = set(lexicon.placeholders())
        ban = [i for tok, i in self._placeholder_ids.items() if tok.strip() not in held]
        return ban + [i for k, i in self.sp.items() if k not in allowed]


class _Row:
    """One history being answered: its plan, the decision point it is at, its last belief span."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.j = 0
        self.last: list[int] = []
        self.final = False
        self.done = False
        self.lexicon: Lexicon | None = None
        self.shown: list[str] = []
        self.constraints: list[tuple[str, str]] = []  # the last belief span's, which queried the database
        self.answer: Response | Exception | None = None
        self.act_written: list[int] | None = None  # the act, up to <|response|>, waiting for its words
