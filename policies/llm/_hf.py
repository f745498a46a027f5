"""``hf:DIR`` — a local Hugging Face ``transformers`` model as a policy (causal or
sequence-to-sequence), greedy by default.

Spec: ``hf:DIR[:temperature=T][:top_p=P][:seed=S][:max_tokens=N][:batch_size=B][:template=NAME|FILE]
[:utterance=yes|no][:device=cpu|cuda][:cache=off]``. ``DIR`` holds the model in Hugging Face's
format (``config.json``, weights, tokenizer; a chat template when the model has one). Each context
is rendered into chat messages by the prompt template (the model folder's own
``behavsim-prompt.toml`` when it has one, else the shipped ``camrestaurants``), turned into tokens
by the tokenizer's chat template (no chat template: the message contents joined by blank lines)
and answered with ``generate`` under the model's own generation config, with ``max_new_tokens``,
``temperature`` (0: greedy, even where the model's config samples), ``do_sample = temperature > 0``
and ``top_p`` set — as ``transformers serve`` does, so that ``hf:DIR`` and ``openai:DIR@URL`` against a server of the same folder give the
same greedy answers. Sampling draws each context with its own seed (``seed + repeat``) in a
private random stream (the process's global generator is left as it was).

``batch_size`` (default 1) answers several greedy contexts per ``generate`` call, left-padded: faster,
but padding and batch shapes change the last bits of the computation, so a context's answer may
then depend on which contexts share its batch; with 1, each answer is a function of its context
alone. Sampling always runs one context at a time. The model's identity in the answer cache is
a digest of the folder's model files, so a folder trained further is asked again.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from behavsim import ConfigError, ModelNotAvailable
from behavsim.policy import Adapter, PolicySpec
from policies.llm._adapter import (
    Job,
    LLMAdapter,
    bool_option,
    decoding_options,
    folder_digest,
    llm_meta,
    model_policy_id,
    resolve_llm_domain,
    step_of_folder,
)
from policies.llm._prompts import load_template

__all__ = ["HFAdapter", "hf_kind", "HF_OPTIONS"]

HF_OPTIONS = ("temperature", "top_p", "seed", "max_tokens", "batch_size", "template", "utterance", "device", "cache")
INSTALL_HINT = "pip install 'behavsim[llm]'"


class HFAdapter(LLMAdapter):
    """A local ``transformers`` model folder answering through a prompt template."""

    kind = "hf"

    def __init__(self, model_dir: str | os.PathLike, *, batch_size: int = 1, device: str = "cpu", **kwargs: Any):
        super().__init__(**kwargs)
        self.model_dir = Path(model_dir)
        self.batch_size = batch_size
        self.device = device
        self._loaded: tuple[Any, Any, bool] | None = None

    def _describe(self) -> str:
        return f"hf:{self.model_dir}"

    def __getstate__(self) -> dict[str, Any]:  # worker processes load the model themselves
        state = dict(self.__dict__)
        state["_loaded"] = None
        state["_cache"] = None
        return state

    def _load(self) -> tuple[Any, Any, bool]:
        if self._loaded is None:
            try:
                # optional heavy dependency, loaded on first use
                from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer
            except ImportError as exc:  # pragma: no cover - transformers is a core dependency
                raise ModelNotAvailable(f"hf: needs transformers and torch ({INSTALL_HINT}): {exc}") from None
            path = str(self.model_dir)
            try:  # the folder's files only: nothing is ever fetched from a hub
                config = AutoConfig.from_pretrained(path, local_files_only=True)
                seq2seq = bool(getattr(config, "is_encoder_decoder", False))
                cls = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
                model: Any = cls.from_pretrained(path, dtype="auto", local_files_only=True)
                model = model.to(self.device)
                tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            except (OSError, ValueError, KeyError) as exc:
                raise ModelNotAvailable(
                    f"hf:{path}: cannot load the model: {' '.join(str(exc).split())[:300]}"
                ) from None
            model.eval()
            if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
                tokenizer.pad_token = tokenizer.eos_token
            self._loaded = (model, tokenizer, seq2seq)
        return self._loaded

    def _encode(self, tokenizer: Any, conversations: Sequence[list[dict[str, str]]]) -> Any:
        if getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template(
                list(conversations),
                add_generation_prompt=True,
                return_tensors="pt",
                return_dict=True,
                padding=True,
            )
        texts = ["\n\n".join(m["content"] for m in conv) for conv in conversations]
        return tokenizer(texts, return_tensors="pt", padding=True)

    def _generate(self, jobs: Sequence[Job], on_answer: Callable[[str, str], None]) -> None:
        import torch  # optional heavy dependency, loaded on first use

        model, tokenizer, seq2seq = self._load()
        tokenizer.padding_side = "left"
        config = copy.deepcopy(model.generation_config)
        config.max_new_tokens = int(self.decoding["max_tokens"])
        temperature = float(self.decoding.get("temperature") or 0.0)
        config.do_sample = temperature > 0
        config.temperature = temperature  # 0: greedy, whatever the model's own config says (as the server does)
        if config.do_sample and self.decoding.get("top_p") is not None:
            config.top_p = float(self.decoding["top_p"])
        if config.pad_token_id is None:
            config.pad_token_id = tokenizer.pad_token_id
        step = 1 if config.do_sample else max(1, self.batch_size)
        for start in range(0, len(jobs), step):
            batch = jobs[start : start + step]
            inputs = self._encode(tokenizer, [m for _, m in batch])
            inputs = {k: v.to(self.device) for k, v in inputs.items() if k in ("input_ids", "attention_mask")}
            with torch.inference_mode(), torch.random.fork_rng(devices=[]):
                if config.do_sample:
                    torch.manual_seed(int(self.seed or 0))
                out = model.generate(**inputs, generation_config=config)
            prompt_len = 0 if seq2seq else inputs["input_ids"].shape[1]
            for (key, _), row in zip(batch, out):
                on_answer(key, tokenizer.decode(row[prompt_len:], skip_special_tokens=True))


def hf_kind(spec: PolicySpec, *, domain: Any = None, **_: Any) -> Adapter:
    """``hf:DIR[:key=value...]``: a local Hugging Face model folder (see :mod:`policies.llm._hf`)."""
    spec.check_options(HF_OPTIONS)
    if not spec.target:
        raise ConfigError(f"policy spec {spec.text!r}: expected hf:DIR (a Hugging Face model folder)")
    path = Path(spec.target).expanduser()
    if not path.is_dir():
        raise ConfigError(f"policy spec {spec.text!r}: model folder {str(path)!r} not found")
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"policy spec {spec.text!r}: {str(path)!r} holds no Hugging Face model (no config.json); save one with "
            "model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR)"
        )
    path = path.resolve()
    template = load_template(spec.options.get("template"), model_dir=path)
    dom = resolve_llm_domain(domain)
    decoding = decoding_options(spec)
    temperature = decoding["temperature"]
    batch_size = spec.int_option("batch_size", 1)
    if not batch_size:
        raise ConfigError(f"policy spec {spec.text!r}: option batch_size must be a positive integer")
    device = spec.options.get("device", "cpu")
    utterance = bool_option(spec, "utterance", None)
    digest = folder_digest(path)
    step = step_of_folder(path)
    extra: dict[str, Any] = {"path": {"dir": str(path), "digest": digest}}
    if step is not None:
        extra["checkpoint"] = step
    if batch_size != 1:
        decoding["batch_size"] = batch_size  # answers may depend on it (see the module documentation)
    meta = llm_meta(
        kind="hf",
        model=path.parent.name if step is not None else path.name,
        pid=model_policy_id(str(path), temperature),
        template=template,
        domain=dom,
        decoding=decoding,
        utterance=template.utterance if utterance is None else utterance,
        extra=extra,
    )
    return HFAdapter(
        path,
        batch_size=batch_size,
        device=device,
        meta=meta,
        template=template,
        domain=dom,
        decoding=decoding,
        model_key=f"hf:{digest}",
        utterance=utterance,
        cache=bool_option(spec, "cache", True) is not False,
    )
