"""behavsim's own end-to-end model: a small decoder-only transformer that reads a dialogue's text
and answers with a system act and a prompt, trained by imitation of any teacher policy.

* :class:`E2EConfig`, :func:`train_e2e` — training (``behavsim train --policy e2e --teacher SPEC``);
  :func:`corpus_e2e_config` — a corpus run's configuration (``--corpus PATH``);
* :class:`E2EModel` — a checkpoint folder answering histories (the ``e2e:DIR`` policy kind);
* :class:`E2EAdapter`, :func:`e2e_kind` — the ``e2e:DIR`` policy kind;
* :func:`add_e2e_options`, :func:`cmd_train_e2e` — ``behavsim train --policy e2e``'s options and run.

The text format and what the model reads: :mod:`policies.e2e._format`.
"""

from policies.e2e._adapter import E2EAdapter, e2e_kind, greedy_by_an_earlier_default
from policies.e2e._command import add_e2e_options, cmd_train_e2e
from policies.e2e._corpus import CORPUS_DEFAULTS
from policies.e2e._data import play_teacher, teacher_dialogue_seed
from policies.e2e._model import CORPUS_BEAM, MODEL_FILE, E2EModel
from policies.e2e._train import (
    BEST_FILE,
    NO_ACT_TURNS,
    RUN_FILE,
    E2EConfig,
    corpus_e2e_config,
    list_e2e_checkpoints,
    train_e2e,
)

__all__ = [
    "E2EConfig",
    "corpus_e2e_config",
    "CORPUS_DEFAULTS",
    "NO_ACT_TURNS",
    "train_e2e",
    "list_e2e_checkpoints",
    "E2EModel",
    "CORPUS_BEAM",
    "E2EAdapter",
    "e2e_kind",
    "greedy_by_an_earlier_default",
    "add_e2e_options",
    "cmd_train_e2e",
    "play_teacher",
    "teacher_dialogue_seed",
    "MODEL_FILE",
    "RUN_FILE",
    "BEST_FILE",
]
