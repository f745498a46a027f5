"""Corpora of human dialogues, for every layer above: ConvLab-3's unified data format
(:mod:`policies.corpora.unified`) and its acts in PyDial's terms (:mod:`policies.corpora.convlab`).

The context builders read corpora as context sets (:func:`contexts.from_unified`); the
end-to-end model trains on them (``behavsim train --policy e2e --corpus PATH``).
"""

from policies.corpora.convlab import (
    GENERAL_DOMAIN,
    INTENTS,
    NO_VENUE_INTENTS,
    SLOT_NAMES,
    ActMapper,
    ImportCounts,
    normalise,
)
from policies.corpora.errors import LogFormatError, reject_non_finite
from policies.corpora.unified import (
    Beliefs,
    UnifiedCorpus,
    dialogue_contexts,
    is_unified,
    read_unified,
    select_dialogues,
)

__all__ = [
    "LogFormatError",
    "reject_non_finite",
    "UnifiedCorpus",
    "is_unified",
    "read_unified",
    "select_dialogues",
    "Beliefs",
    "dialogue_contexts",
    "INTENTS",
    "NO_VENUE_INTENTS",
    "SLOT_NAMES",
    "GENERAL_DOMAIN",
    "ActMapper",
    "ImportCounts",
    "normalise",
]
