"""What every policy family of ``policies`` builds on, and the kinds that belong to no family.

A policy kind turns a spec string into a :class:`behavsim.Adapter` (the protocol and the registry
of kinds live in the core, :mod:`behavsim.policy`); each family contributes its kinds through the
entry-point group ``behavsim.policy_kinds`` (``setup.cfg``):

=====================================  ==========================================================
spec                                   kind, and where it lives
=====================================  ==========================================================
``handcrafted[:nlg_seed=N]``           the built-in rule-based policy (``nlg_seed=none``: no
                                       prompts) — :mod:`policies.handcrafted`
``PATH.npz[:nlg_seed=N]``              a GP-SARSA checkpoint (greedy); also ``checkpoint:PATH``
                                       — :mod:`policies.gp`
``e2e:DIR``                            behavsim's end-to-end model — :mod:`policies.e2e`
``pydial:CFG[:domain=D][:nlg=off]``    a policy trained by PyDial3 (GP-SARSA or handcrafted)
                                       — :mod:`policies.pydial`
``openai:MODEL@BASE_URL[:key=value]``  a language model behind an OpenAI-compatible server
                                       — :mod:`policies.llm`
``hf:DIR[:key=value]``                 a local Hugging Face model folder — :mod:`policies.llm`
``module:function``                    any importable callable ``belief -> act`` or
                                       ``-> (act, prompt)`` or ``-> Response``; also
                                       ``callable:module:function`` — here
``recorded:FILE``                      act/prompt per context id from a JSONL file (policies run
                                       elsewhere) — here
=====================================  ==========================================================

Here: :class:`DomainPolicyAdapter` (a policy on one domain refuses contexts of another),
:func:`option_domain` (the domain a factory's ``domain=`` option names), and the ``callable`` and
``recorded`` kinds. Each adapter's ``meta`` is the policy metadata stored in the response table:
``id``, ``name``, ``kind`` and where known ``reward``, ``seed``, ``checkpoint`` (training
dialogues), ``nlg_seed``, and under ``path`` the source file and its ``sha256`` (file-specific
details live under ``path``, which ``behavsim.compare`` ignores when it groups the checkpoints of
one trial).
"""

from __future__ import annotations

from policies.adapters._base import DomainPolicyAdapter, callable_kind, context_domains, option_domain
from policies.adapters._recorded import (
    RECORDED_FORMAT,
    RECORDED_VERSION,
    RecordedAdapter,
    RecordedFailure,
    recorded_kind,
    write_recorded,
)

__all__ = [
    "DomainPolicyAdapter",
    "context_domains",
    "option_domain",
    "callable_kind",
    "RecordedAdapter",
    "RecordedFailure",
    "recorded_kind",
    "write_recorded",
    "RECORDED_FORMAT",
    "RECORDED_VERSION",
]
