"""behavsim — how differently do two dialogue policies behave?

Fix a set of dialogue contexts, run each policy on them deterministically, and compare the
answers context by context with eight similarity scores (Ultes & Maier, "Similarity Scoring for
Dialogue Behaviour Comparison"). This package is the toolkit-independent core: dialogue acts,
scores, response tables, the comparison engine, analysis and the CLI.
"""

from __future__ import annotations

from ._acts import ActLike, ActsLike, DialogueAct, canonical_act, format_act, format_acts, parse_act, parse_acts
from ._cache import default_cache_dir
from ._comparison import Comparison, ComparisonFiles
from ._contexts import ContextSet, belief_problem, check_history
from ._engine import PAIR_MODES, compare, plan_pairs
from ._errors import (
    ActParseError,
    BehavsimError,
    ConfigError,
    ContextSetMismatch,
    ModelNotAvailable,
    TableFormatError,
    UnknownEncoder,
    UnknownName,
    UnknownScore,
)
from ._executor import Executor, ExecutorError, get_executor
from ._interrupt import interrupt_handled, raise_if_interrupted
from ._io import canonical_copy
from ._map import BehaviourMap, behaviour_map, write_map
from ._registry import Registry
from ._slices import SLICE_KINDS, slice_scores
from ._tables import ResponseTable, context_fingerprint
from ._util import closest_name, did_you_mean, package_version
from .policy import (
    Adapter,
    Policy,
    PolicyCheckError,
    PolicyErrorsWarning,
    PolicyFailed,
    PolicySpec,
    Response,
    UnanswerableContexts,
    UnknownPolicyKind,
    as_adapter,
    check_policy,
    list_policy_kinds,
    load_policy,
    parse_spec,
    policy_kinds,
    respond,
    respond_many,
)
from .scores import DEFAULT_SCORES, get_score, list_scores, score_info

#: The installed version of behavsim (the distribution's metadata).
__version__ = package_version("behavsim")

__all__ = [
    "__version__",
    "DialogueAct",
    "ActLike",
    "ActsLike",
    "parse_act",
    "parse_acts",
    "format_act",
    "format_acts",
    "canonical_act",
    "BehavsimError",
    "ActParseError",
    "ConfigError",
    "ContextSetMismatch",
    "ModelNotAvailable",
    "TableFormatError",
    "UnknownEncoder",
    "UnknownName",
    "UnknownScore",
    "UnanswerableContexts",
    "get_score",
    "list_scores",
    "score_info",
    "DEFAULT_SCORES",
    "Response",
    "Policy",
    "Adapter",
    "PolicySpec",
    "parse_spec",
    "load_policy",
    "as_adapter",
    "policy_kinds",
    "list_policy_kinds",
    "respond",
    "respond_many",
    "check_policy",
    "PolicyFailed",
    "PolicyCheckError",
    "PolicyErrorsWarning",
    "UnknownPolicyKind",
    "Registry",
    "closest_name",
    "did_you_mean",
    "package_version",
    "ContextSet",
    "belief_problem",
    "check_history",
    "ResponseTable",
    "context_fingerprint",
    "canonical_copy",
    "default_cache_dir",
    "compare",
    "Comparison",
    "ComparisonFiles",
    "behaviour_map",
    "BehaviourMap",
    "write_map",
    "plan_pairs",
    "PAIR_MODES",
    "slice_scores",
    "SLICE_KINDS",
    "Executor",
    "ExecutorError",
    "get_executor",
    "raise_if_interrupted",
    "interrupt_handled",
]
