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

``batch_size`` (default 8) answers several greedy contexts per ``generate`` call, left-padded, with
the same answers as one context at a time (``batch_size=1``, the reference): padding and batch
shapes change the last bits of the logits, so every step of every answer of a batch is checked —
wherever the chosen token leads the next one by less than ``2¹³·ε·max(1, |logit|)`` (``ε`` of the
model's dtype: about ``1e-3`` relative in float32, far above the differences padding makes; in
half precision nearly every answer), that context is answered again on its own. A model whose
generation config searches with beams, and sampling, always run one context at a time. The model's identity in the answer cache is
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
#: A batch's step is a near tie when the chosen token leads the next one by less than this many
#: ε (of the model's dtype) times max(1, |logit|); that context is then answered on its own.
NEAR_TIE = 2.0**13


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
        greedy = not config.do_sample and int(getattr(config, "num_beams", 1) or 1) == 1
        step = max(1, self.batch_size) if greedy else 1
        for start in range(0, len(jobs), step):
            batch = jobs[start : start + step]
            if len(batch) == 1:
                self._generate_one(batch[0], config, on_answer)
                continue
            for job, text in zip(batch, self._generate_checked(batch, config)):
                if text is None:  # a near tie somewhere in its answer: answered on its own
                    self._generate_one(job, config, on_answer)
                else:
                    on_answer(job[0], text)

    def _inputs(self, batch: Sequence[Job]) -> dict[str, Any]:
        model, tokenizer, seq2seq = self._load()
        inputs = self._encode(tokenizer, [m for _, m in batch])
        return {k: v.to(self.device) for k, v in inputs.items() if k in ("input_ids", "attention_mask")}

    def _generate_one(self, job: Job, config: Any, on_answer: Callable[[str, str], None]) -> None:
        """One context's answer, alone: the reference of every greedy answer."""
        import torch  # optional heavy dependency, loaded on first use

        model, tokenizer, seq2seq = self._load()
        inputs = self._inputs([job])
        with torch.inference_mode(), torch.random.fork_rng(devices=[]):
            if config.do_sample:
                torch.manual_seed(int(self.seed or 0))
            out = model.generate(**inputs, generation_config=config)
        prompt_len = 0 if seq2seq else inputs["input_ids"].shape[1]
        on_answer(job[0], tokenizer.decode(out[0][prompt_len:], skip_special_tokens=True))

    def _generate_checked(self, batch: Sequence[Job], config: Any) -> list[str | None]:
        """Greedy answers of a left-padded batch, each ``None`` where a step of it was a near tie
        (see the module doc): the others are the answers one context at a time gives."""
        import torch  # optional heavy dependency, loaded on first use

        model, tokenizer, seq2seq = self._load()
        inputs = self._inputs(batch)
        with torch.inference_mode():
            out = model.generate(**inputs, generation_config=config, output_scores=True, return_dict_in_generate=True)
        prompt_len = 0 if seq2seq else inputs["input_ids"].shape[1]
        generated = out.sequences[:, prompt_len:]
        if seq2seq:  # the decoder's start token is no step
            generated = generated[:, 1:]
        top = torch.stack([torch.topk(s.float(), 2, dim=-1).values for s in out.scores])  # steps x rows x 2
        tol = NEAR_TIE * torch.finfo(model.dtype).eps * torch.clamp(top[:, :, 0].abs(), min=1.0)
        near = ~(top[:, :, 0] - top[:, :, 1] > tol)  # steps x rows
        eos = config.eos_token_id
        stops = set(eos if isinstance(eos, (list, tuple)) else [] if eos is None else [eos])
        texts: list[str | None] = []
        for r, row in enumerate(generated):
            tokens = row.tolist()
            end = next((t + 1 for t, tok in enumerate(tokens) if tok in stops), len(tokens))
            if bool(near[: min(end, near.shape[0]), r].any()):
                texts.append(None)
            else:
                texts.append(tokenizer.decode(row, skip_special_tokens=True))
        return texts


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
    batch_size = spec.int_option("batch_size", 8)
    if not batch_size:
        raise ConfigError(f"policy spec {spec.text!r}: option batch_size must be a positive integer")
    device = spec.options.get("device", "cpu")
    utterance = bool_option(spec, "utterance", None)
    digest = folder_digest(path)
    step = step_of_folder(path)
    extra: dict[str, Any] = {"path": {"dir": str(path), "digest": digest}}
    if step is not None:
        extra["checkpoint"] = step
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
