"""What the language-model policy kinds (``openai:``, ``hf:``) share: prompts, the answer cache,
repeats, and turning a model's text into an act.

:class:`LLMAdapter` renders each context into chat messages with a prompt template
(:mod:`policies.llm._prompts`), asks the model — all the contexts of a run at once in
:meth:`~LLMAdapter.prepare`, so that a backend can batch them or send them concurrently — and reads
the act (and the utterance) from each answer. It reads what its template uses (``reads``: the
belief state, the context set's dialogue history, or both). An answer without an act in
behavsim's syntax, or with an act the domain does not have, is an error of that context that
keeps the model's text (the response table's ``raw`` column). A backend implements
:meth:`LLMAdapter._generate`.

**The answer cache** (:class:`AnswerCache`): every answer is stored, as soon as it arrives, in an
SQLite file in behavsim's cache folder (``$BEHAVSIM_CACHE_DIR``, default ``~/.cache/behavsim``;
``llm-answers.sqlite``), keyed by the backend, the model's identity (its name; for a model folder
on this machine also a digest of its files), the template's digest, the decoding settings, the
repeat index and the rendered messages (the context as the model sees it). A rerun, or a run
resumed after a failure, asks the model only for what the cache does not hold. ``cache=off``
switches it off for one policy.

**Repeats**: ``respond(..., repeat=K)`` asks each context ``K`` times; repeat ``r`` is a request of
its own (its own cache entry) and, when the decoding samples (temperature > 0), uses the seed
``seed + r``. At temperature 0 every repeat is asked again with the same seed: the self-agreement
then measures how deterministic the model and its server really are.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from behavsim import BehavsimError, ConfigError, canonical_copy, default_cache_dir
from behavsim.policy import Adapter, PolicySpec, Response
from policies.adapters import context_domains
from policies.llm._prompts import PromptTemplate
from policies.simulation.domain import load_domain

__all__ = [
    "LLMAdapter",
    "AnswerCache",
    "LLMServiceError",
    "model_policy_id",
    "folder_digest",
    "Job",
    "float_option",
    "bool_option",
]

#: One request: its cache key and its chat messages.
Job = tuple[str, list[dict[str, str]]]

_CACHE_FILE = "llm-answers.sqlite"
_STEP_DIR = re.compile(r"^(?:checkpoint|ckpt|step)[-_]?(\d+)$", re.IGNORECASE)
_ID_CHARS = re.compile(r"[^A-Za-z0-9._:+=-]+")


class LLMServiceError(BehavsimError, RuntimeError):
    """The model could not be asked (server unreachable, timed out, refused the request): the run
    stops; the answers received so far are in the answer cache, and running again resumes."""


# ----------------------------------------------------------------------------- cache
class AnswerCache:
    """A persistent map ``key -> answer text`` (SQLite; see the module documentation)."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else default_cache_dir() / _CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), timeout=60)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, text TEXT NOT NULL, model TEXT NOT NULL)"
        )
        self._db.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        keys = list(dict.fromkeys(keys))
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            q = f"SELECT key, text FROM answers WHERE key IN ({','.join('?' * len(chunk))})"
            out.update(self._db.execute(q, chunk).fetchall())
        return out

    def put(self, key: str, text: str, model: str) -> None:
        """Store one answer at once (a run killed later keeps it)."""
        self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", (key, text, model))
        self._db.commit()

    def count(self, model: str | None = None) -> int:
        if model is None:
            return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
        return int(self._db.execute("SELECT COUNT(*) FROM answers WHERE model = ?", (model,)).fetchone()[0])

    def close(self) -> None:
        self._db.close()


# ----------------------------------------------------------------------------- identities
_DIGESTS: dict[tuple[str, int, int], str] = {}
_MODEL_FILES = re.compile(
    r"^(config\.json|generation_config\.json|.*tokenizer.*|special_tokens_map\.json|added_tokens\.json|vocab.*|"
    r"merges\.txt|.*\.model|chat_template.*|.*\.safetensors|.*\.safetensors\.index\.json|pytorch_model.*\.bin|"
    r"preprocessor_config\.json|processor_config\.json)$"
)


def _file_sha256(path: Path) -> str:
    st = path.stat()
    memo = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _DIGESTS:
        with open(path, "rb") as f:
            _DIGESTS[memo] = hashlib.file_digest(f, "sha256").hexdigest()
    return _DIGESTS[memo]


def folder_digest(path: str | os.PathLike) -> str:
    """``sha256:...`` of a Hugging Face model folder's model files (config, tokenizer, chat
    template, weights; not a trainer's optimizer or RNG states), by name and content."""
    root = Path(path)
    h = hashlib.sha256()
    for p in sorted(root.iterdir()):
        if p.is_file() and _MODEL_FILES.match(p.name):
            h.update(f"{p.name}\0{_file_sha256(p)}\n".encode())
    return "sha256:" + h.hexdigest()


def model_policy_id(model: str, temperature: float = 0.0) -> str:
    """A policy id from a model name: its last path component (a folder named like a training
    step, ``checkpoint-500``, keeps its parent's name before it), characters other than letters,
    digits and ``._:+=-`` replaced by ``-`` (never a ``/``); ``-t<T>`` appended when the decoding
    samples."""
    parts = [p for p in re.split(r"[\\/]+", model.strip()) if p and p not in (".", "..", "~")]
    if not parts:
        raise ConfigError(f"model name {model!r}: cannot derive a policy id from it (give --id)")
    name = parts[-1]
    if _STEP_DIR.match(name) and len(parts) > 1:
        name = f"{parts[-2]}-{name}"
    pid = _ID_CHARS.sub("-", name).strip("-") or "model"
    return pid if not temperature else f"{pid}-t{temperature:g}"


def step_of_folder(path: str | os.PathLike) -> int | None:
    """The training step a model folder's name gives (``checkpoint-500``, ``step_000500``)."""
    m = _STEP_DIR.match(Path(path).name)
    return int(m.group(1)) if m else None


# ----------------------------------------------------------------------------- options
def float_option(spec: PolicySpec, key: str, default: float | None, *, low: float = 0.0) -> float | None:
    """Option ``key`` as a number ``>= low`` (``none`` → ``None``)."""
    v = spec.options.get(key)
    if v is None:
        return default
    if v.lower() in ("none", "off"):
        return None
    try:
        x = float(v)
    except ValueError:
        raise ConfigError(f"policy spec {spec.text!r}: option {key} must be a number, got {v!r}") from None
    if not x >= low or x != x or x in (float("inf"), float("-inf")):
        raise ConfigError(f"policy spec {spec.text!r}: option {key} must be a finite number >= {low:g}, got {v!r}")
    return x


def decoding_options(spec: PolicySpec) -> dict[str, Any]:
    """The decoding settings of a model spec (``temperature`` 0 greedy, ``top_p``, ``seed``,
    ``max_tokens`` 128 by default), checked; they also key the answer cache."""
    decoding: dict[str, Any] = {
        "temperature": float_option(spec, "temperature", 0.0) or 0.0,
        "top_p": float_option(spec, "top_p", None),
        "seed": spec.int_option("seed", 0),
        "max_tokens": spec.int_option("max_tokens", 128),
    }
    if not decoding["max_tokens"]:
        raise ConfigError(f"policy spec {spec.text!r}: option max_tokens must be a positive integer")
    return decoding


def bool_option(spec: PolicySpec, key: str, default: bool | None) -> bool | None:
    v = spec.options.get(key)
    if v is None:
        return default
    if v.lower() in ("yes", "true", "on", "1"):
        return True
    if v.lower() in ("no", "false", "off", "0"):
        return False
    raise ConfigError(f"policy spec {spec.text!r}: option {key} must be yes or no, got {v!r}")


# ----------------------------------------------------------------------------- the adapter
class LLMAdapter(Adapter):
    """A language model as a policy (see the module documentation). Subclasses set ``kind`` and
    implement :meth:`_generate`; ``model_key`` identifies the model in the cache."""

    kind = "llm"

    def __init__(
        self,
        meta: Mapping[str, Any],
        *,
        template: PromptTemplate,
        domain: Any,
        decoding: Mapping[str, Any],
        model_key: str,
        utterance: bool | None = None,
        cache: bool = True,
    ):
        super().__init__(meta)
        self.template = template
        self.reads = template.reads  # the belief, the history or both: what the template uses
        self.domain = domain
        self.decoding = dict(decoding)
        self.model_key = model_key
        self.utterance = template.utterance if utterance is None else utterance
        self.repeat = 0
        self._cache_on = cache
        self._cache: AnswerCache | None = None
        self._answers: dict[str, str] = {}

    # --- what a subclass provides
    def _generate(self, jobs: Sequence[Job], on_answer: Callable[[str, str], None]) -> None:
        """Ask the model for every job; call ``on_answer(key, text)`` in this thread as each answer
        arrives; raise :class:`LLMServiceError` when the model cannot be asked."""
        raise NotImplementedError

    def _describe(self) -> str:
        return f"{self.kind}:{self.meta.get('model', self.id)}"

    # --- repeats
    def for_repeat(self, repeat: int) -> "LLMAdapter":
        other = copy.copy(self)
        other.repeat = int(repeat)
        other._answers = {}
        return other

    @property
    def seed(self) -> int | None:
        """The seed of this repeat's requests: ``seed + repeat`` when the decoding samples."""
        seed = self.decoding.get("seed")
        if seed is None:
            return None
        return int(seed) + (self.repeat if self.decoding.get("temperature") else 0)

    # --- contexts
    def check_contexts(self, contexts: Any) -> None:
        source = getattr(self.domain, "source", None)
        wanted = context_domains(getattr(contexts, "meta", None))
        if source is not None and wanted:
            mine = os.path.basename(str(source))
            if any(w != mine for w in wanted):
                raise ConfigError(
                    f"policy {self.id!r} is prompted with the domain of {mine!r}, but the contexts were built on "
                    f"{', '.join(sorted(wanted))} (give it their domain: --domain NAME, or domain=...)"
                )
        if self.template.needs_history:
            missing = [cid for i, cid in enumerate(contexts.ids) if contexts.history(i) is None]
            if missing:
                name = getattr(contexts, "source", None) or "the context set"
                raise ConfigError(
                    f"policy {self.id!r}: prompt template {self.template.name!r} reads the dialogue history, and "
                    f"{len(missing)} of {len(contexts)} contexts of {name} have none (first: {missing[0]}); collect "
                    "contexts with histories (behavsim contexts collect) or choose another template (template=NAME)"
                )

    def _messages(self, belief: Mapping[str, Any] | None, history: Any) -> list[dict[str, str]]:
        return self.template.render(belief, self.domain, history=history, utterance=self.utterance)

    def cache_key(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The cache key of one request (see the module documentation)."""
        parts = {
            "kind": self.kind,
            "model": self.model_key,
            "template": self.template.digest,
            "decoding": {**self.decoding, "seed": self.seed},
            "repeat": self.repeat,
            "messages": list(messages),
        }
        text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _store(self) -> AnswerCache | None:
        if self._cache_on and self._cache is None:
            self._cache = AnswerCache()
        return self._cache

    def _stopped(self, exc: LLMServiceError, done: int, total: int) -> LLMServiceError:
        store = self._store()
        where = f"the answer cache ({store.path})" if store is not None else "nowhere (cache=off)"
        return LLMServiceError(
            f"{self._describe()}: {exc} — {done} of {total} answers kept in {where}; run the same command again "
            "to resume"
        )

    def prepare(self, contexts: Any) -> None:
        """Ask the model for every context not in the cache, all at once (the backend batches or
        sends them concurrently), longest conversation first."""
        jobs: dict[str, list[dict[str, str]]] = {}
        for i, belief in enumerate(contexts.beliefs):
            history = contexts.history(i)
            try:
                messages = self._messages(canonical_copy(belief), history)
            except ConfigError:  # a context the template cannot render: that context's error
                continue
            jobs.setdefault(self.cache_key(messages), messages)
        store = self._store()
        if store is not None:
            self._answers.update(store.get_many(list(jobs)))
        todo = [(k, m) for k, m in jobs.items() if k not in self._answers]
        # Longest first: no request extends the one before it, so that a server that reuses the
        # previous request's KV cache for a "continued chat" (transformers serve) never does.
        todo.sort(key=lambda job: -len(job[1]))
        have = len(jobs) - len(todo)
        got = 0

        def on_answer(key: str, text: str) -> None:
            nonlocal got
            self._answers[key] = text
            got += 1
            if store is not None:
                store.put(key, text, self.model_key)

        if todo:
            try:
                self._generate(todo, on_answer)
            except LLMServiceError as exc:
                raise self._stopped(exc, have + got, len(jobs)) from None

    def respond_one(self, belief, *, context_id=None, context_meta=None, history=None) -> Response:
        messages = self._messages(belief, history)
        key = self.cache_key(messages)
        text = self._answers.get(key)
        if text is None:  # a context prepare() did not see (e.g. a dialogue played live)
            store = self._store()
            text = store.get_many([key]).get(key) if store is not None else None
            if text is None:
                self.prepare_jobs([(key, messages)])
                text = self._answers[key]
        return self.template.parse(text, self.domain, utterance=self.utterance)

    def prepare_jobs(self, jobs: Sequence[Job]) -> None:
        store = self._store()

        def on_answer(key: str, text: str) -> None:
            self._answers[key] = text
            if store is not None:
                store.put(key, text, self.model_key)

        try:
            self._generate(list(jobs), on_answer)
        except LLMServiceError as exc:
            raise self._stopped(exc, 0, len(jobs)) from None


def llm_meta(
    *,
    kind: str,
    model: str,
    pid: str,
    template: PromptTemplate,
    domain: Any,
    decoding: Mapping[str, Any],
    utterance: bool,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A language-model policy's table metadata (no secret ever: the API key stays in the environment)."""
    meta: dict[str, Any] = {
        "id": pid,
        "name": model,
        "kind": kind,
        "policy": "llm",
        "model": model,
        "domain": domain.name,
        "decoding": dict(decoding),
        "template": template.info(),
        "utterance": utterance,
    }
    meta.update(extra or {})
    return meta


def resolve_llm_domain(domain: Any) -> Any:
    """The domain the model is prompted with (default: the built-in default domain)."""
    return load_domain(domain)
