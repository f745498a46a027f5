"""A small chat model in Hugging Face's format, built on the spot for the language-model policy tests.

``build_chat_model(DIR, contexts)``: the folder carries its own prompt template
(``behavsim-prompt.toml``, :data:`TEMPLATE`: a one-line belief summary, the last turns of the
history when the context has one; the answer is the act alone), a byte-level BPE tokenizer
trained on the prompts it renders for ``contexts`` (with a chat template of its own) and a tiny
Llama-style causal model trained for a few hundred steps to answer each prompt with the
handcrafted policy's act (``answer="bye"``: always ``bye()``) — enough to answer many contexts
with a parseable act, not enough to be sure of it, so that sampling at temperature 1 varies.
``generation_config.json`` sets ``do_sample = true``: ``transformers serve`` then samples when a
request's temperature is above 0 and decodes greedily at temperature 0, as ``hf:`` does.
``trained=False`` saves the random initial weights (answers that do not parse). Same arguments →
same folder content (CPU, seeded).
"""

from __future__ import annotations

from pathlib import Path

TEMPLATE = """\
format = "behavsim-prompt"
version = 1
name = "tiny-test"
[answer]
utterance = false
[[messages]]
role = "system"
content = "next system act"
[[messages]]
role = "user"
content = '''
{% if history %}{% for t in history[-2:] %}{{ t.speaker }}: {{ t.text }} {% endfor %}| {% endif %}
{% for s in belief.slots if s.value is not none %}{{ s.slot }}={{ s.value }} {% endfor %}
| asks {{ belief.requested | join(",") if belief.requested else "-" }} | {{ belief.method }} {{ belief.discourse_act }}
| matches {{ belief.n_matches }}{% if belief.venues %} {{ belief.venues[0].name }}{% endif %}
'''
"""

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def _examples(contexts, template, answer: str) -> list[tuple[list[dict], str]]:
    from behavsim import canonical_copy
    from policies.handcrafted.policy import HandcraftedPolicy
    from policies.simulation.domain import resolve_domain

    domain = resolve_domain(None)
    teacher = HandcraftedPolicy(domain, nlg_seed=0)
    out = []
    for i, belief in enumerate(contexts.beliefs):
        b = canonical_copy(belief)
        messages = template.render(b, domain, history=contexts.history(i))
        out.append((messages, "bye()" if answer == "bye" else teacher.act(canonical_copy(belief)).act))
    return out


def build_chat_model(
    out: str | Path, contexts, *, answer: str = "handcrafted", trained: bool = True, steps: int = 200, seed: int = 0
) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from policies.llm._prompts import MODEL_TEMPLATE, load_template

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MODEL_TEMPLATE).write_text(TEMPLATE, encoding="utf-8")
    examples = _examples(contexts, load_template(out / MODEL_TEMPLATE), answer)

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|pad|>", "<|end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [m["content"] for msgs, _ in examples for m in msgs] + [a for _, a in examples]
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|end|>",
        pad_token="<|pad|>",
        model_input_names=["input_ids", "attention_mask"],
    )
    fast.chat_template = CHAT_TEMPLATE

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    if trained:
        _train(model, fast, examples, steps=steps, seed=seed)
    model.eval()
    model.generation_config.do_sample = True
    model.generation_config.top_k = 0
    model.generation_config.max_new_tokens = 48
    model.generation_config.pad_token_id = fast.pad_token_id
    model.generation_config.eos_token_id = fast.eos_token_id
    model.save_pretrained(out)
    fast.save_pretrained(out)
    return out


def _train(model, tokenizer, examples, *, steps: int, seed: int) -> None:
    import torch

    rows = []
    for messages, answer in examples:
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        target = tokenizer(answer + "<|end|>", add_special_tokens=False)["input_ids"]
        rows.append((list(prompt), list(target)))
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    model.train()
    batch = 4
    for _ in range(steps):
        pick = torch.randint(len(rows), (batch,), generator=g).tolist()
        seqs = [rows[i][0] + rows[i][1] for i in pick]
        width = max(len(s) for s in seqs)
        ids = torch.full((batch, width), tokenizer.pad_token_id)
        labels = torch.full((batch, width), -100)
        mask = torch.zeros((batch, width), dtype=torch.long)
        for k, i in enumerate(pick):
            p, t = rows[i]
            ids[k, : len(p) + len(t)] = torch.tensor(p + t)
            labels[k, len(p) : len(p) + len(t)] = torch.tensor(t)
            mask[k, : len(p) + len(t)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
