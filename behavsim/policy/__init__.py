"""The policy protocol: what a policy is, how it is named, and how it answers a context set.

* :class:`Response`, :class:`Policy` (``name`` + ``act(belief)``), :class:`Adapter` (a model with
  table metadata answering one context at a time), :class:`PolicyAdapter`, :class:`CallableAdapter`;
* policy spec strings (``kind:target:key=value``) and the registry :data:`policy_kinds`, filled
  from the entry-point group ``behavsim.policy_kinds`` by the packages that build on behavsim;
* :func:`respond`, :func:`respond_many` and the protocol checker :func:`check_policy`.
"""

from ._protocol import (
    READS,
    Adapter,
    CallableAdapter,
    Policy,
    PolicyAdapter,
    Response,
    coerce_response,
    file_sha256,
    reads_of,
    source_info,
)
from ._respond import (
    MissingInput,
    PolicyCheckError,
    PolicyErrorsWarning,
    PolicyFailed,
    UnanswerableContexts,
    answer_context,
    check_inputs,
    check_policy,
    error_text,
    respond,
    respond_many,
)
from ._specs import (
    CALLABLE_RE,
    ENTRY_POINT_GROUP,
    PolicySpec,
    UnknownPolicyKind,
    as_adapter,
    list_policy_kinds,
    load_policy,
    parse_spec,
    policy_kinds,
)

__all__ = [
    "Response",
    "READS",
    "reads_of",
    "Policy",
    "Adapter",
    "PolicyAdapter",
    "CallableAdapter",
    "coerce_response",
    "file_sha256",
    "source_info",
    "PolicySpec",
    "UnknownPolicyKind",
    "policy_kinds",
    "list_policy_kinds",
    "parse_spec",
    "load_policy",
    "as_adapter",
    "CALLABLE_RE",
    "ENTRY_POINT_GROUP",
    "respond",
    "respond_many",
    "check_policy",
    "PolicyFailed",
    "PolicyCheckError",
    "PolicyErrorsWarning",
    "error_text",
    "UnanswerableContexts",
    "MissingInput",
    "answer_context",
    "check_inputs",
]
