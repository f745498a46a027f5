"""``openai:MODEL@BASE_URL`` — any server of the OpenAI chat-completions API as a policy (vLLM,
llama.cpp's server, Ollama, TGI, ``transformers serve``, a hosted service).

Spec: ``openai:MODEL@BASE_URL[:key=value...]``, e.g. ``openai:my-model@http://127.0.0.1:8000/v1``;
split at the **last** ``@`` (model names may hold ``@`` and ``:``), options after the URL. Or
``openai:FILE.toml``: a small config file with ``model``, ``base_url`` and any option below as keys
(spec options override it). Options:

==================  ===========  ================================================================
option              default      meaning
==================  ===========  ================================================================
``temperature``     0            sampling temperature (0: greedy)
``top_p``           (server's)   nucleus sampling
``seed``            0            the request's ``seed`` (repeat ``r`` of a sampling run: ``seed + r``)
``max_tokens``      128          the longest answer
``timeout``         60           seconds one request may take, start to end
``retries``         3            further tries of a request that failed to connect, timed out or got
                                 HTTP 408/429/5xx, after ``backoff``, 2×``backoff``, ... seconds
``backoff``         1            seconds before the first retry
``concurrency``     1            requests in flight at once
``template``        (see below)  a shipped prompt template's name or a template file
``utterance``       template's   ask for the utterance too (yes/no)
``api_key_env``     OPENAI_API_KEY  the environment variable holding the API key, sent as a bearer
                                 token when set; the key itself is never in a spec, a file or a log
``cache``           on           ``off``: ask the server even for answers the cache holds
==================  ===========  ================================================================

The template defaults to the model folder's own (``behavsim-prompt.toml``) when ``MODEL`` names a
folder on this machine (as with ``transformers serve``, which takes a local path as the model
name), else to the shipped ``camrestaurants``. The policy id is the model name's last path
component (:func:`policies.llm._adapter.model_policy_id`).

The client speaks plain HTTP with the standard library: a JSON answer (``"stream": false``) or, from
servers that always stream (``transformers serve``), server-sent events, read to the end. A server
that cannot be reached, times out or keeps failing stops the run with one line naming the cause;
the answers already received stay in the answer cache, so the same command resumes. A request the
server refuses as bad (HTTP 400, 413, 422: e.g. a prompt longer than the model's context) is an
error of that context. Requests go out longest conversation first: ``transformers serve`` reuses
the previous request's KV cache when a request extends the one before it (a "continued chat"),
which would change the answers; in that order none does. With ``concurrency`` > 1 requests may
reach such a server out of order: keep 1 for ``transformers serve`` and raise it for servers that
batch requests independently (vLLM, TGI, llama.cpp, Ollama).
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import threading
import time
import tomllib
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from behavsim import ConfigError
from behavsim.policy import Adapter, PolicySpec
from policies.llm._adapter import (
    Job,
    LLMAdapter,
    LLMServiceError,
    bool_option,
    decoding_options,
    float_option,
    folder_digest,
    llm_meta,
    model_policy_id,
    resolve_llm_domain,
    step_of_folder,
)
from policies.llm._prompts import load_template

__all__ = ["OpenAIAdapter", "openai_kind", "OPENAI_OPTIONS", "split_target"]

OPENAI_OPTIONS = (
    "temperature",
    "top_p",
    "seed",
    "max_tokens",
    "timeout",
    "retries",
    "backoff",
    "concurrency",
    "template",
    "utterance",
    "api_key_env",
    "cache",
)
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}
_CONTEXT_STATUS = {400, 413, 422}


class ContextRefused(Exception):
    """The server refused one request as bad (its message kept): an error of that context only."""


class _Incomplete(Exception):
    """The answer ended before its end (the server stopped mid-answer): tried again."""


class _Fatal(Exception):
    """A failure no retry mends (the server refuses the key, does not know the model, ...)."""


def split_target(spec: PolicySpec) -> tuple[str, str]:
    """``MODEL@BASE_URL`` split at the last ``@``."""
    model, sep, url = spec.target.rpartition("@")
    if "://" in model:
        raise ConfigError(
            "policy spec openai:...: put no credentials in the base URL (the spec is split at its last '@'); give "
            "the API key in an environment variable (api_key_env=NAME, default OPENAI_API_KEY)"
        )
    if not sep or not model.strip() or not url.strip():
        raise ConfigError(
            f"policy spec {spec.text!r}: expected openai:MODEL@BASE_URL (e.g. openai:my-model@http://127.0.0.1:8000/v1) "
            "or openai:CONFIG.toml"
        )
    return model.strip(), url.strip()


def _check_url(spec: PolicySpec, url: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"policy spec {spec.text!r}: base URL {url!r} must be http(s)://HOST[:PORT]/PATH, e.g. http://127.0.0.1:8000/v1"
        )
    if parts.username or parts.password:
        raise ConfigError(
            f"policy spec {spec.text!r}: put no credentials in the base URL; give the API key in an environment "
            "variable (api_key_env=NAME, default OPENAI_API_KEY)"
        )
    try:
        _ = parts.port
    except ValueError:
        raise ConfigError(f"policy spec {spec.text!r}: base URL {url!r} has a bad port") from None
    return parts


class _Client:
    """One thread's keep-alive connection to the server."""

    def __init__(self, url: urllib.parse.SplitResult, timeout: float):
        self.url = url
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self.conn is None:
            cls = http.client.HTTPSConnection if self.url.scheme == "https" else http.client.HTTPConnection
            self.conn = cls(self.url.hostname or "", self.url.port, timeout=self.timeout)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
        """``(status, content type, body)``; the whole exchange within ``timeout`` seconds."""
        deadline = time.monotonic() + self.timeout
        conn = self._connect()
        try:
            conn.request("POST", path, body=body, headers=headers)
            if conn.sock is not None:
                conn.sock.settimeout(max(deadline - time.monotonic(), 1e-3))
            resp = conn.getresponse()
            ctype = resp.getheader("Content-Type", "") or ""
            chunks = []
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no complete answer within {self.timeout:g} s")
                if conn.sock is not None:
                    conn.sock.settimeout(left)
                line = resp.readline()
                if not line:
                    break
                chunks.append(line)
            if resp.will_close:
                self.close()
            return resp.status, ctype, b"".join(chunks)
        except BaseException:
            self.close()
            raise


def _answer_text(status: int, ctype: str, body: bytes) -> str:
    """The assistant's text from a chat-completions answer (JSON or server-sent events); an answer
    cut short (no final event, JSON that does not parse) raises :class:`_Incomplete`."""
    text = body.decode("utf-8", errors="replace")
    if "text/event-stream" in ctype or text.lstrip().startswith("data:"):
        parts = []
        finished = False
        for line in text.splitlines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                finished = True
                break
            try:
                obj = json.loads(payload)
            except ValueError:
                raise _Incomplete(f"an event that is not JSON: {payload[:120]!r}") from None
            if isinstance(obj, dict) and obj.get("error"):
                raise ContextRefused(f"the server failed on this context: {_message(obj)}")
            for choice in obj.get("choices") or []:
                delta = choice.get("delta") or choice.get("message") or {}
                if isinstance(delta.get("content"), str):
                    parts.append(delta["content"])
                finished = finished or bool(choice.get("finish_reason"))
        if not finished:
            raise _Incomplete("the answer stopped before its end")
        return "".join(parts)
    try:
        obj = json.loads(text)
    except ValueError:
        raise _Incomplete(f"an answer that is not JSON: {text[:120]!r}") from None
    if not isinstance(obj, dict):
        raise ContextRefused(f"the server's answer is not a JSON object: {text[:120]!r}")
    if obj.get("error"):
        raise ContextRefused(f"the server failed on this context: {_message(obj)}")
    try:
        content = obj["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ContextRefused(f"the server's answer has no choices[0].message.content: {text[:120]!r}") from None
    return content if isinstance(content, str) else ""


def _message(obj: Any) -> str:
    err = obj.get("error") if isinstance(obj, dict) else obj
    if isinstance(err, dict):
        err = err.get("message") or err
    detail = obj.get("detail") if isinstance(obj, dict) else None
    text = str(err if err else detail if detail else obj)
    return " ".join(text.split())[:200]


class OpenAIAdapter(LLMAdapter):
    """A model behind an OpenAI-compatible chat-completions endpoint (see the module documentation)."""

    kind = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        timeout: float,
        retries: int,
        backoff: float,
        concurrency: int,
        api_key_env: str,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.concurrency = concurrency
        self.api_key_env = api_key_env
        self._url = urllib.parse.urlsplit(self.base_url)
        self._refused: dict[str, str] = {}

    def _describe(self) -> str:
        return f"openai:{self.model}@{self.base_url}"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cache"] = None
        return state

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _body(self, messages: list[dict[str, str]]) -> bytes:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": float(self.decoding.get("temperature") or 0.0),
            "max_tokens": int(self.decoding["max_tokens"]),
            "stream": False,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.decoding.get("top_p") is not None:
            body["top_p"] = float(self.decoding["top_p"])
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _ask(self, client: _Client, messages: list[dict[str, str]]) -> str:
        """One request with its retries: the answer text; :class:`ContextRefused` for a request the
        server refuses as bad; :class:`LLMServiceError` when the server cannot answer."""
        path = (self._url.path or "") + "/chat/completions"
        body = self._body(messages)
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(self.backoff * 2 ** (attempt - 1), 60.0))
            try:
                status, ctype, data = client.post(path, body, self._headers())
            except ConnectionRefusedError:
                last = f"connection refused at {self.base_url}"
                continue
            except TimeoutError:
                last = f"no answer within the timeout of {self.timeout:g} s"
                continue
            except (ConnectionError, http.client.HTTPException, OSError) as exc:
                last = f"the connection failed ({type(exc).__name__}: {' '.join(str(exc).split())[:120] or 'closed'})"
                continue
            if status == 200:
                try:
                    return _answer_text(status, ctype, data)
                except _Incomplete as exc:
                    last = f"the server's answer was cut short ({exc})"
                    continue
            message = _message(_json_or_text(data))
            if status in _RETRY_STATUS:
                last = f"HTTP {status} from the server ({message})"
                continue
            if status in _CONTEXT_STATUS:
                raise ContextRefused(f"the server refused this context (HTTP {status}): {message}")
            if status in (401, 403):
                raise _Fatal(
                    f"the server refused the request (HTTP {status}: {message}); give it an API key in the "
                    f"environment variable {self.api_key_env} (or name another with api_key_env=NAME)"
                )
            if status == 404:
                raise _Fatal(
                    f"HTTP 404 from {self.base_url}/chat/completions ({message}): is the base URL right (it usually "
                    f"ends in /v1) and does the server serve the model {self.model!r}?"
                )
            raise _Fatal(f"HTTP {status} from the server ({message})")
        tries = self.retries + 1
        raise LLMServiceError(f"{last} ({tries} {'try' if tries == 1 else 'tries'})")

    def _generate(self, jobs: Sequence[Job], on_answer: Callable[[str, str], None]) -> None:
        local = threading.local()
        clients: list[_Client] = []
        lock = threading.Lock()

        def run(messages: list[dict[str, str]]) -> str:
            client = getattr(local, "client", None)
            if client is None:
                client = local.client = _Client(self._url, self.timeout)
                with lock:
                    clients.append(client)
            return self._ask(client, messages)

        pending = list(jobs)[::-1]
        failure: BaseException | None = None
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="behavsim-openai") as pool:
            running: dict[Future, str] = {}
            try:
                while pending or running:
                    while pending and failure is None and len(running) < self.concurrency:
                        key, messages = pending.pop()
                        running[pool.submit(run, messages)] = key
                    if not running:
                        break
                    done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                    for fut in done:
                        key = running.pop(fut)
                        try:
                            text = fut.result()
                        except ContextRefused as exc:
                            self._refused[key] = str(exc)
                            continue
                        except (LLMServiceError, _Fatal) as exc:
                            failure = failure or exc
                            continue
                        on_answer(key, text)
            finally:
                for c in clients:
                    c.close()
        if failure is not None:
            raise LLMServiceError(str(failure))

    def prepare(self, contexts: Any) -> None:
        self._refused = {}
        super().prepare(contexts)

    def for_repeat(self, repeat: int) -> "OpenAIAdapter":
        other = copy.copy(self)
        other.repeat, other._answers, other._refused = int(repeat), {}, {}
        return other

    def respond_one(self, belief, *, context_id=None, context_meta=None, history=None):
        if self._refused:
            key = self.cache_key(self._messages(belief, history))
            if key in self._refused:
                raise ContextRefused(self._refused[key])
        return super().respond_one(belief, context_id=context_id, context_meta=context_meta, history=history)

    def prepare_jobs(self, jobs: Sequence[Job]) -> None:
        super().prepare_jobs(jobs)
        for key, _ in jobs:
            if key in self._refused:
                raise ContextRefused(self._refused[key])


def _json_or_text(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", errors="replace")


def _read_config(spec: PolicySpec, path: Path) -> dict[str, str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"policy spec {spec.text!r}: cannot read config file {str(path)!r} ({exc})") from None
    allowed = ("model", "base_url") + OPENAI_OPTIONS
    for key in data:
        if key not in allowed:
            raise ConfigError(
                f"policy spec {spec.text!r}: config file {path}: unknown key {key!r} (valid: {', '.join(allowed)})"
            )
    if "api_key" in data:  # pragma: no cover - refused above; named for the reader
        raise ConfigError("never put an API key in a file: name its environment variable with api_key_env")
    return {k: str(v) for k, v in data.items()}


def openai_kind(spec: PolicySpec, *, domain: Any = None, **_: Any) -> Adapter:
    """``openai:MODEL@BASE_URL[:key=value...]`` or ``openai:CONFIG.toml`` (see :mod:`policies.llm._openai`)."""
    target = spec.target.strip()
    if "@" not in target and target.endswith(".toml") and Path(target).is_file():
        conf = _read_config(spec, Path(target))
        if "model" not in conf or "base_url" not in conf:
            raise ConfigError(f"policy spec {spec.text!r}: config file {target} needs model and base_url")
        options = {k: v for k, v in conf.items() if k not in ("model", "base_url")}
        spec = PolicySpec(spec.text, spec.kind, f"{conf['model']}@{conf['base_url']}", {**options, **spec.options})
    spec.check_options(OPENAI_OPTIONS)
    model, url = split_target(spec)
    parts = _check_url(spec, url)
    local = Path(model).expanduser()
    model_dir = local if local.is_dir() else None
    template = load_template(spec.options.get("template"), model_dir=model_dir)
    dom = resolve_llm_domain(domain)
    decoding = decoding_options(spec)
    temperature = decoding["temperature"]
    timeout = float_option(spec, "timeout", 60.0)
    if not timeout:
        raise ConfigError(f"policy spec {spec.text!r}: option timeout must be a positive number of seconds")
    concurrency = spec.int_option("concurrency", 1)
    if not concurrency:
        raise ConfigError(f"policy spec {spec.text!r}: option concurrency must be a positive integer")
    api_key_env = spec.options.get("api_key_env", "OPENAI_API_KEY")
    if not api_key_env.replace("_", "").isalnum():
        raise ConfigError(
            f"policy spec {spec.text!r}: api_key_env names an environment variable (letters, digits, _), "
            "not the key itself"
        )
    utterance = bool_option(spec, "utterance", None)
    # the model's identity in the cache: its name, and the files of a local model folder
    model_key = f"openai:{model}"
    extra: dict[str, Any] = {"endpoint": f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")}
    if model_dir is not None and (model_dir / "config.json").is_file():
        digest = folder_digest(model_dir)
        model_key += f"|{digest}"
        extra["path"] = {"dir": str(model_dir.resolve()), "digest": digest}
        step = step_of_folder(model_dir)
        if step is not None:
            extra["checkpoint"] = step
    meta = llm_meta(
        kind="openai",
        model=model,
        pid=model_policy_id(model, temperature),
        template=template,
        domain=dom,
        decoding=decoding,
        utterance=template.utterance if utterance is None else utterance,
        extra=extra,
    )
    if "checkpoint" in extra:
        meta["name"] = Path(model).resolve().parent.name
    return OpenAIAdapter(
        model,
        url,
        timeout=float(timeout),
        retries=spec.int_option("retries", 3) or 0,
        backoff=float_option(spec, "backoff", 1.0) or 0.0,
        concurrency=concurrency,
        api_key_env=api_key_env,
        meta=meta,
        template=template,
        domain=dom,
        decoding=decoding,
        model_key=model_key,
        utterance=utterance,
        cache=bool_option(spec, "cache", True) is not False,
    )
