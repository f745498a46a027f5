"""Language models as policies: the belief shown to a model through a prompt template and its
answer read back as a dialogue act (:mod:`._prompts`, templates in ``prompts/``), an on-disk
answer cache (:mod:`._adapter`), and the ``hf:DIR`` (a local Hugging Face model folder,
:mod:`._hf`) and ``openai:MODEL@URL`` (an OpenAI-compatible server, :mod:`._openai`) policy kinds.
"""

from policies.llm._adapter import AnswerCache, LLMAdapter, LLMServiceError
from policies.llm._hf import HFAdapter, hf_kind
from policies.llm._openai import OpenAIAdapter, openai_kind
from policies.llm._prompts import PromptTemplate, list_templates, load_template

__all__ = [
    "LLMAdapter",
    "AnswerCache",
    "LLMServiceError",
    "HFAdapter",
    "hf_kind",
    "OpenAIAdapter",
    "openai_kind",
    "PromptTemplate",
    "load_template",
    "list_templates",
]
