"""The end-to-end model's tokenizer: a word-level vocabulary of the domain, built locally.

A ``tokenizers`` WordLevel model over pieces cut by one regular expression: a placeholder
(``[v]``, ``[name]``, ``[food_2]``), a multi-word value of the ontology (``la mimosa``, ``north american``: one
token each, so the model copies a venue's name as one token), a word, or one other character —
each with the space before it (`` about``), so joining the tokens gives the text back exactly.
Text is lower-cased and runs of whitespace become one space first. The vocabulary: the special
tokens (:data:`~policies.e2e._format.SPECIAL`), every ontology value, the placeholders
and every piece of the training texts, in sorted order — the same texts give the same tokenizer.
Unknown pieces (a phone number in a history) become ``<|unk|>``.

Wrapped as a :class:`transformers.PreTrainedTokenizerFast` with a chat template, it is saved
beside the model and loads with ``AutoTokenizer.from_pretrained(DIR)``. The chat template is the
model's **chat mode**, for tools that know nothing of behavsim (``hf:DIR``, ``transformers serve``
behind ``openai:``): the dialogue's turns as they were said (roles ``user`` and
``assistant``/``system``), then ``<|answer|>``, after which the model writes the act in behavsim's
syntax, values spelled out, and ``<|endoftext|>`` — what it learned to write there, from the same
teacher dialogues, without a database query (a venue's address or phone number is then its
memory's, not the database's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from policies.e2e._format import MAX_INDEX, SPECIAL

__all__ = ["build_tokenizer", "CHAT_TEMPLATE", "piece_pattern"]

#: The chat template (the chat mode): the turns as said, then (with ``add_generation_prompt``)
#: ``<|answer|>``, after which the model writes the act.
CHAT_TEMPLATE = (
    "{{ eos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}<|user|>{% else %}<|system|>{% endif %}"
    " {{ message['content'] | lower | trim }}{% endfor %}"
    "{% if add_generation_prompt %}<|answer|>{% endif %}"
)


def _values(domain: Any) -> list[str]:
    vals = {v for values in domain.informable.values() for v in values}
    return sorted(vals)


def piece_pattern(domain: Any) -> str:
    """The regular expression that cuts text into pieces (see the module doc)."""
    multi = sorted((v for v in _values(domain) if re.search(r"[^a-z0-9]", v)), key=lambda v: (-len(v), v))
    alts = [r" ?\[[a-z_!0-9]+\]"]
    if multi:
        alts.append(r" ?(?:" + "|".join(re.escape(v) for v in multi) + r")(?![a-z0-9])")
    alts += [r" ?[a-z0-9]+(?:'[a-z]+)?", r" ?[^\sa-z0-9]", r"\s+"]
    return "|".join(alts)


def build_tokenizer(texts: Iterable[str], domain: Any, slots: Iterable[str] = ()):
    """A :class:`transformers.PreTrainedTokenizerFast` whose vocabulary covers ``texts`` (model
    sequences without special tokens), the domain's values and ``[slot]`` placeholders."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers  # optional, heavy
    from transformers import PreTrainedTokenizerFast  # optional heavy dependency, loaded on first use

    pattern = re.compile(piece_pattern(domain))
    pieces: set[str] = {" "}
    for text in dict.fromkeys(texts):  # most texts repeat: each distinct one is cut once
        for part in re.split("(" + "|".join(re.escape(t) for t in SPECIAL.values()) + ")", text):
            if part in SPECIAL.values() or not part:
                continue
            pieces.update(m.group(0) for m in pattern.finditer(re.sub(r"\s+", " ", part.lower())))
    for v in _values(domain):
        pieces.update({v, " " + v})
    for s in {*domain.requestable, *domain.informable, *slots, "v", "pricerange_adv"}:
        pieces.update({f"[{s}]", f" [{s}]"})
    for s in domain.informable:
        for n in range(1, MAX_INDEX + 1):
            pieces.update({f"[{s}_{n}]", f" [{s}_{n}]"})
    specials = list(SPECIAL.values())
    vocab = {t: i for i, t in enumerate(specials)}
    for p in sorted(pieces):
        vocab.setdefault(p, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL["unk"]))
    tok.normalizer = normalizers.Sequence([normalizers.Lowercase(), normalizers.Replace(Regex(r"\s+"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern.pattern), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(specials)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=SPECIAL["eos"],
        eos_token=SPECIAL["eos"],
        unk_token=SPECIAL["unk"],
        pad_token=SPECIAL["pad"],
        additional_special_tokens=[SPECIAL[k] for k in ("user", "system", "belief", "db", "act", "response", "answer")],
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
        model_input_names=["input_ids", "attention_mask"],
    )
