"""Policy adapters: one small protocol for every behaviour model behavsim compares.

An adapter answers a belief state deterministically — no exploration, no learning, a fixed
NLG seed — with the system act and, when the model has a generator, the prompt
(:class:`behavsim.Response`). Adapters are made from **policy spec strings**:

=====================================  ==========================================================
spec                                   adapter
=====================================  ==========================================================
``handcrafted[:nlg_seed=N]``           the built-in rule-based policy (``nlg_seed=none``: no prompts)
``PATH.npz[:nlg_seed=N]``              a GP-SARSA checkpoint (greedy); also ``checkpoint:PATH``
``module:function``                    any importable callable ``belief -> act`` or
                                       ``-> (act, prompt)`` or ``-> Response``; also
                                       ``callable:module:function``
``recorded:FILE``                      act/prompt per context id from a JSONL file (policies run
                                       elsewhere; see :mod:`policies.adapters._recorded`)
``pydial:CFG[:domain=D][:nlg=off]``    a policy trained by PyDial3 (GP-SARSA or handcrafted)
``openai:MODEL@BASE_URL[:key=value]``  a language model behind an OpenAI-compatible server
                                       (:mod:`policies.adapters._openai`)
``hf:DIR[:key=value]``                 a local Hugging Face model folder (:mod:`policies.adapters._hf`)
=====================================  ==========================================================

The protocol and the registry live in the core (:mod:`behavsim.policy`); the kinds above are
contributed from here through the entry-point group ``behavsim.policy_kinds``.
``behavsim.policy_kinds`` is the registry (listable, case-insensitive; an unknown kind is rejected
with the closest valid one; ``behavsim.load_policy(spec)`` makes an adapter from a spec). Each adapter's ``meta`` is the policy metadata stored in the
response table: ``id``, ``name``, ``kind`` and where known ``reward``, ``seed``,
``checkpoint`` (training dialogues), ``nlg_seed``, and under ``path`` the source file and its
``sha256`` (file-specific details live under ``path``, which ``behavsim.compare`` ignores when it
groups the checkpoints of one trial).
"""

from __future__ import annotations

from ._base import (
    Adapter,
    CallableAdapter,
    DomainPolicyAdapter,
    PolicyAdapter,
    PolicySpec,
    as_adapter,
    file_sha256,
    parse_spec,
    source_info,
)
from ._pydial import (
    PYDIAL_HINT,
    PyDialAdapter,
    StateVectorMismatch,
    find_pydial_root,
    git_commit,
    read_config,
    resolve_config,
)
from ._recorded import RECORDED_FORMAT, RECORDED_VERSION, RecordedAdapter, RecordedFailure, write_recorded

__all__ = [
    "Adapter",
    "PolicyAdapter",
    "CallableAdapter",
    "DomainPolicyAdapter",
    "RecordedAdapter",
    "PyDialAdapter",
    "PolicySpec",
    "parse_spec",
    "as_adapter",
    "RecordedFailure",
    "StateVectorMismatch",
    "write_recorded",
    "find_pydial_root",
    "git_commit",
    "read_config",
    "resolve_config",
    "file_sha256",
    "source_info",
    "RECORDED_FORMAT",
    "RECORDED_VERSION",
    "PYDIAL_HINT",
]
